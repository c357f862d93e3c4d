"""Packaging checks (docs/operations.md, Packaging and containers): man pages lint clean,
docs/openapi.yaml is a valid OpenAPI 3.1 document and live answers of the real server match
it, a live /metrics passes `promtool check metrics`, and the systemd units verify.

Runs as `python3 test_package.py SHARDGATE_BINARY SOURCE_DIR CASE...` (tests/lib/sgtest.py);
SHARDGATE_HEALTH_BIN and SHARDGATE_UNIT_DIR (the configured units) come from the environment.
"""

import os
import re
import subprocess
import sys

import jsonschema  # noqa: E402  (Debian: python3-jsonschema)
import yaml  # noqa: E402  (Debian: python3-yaml)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import Server, batch, case, eq, main, ok, read, src, tmpdir, write  # noqa: E402

MAN_PAGES = ["man/shardgate.1", "man/shardgate-health.1", "man/shardgate-contract.5"]
# Style notes mandoc gives for a page set that is not installed yet; everything else fails.
MANDOC_ENVIRONMENTAL = ("referenced manual not found", "outdated mandoc.db")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


@case("man_lint")
def man_pages_lint_clean():
    for page in MAN_PAGES:
        r = run(["mandoc", "-T", "lint", src(page)])
        notes = [l for l in r.stdout.splitlines() + r.stderr.splitlines()
                 if l.strip() and not any(e in l for e in MANDOC_ENVIRONMENTAL)]
        eq(notes, [], "mandoc -T lint %s" % page)
        r = run(["mandoc", "-T", "lint", "-W", "warning", src(page)])
        eq((r.returncode, r.stdout + r.stderr), (0, ""), "mandoc -W warning %s" % page)


@case("man_lint")
def man_pages_name_every_command_and_option():
    """What --help prints is in the man page: each command of `shardgate --help` as `.Cm`, and
    each --option of each command's --help (and shardgate-health's) as `Fl -option`."""
    def flags(text):
        return sorted(set(re.findall(r"(?<![\w-])--([a-z][a-z-]*)", text)))
    pages = {"shardgate": read(src("man", "shardgate.1")).decode(),
             "shardgate-health": read(src("man", "shardgate-health.1")).decode()}
    top = run([sgtest.BIN, "--help"]).stdout
    commands = re.findall(r"^\s+([a-z]+)\s", top.split("commands:", 1)[1], re.M)
    ok(len(commands) >= 6, "commands of shardgate --help: %r" % commands)
    helps = [("shardgate", c, run([sgtest.BIN, c, "--help"]).stdout) for c in commands]
    helps.append(("shardgate-health", "", run([os.environ["SHARDGATE_HEALTH_BIN"],
                                                 "--help"]).stdout))
    missing = []
    for page, cmd, text in helps:
        if cmd and not re.search(r"^\.(It )?Cm %s\b" % cmd, pages[page], re.M):
            missing.append("%s: command %s" % (page, cmd))
        missing += ["%s %s: --%s" % (page, cmd, f) for f in flags(text)
                    if not re.search(r"Fl -%s(\s|$)" % re.escape(f), pages[page], re.M)]
    eq(missing, [], "in --help and not in the man page")


def openapi():
    with open(src("docs", "openapi.yaml")) as f:
        return yaml.safe_load(f)


def resolve(doc, node):
    """Follows a local $ref (#/a/b/c) to its target."""
    while isinstance(node, dict) and "$ref" in node and len(node) == 1:
        ref = node["$ref"]
        ok(ref.startswith("#/"), "only local $refs: %s" % ref)
        target = doc
        for part in ref[2:].split("/"):
            ok(isinstance(target, dict) and part in target, "unresolved $ref %s" % ref)
            target = target[part]
        node = target
    return node


def all_refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from all_refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from all_refs(v)


def operations(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "delete", "patch", "head", "options"):
                yield path, method, op


def schema_validator(doc, schema):
    root = dict(schema, components=doc["components"])
    return jsonschema.Draft202012Validator(root)


