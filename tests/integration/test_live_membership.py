#!/usr/bin/env python3
"""Live membership (docs/api.md §15 and §16, docs/journal.md §2): SIGHUP and
PUT /v1/admin/membership through the one apply path, the epoch chain in the journal, batches in
flight across a switch, crashes around the switch, a journal written before live membership,
and memory over 1,000 reloads. The real `shardgate serve` on 127.0.0.1, real signals, kill -9.

usage: test_live_membership.py SHARDGATE_BINARY SOURCE_DIR [CASE... | --group GROUP] | --list
"""
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sgtest  # noqa: E402
from sgtest import (Failure, Server, batch, case, eq, journal_lines, main, ok,  # noqa: E402
                    read, run_server, src, tmpdir, wait_until, write)

EPOCH0 = "f60a5fb19effc4cfa95aed0af45997f72905f6ae"  # docs/contract.md §7
RING0 = "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc"
ADMIN = "admin-s3cret"
CLIENT = "client-s3cret"


def base_shards():
    with open(src("input", "shards.json")) as f:
        return json.load(f)


def changed_shards(**states):
    """The worked example's membership with some states changed (shard_d="online", ...)."""
    doc = base_shards()
    for s in doc["shards"]:
        key = s["id"].replace("-", "_")
        if key in states:
            s["state"] = states[key]
    return doc


def with_capacity(doc, shard_id, capacity):
    for s in doc["shards"]:
        if s["id"] == shard_id:
            s["capacity"] = capacity
    return doc


epoch_of = sgtest.epoch_of


def shards_file(doc=None):
    """A writable copy of a membership: SIGHUP reads it, PUT replaces it."""
    path = os.path.join(tmpdir(), "shards.json")
    write(path, json.dumps(doc or base_shards()))
    return path


def secret(text):
    path = os.path.join(tmpdir(), "token")
    write(path, text + "\n")
    os.chmod(path, 0o600)
    return path


def admin_server(shards=None, client=False, env=None, state_dir=None):
    args = ["--admin-token-file", secret(ADMIN)]
    if client:
        args += ["--token-file", secret(CLIENT)]
    return Server(shards=shards or shards_file(), args=args, env=env, state_dir=state_dir)


def put(s, doc, if_match=None, token=ADMIN, query="", raw_if_match=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    if if_match:
        headers["If-Match"] = '"%s"' % if_match
    if raw_if_match is not None:
        headers["If-Match"] = raw_if_match
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return s.request("PUT", "/v1/admin/membership" + query, body=body, headers=headers)


def current_epoch(s, headers=None):
    r = s.get("/v1/ring", headers=headers)
    eq(r.status, 200, "GET /v1/ring")
    return r.json()["epoch"]


def epochs(s, headers=None):
    r = s.get("/v1/epochs", headers=headers)
    eq(r.status, 200, "GET /v1/epochs")
    return r.json()["epochs"]


def sighup(s, event):
    """Sends SIGHUP and waits for one more `event` log line; returns it."""
    before = len(s.events(event))
    s.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: len(s.events(event)) > before, 20, "the %s event" % event)
    return s.events(event)[-1]


def metric(s, name, headers=None):
    for line in s.get("/metrics", headers=headers).body.decode().splitlines():
        if line.startswith(name + " "):
            return line.split(" ", 1)[1]
    raise Failure("no metric %s" % name)


def reload_events(s):
    return [json.loads(l) for l in list(s.lines) if l.startswith('{"event":"reload_')]


def epoch_records(state_dir):
    return [json.loads(l) for l in journal_lines(state_dir) if l.startswith(b'{"type":"epoch"')]


# ---------------------------------------------------------------- SIGHUP

@case("live_sighup")
def sighup_applies_a_changed_membership():
    path = shards_file()
    with admin_server(shards=path) as s:
        eq(s.post(batch("before")).status, 200, "POST before")
        at_start = float(metric(s, "shardgate_reload_last_success_timestamp_seconds"))
        new = changed_shards(shard_d="online")
        write(path, json.dumps(new))
        time.sleep(0.01)
        sent = time.time()
        ev = sighup(s, "reload_applied")
        last = float(metric(s, "shardgate_reload_last_success_timestamp_seconds"))
        ok(at_start < last and sent - 0.5 <= last <= time.time() + 0.5,
           "the reload's time %f (start %f, SIGHUP sent %f)" % (last, at_start, sent))
        eq((ev["source"], ev["epoch"], ev["epoch_seq"]), ("sighup", epoch_of(new), 2), "event")
        eq(current_epoch(s), epoch_of(new), "GET /v1/ring names the new epoch")
        eq(s.get("/v1/ring").json()["online"], ["shard-a", "shard-b", "shard-c", "shard-d"],
           "shard-d is in the ring")
        r = s.post(batch("after"))
        eq((r.status, r.json()["epoch"]), (200, epoch_of(new)), "a batch after names it")
        chain = epochs(s)
        eq([(e["epoch"], e["epoch_seq"], e["prev"], e["source"], e["first_seq"]) for e in chain],
           [(EPOCH0, 1, None, "start", 1), (epoch_of(new), 2, EPOCH0, "sighup", 2)], "chain")
        eq((metric(s, "shardgate_epoch_seq"), metric(s, 'shardgate_reloads_total{result="applied"}')),
           ("2", "1"), "metrics")
        eq(s.stop(), 0, "exit")
    rec = epoch_records(s.state_dir)[-1]
    eq(list(rec), ["type", "epoch", "epoch_seq", "prev", "source", "time", "first_seq", "ring_id",
                   "contract", "shards"], "epoch record keys (docs/journal.md §2)")
    eq((rec["epoch"], rec["epoch_seq"], rec["prev"], rec["source"], rec["first_seq"]),
       (epoch_of(new), 2, EPOCH0, "sighup", 2), "epoch record")


