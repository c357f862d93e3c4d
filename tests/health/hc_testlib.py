"""Shared helpers for the health service's tests: run the binary, write inputs, assert."""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import ketama  # noqa: E402

CONF = os.path.join(ROOT, "conf", "dispatch.env")
SHARDS = os.path.join(ROOT, "input", "shards.json")
GOLDEN = os.path.join(ROOT, "tests", "golden", "sample-0001.receipt.json")
CHANGES = os.path.join(ROOT, "input", "changes.json")


class Failures:
    """Collects failed assertions so one run reports every broken case."""

    def __init__(self):
        self.failed = []
        self.passed = 0

    def check(self, cond, name, detail=""):
        if cond:
            self.passed += 1
            print("ok   %s" % name)
        else:
            self.failed.append(name)
            print("FAIL %s %s" % (name, detail))

    def exit(self):
        print("%d passed, %d failed" % (self.passed, len(self.failed)))
        sys.exit(1 if self.failed else 0)


def run(binary, args, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.pop("SHARDGATE_CONF", None)
    env.pop("SHARDGATE_HEALTH_TEST_EMPTY_CRITERIA", None)
    if env_extra:
        env.update(env_extra)
    p = subprocess.run([binary] + args, capture_output=True, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check_receipt(binary, receipt_path, conf=CONF, shards=SHARDS, env_extra=None):
    return run(binary, ["check", "--conf", conf, "--shards", shards, "--receipt", receipt_path],
               env_extra)


def check_journal(binary, journal_path, conf=CONF, shards=SHARDS, env_extra=None):
    return run(binary, ["check", "--conf", conf, "--shards", shards, "--journal", journal_path],
               env_extra)


def tmpdir():
    return tempfile.mkdtemp(prefix="hc-test-")


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def golden():
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)


def golden_shards():
    with open(SHARDS, encoding="utf-8") as f:
        return json.load(f)["shards"]


def deep(obj):
    return copy.deepcopy(obj)


def parse_line(out):
    """The check command's single stdout line as JSON (None if it is not one line of JSON)."""
    lines = out.splitlines()
    if len(lines) != 1:
        return None
    try:
        return json.loads(lines[0])
    except ValueError:
        return None


def changes(n, prefix="k", seed=0, size_mod=7):
    return [{"id": "c%d" % i, "key": "%s:%d:%d" % (prefix, seed, i), "size": (i * 31 + seed) % size_mod}
            for i in range(n)]


def journal_lines(records):
    return "".join(ketama.dumps(r) + "\n" for r in records)


def checks_per_receipt(n_placements, n_shards, in_journal=True):
    """Evaluations the criteria table runs for one receipt (docs/operations.md)."""
    return 14 + 6 * n_placements + 6 * n_shards + (5 if in_journal else 0)