@case("openapi_document")
def openapi_document_is_valid():
    doc = openapi()
    ok(str(doc.get("openapi", "")).startswith("3.1."), "openapi: 3.1.x, got %r" % doc.get("openapi"))
    ok(doc["info"].get("title") and doc["info"].get("version"), "info.title and info.version")
    for ref in all_refs(doc):
        resolve(doc, {"$ref": ref})
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)
    for path, method, op in operations(doc):
        ok(op.get("operationId"), "%s %s: operationId" % (method, path))
        templated = set(re.findall(r"{([^}]+)}", path))
        declared = {p["name"] for p in map(lambda p: resolve(doc, p), op.get("parameters", []))
                    if p["in"] == "path"}
        eq(declared, templated, "%s %s: path parameters" % (method, path))
        for status, resp in op["responses"].items():
            ok(re.fullmatch(r"[1-5][0-9][0-9]", status), "%s %s: status %r" % (method, path, status))
            resp = resolve(doc, resp)
            ok(resp.get("description"), "%s %s %s: description" % (method, path, status))
            for media in resp.get("content", {}).values():
                jsonschema.Draft202012Validator.check_schema(resolve(doc, media["schema"]))
    # Every error code and status of docs/api.md's table is in the document.
    api = read(src("docs", "api.md")).decode()
    codes_doc = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    statuses = {s for _, _, op in operations(doc) for s in op["responses"]}
    for status, code in re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \|", api, re.M):
        ok(code in codes_doc["description"], "error code %s of docs/api.md in openapi.yaml" % code)
        ok(status in statuses, "status %s of docs/api.md in openapi.yaml" % status)
    # Every query parameter the gateway reads is declared, and documented in docs/api.md.
    read_by_gateway = set()
    http_dir = src("gateway", "http")
    for name in os.listdir(http_dir):
        if name.endswith(".c"):
            text = read(os.path.join(http_dir, name)).decode()
            read_by_gateway |= set(re.findall(
                r'(?:gw_param(?:_flag|_u64)?\(r, |MHD_GET_ARGUMENT_KIND, )"([a-z_]+)"', text))
    declared = {p["name"] for _, _, op in operations(doc)
                for p in map(lambda p: resolve(doc, p), op.get("parameters", []))
                if p["in"] == "query"}
    ok(len(read_by_gateway) >= 8, "the parameters found in gateway/http: %r" % read_by_gateway)
    eq(sorted(read_by_gateway - declared), [], "query parameters missing from openapi.yaml")
    eq(sorted(p for p in read_by_gateway if "`%s" % p not in api), [],
       "query parameters missing from docs/api.md")


def path_item_for(doc, path):
    bare = path.split("?", 1)[0]
    for template, item in doc["paths"].items():
        if re.match("^" + re.sub(r"{[^}]+}", "[^/]+", template) + "$", bare):
            return item
    return None


def check_live(doc, method, path, r):
    """The answer's status, headers and body are what openapi.yaml says for the operation."""
    what = "%s %s -> %d" % (method, path, r.status)
    item = path_item_for(doc, path)
    op = item and item.get(method.lower())
    if op is None:
        # No such path: 404; a documented path without this method: 405 with Allow.
        eq(r.status, 405 if item else 404, what + ": status for an undocumented operation")
        resp = resolve(doc, {"$ref": "#/components/responses/"
                                     + ("MethodNotAllowed" if item else "NotFound")})
    else:
        ok(str(r.status) in op["responses"], what + ": status not documented in openapi.yaml")
        resp = resolve(doc, op["responses"][str(r.status)])
    for name, h in resp.get("headers", {}).items():
        if h.get("required"):
            ok(name.lower() in r.headers, what + ": required header %s" % name)
        if name.lower() in r.headers:
            schema_validator(doc, h["schema"]).validate(r.headers[name.lower()])
    ctype = r.headers.get("content-type", "").split(";")[0].strip()
    content = resp.get("content", {})
    ok(ctype in content, what + ": Content-Type %r not in %r" % (ctype, list(content)))
    body = r.json() if ctype == "application/json" else r.body.decode()
    errors = sorted(schema_validator(doc, content[ctype]["schema"]).iter_errors(body),
                    key=lambda e: list(e.path))
    eq(["%s: %s" % (list(e.path), e.message) for e in errors], [], what + ": body vs schema")