@case("live_moves")
def moves_follow_each_change():
    """GET /v1/moves (docs/api.md §20) on a live server over three changes (SIGHUP, PUT, a
    capacity-only PUT): each item is `shardgate moves` and the probe's `moves` for its two
    epochs, byte for byte, with its cursor; each shard's view (/v1/shards/{id}/moves) is exactly
    the ranges it gives and takes; paging by limit; the empty page past the head; a record whose
    segment line is damaged is 500 record_corrupt; bad parameters are 400. Segments of 64 KiB
    rotate between the changes, so the records are read from sealed segments as well as the
    active one."""
    path = shards_file()
    server = admin_server(shards=path)
    server.args += ["--segment-bytes", "65536"]
    with server as s:
        eq(s.post(batch("m0")).status, 200, "POST")
        sgtest.post_batches(s, 12, "m1-", changes=40)
        write(path, json.dumps(changed_shards(shard_d="online")))
        sighup(s, "reload_applied")
        sgtest.post_batches(s, 12, "m2-", changes=40)
        eq(put(s, changed_shards(shard_d="online", shard_b="offline"),
               if_match=current_epoch(s)).status, 200, "PUT")
        sgtest.post_batches(s, 12, "m3-", changes=40)
        eq(put(s, with_capacity(changed_shards(shard_d="online", shard_b="offline"), "shard-a",
                                 7), if_match=current_epoch(s)).status, 200, "PUT capacity")
        r = s.get("/v1/moves")
        eq(r.status, 200, "GET /v1/moves")
        doc = r.json()
        eq(([(i["from_epoch_seq"], i["epoch_seq"]) for i in doc["items"]], doc["last_epoch_seq"]),
           ([(1, 2), (2, 3), (3, 4)], 4), "one item a change")
        items = r.body.decode()[len('{"items":['):r.body.decode().rindex('],"last_epoch_seq"')]
        for a in (1, 2, 3):
            c = sgtest.run_gateway("moves", "--state-dir", s.state_dir, "--from", str(a), "--to",
                                   str(a + 1))
            p = sgtest.run([sys.executable, src("client", "probe.py"), "moves", "--state-dir",
                            s.state_dir, "--from", str(a), "--to", str(a + 1)])
            eq((c.returncode, p.stdout), (0, c.stdout), "moves %d -> %d: C and the probe" % (a, a + 1))
            want = '{"type":"moves","from_epoch_seq":%d,"epoch_seq":%d,%s' % (
                a, a + 1, c.stdout.rstrip("\n")[1:])
            ok(want in items, "the item of %d -> %d is `shardgate moves`'s bytes" % (a, a + 1))
        last = doc["items"][2]
        eq((last["moved_points"], last["ranges"]), (0, []), "a capacity change moves nothing")
        for shard in ("shard-a", "shard-b", "shard-d"):
            mine = s.get("/v1/shards/%s/moves" % shard).json()
            eq(mine["last_epoch_seq"], 4, shard + ": cursor")
            for item, whole in zip(mine["items"], doc["items"]):
                eq(item, {"type": "moves", "from_epoch_seq": whole["from_epoch_seq"],
                          "epoch_seq": whole["epoch_seq"], "from_epoch": whole["from_epoch"],
                          "to_epoch": whole["to_epoch"], "shard": shard,
                          "outgoing": [{"lo": g["lo"], "hi": g["hi"], "to": g["to"]}
                                       for g in whole["ranges"] if g["from"] == shard],
                          "incoming": [{"lo": g["lo"], "hi": g["hi"], "from": g["from"]}
                                       for g in whole["ranges"] if g["to"] == shard]},
                   "%s's view of %d -> %d" % (shard, whole["from_epoch_seq"], whole["epoch_seq"]))
        ok(s.get("/v1/shards/shard-d/moves").json()["items"][0]["incoming"], "shard-d takes")
        r = s.get("/v1/shards/shard-x/moves")
        eq((r.status, r.json()["error"]["path"]), (404, "shard"), "an unknown shard")
        page = s.get("/v1/moves?after=1&limit=1").json()
        eq(([i["epoch_seq"] for i in page["items"]], page["last_epoch_seq"]), ([2], 2), "paged")
        eq(s.get("/v1/moves?after=9").body, b'{"items":[],"last_epoch_seq":4}\n', "past the head")
        for query, name in (("limit=0", "limit"), ("limit=101", "limit"), ("after=x", "after")):
            r = s.get("/v1/moves?" + query)
            eq((r.status, r.json()["error"]["code"], r.json()["error"]["path"]),
               (400, "invalid_parameter", name), query)
        segments = sorted(n for n in os.listdir(s.state_dir) if n.startswith("journal"))
        ok(len(segments) >= 3, "segments rotated: %r" % segments)
        for name in segments:  # every copy of epoch 3's record: the record and any repeat
            journal = os.path.join(s.state_dir, name)
            lines = read(journal).split(b"\n")
            lines = [l.replace(b'"capacity":20', b'"capacity":21', 1)
                     if l.startswith(b'{"type":"epoch"') and b'"epoch_seq":3,' in l else l
                     for l in lines]
            write(journal, b"\n".join(lines), "wb")
        r = s.get("/v1/moves?after=2&limit=1")
        eq((r.status, r.json()["error"]["code"]), (500, "record_corrupt"), "a damaged record")


@case("live_sighup")
def sighup_refuses_a_bad_membership_and_keeps_serving():
    path = shards_file()
    with admin_server(shards=path) as s:
        at_start = metric(s, "shardgate_reload_last_success_timestamp_seconds")
        write(path, '{"shards": [{"id": "shard-a", "state": "online", "capacity": -1}]}')
        time.sleep(0.01)
        ev = sighup(s, "reload_refused")
        eq(ev["message"], "shards: %s: shards[0].capacity: must be an integer "
                          "0..9007199254740991" % path, "the start message")
        eq((ev["epoch"], ev["epoch_seq"]), (EPOCH0, 1), "the old epoch stays")
        write(path, json.dumps(changed_shards(shard_a="offline", shard_b="offline",
                                              shard_c="offline")))
        ev = sighup(s, "reload_refused")
        eq(ev["message"], "no online shard: the membership would leave the ring empty",
           "empty ring refused")
        eq(s.get("/readyz").status, 200, "/readyz stays 200")
        eq(current_epoch(s), EPOCH0, "old ring serves")
        r = s.post(batch("still"))
        eq((r.status, r.json()["epoch"]), (200, EPOCH0), "POST on the old ring")
        eq(metric(s, 'shardgate_reloads_total{result="refused"}'), "2", "refused counted")
        eq(metric(s, "shardgate_reload_last_success_timestamp_seconds"), at_start,
           "a refused reload leaves the last success's time")
        eq(len(epochs(s)), 1, "nothing journaled")


