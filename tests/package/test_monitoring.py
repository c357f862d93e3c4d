#!/usr/bin/env python3
"""The Prometheus alert rules and the Grafana dashboard shipped in packaging/ (docs/operations.md
§11): promtool checks the rules and runs their unit tests (each alert fires after its `for`,
not before, not on healthy series); the dashboard is a well-formed Grafana document; and every
metric the rules and the dashboard name is on a live /metrics of a real gateway or
shardgate-health after the worked example, a feed read and a reload.

usage: test_monitoring.py SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR [CASE... | --group GROUP]
"""
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, read, run, src, tmpdir, wait_until, write  # noqa: E402

import yaml  # noqa: E402  (Debian: python3-yaml)

RULES = ("packaging", "prometheus", "shardgate-rules.yml")
RULE_TESTS = ("packaging", "prometheus", "shardgate-rules.test.yml")
DASHBOARD = ("packaging", "grafana", "shardgate.json")
# Names a query may use that no shardgate process exports: Prometheus's own, and PromQL.
NOT_OURS = {"up"}


@case("monitoring_rules")
def rules_pass_promtool():
    p = run(["promtool", "check", "rules", src(*RULES)])
    eq((p.returncode, p.stdout.strip().splitlines()[-1].strip()), (0, "SUCCESS: 10 rules found"),
       "promtool check rules: %s" % p.stderr)
    p = run(["promtool", "test", "rules", os.path.basename(src(*RULE_TESTS))],
            cwd=os.path.dirname(src(*RULE_TESTS)))
    eq((p.returncode, p.stdout.split()[-1] if p.stdout.split() else ""), (0, "SUCCESS"),
       "promtool test rules: %s%s" % (p.stdout, p.stderr))
    rules = yaml.safe_load(read(src(*RULES)))["groups"][0]["rules"]
    tested = {t["alertname"] for group in yaml.safe_load(read(src(*RULE_TESTS)))["tests"]
              for t in group["alert_rule_test"] if t.get("exp_alerts")}
    eq(sorted(r["alert"] for r in rules if r["alert"] not in tested), [],
       "every alert has a unit test in which it fires")


def dashboard():
    return json.loads(read(src(*DASHBOARD)))


def queries():
    """Every PromQL expression of the rules and the dashboard (its panels and variables)."""
    exprs = [r["expr"] for r in yaml.safe_load(read(src(*RULES)))["groups"][0]["rules"]]
    d = dashboard()
    exprs += [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in d["templating"]["list"] if v["type"] == "query"]
    return exprs


@case("monitoring_dashboard")
def dashboard_is_well_formed():
    d = dashboard()
    eq((d["uid"], d["title"]), ("shardgate", "shardgate"), "uid and title")
    ids = [p["id"] for p in d["panels"]]
    eq(len(ids), len(set(ids)), "panel ids unique")
    for p in d["panels"]:
        g = p["gridPos"]
        ok(0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, "%s: gridPos %r" % (p["title"], g))
        if p["type"] == "row":
            continue
        ok(p["targets"], "%s has queries" % p["title"])
        for t in p["targets"]:
            eq(t["datasource"], {"type": "prometheus", "uid": "${datasource}"},
               "%s: the datasource variable" % p["title"])
    titles = {p["title"] for p in d["panels"]}
    for want in ("Request rate by route", "Request latency p99 by route", "Changes per shard",
                 "Bytes (load) per shard", "Ring share against capacity share",
                 "Commit latency (POST /v1/batches p99)", "fdatasync latency", "Reloads",
                 "Feed watchers", "Feed lag (records behind the head, mean per request)",
                 "Store up", "Health verdict"):
        ok(want in titles, "the dashboard has %r" % want)


def live_names(text):
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def gateway_metrics():
    shards = os.path.join(tmpdir(), "shards.json")
    write(shards, read(src("input", "shards.json")).decode())
    with Server(shards=shards) as s:
        eq(s.post(json.loads(read(src("input", "changes.json")))).status, 200, "POST")
        eq(s.get("/v1/receipts?after=0").status, 200, "a feed read")
        s.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: s.events("reload_unchanged"), 30, "the SIGHUP reload")
        r = s.get("/metrics")
        eq(r.status, 200, "GET /metrics")
        return s.state_dir, r.body.decode()


def health_metrics(state_dir):
    port = sgtest.free_port()
    p = subprocess.Popen([sgtest.HEALTH, "serve", "--listen", "127.0.0.1:%d" % port, "--conf",
                          src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
                          "--journal", os.path.join(state_dir, "journal.jsonl")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import http.client
        text = {}

        def scrape():
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/metrics")
                r = c.getresponse()
                text["body"] = r.read().decode()
                return r.status == 200
            except OSError:
                return False
        wait_until(scrape, 30, "shardgate-health /metrics")
        return text["body"]
    finally:
        p.kill()
        p.wait(10)


@case("monitoring_metrics")
def every_metric_named_is_exported():
    state_dir, gw = gateway_metrics()
    live = live_names(gw) | live_names(health_metrics(state_dir))
    named = set()
    for expr in queries():
        named |= set(re.findall(r"\b((?:shardgate|process)_[a-z0-9_]+|up)\b", expr))
    ok(len(named) >= 25, "the names found in the queries: %r" % sorted(named))
    eq(sorted(n for n in named - NOT_OURS if n not in live), [],
       "metrics the rules or the dashboard name that no live /metrics has")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