@case("openapi_live")
def live_answers_match_openapi():
    doc = openapi()
    changes = read(src("input", "changes.json"))
    j = {"Content-Type": "application/json"}
    other = batch("sample-0001", n=2)
    requests = [
        ("POST", "/v1/batches", changes, j, 200),
        ("POST", "/v1/batches", changes, j, 200),                   # replay
        ("POST", "/v1/batches", b"{", j, 400),
        ("POST", "/v1/batches", b'{"batch_id":"x","changes":[]}', j, 400),
        ("POST", "/v1/batches", changes, {"Content-Type": "text/plain"}, 415),
        ("POST", "/v1/batches", changes, dict(j, **{"Idempotency-Key": "other"}), 400),
        ("POST", "/v1/batches", str.encode(__import__("json").dumps(other)), j, 422),
        ("POST", "/v1/batches", b"x" * 5000, j, 413),
        ("GET", "/v1/batches/sample-0001", None, {}, 200),
        ("GET", "/v1/batches/nope", None, {}, 404),
        ("GET", "/v1/batches", None, {}, 405),
        ("DELETE", "/v1/ring", None, {}, 405),
        ("GET", "/v1/ring", None, {}, 200),
        ("GET", "/v1/ring?points=1", None, {}, 200),
        ("GET", "/v1/ring?points=maybe", None, {}, 400),
        ("GET", "/v1/lookup?key=order%3A1001", None, {}, 200),
        ("GET", "/v1/lookup", None, {}, 400),
        ("GET", "/v1/shards", None, {}, 200),
        ("GET", "/livez", None, {}, 200),
        ("GET", "/readyz", None, {}, 200),
        ("GET", "/metrics", None, {}, 200),
        ("GET", "/no/such/endpoint", None, {}, 404),
        ("GET", "/v1/admin/membership", None, {}, 403),
        ("DELETE", "/v1/admin/membership", None, {}, 405),
    ]
    with Server(args=["--max-body", "4096"]) as s:
        for method, path, body, headers, status in requests:
            r = s.request(method, path, body=body, headers=headers)
            eq(r.status, status, "%s %s status" % (method, path))
            check_live(doc, method, path, r)
    d = tmpdir()
    token = write(os.path.join(d, "token"), "pkg-token\n")
    with Server(args=["--token-file", token]) as s:
        r = s.post(batch("t1"))
        eq(r.status, 401, "POST without token")
        check_live(doc, "POST", "/v1/batches", r)
        for path in ("/v1/shards", "/v1/ring", "/v1/batches/t1"):
            check_live(doc, "GET", path, s.get(path))
    admin = write(os.path.join(d, "admin"), "pkg-admin\n")
    os.chmod(admin, 0o600)
    with Server(args=["--admin-token-file", admin]) as s:
        for token, status in (("pkg-admin", 200), ("other", 401)):
            r = s.get("/v1/admin/membership", headers={"Authorization": "Bearer " + token})
            eq(r.status, status, "GET /v1/admin/membership with token %s" % token)
            check_live(doc, "GET", "/v1/admin/membership", r)
    empty = write(os.path.join(d, "shards.json"),
                  '{"shards":[{"id":"shard-a","state":"offline","capacity":1}]}')
    with Server(shards=empty) as s:
        for method, path, body, headers in [("POST", "/v1/batches", changes, j),
                                            ("GET", "/v1/lookup?key=a", None, {}),
                                            ("GET", "/readyz", None, {})]:
            r = s.request(method, path, body=body, headers=headers)
            eq(r.status, 503, "%s %s on an empty ring" % (method, path))
            check_live(doc, method, path, r)


@case("promtool_metrics")
def metrics_pass_promtool():
    with Server() as s:
        eq(s.post(read(src("input", "changes.json"))).status, 200, "POST the worked example")
        eq(s.post(b"{").status, 400, "a rejected POST")
        r = s.get("/metrics")
        eq(r.status, 200, "GET /metrics")
    p = run(["promtool", "check", "metrics"], input=r.body.decode())
    eq((p.returncode, p.stdout + p.stderr), (0, ""), "promtool check metrics on a live /metrics")


@case("systemd_units")
def systemd_units_verify():
    unit_dir = os.environ["SHARDGATE_UNIT_DIR"]
    health = os.path.abspath(os.environ["SHARDGATE_HEALTH_BIN"])
    d = tmpdir()
    for sect, pages in (("man1", MAN_PAGES[:2]), ("man5", MAN_PAGES[2:])):
        os.makedirs(os.path.join(d, "man", sect))
        for p in pages:
            write(os.path.join(d, "man", sect, os.path.basename(p)), read(src(p)), "wb")
    units = []
    for name, binary in (("shardgate.service", sgtest.BIN), ("shardgate-health.service", health)):
        text = read(os.path.join(unit_dir, name)).decode()
        m = re.search(r"^ExecStart=(\S+)", text, re.M)
        ok(m and os.path.basename(m.group(1)) == os.path.basename(binary),
           "%s: ExecStart runs %s" % (name, os.path.basename(binary)))
        # The installed path is not there in a build tree: point it at the built binary.
        units.append(write(os.path.join(d, name), text.replace(m.group(1), binary, 1)))
        for key in ("NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes",
                    "PrivateMounts=yes", "IPAddressDeny=any", "IPAddressAllow=localhost"):
            ok(re.search("^" + key + "$", text, re.M), "%s: %s" % (name, key))
    env = dict(os.environ, MANPATH=os.path.join(d, "man"))
    r = run(["systemd-analyze", "verify"] + units, env=env)
    eq((r.returncode, r.stdout + r.stderr), (0, ""), "systemd-analyze verify")
    # The exposure levels docs/operations.md §6.3 gives, in tenths: no setting may slip.
    for u, tenths in zip(units, (9, 11)):
        r = run(["systemd-analyze", "security", "--offline=yes", "--threshold=%d" % tenths, u])
        eq(r.returncode, 0, "systemd-analyze security %s (exposure <= %.1f):\n%s"
           % (os.path.basename(u), tenths / 10, r.stdout[-400:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