@case("live_sighup")
def sighup_with_unchanged_files_writes_nothing():
    with admin_server() as s:
        size = os.path.getsize(os.path.join(s.state_dir, "journal.jsonl"))
        ev = sighup(s, "reload_unchanged")
        eq((ev["epoch"], ev["epoch_seq"]), (EPOCH0, 1), "event")
        eq(os.path.getsize(os.path.join(s.state_dir, "journal.jsonl")), size, "journal unchanged")
        eq(metric(s, 'shardgate_reloads_total{result="unchanged"}'), "1", "counted")


# ---------------------------------------------------------------- PUT /v1/admin/membership

@case("live_admin")
def put_without_admin_token_configured_is_403():
    with Server() as s:
        r = put(s, base_shards(), if_match=EPOCH0)
        eq((r.status, r.error()), (403, ("admin_disabled", "")), "403")


@case("live_admin")
def the_admin_token_must_differ_from_the_client_token():
    same, client = secret("same-token"), secret("same-token")
    p = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", shards_file(),
                    "--state-dir", os.path.join(tmpdir(), "state"), "--listen", "127.0.0.1:0",
                    "--token-file", client, "--admin-token-file", same])
    eq((p.returncode, p.stderr), (3, "token: %s: the admin token must differ from the client "
                                     "token (%s)\n" % (same, client)), "exit 3")


@case("live_admin")
def put_refusals_401_428_412():
    with admin_server(client=True) as s:
        doc = changed_shards(shard_d="online")
        r = put(s, doc, if_match=EPOCH0, token=CLIENT)
        eq((r.status, r.error(), r.headers.get("www-authenticate")),
           (401, ("unauthorized", ""), "Bearer"), "the client token is not the admin token")
        eq(put(s, doc, if_match=EPOCH0, token=None).status, 401, "no token")
        r = put(s, doc, token=ADMIN)
        eq((r.status, r.error()), (428, ("precondition_required", "")), "no If-Match")
        stale = "0" * 40
        r = put(s, doc, if_match=stale)
        body = r.json()
        eq((r.status, body["error"]["code"], body["epoch"], r.headers.get("etag")),
           (412, "epoch_mismatch", EPOCH0, '"%s"' % EPOCH0), "stale If-Match")
        eq(len(epochs(s, headers={"Authorization": "Bearer " + CLIENT})), 1, "nothing applied")
        metrics_auth = {"Authorization": "Bearer " + CLIENT}
        eq([metric(s, 'shardgate_reloads_total{result="%s"}' % k, metrics_auth)
            for k in ("applied", "unchanged", "refused")], ["0", "0", "0"],
           "401, 428 and 412 are the request's, not reloads (docs/api.md §15)")
        eq(reload_events(s), [],
           "and log no reload event")


@case("live_admin")
def get_membership_round_trips_through_put():
    """GET /v1/admin/membership (docs/api.md §15): the membership in force as a shards document
    in id order, every key written, with the epoch as ETag; PUT back as it is, it changes
    nothing; after a change it is the new one. The admin token only."""
    with Server() as s:
        r = s.get("/v1/admin/membership")
        eq((r.status, r.error()), (403, ("admin_disabled", "")), "no admin token configured")
    with admin_server(client=True) as s:
        r = s.get("/v1/admin/membership", headers={"Authorization": "Bearer " + CLIENT})
        eq((r.status, r.error()), (401, ("unauthorized", "")), "the client token")
        r = s.get("/v1/admin/membership", headers={"Authorization": "Bearer " + ADMIN})
        want = (b'{"shards":[{"id":"shard-a","state":"online","capacity":20,"weight":1},'
                b'{"id":"shard-b","state":"online","capacity":20,"weight":1},'
                b'{"id":"shard-c","state":"online","capacity":20,"weight":1},'
                b'{"id":"shard-d","state":"offline","capacity":20,"weight":1},'
                b'{"id":"shard-e","state":"draining","capacity":20,"weight":1}]}\n')
        eq((r.status, r.body, r.headers.get("etag"), r.headers.get("content-type")),
           (200, want, '"%s"' % EPOCH0, "application/json"), "GET")
        r = put(s, r.body, raw_if_match=r.headers.get("etag"))
        eq((r.status, r.json()["changed"]), (200, False), "PUT back unchanged")
        doc = with_capacity(changed_shards(shard_d="online"), "shard-e", 7)
        eq(put(s, doc, if_match=EPOCH0).status, 200, "a change")
        r = s.get("/v1/admin/membership", headers={"Authorization": "Bearer " + ADMIN})
        eq((json.loads(r.body), r.headers.get("etag")),
           ({"shards": [dict(sh, weight=1) for sh in doc["shards"]]}, '"%s"' % epoch_of(doc)),
           "GET after the change")


@case("live_admin")
def if_match_star_lists_and_weak_tags():
    """If-Match as RFC 9110 reads it (docs/api.md §15): a weak tag of the current epoch
    is 412 (strong comparison); a malformed value is 400 at path If-Match; `*` applies whatever
    the epoch; a list applies when one of its tags is the current epoch; GET /v1/ring's ETag
    names the epoch it serves."""
    with admin_server() as s:
        r = s.get("/v1/ring")
        eq((r.status, r.headers.get("etag")), (200, '"%s"' % EPOCH0), "GET /v1/ring's ETag")
        doc = changed_shards(shard_d="online")
        r = put(s, doc, raw_if_match='W/"%s"' % EPOCH0)
        eq((r.status, r.json()["error"]["code"]), (412, "epoch_mismatch"),
           "a weak tag never matches")
        for bad in (EPOCH0, '"%s' % EPOCH0, '"%s";' % EPOCH0, '*, "%s"' % EPOCH0):
            r = put(s, doc, raw_if_match=bad)
            eq((r.status, r.error()), (400, ("invalid_parameter", "If-Match")), "If-Match: " + bad)
        eq(len(epochs(s)), 1, "nothing applied")
        r = put(s, doc, raw_if_match="*")
        eq((r.status, r.json()["epoch"]), (200, epoch_of(doc)), "If-Match: * applies")
        back = base_shards()
        r = put(s, back, raw_if_match='"%s", "%s"' % ("0" * 40, epoch_of(doc)))
        eq((r.status, r.json()["epoch"]), (200, EPOCH0), "a list naming the current epoch")
        eq(s.get("/v1/ring").headers.get("etag"), '"%s"' % EPOCH0, "the ETag follows")


