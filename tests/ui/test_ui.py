#!/usr/bin/python3
"""The status page (docs/api.md §19) and the ring drawn over HTTP (format=svg, docs/api.md §5
and docs/api.md §15), on a real `shardgate serve` on 127.0.0.1, in a real headless Chromium
(tests/ui/browser.py): every shard of the worked example with its exact totals in the DOM, the
ring's arcs, a PUT shown after the next refresh, a wrong token and a stopped gateway said
plainly, the dry run's drawing, and no console error under the page's Content-Security-Policy.

The health service's page and /metrics (docs/operations.md §1.4) likewise, over the journal of
a real gateway.

usage: test_ui.py SHARDGATE_BINARY HEALTH_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
Screenshots (1280x800) go to the test's temp dir, or to $SHARDGATE_UI_SHOTS when set.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import sgtest  # noqa: E402
from sgtest import Server, case, eq, main, ok, read, run_gateway, src, tmpdir, write  # noqa: E402

EPOCH0 = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"  # docs/contract.md §7
EPOCH_D = "e3f360d5dc73a734c643cc9685c3ed725155a47c"  # shard-d online
CLIENT, ADMIN = "client-s3cret", "admin-s3cret"
SPACE = 2**32
CSP = "default-src 'self'; form-action 'none'; frame-ancestors 'none'"
REFRESH_S = 5  # gateway.js REFRESH_MS


def secret(text):
    path = os.path.join(tmpdir(), "token-" + text)
    write(path, text + "\n")
    os.chmod(path, 0o600)
    return path


def gateway(*args):
    shards = os.path.join(tmpdir(), "shards.json")
    write(shards, read(src("input", "shards.json")).decode())
    return Server(shards=shards, args=["--token-file", secret(CLIENT),
                                       "--admin-token-file", secret(ADMIN)] + list(args))


def auth(token=CLIENT):
    return {"Authorization": "Bearer " + token}


def post_worked_example(s):
    r = s.post(json.loads(read(src("input", "changes.json"))),
               headers=dict(auth(), **{"Idempotency-Key": "sample-0001"}))
    eq(r.status, 200, "POST the worked example")


def shots_dir():
    return os.environ.get("SHARDGATE_UI_SHOTS") or tmpdir()


# --- the page's assets and the drawings over HTTP ------------------------------------------

@case("ui_http")
def assets_are_served_with_the_policy():
    with gateway() as s:
        r = s.get("/ui")
        eq((r.status, r.headers.get("location"), r.body), (308, "/ui/", b"/ui/\n"), "/ui redirects")
        for path, asset, ctype in (("/ui/", "gateway.html", "text/html; charset=utf-8"),
                                   ("/ui/app.js", "gateway.js", "text/javascript; charset=utf-8"),
                                   ("/ui/page.js", "page.js", "text/javascript; charset=utf-8"),
                                   ("/ui/style.css", "style.css", "text/css; charset=utf-8"),
                                   ("/ui/favicon.svg", "favicon.svg", "image/svg+xml")):
            r = s.get(path)  # no token: the assets hold no data
            eq(r.status, 200, "GET %s" % path)
            eq(r.body, read(src("ui", asset)), "%s is ui/%s byte for byte" % (path, asset))
            eq(r.headers.get("content-type"), ctype, "%s Content-Type" % path)
            eq(r.headers.get("content-security-policy"), CSP, "%s CSP" % path)
            eq(r.headers.get("x-content-type-options"), "nosniff", "%s nosniff" % path)
            eq(r.headers.get("cache-control"), "no-cache", "%s Cache-Control" % path)
        r = s.request("HEAD", "/ui/app.js")
        eq((r.status, r.body), (200, b""), "HEAD /ui/app.js")
        for path in ("/ui/missing.js", "/uix", "/ui/../v1/ring"):
            r = s.get(path)
            eq((r.status, r.error()), (404, ("not_found", "")), "GET %s" % path)
        eq(s.request("POST", "/ui/", body=b"").status, 405, "POST /ui/")
        eq(s.get("/v1/ring").status, 401, "the API still needs the token")


@case("ui_http")
def pages_hold_no_inline_script_or_style():
    """What default-src 'self' would block: inline scripts, handlers, style attributes."""
    html = read(src("ui", "gateway.html")).decode()
    scripts = re.findall(r"<script\b[^>]*>", html)
    ok(scripts and all(" src=" in t for t in scripts), "every script has a src: %r" % scripts)
    eq(re.findall(r"<script\b[^>]*>\s*[^<\s]", html), [], "no inline script body")
    eq(re.findall(r"\s(on[a-z]+|style)=", html), [], "no handler or style attribute")
    eq(re.findall(r"<style\b", html), [], "no style element")
    # the token form submits nowhere without its script: CSP form-action 'none', and a POST,
    # never a GET that would put the tokens in the URL (history, proxy logs)
    forms = re.findall(r"<form\b[^>]*>", html)
    ok(forms and all(' method="post"' in f and " action=" not in f for f in forms),
       "every form posts, to nowhere: %r" % forms)


@case("ui_http")
def ring_svg_is_the_offline_drawing():
    """GET /v1/ring?format=svg is `shardgate ring --svg`, byte for byte; the dry run's
    format=svg is `shardgate plan --svg`."""
    d = tmpdir()
    with gateway() as s:
        r = s.get("/v1/ring?format=svg", headers=auth())
        eq((r.status, r.headers.get("content-type"), r.headers.get("x-content-type-options")),
           (200, "image/svg+xml", "nosniff"), "ring svg")
        j = s.get("/v1/ring", headers=auth())
        eq((j.headers.get("content-type"), j.headers.get("x-content-type-options")),
           ("application/json", "nosniff"), "a JSON answer")
        off = run_gateway("ring", "--conf", src("conf", "dispatch.env"), "--shards", s.shards,
                          "--svg", os.path.join(d, "ring.svg"))
        eq(off.returncode, 0, "shardgate ring --svg")
        eq(r.body, read(os.path.join(d, "ring.svg")), "the same bytes as shardgate ring --svg")
        eq(ET.fromstring(r.body).get("data-epoch"), EPOCH0, "data-epoch")
        for query, status in (("?format=json", 200), ("?format=xml", 400),
                              ("?format=svg&points=1", 400), ("?format=SVG", 400)):
            r = s.get("/v1/ring" + query, headers=auth())
            eq(r.status, status, "GET /v1/ring%s" % query)
            if status == 400:
                eq(r.error(), ("invalid_parameter", "format"), "error of %s" % query)
        body = read(src("tests", "plan", "shards-d-online.json"))
        put = {"Content-Type": "application/json", "If-Match": '"%s"' % EPOCH0}
        put.update(auth(ADMIN))
        r = s.request("PUT", "/v1/admin/membership?dry_run=1&format=svg", body=body, headers=put)
        eq((r.status, r.headers.get("content-type")), (200, "image/svg+xml"), "dry run svg")
        off = run_gateway("plan", "--conf", src("conf", "dispatch.env"), "--shards", s.shards,
                          "--to", src("tests", "plan", "shards-d-online.json"),
                          "--svg", os.path.join(d, "plan.svg"))
        eq(off.returncode, 0, "shardgate plan --svg")
        eq(r.body, read(os.path.join(d, "plan.svg")), "the same bytes as shardgate plan --svg")
        for query in ("?format=svg", "?dry_run=0&format=svg", "?dry_run=1&format=png"):
            r = s.request("PUT", "/v1/admin/membership" + query, body=body, headers=put)
            eq((r.status, r.error()), (400, ("invalid_parameter", "format")), "PUT %s" % query)
        eq(s.get("/v1/ring", headers=auth()).json()["epoch"], EPOCH0, "nothing changed")


# --- in the browser --------------------------------------------------------------------------

def browser():
    from browser import Browser  # python3-websocket: only the browser cases need it
    return Browser()


def give_tokens(b, client=CLIENT, admin=ADMIN):
    b.js("document.getElementById('token').value = %s;"
         "document.getElementById('admin-token').value = %s;"
         "document.getElementById('token-form').requestSubmit(); true"
         % (json.dumps(client), json.dumps(admin)))


def rows(b):
    return b.js("[...document.querySelectorAll('#shards tbody tr')].map(tr => ["
                "tr.dataset.shard, tr.children[1].textContent, tr.querySelector('.load').textContent,"
                "tr.querySelector('.received').textContent])")


def ready_page(b, s):
    b.open("http://127.0.0.1:%d/ui/" % s.port)
    give_tokens(b)
    b.wait("document.body.dataset.state === 'ready' && document.querySelector('#ring svg')",
           30, "the page shows the gateway ready, with its ring")


def post_past_doubles(s):
    """Batches of one change of 2^53-1, 2^53-1 and 1 on shard-a: with the worked example's 8, a
    total no double holds (2^54 + 7: doubles there are 4 apart, and the nearest prints as
    18014398509481990)."""
    key = next(k for k in ("big-%d" % i for i in range(40))
               if s.get("/v1/lookup?key=" + k, headers=auth()).json()["shard"] == "shard-a")
    for n, size in enumerate((2**53 - 1, 2**53 - 1, 1)):
        batch = {"batch_id": "past-doubles-%d" % n,
                 "changes": [{"id": "c1", "key": key, "size": size}]}
        r = s.post(batch, headers=dict(auth(), **{"Idempotency-Key": batch["batch_id"]}))
        eq(r.status, 200, "POST one change of %d on shard-a" % size)


@case("ui")
def the_page_shows_every_shard_and_the_ring():
    with gateway() as s, browser() as b:
        post_worked_example(s)
        post_past_doubles(s)
        ready_page(b, s)
        want = [[x["id"], x["state"], str(x["load_total"]), str(x["received_total"])]
                for x in s.get("/v1/shards", headers=auth()).json()["shards"]]
        eq(want[0], ["shard-a", "online", "18014398509481991", "5"],
           "shard-a: the worked example's 8, two changes of 2^53-1 and one of 1")
        eq(rows(b), want, "every shard with its state and exact totals")
        arcs = b.js("[...document.querySelectorAll('#ring path.arc')].map(p => "
                    "[p.dataset.shard, Number(p.dataset.start), Number(p.dataset.len)])")
        svg = ET.fromstring(s.get("/v1/ring?format=svg", headers=auth()).body)
        drawn = [[p.get("data-shard"), int(p.get("data-start")), int(p.get("data-len"))]
                 for p in svg.iter("{http://www.w3.org/2000/svg}path")]
        eq(arcs, drawn, "the page shows the ring's arcs")
        eq((len(arcs), sum(a[2] for a in arcs)), (331, SPACE), "331 arcs over the circle")
        eq(b.js("document.querySelector('#epoch dd').textContent"), EPOCH0, "the epoch")
        eq(b.js("document.getElementById('shards-count').textContent"), "5 shards", "the count")
        eq(b.js("document.getElementById('banner').hidden"), True, "no banner")
        b.screenshot(os.path.join(shots_dir(), "status-page.png"))
        # From the load through a whole refresh with the token: no console error (a CSP
        # refusal is one) but the 401s of the page's first reads, made before it had the token.
        before = b.js("document.getElementById('updated').textContent")
        b.wait("document.getElementById('updated').textContent !== %s" % json.dumps(before),
               REFRESH_S * 4, "the next refresh")
        unauthorized = "Failed to load resource: the server responded with a status of 401 " \
                       "(Unauthorized)"
        eq([p for p in b.console_problems() if p != unauthorized], [],
           "no console error or CSP refusal")


def filter_shards(b, text):
    b.js("const f = document.getElementById('shard-filter'); f.value = %s;"
         "f.dispatchEvent(new Event('input')); true" % json.dumps(text))


@case("ui")
def a_large_membership_is_shown_a_thousand_rows_at_a_time():
    """1,200 shards: the first 1,000 rows, the count said, a filter by id finds the others; the
    ring drawn sampled (more than 4,096 runs)."""
    shards = os.path.join(tmpdir(), "shards.json")
    write(shards, json.dumps({"shards": [{"id": "s%04d" % i, "state": "online", "capacity": 9}
                                         for i in range(1200)]}))
    with Server(shards=shards) as s, browser() as b:
        b.open("http://127.0.0.1:%d/ui/" % s.port)
        b.wait("document.body.dataset.state === 'ready' && document.querySelector('#ring svg')",
               30, "the page shows the gateway ready, with its ring")
        eq(b.js("document.querySelectorAll('#shards tbody tr').length"), 1000, "1,000 rows")
        eq(b.js("document.getElementById('shards-count').textContent"),
           "1200 shards; the first 1000 shown: filter by id to see others", "the count")
        filter_shards(b, "s115")
        eq([r[0] for r in rows(b)], ["s%04d" % i for i in range(1150, 1160)], "the filtered rows")
        eq(b.js("document.getElementById('shards-count').textContent"),
           "1200 shards, 10 matching", "the count, filtered")
        eq(b.js("document.querySelectorAll('#ring path.bin').length > 0 && "
                "document.querySelectorAll('#ring path.arc').length === 0"), True,
           "the ring drawn sampled")


@case("ui")
def a_put_shows_after_the_next_refresh():
    with gateway() as s, browser() as b:
        ready_page(b, s)
        eq([r[:2] for r in rows(b)][3], ["shard-d", "offline"], "shard-d offline at first")
        put = {"Content-Type": "application/json", "If-Match": '"%s"' % EPOCH0}
        put.update(auth(ADMIN))
        r = s.request("PUT", "/v1/admin/membership",
                      body=read(src("tests", "plan", "shards-d-online.json")), headers=put)
        eq(r.status, 200, "PUT shard-d online")
        b.wait("document.querySelector('#epoch dd').textContent === %s" % json.dumps(EPOCH_D),
               REFRESH_S * 4, "the new epoch after a refresh")
        b.wait("document.querySelector('#ring svg').dataset.epoch === %s" % json.dumps(EPOCH_D),
               REFRESH_S * 4, "the ring redrawn for the new epoch")
        eq([r[:2] for r in rows(b)][3], ["shard-d", "online"], "shard-d online")
        eq(b.js("document.querySelector('#epochs tbody tr').dataset.epoch"), EPOCH_D,
           "the chain's newest epoch first")
        eq(b.js("document.location.pathname"), "/ui/", "no page reload")


SECTIONS_AFTER = "[...document.querySelectorAll('main section')].map(" \
    "s => getComputedStyle(s, '::after').content)"


@case("ui")
def waiting_is_said_and_the_chain_fits_at_1280():
    """Before the gateway's first answer the badge and every panel say what they wait for (the
    page's script held back, so that moment lasts); at 1280 px the epoch chain shows every
    column, time and first seq included, with no scrollbar (docs/api.md §19)."""
    with gateway() as s, browser() as b:
        b.send("Emulation.setScriptExecutionDisabled", value=True)
        b.open("http://127.0.0.1:%d/ui/" % s.port)
        eq(b.js("document.getElementById('state').textContent"), "waiting for the gateway",
           "the badge before the first answer")
        waiting = b.js(SECTIONS_AFTER)
        eq(waiting, ['"waiting for the gateway…"'] * len(waiting), "every panel says it waits")
        ok(len(waiting) >= 5, "the page's panels: %r" % waiting)
        b.send("Emulation.setScriptExecutionDisabled", value=False)
        put = {"Content-Type": "application/json"}
        put.update(auth(ADMIN))
        for doc, epoch in ((read(src("tests", "plan", "shards-d-online.json")), EPOCH0),
                           (read(src("input", "shards.json")), EPOCH_D)):
            r = s.request("PUT", "/v1/admin/membership", body=doc,
                          headers=dict(put, **{"If-Match": '"%s"' % epoch}))
            eq(r.status, 200, "PUT from %s" % epoch)
        ready_page(b, s)
        eq(b.js(SECTIONS_AFTER), ["none"] * len(waiting), "no panel waits once answered")
        eq(b.js("document.querySelectorAll('#epochs tbody tr').length"), 3, "three epochs")
        eq(b.js("window.innerWidth"), 1280, "the viewport")
        box = b.js("(() => { const s = document.getElementById('epochs').parentElement;"
                   "return [s.scrollWidth, s.clientWidth, s.getBoundingClientRect().right,"
                   "Math.max(...[...document.querySelectorAll('#epochs td, #epochs th')]"
                   ".map(c => c.getBoundingClientRect().right)),"
                   "document.querySelector('main').clientWidth]; })()")
        ok(box[0] <= box[1] and box[3] <= box[2],
           "the chain fits: scrollWidth %s <= clientWidth %s, last cell's right %s <= %s" % (
               box[0], box[1], box[3], box[2]))
        # Not only with these short ids and seqs: the chain has the page's whole width (a
        # half-width panel fitted them with no pixel to spare, and clipped longer ones).
        ok(box[1] >= 0.9 * box[4], "the chain spans the page: %s of %s px" % (box[1], box[4]))
        b.screenshot(os.path.join(shots_dir(), "status-page-chain.png"))


FLAGS = "[...document.querySelectorAll('#shards tbody tr')].map(tr => [tr.dataset.shard, " \
    "[...tr.querySelectorAll('.flags span')].map(f => [f.textContent, f.className, " \
    "getComputedStyle(f).color])])"


@case("ui")
def over_capacity_and_draining_are_flagged_at_1280():
    """Under `report` a batch may put a shard over its capacity: its row says so in words and
    in the colour of errors (from shardgate_shard_over_capacity_batches_total, docs/api.md
    §8); a draining and an offline shard say what they are; at 1280 px the table has no
    scrollbar."""
    with gateway() as s, browser() as b:
        post_worked_example(s)
        for n in (1, 2):
            r = s.post({"batch_id": "over-%d" % n, "changes": [
                {"id": "c1", "key": "order:1001", "size": 21}]}, headers=auth())
            eq((r.status, r.json()["shards"]["shard-b"]["over_capacity"]), (200, True),
               "POST over shard-b's capacity under report")
        ready_page(b, s)
        bad, warn, muted = "rgb(179, 38, 30)", "rgb(154, 103, 0)", "rgb(91, 102, 112)"
        eq(b.js(FLAGS), [
            ["shard-a", []],
            ["shard-b", [["over capacity in 2 batches", "flag bad", bad]]],
            ["shard-c", []],
            ["shard-d", [["offline: takes no changes", "flag muted", muted]]],
            ["shard-e", [["draining: leaving; set it offline once its data is copied",
                          "flag warn", warn]]]], "each shard's flags, words and colour")
        eq(b.js("[...document.querySelectorAll('#shards tr.over-capacity')]"
                ".map(tr => tr.dataset.shard)"), ["shard-b"], "the row marked")
        eq(b.js("window.innerWidth"), 1280, "the viewport")
        box = b.js("(() => { const s = document.getElementById('shards').parentElement;"
                   "return [s.scrollWidth, s.clientWidth]; })()")
        ok(box[0] <= box[1], "the shards table fits: scrollWidth %s <= clientWidth %s" % tuple(box))
        b.screenshot(os.path.join(shots_dir(), "status-page-flags.png"))


@case("ui")
def a_wrong_token_is_said_plainly():
    with gateway() as s, browser() as b:
        b.open("http://127.0.0.1:%d/ui/" % s.port)
        give_tokens(b, client="not-the-token")
        b.wait("document.body.dataset.state === 'token'", 20, "the token refused")
        eq(b.js("document.getElementById('banner').textContent"),
           "The token was refused (401 unauthorized): enter the gateway's client token above.",
           "the banner")
        eq(b.js("document.getElementById('state').textContent"), "token refused", "the badge")
        b.screenshot(os.path.join(shots_dir(), "status-page-token.png"))


@case("ui")
def a_stopped_gateway_is_said_plainly():
    with gateway() as s, browser() as b:
        ready_page(b, s)
        eq(s.stop(), 0, "the gateway stops")
        b.wait("document.body.dataset.state === 'down'", REFRESH_S * 4, "the page says down")
        text = b.js("document.getElementById('banner').textContent")
        ok(text.startswith("The gateway at 127.0.0.1:%d does not answer (" % s.port), text)
        eq(b.js("document.getElementById('state').textContent"), "down", "the badge")


@case("ui")
def a_dry_run_draws_what_would_move():
    with gateway() as s, browser() as b:
        ready_page(b, s)
        doc = read(src("tests", "plan", "shards-d-online.json")).decode()
        b.js("document.getElementById('proposal').value = %s;"
             "document.getElementById('dry-run').click(); true" % json.dumps(doc))
        b.wait("document.querySelector('#plan svg')", 20, "the dry run's drawing")
        moved = b.js("Number(document.querySelector('#plan text.moves').dataset.moved)")
        put = {"Content-Type": "application/json", "If-Match": '"%s"' % EPOCH0}
        put.update(auth(ADMIN))
        plan = s.request("PUT", "/v1/admin/membership?dry_run=1", body=doc.encode(), headers=put)
        eq(moved, plan.json()["moved_points"], "data-moved is the dry run's moved_points")
        eq(b.js("new Set([...document.querySelectorAll('#plan path.move')]"
                ".map(p => p.dataset.shard)).size"), 1, "one new owner")
        eq(s.get("/v1/ring", headers=auth()).json()["epoch"], EPOCH0, "nothing changed")
        b.js("document.getElementById('proposal').value = '{\"shards\": 1}';"
             "document.getElementById('dry-run').click(); true")
        b.wait("document.getElementById('plan-status').className === 'error'", 20, "refused")
        ok(b.js("document.getElementById('plan-status').textContent")
           .startswith("HTTP 422 invalid_membership: "), "the gateway's refusal, said")
        b.js("document.getElementById('plan').scrollIntoView(); true")
        b.screenshot(os.path.join(shots_dir(), "status-page-dry-run.png"))


# --- shardgate-health's page and metrics ------------------------------------------------------

class Health:
    """`shardgate-health serve` over a gateway's journal, on a free 127.0.0.1 port."""

    def __init__(self, server, port=None, args=()):
        self.shards = os.path.join(tmpdir(), "shards.json")
        write(self.shards, read(server.shards).decode())
        self.port = port or sgtest.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen(
            [sgtest.HEALTH, "serve", "--listen", "127.0.0.1:%d" % self.port, "--conf",
             src("conf", "dispatch.env"), "--shards", self.shards, "--journal",
             os.path.join(server.state_dir, "journal.jsonl")] + list(args),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sgtest.wait_until(lambda: self.get("/livez")[0] == 200, 30, "health answers /livez")

    def get(self, path, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        except OSError:
            return 0, {}, b""
        finally:
            conn.close()

    def metrics(self):
        status, headers, body = self.get("/metrics")
        eq((status, headers.get("content-type")), (200, "text/plain; version=0.0.4; charset=utf-8"),
           "GET /metrics")
        return {line.split(" ")[0]: line.split(" ")[1] for line in body.decode().splitlines()
                if line.startswith("shardgate_health_")}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait(10)
        return False


@case("ui_http")
def health_serves_its_page_and_metrics():
    with gateway() as s:
        post_worked_example(s)
        with Health(s) as h:
            status, headers, body = h.get("/ui/")
            eq((status, body), (200, read(src("ui", "health.html"))), "GET /ui/ is ui/health.html")
            eq(headers.get("content-security-policy"), CSP, "the page's CSP")
            eq(h.get("/ui/app.js")[2], read(src("ui", "health.js")), "/ui/app.js is ui/health.js")
            eq(h.get("/ui/style.css")[2], read(src("ui", "style.css")), "the one stylesheet")
            eq(h.get("/ui/page.js")[2], read(src("ui", "page.js")), "the pages' shared script")
            status, headers, _ = h.get("/ui")
            eq((status, headers.get("location")), (308, "/ui/"), "GET /ui redirects")
            eq(h.get("/ui/nothing")[0], 404, "GET /ui/nothing")
            verdict = json.loads(h.get("/healthz")[2])
            eq(verdict["status"], "pass", "the worked example passes")
            m = h.metrics()
            eq(m, {"shardgate_health_pass": "1", "shardgate_health_judged": "1",
                   "shardgate_health_issues": "0",
                   "shardgate_health_checks": str(verdict["checks"]["checks_ran"][0]["observedValue"]),
                   "shardgate_health_receipts_verified": "1",
                   "shardgate_health_placements_verified": "8",
                   "shardgate_health_last_full_verification_timestamp_seconds":
                       m["shardgate_health_last_full_verification_timestamp_seconds"],
                   "shardgate_health_reverify_interval_seconds": "60"}, "the metrics of a pass")
            ok(int(m["shardgate_health_last_full_verification_timestamp_seconds"]) >
               time.time() - 600, "the last full verification is recent")
            os.rename(h.shards, h.shards + ".away")  # cannot judge: never pass
            m = h.metrics()
            eq((m["shardgate_health_pass"], m["shardgate_health_judged"],
                m["shardgate_health_issues"]), ("0", "0", "1"), "the metrics when it cannot judge")
            os.rename(h.shards + ".away", h.shards)
            eq(h.metrics()["shardgate_health_pass"], "1", "pass again with the file back")
            eq(s.stop(), 0, "the gateway stops")
            with open(os.path.join(s.state_dir, "journal.jsonl"), "a", encoding="utf-8") as f:
                f.write('{"not":"a record"}\n')  # a line health judges, and fails
            m = h.metrics()
            eq((m["shardgate_health_pass"], m["shardgate_health_judged"]), ("0", "1"),
               "the metrics of an issue found")
            ok(int(m["shardgate_health_issues"]) >= 1, "issues counted: %r" % m)


@case("ui_http")
def health_url_is_checked_and_named_in_the_policy():
    """serve --health-url (docs/api.md §19): /ui/config.json names it, the page's policy lets it
    connect to that origin and no other; a URL the policy could not name safely is refused."""
    with gateway() as s:
        r = s.get("/ui/config.json")
        eq((r.status, r.body, r.headers.get("content-type")),
           (200, b'{"health_url":null}\n', "application/json"), "no --health-url")
        eq(s.get("/ui/").headers.get("content-security-policy"), CSP, "the page's policy")
    for given, base, origin in (("http://127.0.0.1:9/", "http://127.0.0.1:9/", "http://127.0.0.1:9"),
                                ("https://[::1]:8081", "https://[::1]:8081/", "https://[::1]:8081"),
                                ("http://health.example/sg/", "http://health.example/sg/",
                                 "http://health.example"),
                                ("http://h:65535/", "http://h:65535/", "http://h:65535")):
        with gateway("--health-url", given) as s:
            r = s.get("/ui/config.json")
            eq(r.body, b'{"health_url":"%s"}\n' % base.encode(), "config for %s" % given)
            for path in ("/ui/", "/ui/config.json"):
                eq(s.get(path).headers.get("content-security-policy"),
                   "default-src 'self'; connect-src 'self' %s; form-action 'none'; "
                   "frame-ancestors 'none'" % origin, "the policy of %s for %s" % (path, given))
    d = tmpdir()
    for bad in ("javascript:alert(1)//", "http://h/x", "http://h/a b/", "http://h:123456/",
                "http://h:65536/", "http://h:0/", "http://h:99999/",
                'http://h/"x/', "http://h;x/", "http://", "ftp://h/", "http://h/\x1b[31m/",
                "http://h/" + "a/" * 100):
        r = run_gateway("serve", "--conf", src("conf", "dispatch.env"), "--shards",
                        src("input", "shards.json"), "--state-dir", d, "--no-token",
                        "--health-url", bad)
        eq((r.returncode, r.stderr.splitlines()[0]),
           (64, "shardgate: --health-url %s: expected http://HOST[:PORT]/ or "
                "https://HOST[:PORT]/PATH/ (the health service's base: the page reads URL "
                "healthz and links URL ui/)" % bad[:200]), "refused: %r" % bad)
        eq(os.listdir(d), [], "nothing written for %r" % bad)


@case("ui_http")
def health_lets_one_origin_read_healthz():
    """shardgate-health serve --allow-origin (docs/operations.md §1.4): /healthz carries
    Access-Control-Allow-Origin for that origin only; without the option, for none."""
    page = "http://127.0.0.1:8080"
    with gateway() as s:
        post_worked_example(s)
        with Health(s, args=["--allow-origin", page]) as h:
            status, headers, _ = h.get("/healthz", {"Origin": page})
            eq((status, headers.get("access-control-allow-origin"), headers.get("vary")),
               (200, page, "Origin"), "the allowed origin")
            for other in ("http://127.0.0.1:8081", "http://evil.example", "null"):
                _, headers, _ = h.get("/healthz", {"Origin": other})
                eq((headers.get("access-control-allow-origin"), headers.get("vary")),
                   (None, "Origin"), "origin %s" % other)
            _, headers, _ = h.get("/metrics", {"Origin": page})
            eq(headers.get("access-control-allow-origin"), None, "/metrics is not shared")
        with Health(s) as h:
            _, headers, _ = h.get("/healthz", {"Origin": page})
            eq((headers.get("access-control-allow-origin"), headers.get("vary")), (None, None),
               "no --allow-origin: no page reads it")
    for args, message in (
            (["serve", "--allow-origin", "http://h/"], "--allow-origin http://h/: expected "
             "http://HOST[:PORT] or https://HOST[:PORT], no path (a page's origin)"),
            (["serve", "--allow-origin", "*"], "--allow-origin *: expected http://HOST[:PORT] "
             "or https://HOST[:PORT], no path (a page's origin)"),
            (["check", "--allow-origin", page], "--allow-origin is for serve")):
        r = subprocess.run([sgtest.HEALTH] + args[:1] + [
            "--conf", src("conf", "dispatch.env"), "--shards", src("input", "shards.json"),
            "--journal", "/nonexistent"] + args[1:], capture_output=True, text=True, timeout=30)
        eq((r.returncode, r.stderr.splitlines()[0]), (64, "shardgate-health: " + message),
           "refused: %r" % args)


HEALTH_ROWS = "[...document.querySelectorAll('#health dd')].map(d => [d.textContent, d.className])"


@case("ui")
def the_page_shows_the_health_verdict_and_links_it():
    """With --health-url the page reads the health service's /healthz (which allows its origin)
    and links its page; a health service that does not answer or does not allow the page is
    "cannot judge", in the colour of errors, never green (docs/api.md §19)."""
    port = sgtest.free_port()
    base = "http://127.0.0.1:%d/" % port
    with gateway("--health-url", base) as s, browser() as b:
        post_worked_example(s)
        cannot = ("cannot judge: %shealthz does not answer this page (down, or without "
                  "--allow-origin http://127.0.0.1:%d)" % (base, s.port), "bad")
        with Health(s, port=port, args=["--allow-origin", "http://127.0.0.1:%d" % s.port]) as h:
            ready_page(b, s)
            b.wait("Number(document.getElementById('health').dataset.checked) >= 1", 20,
                   "a verdict read")
            eq(b.js(HEALTH_ROWS), [["pass (HTTP 200)", "ok"], [base, "mono"]], "the verdict")
            eq(b.js("[document.getElementById('health-page').hidden,"
                    "document.getElementById('health-link').href]"), [False, base + "ui/"],
               "the link to the health service's page")
            b.screenshot(os.path.join(shots_dir(), "status-page-health.png"))
            os.rename(h.shards, h.shards + ".away")  # health cannot read its input: fail
            b.wait("document.querySelector('#health dd').textContent.startsWith('fail')",
                   REFRESH_S * 4, "the verdict fails")
            eq(b.js(HEALTH_ROWS)[0], ["fail (HTTP 503): 1 issue", "bad"], "a failing verdict")
        b.wait("document.querySelector('#health dd').textContent.startsWith('cannot')",
               REFRESH_S * 4, "health stopped")
        eq(b.js(HEALTH_ROWS)[0], list(cannot), "a health service down is cannot judge")
        with Health(s, port=port) as h:
            ok(h.get("/healthz")[0] == 200, "health answers, without --allow-origin")
            seen = b.js("Number(document.getElementById('health').dataset.checked)")
            b.wait("Number(document.getElementById('health').dataset.checked) >= %d" % (seen + 2),
                   REFRESH_S * 6, "two verdicts read since health came back")
            eq(b.js(HEALTH_ROWS)[0], list(cannot),
               "a health service that does not allow the page is cannot judge")


@case("ui")
def the_health_page_shows_the_verdict():
    with gateway() as s:
        post_worked_example(s)
        with Health(s) as h, browser() as b:
            b.open(h.url + "/ui/")
            b.wait("document.body.dataset.state === 'pass'", 20, "the page shows pass")
            verdict = json.loads(h.get("/healthz")[2])
            criteria = [n for n, c in verdict["checks"].items()
                        if c[0]["observedUnit"] == "evaluations" and n != "checks_ran"]
            eq(b.js("document.querySelectorAll('#criteria tbody tr').length"), len(criteria),
               "a row per criterion")
            eq(b.js("document.getElementById('issues-none').hidden"), False, "no issue, said")
            b.screenshot(os.path.join(shots_dir(), "health-page-pass.png"))
            os.rename(h.shards, h.shards + ".away")
            b.wait("document.body.dataset.state === 'fail'", REFRESH_S * 4, "the page shows fail")
            eq(b.js("[...document.querySelectorAll('#issues li')].map(li => li.dataset.criterion)"),
               ["input"], "the issue, with its criterion")
            eq(b.js("document.getElementById('state').textContent"), "fail", "the badge")
            b.screenshot(os.path.join(shots_dir(), "health-page.png"))
            h.proc.kill()
            b.wait("document.body.dataset.state === 'down'", REFRESH_S * 4, "the page says down")
            ok(b.js("document.getElementById('banner').textContent").startswith(
                "The health service at 127.0.0.1:%d does not answer (" % h.port), "the banner")
            expected = ("Failed to load resource: the server responded with a status of 503 "
                        "(Service Unavailable)", "Failed to load resource: "
                        "net::ERR_CONNECTION_REFUSED")
            eq([p for p in b.console_problems() if p not in expected], [],
               "no console error but the 503 of a fail and the refused connections (no CSP "
               "refusal)")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "health", "source")))