@case("live_admin")
def put_refuses_invalid_and_empty_memberships_with_422():
    path = shards_file()
    with admin_server(shards=path) as s:
        before = read(path)
        bad = {"shards": [{"id": "shard-a", "state": "asleep", "capacity": 20}]}
        r = put(s, bad, if_match=EPOCH0)
        eq((r.status, r.error()), (422, ("invalid_membership", "shards[0].state")), "invalid")
        eq(r.json()["error"]["message"],
           "shards: %s: shards[0].state: must be one of online, draining, offline" % path, "message")
        empty = changed_shards(shard_a="offline", shard_b="offline", shard_c="offline")
        r = put(s, empty, if_match=EPOCH0)
        eq((r.status, r.error()), (422, ("no_online_shard", "shards")), "no online shard")
        eq(read(path), before, "the shards file is untouched")
        eq(s.get("/readyz").status, 200, "/readyz 200")
        eq(metric(s, 'shardgate_reloads_total{result="refused"}'), "2", "both refusals counted")
        wait_until(lambda: len(s.events("reload_refused")) == 2, 10, "two reload_refused events")
        eq([(e["source"], e["epoch"], e["epoch_seq"], e["message"])
            for e in s.events("reload_refused")],
           [("admin", EPOCH0, 1, "shards: %s: shards[0].state: must be one of online, "
             "draining, offline" % path),
            ("admin", EPOCH0, 1, "no online shard: the membership would leave the ring empty")],
           "the events")


@case("live_admin")
def put_applies_writes_the_file_and_journals_the_epoch():
    path = shards_file()
    with admin_server(shards=path) as s:
        eq(s.post(batch("p1")).status, 200, "POST")
        r = put(s, base_shards(), if_match=EPOCH0)
        eq((r.status, r.json()), (200, {"changed": False, "epoch": EPOCH0, "epoch_seq": 1,
                                        "prev": None, "ring": RING0, "source": "start"}),
           "the same epoch changes nothing")
        doc = with_capacity(base_shards(), "shard-a", 25)
        body = json.dumps(doc).encode()
        r = put(s, body, if_match=EPOCH0)
        new = epoch_of(doc)
        eq((r.status, r.json(), r.headers.get("etag")),
           (200, {"changed": True, "epoch": new, "epoch_seq": 2, "prev": EPOCH0, "ring": RING0,
                  "source": "admin"}, '"%s"' % new), "applied")
        eq(read(path), body, "the shards file holds the document")
        r = s.post(batch("p2"))
        eq((r.json()["epoch"], r.json()["shards"]["shard-a"]["capacity"]), (new, 25),
           "receipts name the new epoch and its capacities")
        eq(put(s, doc, if_match=EPOCH0).status, 412, "the old epoch is stale now")
        eq([metric(s, 'shardgate_reloads_total{result="%s"}' % k)
            for k in ("applied", "unchanged", "refused")], ["1", "1", "0"], "the PUTs counted")
        wait_until(lambda: s.events("reload_applied"), 10, "the reload_applied event")
        eq([(e["event"], e["source"], e["epoch"], e["epoch_seq"]) for e in reload_events(s)],
           [("reload_unchanged", "admin", EPOCH0, 1), ("reload_applied", "admin", new, 2)],
           "a PUT logs its reload as SIGHUP does")
    recs = epoch_records(s.state_dir)
    eq([(e["epoch_seq"], e["source"], e["first_seq"]) for e in recs],
       [(1, "start", 1), (2, "admin", 2)], "journal chain")


PARAMETERS = ("", "?max_movement=0.5", "?max_movement=0", "?force=1", "?max_movement=0&force=1",
              "?dry_run=1", "?dry_run=1&max_movement=0", "?dry_run=1&force=1")


@case("live_repeat")
def every_parameter_on_an_unchanged_a_changed_and_a_refused_membership():
    """Repeating a change is a no-op whatever its parameters (docs/api.md §15): the membership in
    force PUT again with max_movement, force, dry_run or none is 200 "changed":false, writes
    nothing and counts as unchanged (a dry run plans no move and counts nothing); a change
    (0.218 of the hash space) applies unless max_movement=0 refuses it without force; a
    membership with no online shard is 422 whatever the parameters. The server stays up."""
    path = shards_file()
    doc = changed_shards(shard_d="online")
    empty = changed_shards(shard_a="offline", shard_b="offline", shard_c="offline")
    counted = {"applied": 0, "unchanged": 0, "refused": 0}
    with admin_server(shards=path) as s:
        size = os.path.getsize(os.path.join(s.state_dir, "journal.jsonl"))
        in_force = {"changed": False, "epoch": EPOCH0, "epoch_seq": 1, "prev": None,
                    "ring": RING0, "source": "start"}
        for q in PARAMETERS:
            dry = "dry_run" in q
            r = put(s, base_shards(), if_match=EPOCH0, query=q)
            if dry:
                eq((r.status, r.json()["moved_points"], r.json()["to_epoch"]), (200, 0, EPOCH0),
                   "the dry run of the membership in force, %r" % q)
            else:
                eq((r.status, r.json()), (200, in_force), "the membership in force again, %r" % q)
                counted["unchanged"] += 1
            eq(os.path.getsize(os.path.join(s.state_dir, "journal.jsonl")), size,
               "nothing journaled, %r" % q)
            r = put(s, doc, if_match=EPOCH0, query=q)
            if dry:
                eq((r.status, r.json()["to_epoch"]), (200, epoch_of(doc)), "dry run %r" % q)
            elif q in ("?max_movement=0",):
                eq((r.status, r.json()["error"]["code"]), (422, "movement_exceeds_limit"), q)
                counted["refused"] += 1
            else:
                eq((r.status, r.json()["epoch"]), (200, epoch_of(doc)), "the change, %r" % q)
                counted["applied"] += 1
                r = put(s, base_shards(), if_match=epoch_of(doc))
                eq((r.status, r.json()["epoch"]), (200, EPOCH0), "back, after %r" % q)
                counted["applied"] += 1
                in_force = dict(r.json(), changed=False)
                size = os.path.getsize(os.path.join(s.state_dir, "journal.jsonl"))
            r = put(s, empty, if_match=EPOCH0, query=q)
            eq((r.status, r.error()), (422, ("no_online_shard", "shards")), "no online shard %r" % q)
            counted["refused"] += not dry
            eq(current_epoch(s), EPOCH0, "in force after %r" % q)
            eq(json.loads(read(path)), base_shards(), "the shards file after %r" % q)
        eq({k: int(metric(s, 'shardgate_reloads_total{result="%s"}' % k)) for k in counted},
           counted, "every PUT counted by its outcome, dry runs not")
        eq(s.proc.poll(), None, "the server is up")


@case("live_repeat")
def a_sighup_racing_two_puts_reverts_neither():
    """PUT A, then PUT B while A's epoch record is held (each group commit delayed 1.5 s), then
    a SIGHUP while B's is: SIGHUP reads --shards under the lock every change takes
    (docs/api.md §15), after B is applied, so it finds B's file and changes nothing; B stays in
    force, the file holds B, the chain is start, A, B."""
    path = shards_file()
    a = with_capacity(base_shards(), "shard-a", 21)
    b = with_capacity(base_shards(), "shard-a", 22)
    with Server(shards=path, args=["--admin-token-file", secret(ADMIN), "--threads", "4"],
                env={"SHARDGATE_TEST_COMMIT_DELAY_MS": "1500"}) as s:
        answers = {}

        def put_in_thread(name, doc):
            t = threading.Thread(target=lambda: answers.update(
                {name: put(s, doc, raw_if_match="*")}))
            t.start()
            return t
        ta = put_in_thread("a", a)
        time.sleep(0.4)
        tb = put_in_thread("b", b)
        time.sleep(1.6)  # A applied at 1.5 s; B holds the lock, its record held till 3 s
        s.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: [e for e in reload_events(s) if e["source"] == "sighup"], 20,
                   "the SIGHUP's reload event")
        event = [e for e in reload_events(s) if e["source"] == "sighup"][0]
        ta.join(30)
        tb.join(30)
        eq([(answers[k].status, answers[k].json()["epoch"]) for k in "ab"],
           [(200, epoch_of(a)), (200, epoch_of(b))], "both PUTs applied")
        eq((event["event"], event["epoch"]), ("reload_unchanged", epoch_of(b)), "SIGHUP found B")
        eq(current_epoch(s), epoch_of(b), "B in force")
        eq(json.loads(read(path)), b, "the file holds B")
        wait_until(lambda: len(s.events("reload_applied")) == 2, 10, "both PUTs' events")
        eq([e["source"] for e in s.events("reload_applied")], ["admin", "admin"],
           "the changes applied are the PUTs'")
    eq([(e["epoch"], e["source"]) for e in epoch_records(s.state_dir)],
       [(EPOCH0, "start"), (epoch_of(a), "admin"), (epoch_of(b), "admin")], "the chain")


@case("live_admin")
def shards_lists_removed_shards_with_totals_across_epochs():
    with admin_server() as s:
        eq(s.post(batch("r1", n=40)).status, 200, "POST")
        before = s.shard_totals()
        doc = base_shards()
        doc["shards"] = [x for x in doc["shards"] if x["id"] != "shard-a"] + [
            {"id": "shard-f", "state": "online", "capacity": 7}]
        r = put(s, doc, if_match=EPOCH0)
        eq(r.status, 200, "PUT without shard-a")
        shards = s.get("/v1/shards").json()["shards"]
        eq([(x["id"], x["state"]) for x in shards],
           [("shard-a", "removed"), ("shard-b", "online"), ("shard-c", "online"),
            ("shard-d", "offline"), ("shard-e", "draining"), ("shard-f", "online")], "states")
        eq([shards[0]["load_total"], shards[0]["received_total"]], before["shard-a"],
           "shard-a keeps its totals")
        eq(s.stop(), 0, "exit")
    with Server(state_dir=s.state_dir, shards=s.shards) as again:
        eq(again.shard_totals()["shard-a"], before["shard-a"], "after a restart too")


@case("live_plan")
def dry_run_answers_the_plan_and_changes_nothing():
    """?dry_run=1 answers the plan of docs/contract.md §8 (the bytes of `shardgate plan`,
    tests/golden/plan-shard-d-online.json) and leaves the journal and the file byte-identical."""
    path = shards_file()
    with admin_server(shards=path) as s:
        eq(s.post(batch("d1")).status, 200, "POST")
        j = os.path.join(s.state_dir, "journal.jsonl")
        journal, shards = read(j), read(path)
        r = put(s, changed_shards(shard_d="online"), if_match=EPOCH0, query="?dry_run=1")
        eq((r.status, r.body), (200, read(src("tests", "golden", "plan-shard-d-online.json"))),
           "the plan")
        eq((read(j), read(path)), (journal, shards), "journal and shards file byte-identical")
        eq((current_epoch(s), len(epochs(s))), (EPOCH0, 1), "nothing applied")
        r = put(s, base_shards(), if_match="1" * 40, query="?dry_run=1")
        eq(r.status, 412, "a dry run needs the current epoch too")
        r = put(s, base_shards(), if_match=EPOCH0, query="?dry_run=yes")
        eq((r.status, r.error()), (400, ("invalid_parameter", "dry_run")), "bad dry_run")


@case("live_plan")
def max_movement_refuses_unless_forced():
    path = shards_file()
    with admin_server(shards=path) as s:
        doc = changed_shards(shard_d="online")
        r = put(s, doc, if_match=EPOCH0, query="?max_movement=0.2")
        body = r.json()
        plan = json.loads(read(src("tests", "golden", "plan-shard-d-online.json")))
        eq((r.status, body["error"]["code"], body["error"]["path"], body["plan"]),
           (422, "movement_exceeds_limit", "max_movement", plan), "0.218 > 0.2 refused")
        eq(body["error"]["message"], "the change moves 0.218417150 of the hash space, more than "
           "max_movement 0.200000000 (add force=1 to apply it anyway)", "message")
        eq(current_epoch(s), EPOCH0, "not applied")
        r = put(s, doc, if_match=EPOCH0, query="?max_movement=1.5")
        eq((r.status, r.error()), (400, ("invalid_parameter", "max_movement")), "out of 0..1")
        # docs/api.md §1.1: a plain decimal, nothing strtod alone would also take
        for bad in ("0x0.1p0", "%20.5", ".5", "1e-400", "0.5%00", "0.5%001", "+0.5", "-0", "1.",
                    "1.0001", "2", "0." + "1" * 18, "0.5%20", "", "nan", "inf"):
            r = put(s, doc, if_match=EPOCH0, query="?max_movement=" + bad)
            eq((r.status, r.error()), (400, ("invalid_parameter", "max_movement")), bad)
        eq(current_epoch(s), EPOCH0, "none applied")
        for flag in ("dry_run=1%00", "force=1%000", "dry_run=true"):
            r = put(s, doc, if_match=EPOCH0, query="?max_movement=0.2&" + flag)
            eq((r.status, r.error()), (400, ("invalid_parameter", flag.split("=")[0])), flag)
        r = put(s, doc, if_match=EPOCH0, query="?max_movement=0.2" + "1" * 16)
        eq((r.status, r.json()["error"]["message"]), (422, "the change moves 0.218417150 of the "
           "hash space, more than max_movement 0.211111111 (add force=1 to apply it anyway)"),
           "17 digits read")
        r = put(s, doc, if_match=EPOCH0, query="?max_movement=0.2&force=1")
        eq((r.status, r.json()["epoch"]), (200, epoch_of(doc)), "forced")
        back = put(s, base_shards(), if_match=epoch_of(doc), query="?max_movement=0.25")
        eq((back.status, back.json()["epoch"]), (200, EPOCH0), "within the limit")


# ---------------------------------------------------------------- batches across a switch

def send_head(s, body):
    """Opens a connection and sends the headers and half the body of a POST."""
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    head = ("POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)).encode()
    sock.sendall(head + body[:len(body) // 2])
    return sock


def finish(sock, body):
    return sgtest.finish_request(sock, body[len(body) // 2:])


@case("live_inflight")
def a_batch_in_flight_keeps_its_epoch():
    """A request started before the switch is placed on its own view's ring and names that
    epoch (docs/contract.md §7), even when its body ends after the switch; one committed across
    a switch (SHARDGATE_TEST_COMMIT_DELAY_MS) too."""
    path = shards_file()
    new = changed_shards(shard_d="online")
    with admin_server(shards=path, env={"SHARDGATE_TEST_COMMIT_DELAY_MS": "300"}) as s:
        body = json.dumps(batch("slow", n=50)).encode()
        sock = send_head(s, body)
        time.sleep(0.2)  # the request has started (headers read) on the old view
        write(path, json.dumps(new))
        sighup(s, "reload_applied")
        status, payload = finish(sock, body)
        receipt = json.loads(payload)
        eq((status, receipt["epoch"], receipt["ring"]["id"]), (200, EPOCH0, RING0),
           "the slow batch names the epoch it started on")
        ok(all(p["shard"] != "shard-d" for p in receipt["placements"]),
           "placed on the old ring (shard-d is not in it)")
        r = s.post(batch("fast", n=50))
        eq(r.json()["epoch"], epoch_of(new), "a new batch names the new epoch")
        ok(any(p["shard"] == "shard-d" for p in r.json()["placements"]), "on the new ring")
        # A batch queued for the writer (its commit delayed) before a switch: the epoch record
        # is laid out after it, so its first_seq counts it.
        held = []
        t = threading.Thread(target=lambda: held.append(s.post(batch("queued", n=5))))
        t.start()
        time.sleep(0.15)  # dispatched at once; the writer holds it for 300 ms
        write(path, json.dumps(base_shards()))
        sighup(s, "reload_applied")
        t.join(30)
        eq((held[0].status, held[0].json()["epoch"]), (200, epoch_of(new)), "queued batch")
    lines = [json.loads(l) for l in journal_lines(s.state_dir)]
    eq([(l["type"], l.get("seq"), l.get("first_seq"), l.get("receipt", l).get("epoch"))
        for l in lines],
       [("epoch", None, 1, EPOCH0), ("epoch", None, 1, epoch_of(new)),
        ("receipt", 1, None, EPOCH0), ("receipt", 2, None, epoch_of(new)),
        ("receipt", 3, None, epoch_of(new)), ("epoch", None, 4, EPOCH0)],
       "journal order: the slow batch names its own (earlier) epoch; first_seq counts the "
       "receipts written before each record")


# ---------------------------------------------------------------- crashes

def temp_files(path):
    d = os.path.dirname(path)
    return sorted(f for f in os.listdir(d) if f.startswith(os.path.basename(path) + ".tmp."))


@case("live_crash")
def a_kill_at_each_step_of_a_put_starts_on_the_old_or_the_new_membership():
    """kill -9 at each durable step of a PUT (docs/journal.md §11): after the file is staged, the
    restart has the old membership and writes nothing; after the epoch record, the file is still
    the old one and the restart records it again (source start); after the file is installed,
    the restart has the new one and writes nothing. Each time the membership in force is the
    file's and the chain's latest, and the batch acknowledged before reads back."""
    doc = changed_shards(shard_e="online")
    for point, now, chain in (("shards-staged", EPOCH0, [EPOCH0]),
                              ("epoch-recorded", EPOCH0, [EPOCH0, epoch_of(doc), EPOCH0]),
                              ("shards-installed", epoch_of(doc), [EPOCH0, epoch_of(doc)])):
        path = shards_file()
        before = read(path)
        d = os.path.join(tmpdir(), "state")
        with admin_server(shards=path, state_dir=d, env={"SHARDGATE_TEST_CRASH_AT": point}) as s:
            first = s.post(batch("c1"))
            eq(first.status, 200, "POST")
            try:
                put(s, doc, if_match=EPOCH0)
            except (OSError, Exception):  # the process dies mid-request
                pass
            s.proc.wait(20)
            s._reader.join(5)  # every line it wrote read
            eq((s.proc.returncode, s.events("test_crash_point")),
               (-signal.SIGKILL, [{"event": "test_crash_point", "point": point}]),
               "killed at %s" % point)
        eq(read(path), before if now == EPOCH0 else json.dumps(doc).encode(),
           "the shards file after a kill at %s" % point)
        with Server(state_dir=d, shards=path) as s:
            eq(current_epoch(s), now, "the restart after %s" % point)
            eq(current_epoch(s), epoch_of(json.loads(read(path))), "the file's, after %s" % point)
            r = s.get("/v1/batches/c1")
            eq((r.status, r.body), (200, first.body), "the stored receipt after %s" % point)
        eq([e["epoch"] for e in epoch_records(d)], chain, "the chain after %s" % point)


@case("live_crash")
def a_put_whose_epoch_record_fails_changes_no_file():
    """The journal refuses the epoch record (a file size limit, EFBIG): the PUT is 503
    reload_failed naming it, --shards is byte for byte as before with no temporary file beside
    it, the old membership serves; the journal is unavailable (/readyz 503), and the restart
    keeps the old membership without a record."""
    path = shards_file()
    before = read(path)
    d = os.path.join(tmpdir(), "state")
    with admin_server(shards=path, state_dir=d) as s:
        eq(s.post(batch("r1")).status, 200, "POST")
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f == "journal.jsonl")
        sgtest.run(["prlimit", "--pid", str(s.proc.pid), "--fsize=%d" % (size + 100)])
        r = put(s, changed_shards(shard_d="online"), if_match=EPOCH0)
        eq((r.status, r.error()[0]), (503, "reload_failed"), "the PUT")
        ok("File too large" in r.json()["error"]["message"], r.json()["error"]["message"])
        eq((read(path), temp_files(path)), (before, []), "--shards untouched")
        eq(current_epoch(s), EPOCH0, "the old membership serves")
        r = s.get("/readyz")
        eq((r.status, r.json()["checks"]["journal"]), (503, "unavailable"), "/readyz")
    with Server(state_dir=d, shards=path) as s:
        eq(current_epoch(s), EPOCH0, "the restart keeps the old membership")
        eq(s.get("/v1/batches/r1").status, 200, "r1 reads back")
    eq([(e["epoch"], e["source"]) for e in epoch_records(d)], [(EPOCH0, "start")], "the chain")


@case("live_crash")
def a_put_whose_file_cannot_be_installed_records_the_old_epoch_back():
    """The epoch record is durable but --shards cannot be replaced (it became a directory): the
    epoch in force is recorded again after it, the PUT is 503 reload_failed naming the file, the
    old membership serves and /readyz stays 200; the restart on the file keeps it, writing
    nothing."""
    path = shards_file()
    before = read(path)
    d = os.path.join(tmpdir(), "state")
    doc = changed_shards(shard_d="online")
    with admin_server(shards=path, state_dir=d) as s:
        os.unlink(path)
        os.mkdir(path)
        r = put(s, doc, if_match=EPOCH0)
        eq((r.status, r.error()), (503, ("reload_failed", "")), "the PUT")
        eq(r.json()["error"]["message"], "shards: %s: cannot replace: Is a directory" % path,
           "the message")
        eq((current_epoch(s), temp_files(path)), (EPOCH0, []), "the old membership, no temp file")
        eq(s.get("/readyz").status, 200, "/readyz")
        eq(s.post(batch("after")).json()["epoch"], EPOCH0, "batches on the old membership")
        eq(metric(s, "shardgate_epoch_seq"), "3", "shardgate_epoch_seq: the record back")
    eq([(e["epoch"], e["epoch_seq"], e["source"]) for e in epoch_records(d)],
       [(EPOCH0, 1, "start"), (epoch_of(doc), 2, "admin"), (EPOCH0, 3, "admin")], "the chain")
    os.rmdir(path)
    write(path, before, "wb")
    with Server(state_dir=d, shards=path) as s:
        eq(current_epoch(s), EPOCH0, "the restart")
        eq(s.get("/v1/batches/after").status, 200, "the batch reads back")
    eq(len(epoch_records(d)), 3, "no record at the restart")
    r = run_server(["journal", "verify", "--state-dir", d])
    eq((r.returncode, r.stderr), (0, ""), "journal verify")


@case("live_kill9")
def kill_9_during_puts_leaves_the_old_or_the_new_file():
    """Repeated PUTs, each killed -9 at a random moment: the shards file is always exactly one
    of the documents, never torn, and the gateway starts on it. Bounded: 12 rounds."""
    path = shards_file()
    d = os.path.join(tmpdir(), "state")
    rng = random.Random(12)
    docs = [json.dumps(with_capacity(base_shards(), "shard-a", 20 + i), indent=1).encode()
            for i in range(13)]
    write(path, docs[0], "wb")
    for i in range(1, 13):
        with admin_server(shards=path, state_dir=d) as s:
            before = read(path)
            cur = current_epoch(s)
            pid = s.proc.pid

            def killer():
                time.sleep(rng.uniform(0, 0.02))
                os.kill(pid, signal.SIGKILL)
            t = threading.Thread(target=killer)
            t.start()
            try:
                put(s, docs[i], if_match=cur)
            except Exception:
                pass
            t.join()
            s.kill()
        now = read(path)
        ok(now in (before, docs[i]), "round %d: the file is the old or the new one" % i)
        left = [f for f in os.listdir(os.path.dirname(path)) if ".tmp." in f]
        for f in left:  # a temp file of a killed PUT may stay behind; never the real one
            os.unlink(os.path.join(os.path.dirname(path), f))
    with admin_server(shards=path, state_dir=d) as s:
        eq(current_epoch(s), epoch_of(json.loads(read(path))), "starts on the file")


# ---------------------------------------------------------------- a journal from before #12

@case("live_legacy")
def a_legacy_state_dir_starts_serves_and_keeps_its_totals():
    d = os.path.join(tmpdir(), "state")
    os.mkdir(d, 0o700)
    legacy = src("tests", "golden", "legacy-state", "journal.jsonl")
    shutil.copyfile(legacy, os.path.join(d, "journal.jsonl"))
    os.chmod(os.path.join(d, "journal.jsonl"), 0o600)
    stored = [json.loads(l) for l in read(legacy).split(b"\n")[:-1]]
    raw = read(legacy).split(b"\n")[:-1]
    sealed = os.path.join(d, "journal-%020d.jsonl" % 1)
    with Server(state_dir=d) as s:
        # written before checksums: sealed as it was, and the lines after it carry one
        # (docs/journal.md §2.1)
        sha = hashlib.sha256(read(legacy)).hexdigest().encode()
        eq(read(sealed), read(legacy) + b'{"type":"seal","last_seq":2,"bytes":%d,"sha256":"%s"}\n'
           % (len(read(legacy)), sha), "the legacy segment sealed, its seal without a checksum")
        eq(read(os.path.join(d, "journal.jsonl")).split(b"\n"),
           [sgtest.with_crc(b'{"type":"segment","first_seq":3,"prev":"%s"}' % sha),
            sgtest.with_crc(raw[0]), b""], "the next segment: checked header and epoch repeat")
        for line in raw[1:]:
            rec = json.loads(line)
            r = s.get("/v1/batches/" + rec["receipt"]["batch_id"])
            start = line.index(b'"receipt":') + len(b'"receipt":')
            eq((r.status, r.body), (200, line[start:-1] + b"\n"), "stored v1 receipt bytes")
        totals = s.shard_totals()
        want = {}
        for rec in stored[1:]:
            for sid, x in rec["receipt"]["shards"].items():
                t = want.setdefault(sid, [0, 0])
                t[0] += x["load"]
                t[1] += x["received"]
        eq(totals, want, "totals of the v1 receipts")
        chain = epochs(s)
        eq([(e["epoch"], e["epoch_seq"], e["prev"], e["source"], e["time"], e["first_seq"])
            for e in chain], [(EPOCH0, 1, None, "start", None, 1)], "the legacy record listed")
        eq(s.stop(), 0, "exit")
    path = shards_file(changed_shards(shard_d="online"))
    with Server(state_dir=d, shards=path) as s:
        eq(s.shard_totals(), want, "totals kept across the new epoch")
        eq(s.post(batch("new")).json()["epoch"], epoch_of(changed_shards(shard_d="online")),
           "a v2 receipt")
    eq(read(sealed).split(b"\n")[:3], raw, "the legacy lines stay")
    rec = json.loads(sgtest.journal_lines(d)[6])
    eq((rec["epoch_seq"], rec["prev"], rec["source"], rec["first_seq"]), (2, EPOCH0, "start", 3),
       "a new-form record continues the legacy numbering")


@case("live_legacy")
def replay_refuses_a_broken_chain():
    """docs/journal.md §5: the chain rules, exit 3 with file and line."""
    with admin_server() as s:
        eq(s.post(batch("b1")).status, 200, "POST")
        eq(put(s, changed_shards(shard_d="online"), if_match=EPOCH0).status, 200, "PUT")
        eq(s.stop(), 0, "exit")
    j = os.path.join(s.state_dir, "journal.jsonl")
    good = read(j)
    lines = good.split(b"\n")[:-1]
    recs = [sgtest.record_of(l) for l in lines]
    new = epoch_of(changed_shards(shard_d="online"))
    # Each fault is an edit with its checksum made right again (docs/journal.md §2.1), so that
    # the chain rule is what refuses it; the last one leaves the checksum as it was.
    faults = [
        (2, sgtest.with_crc(recs[2].replace(b'"prev":"%s"' % EPOCH0.encode(), b'"prev":null')),
         "epoch record: prev must be %s (the previous epoch)" % EPOCH0),
        (2, sgtest.with_crc(recs[2].replace(b'"epoch_seq":2', b'"epoch_seq":3')),
         "epoch record: epoch_seq must be 2"),
        (2, sgtest.with_crc(recs[2].replace(b'"first_seq":2', b'"first_seq":1')),
         "epoch record: first_seq must be 2"),
        (2, sgtest.with_crc(recs[2].replace(b'"epoch":"%s"' % new.encode(),
                                            b'"epoch":"%s"' % (b"0" * 40))),
         "epoch record: epoch must be %s (recomputed from contract and shards)" % new),
        (0, sgtest.with_crc(recs[0].replace(b'"capacity":20', b'"capacity":21', 1)),
         "epoch record: epoch must be %s (recomputed from contract and shards)"
         % epoch_of(with_capacity(base_shards(), "shard-a", 21))),
        (2, lines[2].replace(b'"epoch_seq":2', b'"epoch_seq":3'),
         "checksum mismatch: the line's crc32 is not that of its bytes"),
    ]
    ckpt = os.path.join(s.state_dir, "checkpoint-%020d.json" % 1)
    kept = read(ckpt)
    for index, line, what in faults:
        ok(line != lines[index], "the fault applies: %s" % what)
        bad = lines[:index] + [line] + lines[index + 1:]
        write(j, b"\n".join(bad) + b"\n", "wb")
        message = "journal: %s:%d: %s\n" % (j, index + 1, what)
        if index == 0:
            # Before the shutdown checkpoint's last receipt: a start from it does not read the
            # line (docs/journal.md §7); journal verify does, and so does a start without it.
            p = run_server(["journal", "verify", "--state-dir", s.state_dir])
            eq((p.returncode, p.stderr), (3, message), "verify: " + what)
            os.unlink(ckpt)
        p = run_server(["serve", "--conf", src("conf", "dispatch.env"), "--shards", s.shards,
                        "--state-dir", s.state_dir, "--listen", "127.0.0.1:0"])
        said = "".join(l for l in p.stderr.splitlines(True) if not l.startswith("{"))
        eq((p.returncode, said), (3, message), what)  # after any checkpoint_skipped event
        eq(read(j), b"\n".join(bad) + b"\n", "the file is left untouched")
        write(ckpt, kept, "wb")
    write(j, good, "wb")

if __name__ == "__main__":
    sys.exit(main(sys.argv))
