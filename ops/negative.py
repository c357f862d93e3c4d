#!/usr/bin/env python3
"""The mutation gate (docs/tools.md §5): each defect, applied alone to a copy of the tree, must turn
the probe, the health check and the test suite red. A patch that changes nothing, or a
defect that does not build, is a failure of the gate, not a pass."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import gate_anchor
from negative_journal import health_journal_red, probe_chain_red

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, where, exact text, replacement, detectors that must turn red, ctest regex of the tests
# that must catch it: the "tests" detector is red when one of them fails). `where` is a part's
# folder and the definition the defect breaks, never a file (ops/gate_anchor.py).
GATEWAY = ("probe", "health", "tests")
HEALTH = ("health", "tests")
DEFECTS = [
    ("vnodes-divided-by-shards", "ring:ring__shard_points",
     "size_t count = (size_t)ring->vnodes * s->weight;",
     "size_t count = (size_t)ring->vnodes * s->weight / ring->nshards;", GATEWAY,
     "^unit/test_(ring|dispatch)$|^case/valid$"),
    ("non-online-shards-in-ring", "gateway:gw_topology_build_from",
     "if (s->state != GW_STATE_ONLINE)", "if (s->state == GW_STATE_OFFLINE)", GATEWAY,
     "^unit/test_dispatch$|^case/valid$"),
    ("key-hash-byte-order-swapped", "ring:ring_hash_key",
     "    return w[0]; /* the key hash */",
     "    return __builtin_bswap32(w[0]); /* the key hash */", GATEWAY,
     "^unit/test_(ring|dispatch)$|^case/valid$"),
    ("md5-hard-coded", "ring:ring__digest_words",
     "    if (digest == RING_MD5) {", "    if (1) {", GATEWAY,
     "^unit/test_(ring|memcached_oracle)$|^case/valid$"),
    ("load-counted-per-change", "gateway:tally",
     "d->tally[m].load += b->changes[i].size;", "d->tally[m].load += 1;", GATEWAY,
     "^unit/test_dispatch$|^case/valid$"),
    # Jump consistent hash (docs/contract.md §10), each of the three implementations: the
    # linear congruential step off by one or by two, the key's high bits taken from one bit
    # further (each still ends: a jump never goes back).
    ("jump-lcg-step-off-by-one", "ring:ring_jump", "key = key * 2862933555777941757ULL + 1;",
     "key = key * 2862933555777941757ULL + 2;", ("tests",), "^unit/test_jump$"),
    ("health-jump-lcg-step-off-by-two", "health:hc_jump",
     "key = key * UINT64_C(2862933555777941757) + 1;",
     "key = key * UINT64_C(2862933555777941757) + 3;", ("tests",), "^unit/test_jump$"),
    # The plan's minimum (docs/contract.md §8): a loss miscounted, in the gateway;
    # taken as what moved, in the probe.
    ("plan-minimum-miscounts-losses", "gateway:gw_plan_compute",
     "out->minimum_points += out->shards[i].before - out->shards[i].after;",
     "out->minimum_points += out->shards[i].before - out->shards[i].after / 2;", ("tests",),
     "^plan_plan_golden$"),
    # The ranges that move (docs/contract.md §8): joined across an unmoved gap in the gateway;
    # their from and to swapped in the probe.
    ("plan-range-joins-across-a-gap", "gateway:add_range",
     "if (last && last->hi == start && last->from == from && last->to == to) {",
     "if (last && last->from == from && last->to == to) {", ("tests",), "^plan_plan_golden$"),
    ("probe-plan-range-ends-swapped", "client:plan",
     'ranges.append({"lo": lo, "hi": hi + 1, "from": a, "to": b})',
     'ranges.append({"lo": lo, "hi": hi + 1, "from": b, "to": a})', ("tests",),
     "^plan_plan_golden$"),
    ("library-moves-without-ranges", "lib:shardgate_moves",
     "return plan_json(from, to, 1, moves, moves_len, err);",
     "return plan_json(from, to, 0, moves, moves_len, err);", ("tests",), "^library_library$"),
    ("probe-owner-changed-by-vnode", "client:owner",
     "return self.lookup(key_bytes)[3]", "return self.lookup(key_bytes)[2]", ("tests",),
     "^client_python_package$"),
    ("probe-plan-minimum-is-moved", "client:plan",
     "minimum = sum(max(0, before[i] - after[i]) for i in before)", "minimum = moved",
     ("tests",), "^plan_plan_golden$"),
    ("probe-jump-wrong-high-bits", "client:jump", "((key >> 33) + 1)", "((key >> 34) + 1)",
     ("tests",), "^client_probe_ring$"),
    # The Maglev table (docs/contract.md §11), each of the three implementations: a permutation
    # that starts one slot late, a skip from a range one short (still a full permutation), the
    # weights ignored, the shards taken as listed instead of in id order.
    ("maglev-permutation-off-by-one", "ring:permutation", "e->next = (uint32_t)(offset % m);",
     "e->next = (uint32_t)((offset + 1) % m);", ("tests",), "^unit/test_maglev$"),
    ("maglev-skip-range-short", "ring:permutation", "(uint32_t)(skip % (m - 1) + 1);",
     "(uint32_t)(skip % (m - 2) + 1);", ("tests",), "^unit/test_maglev$"),
    ("maglev-weights-ignored", "ring:fill", "if (round * e[i].weight < e[i].target)",
     "if (round * heaviest < e[i].target)", ("tests",), "^unit/test_maglev$"),
    ("maglev-table-follows-listing", "ring:ring_maglev_table",
     "    qsort(e, n, sizeof(*e), by_id);", "    if (0)\n        qsort(e, n, sizeof(*e), by_id);",
     ("tests",), "^unit/test_maglev$"),
    ("health-maglev-permutation-off-by-one", "health:next_free",
     "(t->offset + t->j * t->skip) % size", "(t->offset + (t->j + 1) * t->skip) % size",
     ("tests",), "^unit/test_maglev$"),
    ("health-maglev-weights-ignored", "health:hc_maglev_table",
     "if (round * t[i].s->weight >= t[i].taken * heaviest)", "if (round >= t[i].taken)",
     ("tests",), "^unit/test_maglev$"),
    ("probe-maglev-skip-range-short", "client:maglev_table", "% (size - 1) + 1", "% (size - 2) + 1",
     ("tests",), "^client_probe_ring$"),
    ("probe-maglev-table-follows-listing", "client:maglev_table",
     "order = sorted(range(len(shards)), key=lambda i: shards[i][0])",
     "order = list(range(len(shards)))", ("tests",), "^client_probe_ring$"),
    # Placing by the Maglev table (docs/contract.md §11): a slot from the low 32 bits of the key,
    # the epoch named as a ketama one, the slot written from the key's hash, rule R2 one late,
    # spill let through, two tables' plan walked as rings, the probe's slot from the 32-bit hash.
    ("maglev-slot-of-low-bits", "ring:table_slot",
     ": (uint32_t)(bits % ring->table_size);",
     ": (uint32_t)((uint32_t)bits % ring->table_size);", ("tests",),
     "^(unit/test_maglev|case/valid)$"),
    ("maglev-epoch-named-by-vnodes", "gateway:gw_epoch_text",
     "    gw_buf_puts(out, gw_contract_size_key(c));",
     "    gw_buf_puts(out, \"DISPATCH_VNODES\");", ("tests",), "^case/valid$"),
    ("maglev-receipt-slot-from-hash", "gateway:write_placement_tail",
     "gw_buf_field_u64(out, \",\\\"slot\\\":\", p->point);",
     "gw_buf_field_u64(out, \",\\\"slot\\\":\", p->hash);", ("tests",), "^case/valid$"),
    ("maglev-r2-one-late", "gateway:check_slots", "if (is_online[at] && ++online > table)",
     "if (is_online[at] && ++online > table + 1)", ("tests",), "^case/shards$"),
    ("maglev-spill-let-through", "gateway:check_complete",
     "if (p->out->algorithm != RING_KETAMA && p->out->policy == GW_POLICY_SPILL)",
     "if (0 && p->out->algorithm != RING_KETAMA && p->out->policy == GW_POLICY_SPILL)",
     ("tests",), "^case/contract$"),
    ("maglev-plan-walks-points", "gateway:walk_arcs",
     "if (ring_algorithm_of(from) != RING_KETAMA) {", "if (0) {", ("tests",), "^plan_plan_maglev$"),
    ("health-maglev-slot-of-low-bits", "health:hc_ring_place_table",
     "uint64_t bits = (uint64_t)hc_le32(d) | (uint64_t)hc_le32(d + 4) << 32;",
     "uint64_t bits = (uint64_t)hc_le32(d);", ("tests",), "^health_receipt$"),
    ("health-maglev-reason-ring", "health:hc_c_placement_reason",
     "run->ep->contract.ring != HC_RING_KETAMA ? \"table\"",
     "run->ep->contract.ring != HC_RING_KETAMA ? \"ring\"", ("tests",), "^health_receipt$"),
    ("health-maglev-table-unjudged", "health:hc_c_ring_contract",
     "if (c->ring != HC_RING_KETAMA && r->table_form && r->table != (int64_t)c->table)",
     "if (c->ring == HC_RING_JUMP && r->table_form && r->table != (int64_t)c->table)",
     ("tests",), "^health_receipt$"),
    # Placing by jump over fixed slots (docs/contract.md §10), each of the three implementations:
    # a slot owned by its end's owner instead of its start's, the table drawn from fewer points,
    # the last slots wrapped to the last point, a jump ring placing by modulo, its epoch named by
    # Maglev's key, R2 with no points counted, spill let through.
    ("jump-slot-owned-by-its-end", "ring:draw_table",
     "uint32_t start = (uint32_t)(((uint64_t)s << 32) / slots);",
     "uint32_t start = (uint32_t)(((uint64_t)(s + 1) << 32) / slots);", ("tests",),
     "^(unit/test_jump|case/valid)$"),
    ("jump-table-of-fewer-points", "ring:ring_build_jump_from",
     "ring_build_from(&ketama, under, digest, RING_JUMP_VNODES, shards, n, err);",
     "ring_build_from(&ketama, under, digest, RING_JUMP_VNODES / 4, shards, n, err);", ("tests",),
     "^(unit/test_jump|case/valid)$"),
    ("jump-wraps-to-last-point", "ring:draw_table", "table[s] = points[i < n ? i : 0].shard;",
     "table[s] = points[i < n ? i : n - 1].shard;", ("tests",), "^unit/test_jump$"),
    ("jump-slot-by-modulo", "ring:table_slot", "uint32_t slot = ring->algorithm == RING_JUMP",
     "uint32_t slot = ring->algorithm != RING_MAGLEV && ring->algorithm != RING_JUMP", ("tests",),
     "^(unit/test_jump|case/valid)$"),
    ("jump-epoch-named-by-table", "gateway:size_key",
     "return a == RING_MAGLEV ? KEY_TABLE : a == RING_JUMP ? KEY_SLOTS : KEY_VNODES;",
     "return a == RING_MAGLEV ? KEY_TABLE : a == RING_JUMP ? KEY_TABLE : KEY_VNODES;", ("tests",),
     "^case/valid$"),
    ("jump-r2-without-points", "gateway:gw_membership_check_ring",
     "c->algorithm == RING_JUMP ? RING_JUMP_VNODES : c->vnodes",
     "c->vnodes", ("tests",), "^client_probe_errors_agree$"),
    ("jump-spill-let-through", "gateway:check_complete",
     "if (p->out->algorithm != RING_KETAMA && p->out->policy == GW_POLICY_SPILL)",
     "if (p->out->algorithm == RING_MAGLEV && p->out->policy == GW_POLICY_SPILL)", ("tests",),
     "^case/contract$"),
    ("health-jump-slot-owned-by-its-end", "health:hc_jump_table_build",
     "starts[s] = (uint32_t)((s << 32) / c->table);",
     "starts[s] = (uint32_t)(((s + 1) << 32) / c->table);", ("tests",),
     "^(unit/test_jump|health_receipt)$"),
    ("health-jump-table-of-fewer-points", "health:hc_jump_table_build",
     "int rc = hc_points_build(HC_JUMP_VNODES, m, r, err);",
     "int rc = hc_points_build(HC_JUMP_VNODES / 4, m, r, err);", ("tests",),
     "^(unit/test_jump|health_receipt)$"),
    ("health-jump-slot-by-modulo", "health:hc_ring_place_table",
     "uint32_t slot = r->kind == HC_RING_JUMP", "uint32_t slot = r->kind == HC_RING_KETAMA",
     ("tests",), "^(health_receipt|health_gateway_journal)$"),
    ("health-jump-r2-without-points", "health:hc_membership_limits",
     "(c->ring == HC_RING_JUMP ? HC_JUMP_VNODES : c->vnodes)", "(c->vnodes)", ("tests",),
     "^health_errors$"),
    ("probe-jump-slot-owned-by-its-end", "client:_draw",
     "ketama.lookup_hash((s << 32) // self.size)", "ketama.lookup_hash(((s + 1) << 32) // self.size)",
     ("tests",), "^(client_probe_ring|case/valid)$"),
    ("probe-jump-slot-by-modulo", "client:slot",
     "return jump(key_u64(self.algorithm, key_bytes), self.size)",
     "return key_u64(self.algorithm, key_bytes) % self.size", ("tests",),
     "^(client_probe_ring|case/valid)$"),
    # What moved between two epochs of a journal (docs/tools.md §1.4): the first epoch taken for
    # both, the probe's epochs the other way round.
    ("moves-takes-from-twice", "gateway:take_epoch", "if (f->want[k] != seq || f->found[k])",
     "if (f->want[0] != seq || f->found[k])", ("tests",), "^plan_plan_moves$"),
    ("probe-moves-reversed", "client:moves_between",
     "return plan(ring_a, ring_b, epoch_id(ca, sa), epoch_id(cb, sb), ids, True)",
     "return plan(ring_b, ring_a, epoch_id(cb, sb), epoch_id(ca, sa), ids, True)", ("tests",),
     "^plan_plan_moves$"),
    # GET /v1/moves (docs/api.md §20): each item made from the epoch and itself, a damaged
    # record line read as if whole, the database's row never found.
    ("moves-feed-pairs-an-epoch-with-itself", "gateway:serve_moves",
     "gw_chain_at(chain, seq - 1, &a)", "gw_chain_at(chain, seq, &a)", ("tests",),
     "^http_live_moves$"),
    ("moves-shard-view-swaps-ways", "gateway:write_shard_view",
     "const struct gw_plan_shard *self = &p->shards[way ? g->to : g->from];",
     "const struct gw_plan_shard *self = &p->shards[way ? g->from : g->to];", ("tests",),
     "^http_live_moves$"),
    ("migrate-cursor-before-the-work", "client:migrate",
     "            move_change(args, ring, item, progress)\n            write_cursor(args, item[\"epoch_seq\"])",
     "            write_cursor(args, item[\"epoch_seq\"])\n            move_change(args, ring, item, progress)",
     ("tests",), "^http_migrate$"),
    ("moves-feed-reads-damaged-records", "gateway:scan_file", "if (check == -EBADMSG) {",
     "if (0 && check == -EBADMSG) {", ("tests",), "^http_live_moves$"),
    ("moves-feed-row-never-found", "gateway:read_record_on", "q->found = PQntuples(res) == 1;",
     "q->found = PQntuples(res) == 2;", ("tests",), "^pg_store_membership$"),
    # The canonical scan's eight-byte test (docs/performance.md §19.5): a word holding the
    # closing quote, or a control byte, let through.
    ("canonical-scan-skips-quotes", "gateway:ends_mask",
     "return (is_quote | is_slash | is_control | w) & BYTES(0x80);",
     "return (is_slash | is_control | w) & BYTES(0x80);", ("tests",),
     "^unit/test_batch_canonical$"),
    ("canonical-scan-takes-controls", "gateway:ends_mask",
     "uint64_t is_control = ~((w & low7) + BYTES(0x60));",
     "uint64_t is_control = ~((w & low7) + BYTES(0x61));", ("tests",),
     "^unit/test_batch_canonical$"),
    ("probe-maglev-slot-of-ketama-hash", "client:slot",
     "return key_u64(self.algorithm, key_bytes) % self.size",
     "return key_hash(self.algorithm, key_bytes) % self.size", ("tests",), "^case/valid$"),
    ("lookup-greater-than", "ring:bucket_at_or_after",
     "if (ring->points[mid].value < hash)", "if (ring->points[mid].value <= hash)", GATEWAY,
     "^unit/test_(ring|dispatch)$"),
    ("wrap-to-last-point", "ring:answer",
     "    if (out->wrapped)\n        at = 0;",
     "    if (out->wrapped)\n        at = ring->npoints - 1;", GATEWAY,
     "^unit/test_(ring|dispatch)$|^case/valid$"),
    # The single-key path (ring_lookup, ring_lookup_hash) counts a window of points
    # around an interpolated guess; when the answer lies before the window or past it, the
    # window must move (tests/unit/test_ring.c walks every point of a 320,000-point ring).
    ("single-lookup-window-not-restarted", "ring:single_at_or_after",
     "    if (below == 0 && at > lo) {", "    if (0) {", ("tests",), "^unit/test_ring$"),
    ("single-lookup-window-not-walked-on", "ring:single_at_or_after",
     "    while (below == RING_WINDOW) {", "    while (0) {", ("tests",), "^unit/test_ring$"),
    # The switch at 10,000 shards (docs/decisions.md §6): a reload builds the new ring from the previous
    # one, merging the kept points with the fresh ones; tests/unit/test_ring_from.c compares it
    # with the ring built from scratch over random membership changes.
    ("merge-fresh-tail-dropped", "ring:merge",
     "    while (j < r->fresh)\n        emit(&m, fresh[j++]);\n", "", ("tests",),
     "^unit/test_ring_from$"),
    ("merge-kept-points-not-renumbered", "ring:merge",
     "        p.shard = r->new_rank[p.shard];\n", "", ("tests",), "^unit/test_ring_from$"),
    ("ok-written-as-true", "gateway:tally",
     "d->ok = d->dispatched == b->count && d->over_capacity_shards == 0;", "d->ok = 1;", GATEWAY,
     "^unit/test_dispatch$|^case/valid$"),
    ("health-criteria-emptied", "health:hc_criteria_to_run",
     "    return hc_criteria_count;\n}", "    return 0;\n}", HEALTH,
     "^health_receipt$"),
    ("health-exit-forced-0", "health:hc_cmd_check",
     "code = hc_report_pass(&report, &end) ? EXIT_PASS : EXIT_FAIL;", "code = EXIT_PASS;",
     HEALTH,
     "^health_receipt$"),
    # Health must judge the gateway's byte form, and serve must never move past a line
    # it did not verify (tests/health/test_rules.py, tests/health/test_serve_errors.py)
    ("health-skips-canonical-bytes", "health:hc_c_record_bytes",
     "long at = hc_canon_receipt_record(run->rec, run->r);", "long at = -1;", ("tests",),
     "health_rules"),
    ("health-advances-past-unverified-line", "health:hc_journal_update",
     "    int rc = hc_journal_read_new(j, err);\n    if (rc != 0)\n        j->reread = 1;",
     "    int rc = hc_journal_read_new(j, err);\n    if (rc != 0)\n        j->reread = 0;",
     ("tests",),
     "health_serve_errors"),
    # Health verifies the epoch chain; a skipped prev link must turn its tests red
    # (tests/health/test_chain.py, epoch_prev_links)
    ("health-prev-link-skipped", "health:hc_c_epoch_prev",
     "    if (strcmp(want, got) != 0)\n        hc_run_fail(run, \"prev:",
     "    if (0 && strcmp(want, got) != 0)\n        hc_run_fail(run, \"prev:", ("tests",),
     "^health_chain_rules$"),
    ("contract-default-vnodes", "gateway:check_complete",
     "        if ((!is_size_key(k) || k == (int)own) && !p->seen_on[k])\n",
     "        if ((!is_size_key(k) || k == (int)own) && !p->seen_on[k] && !(k == KEY_VNODES && (p->out->vnodes = 160)))\n",
     GATEWAY,
     "^case/contract$"),
    # A complete, newline-terminated bad last line must stop the start (exit 3),
    # never be moved to .broken as if torn (tests/reliability/test_hostile_state.py).
    ("complete-line-forgiven-as-torn", "gateway:replay_lines",
     "        if (rc != 0) {\n            char what[sizeof(err->msg)];",
     "        if (rc != 0 && repair && nl && (uint64_t)(nl - data) + 1 == size) {\n"
     "            *repair = (struct gw_journal_repair){1, lineno, pos, size - pos};\n"
     "            return cut_tail(r->j, data, pos, size, err);\n"
     "        }\n"
     "        if (rc != 0) {\n            char what[sizeof(err->msg)];", ("tests",),
     "reliability_hostile_state"),
    ("capacity-sum-unchecked", "gateway:account_shard",
     "    return check_capacity_sum(capacity, s, name, err);",
     "    return (check_capacity_sum(capacity, s, name, err), 0);", ("tests",),
     "reliability_hostile_state|^case/shards$"),
    ("journal-symlink-followed", "gateway:open_state_file",
     "flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC", "flags | O_NONBLOCK | O_CLOEXEC", ("tests",),
     "reliability_hostile_state"),
    ("totals-wrap-at-2^64", "gateway:gw_total", "    gw_u128 load;", "    uint64_t load;",
     ("tests",),
     "unit/test_buf|reliability_hostile_state"),
    # Stored receipts readable without the token; the batch reader unbounded.
    ("get-batch-without-token", "gateway",
     '{"GET", "/v1/batches/", 1, GW_ACCESS_TOKEN, gw_handle_batch, NULL, "/v1/batches/{batch_id}"},',
     '{"GET", "/v1/batches/", 1, GW_ACCESS_OPEN, gw_handle_batch, NULL, "/v1/batches/{batch_id}"},',
     ("tests",),
     "reliability_hostile_http"),
    ("reader-budgets-ignored", "gateway:json_read",
     "    if (limits)\n        r->limits = *limits;\n", "    (void)limits;\n", ("tests",),
     "unit/test_batch_limits|reliability_hostile_http"),
    # Each arc [previous point + 1, point] of the walk over two rings (ring/walk.h: the plan and
    # the drawing of moves) given the owners of the point after it instead of the point that
    # ends it (tests/plan/test_plan.py: the golden plan, C == probe.py plan). Shifting every
    # arc by one value instead is nearly an equivalent mutant: lengths and owners stay, only
    # the first arc and the wrap trade one value.
    ("plan-arc-on-wrong-side-of-point", "ring:ring_walk_pair",
     "        fn(ctx, start, (uint64_t)v + 1 - start, pa[ia < na ? ia : 0].shard,\n"
     "           pb[ib < nb ? ib : 0].shard);\n        start = (uint64_t)v + 1;\n"
     "        while (ia < na && pa[ia].value == v)\n            ia++;\n"
     "        while (ib < nb && pb[ib].value == v)\n            ib++;\n",
     "        while (ia < na && pa[ia].value == v)\n            ia++;\n"
     "        while (ib < nb && pb[ib].value == v)\n            ib++;\n"
     "        fn(ctx, start, (uint64_t)v + 1 - start, pa[ia < na ? ia : 0].shard,\n"
     "           pb[ib < nb ? ib : 0].shard);\n        start = (uint64_t)v + 1;\n", ("tests",),
     "^plan_plan_(golden|random)$"),
    # The spill rule (docs/contract.md §9). The gate's spill scenario fills every shard
    # exactly with two spills, so each defect moves a placement or a load.
    ("spill-counter-clockwise", "gateway:walk",
     "    long q = find_in(w, home + 1, w->npoints, size, h);\n"
     "    if (q < 0)\n        q = find_in(w, 0, home, size, h);\n    return q;\n",
     "    for (size_t k = 1; k < w->npoints; k++) {\n"
     "        size_t j = (home + w->npoints - k) % w->npoints;\n"
     "        if (shard_at(w, j) != h && fits(w, shard_at(w, j), size))\n"
     "            return (long)j;\n    }\n    return -1;\n", GATEWAY,
     "^spill_(golden|rules)$"),
    ("spill-fits-strictly-below-capacity", "gateway:fits",
     "return w->load[shard] + size <= w->cap[shard];",
     "return w->load[shard] + size < w->cap[shard];", GATEWAY, "^spill_(golden|rules)$"),
    # Room never changes during one walk, so a home shard "not skipped" or a shard "retried" at a
    # later point can only show when the faulty walk takes it there (docs/decisions.md §7).
    ("spill-home-not-skipped", "gateway:find_in",
     "            if (s != home && fits(w, s, size))",
     "            if (s == home || fits(w, s, size))", GATEWAY, "^spill_(golden|rules)$"),
    ("spill-shard-taken-at-second-point", "gateway:find_in",
     "            if (s != home && fits(w, s, size))\n                return (long)q;\n",
     "            if (s != home && fits(w, s, size)) {\n"
     "                size_t r = (q + 1) % w->npoints;\n"
     "                while (shard_at(w, r) != s)\n"
     "                    r = (r + 1) % w->npoints;\n"
     "                return (long)r;\n            }\n", GATEWAY, "^spill_(golden|rules)$"),
    # The gateway's loads live in one dispatch; health's replay scratch lives across receipts.
    ("spill-loads-carried-across-batches", "health:hc_spill_start",
     "    memset(s->load, 0, m->n * sizeof *s->load); /* every load starts at 0 for each batch */\n",
     "", ("tests",), "^spill_serve$"),
    ("spill-into-non-online-shard", "gateway:place_spill",
     "            d->member[i] = t->member_of[d->placements[i].shard];\n            d->spilled++;",
     "            d->member[i] = d->placements[i].shard;\n            d->spilled++;", GATEWAY,
     "^spill_(golden|rules)$"),
    # Live membership (the journal scenario of ops/negative_journal.py judges these too): a batch whose
    # request started before a switch is placed on the old ring while its receipt names the new
    # epoch; the epoch id without capacities; a skipped prev link (written as null).
    ("old-ring-new-epoch", "gateway:dispatch",
     "    else if (write_receipt(&r->post->receipt, t, b, &d) != 0)",
     "    else if (memcpy(r->view->topo.epoch, s->views.current->topo.epoch, GW_EPOCH_HEX_LEN),\n"
     "             write_receipt(&r->post->receipt, t, b, &d) != 0)", GATEWAY,
     "http_live_inflight"),
    ("epoch-id-without-capacities", "gateway:gw_epoch_text",
     "        gw_buf_field_u64(out, \" \", s->capacity);\n", "", GATEWAY,
     "unit/test_dispatch|http_live_sighup"),
    ("prev-link-skipped", "gateway:gw_chain_write_links",
     "    write_hex_or_null(out, \",\\\"prev\\\":\", e->prev);",
     "    write_hex_or_null(out, \",\\\"prev\\\":\", \"\");", GATEWAY,
     "http_live_sighup|http_live_legacy"),
    # The seal hashes all but each group's newline; a checkpoint names the seq before
    # its last record (its position no longer checks out: never used); the fast path of a
    # restart forgets the first id after the index's durable seq; the start checks ignore the
    # prev link (a segment of another history is accepted).
    ("seal-sha256-of-wrong-bytes", "gateway:gw_journal_appendv",
     "            EVP_DigestUpdate(j->hash, iov[i].iov_base, iov[i].iov_len);",
     "            EVP_DigestUpdate(j->hash, iov[i].iov_base, iov[i].iov_len - (i == n - 1));",
     ("tests",), "http_segments"),
    ("checkpoint-last-seq-one-early", "gateway:gw_checkpoint_take",
     "    out->last_seq = j->last_seq;", "    out->last_seq = j->last_seq - 1;", ("tests",),
     "http_segments|http_segment_upgrade"),
    ("restart-forgets-first-id", "gateway:take_line",
     "    if (r.seq <= s->after_seq)", "    if (r.seq <= s->after_seq + 1)", ("tests",),
     "http_segments"),
    ("prev-link-not-checked", "gateway:check_link",
     "    if (strcmp(s->prev, prev->sha256) != 0) {", "    if (0) {", ("tests",),
     "http_segment_faults"),
    # The idempotency index (docs/journal.md §9, RocksDB): a persist that does not record the
    # seq it is durable through (or moves it backwards) makes a start skip receipts it must
    # re-insert; files of the earlier index kept, or unusable files not removed, keep a start
    # from rebuilding; a database error read as "absent" dispatches an acknowledged batch again;
    # a value decoded from the wrong bytes answers another receipt; an id exactly the window old
    # must still replay.
    ("idem-durable-seq-not-recorded", "gateway:gw_idem_db_persist",
     "    if (put_raw(d, DURABLE_KEY, strlen(DURABLE_KEY), seq, sizeof(seq), &err) == 0)",
     "    if (1)", ("tests",), "^unit/test_idempotency$"),
    ("idem-persist-moves-backwards", "gateway:gw_idem_persist",
     "    uint64_t seq = through_seq > s->durable_seq ? through_seq : s->durable_seq;",
     "    uint64_t seq = through_seq;", ("tests",), "^unit/test_idempotency$"),
    ("idem-earlier-format-kept", "gateway:upgrade",
     "    if (!gw_idem_convert_present(s->dir))", "    if (1)", ("tests",),
     "^unit/test_idempotency$|^http_state_mix$"),
    ("idem-unusable-not-removed", "gateway:gw_idem_db_open",
     "        gw_idem_db_sweep(dir);\n", "", ("tests",), "^unit/test_idempotency$"),
    ("idem-commit-meanwhile-not-looked-again", "gateway:lookup_keep_lock_if_none",
     "        if (s->commits == commits)\n", "        if (s->commits == commits || 1)\n",
     ("tests",), "^unit/test_idempotency$"),
    ("idem-claim-meanwhile-not-seen", "gateway:lookup_keep_lock_if_none",
     "        pthread_mutex_lock(&s->lock);\n        if (gw_idem_table_find(&s->inflight, key)) {",
     "        pthread_mutex_lock(&s->lock);\n        if (0) {", ("tests",),
     "^unit/test_idempotency$"),
    ("idem-refused-entry-forgotten", "gateway:gw_idem_commit", "        s->broken = 1;\n", "",
     ("tests",), "^unit/test_idempotency$"),
    ("idem-error-read-as-absent", "gateway:gw_idem_db_get",
     "        return -EIO;\n    }\n    if (rc == 1) {", "        return 0;\n    }\n    if (rc == 1) {",
     ("tests",), "^unit/test_idempotency$"),
    ("idem-value-field-misread", "gateway:decode",
     "    r->segment = get_le(v + 8, 8);", "    r->segment = get_le(v + 16, 8);", ("tests",),
     "^unit/test_idempotency$"),
    # The upgrade of an index of the earlier version (docs/journal.md §9.1): a run converted
    # without checking its blocks stores what a damaged byte says; a conversion whose
    # durable_seq is dropped makes the start look for archived ids files that version never wrote.
    ("idem-convert-blocks-unchecked", "gateway:check_run",
     "        if (memcmp(md, digests + i * SHA256_DIGEST_LENGTH, sizeof(md)) != 0)",
     "        if (0 && memcmp(md, digests + i * SHA256_DIGEST_LENGTH, sizeof(md)) != 0)",
     ("tests",), "^http_state_mix$"),
    ("idem-convert-durable-seq-dropped", "gateway:upgrade",
     "        s->durable_seq = seq;\n", "", ("tests",), "^http_state_mix$"),
    ("idem-window-boundary", "gateway:verdict_of",
     "now - r->ack_ms > s->window_ms", "now - r->ack_ms >= s->window_ms", ("tests",),
     "^unit/test_idempotency$"),
    # Health verifies seals, probe.py the checkpoint sums, health every epoch's totals
    # (tests/health/test_segments.py, tests/client/test_probe_journal.py)
    ("health-ignores-seal-sha256", "health:hc_seg_seal",
     "        if (strcmp(hex, sha) != 0)\n            HC_SEG_ISSUE(",
     "        if (0 && strcmp(hex, sha) != 0)\n            HC_SEG_ISSUE(", ("tests",),
     "^health_segments_segments$"),
    ("probe-adds-received-to-load", "client:receipt",
     "                box[0] += sh[\"load\"]\n",
     "                box[0] += sh[\"load\"] + sh[\"received\"]\n", ("tests",),
     "^client_probe_journal$"),
    ("health-skips-first-epoch-totals", "health:hc_totals_add",
     "    if (received == 0)\n        return 0;",
     "    if (received == 0 || epoch_seq == 1)\n        return 0;", ("tests",),
     "^health_segments_(segments|checkpoints)$"),
    # The assignment feed: an empty page that does not move the cursor over receipts
    # without a match (no bookmark), and a cursor that serves its own receipt again.
    ("feed-bookmark-not-advanced", "gateway:serve_page",
     "        fr->q.after = last; /* a bookmark: receipts without a match are passed over */",
     "        last = fr->q.after;", ("tests",), "^http_feed$"),
    ("feed-after-off-by-one", "gateway:on_receipt",
     "    if (r->seq <= s->after) {", "    if (r->seq < s->after) {", ("tests",),
     "^unit/test_feed$|^http_feed$"),
    # The archive moves nothing at or past the newest checkpoint's segment unless the checkpoint
    # ends at that segment's seal (an epoch record after its last receipt): the start could
    # then resume from nothing. This check stops the walk before the receipt bound matters.
    ("archive-past-a-checkpoint-short-of-its-seal", "gateway:covers",
     "return cov->segment != seg->first_seq || gw_segment_seal_at(seg, cov->offset);",
     "return 1;",
     ("tests",), "^http_state_mix$"),
    # The feed's watchers (docs/api.md §18): a shard's watcher woken by every group re-reads what
    # does not concern it (the idle-watcher cost); a receipt announced with no shard bits never
    # wakes its shard's watchers before their deadline.
    ("feed-watch-ignores-shard-bit", "gateway:latest_for",
     "    if (!x->shard_bit)\n        return w->durable;", "    return w->durable;", ("tests",),
     "^unit/test_feed_watch$"),
    ("feed-receipt-without-shard-bits", "gateway:submit",
     "        .shard_bits = shard_bits(r),\n",
     "        .shard_bits = 0 & shard_bits(r),\n", ("tests",),
     "^http_feed_wait$"),
    # The releases the request's parts registered (gw_req_on_end) never run at its
    # completion: the feed's places are never given back, the bodies' budget never returned.
    ("request-ends-without-its-releases", "gateway:gw_serve_completed",
     "    for (size_t i = 0; i < r->n_on_end; i++)\n        r->on_end[i](r);\n", "",
     ("tests",), "^http_feed_wait$"),
    # A feed request that never gives its --max-watchers place back: after that many requests
    # every consumer meets 503 for good (docs/api.md §17).
    ("feed-watcher-place-never-returned", "gateway:feed_req_free",
     "    gw_feed_watch_leave(gw_store_watch(r->srv->store));\n    free(r->feed);",
     "    free(r->feed);", ("tests",), "^http_feed_wait$"),
    # The feed's shared pages (docs/decisions.md §23): a page answered to a question with
    # another cursor would hand a consumer assignments it did not ask for, or skip some.
    ("feed-shared-page-ignores-cursor", "gateway:same_question",
     "    return a->after == b->after && a->limit == b->limit",
     "    return a->limit == b->limit", ("tests",), "^unit/test_feed_cache$|^http_feed$"),
    # The kept listing of the state dir used after the writer rotated: a read from an old
    # cursor skips the segments made since (http_feed reads 60 receipts across rotations).
    ("feed-listing-kept-across-rotation", "gateway:list_segments",
     "    int kept = active && f->listed.count && f->listed.list[f->listed.count - 1].active &&\n"
     "               f->listed.list[f->listed.count - 1].first_seq == active;",
     "    int kept = active && f->listed.count;", ("tests",), "^http_feed$"),
    # A read between the writer's rename of journal.jsonl and its new one: 500, not a short page.
    ("feed-rotation-window-fails-reads", "gateway:scan_segment",
     "    if (fd < 0 && errno == ENOENT && seg->active) {", "    if (0) {", ("tests",),
     "^unit/test_feed$"),
    # --store postgres (docs/journal.md §10): a commit that takes the sequencer row (every
    # replica's commits wait for each other again); a stored batch_id replayed whatever its
    # content; a sequencer round that gives seqs without adding the totals; other replicas'
    # feed watchers never told of a round; an epoch change whose first_seq comes before
    # receipts committed ahead of it; every replica a sequencer at once, whoever holds the role;
    # a replica that does not LISTEN for epochs keeps serving the old membership; /v1/shards
    # that lists the members before the shards that left; health that does not look for seq
    # gaps.
    ("pg-commit-takes-sequencer-row", "gateway:insert_and_commit",
     '        rc = add_step(g, NULL, "BEGIN", 0, NULL, NULL);\n',
     '        rc = add_step(g, NULL, "BEGIN", 0, NULL, NULL);\n'
     '    if (rc == 0)\n        rc = add_step(g, NULL, "SELECT last_seq FROM shardgate_sequencer '
     'FOR UPDATE", 0, NULL, NULL);\n', ("tests",), "^pg_store_replicas$"),
    ("pg-replay-ignores-fingerprint", "gateway:read_stored",
     "        if (strcmp(PQgetvalue(res, row, 1), hex) != 0)", "        if (0)", ("tests",),
     "^pg_store_replicas$"),
    ("pg-totals-not-added", "gateway/store/pg",
     "max(x.capacity), sum(x.received), sum(x.load) ",
     "max(x.capacity), 0 * sum(x.received), 0 * sum(x.load) ", ("tests",),
     "^pg_store_replicas$"),
    ("pg-receipts-not-announced", "gateway/store/pg",
     "(SELECT pg_notify('shardgate_receipts', s.last_seq || ' ' || c.bits) FROM s)",
     "(SELECT s.last_seq || ' ' || c.bits FROM s)", ("tests",), "^pg_store_feed$"),
    ("pg-sequencer-ignores-role", "gateway:try_lead",
     '    int lead = strcmp(PQgetvalue(res, 0, 0), "t") == 0;', "    int lead = 1;", ("tests",),
     "^pg_store_sequencer$"),
    ("pg-epoch-before-waiting-receipts", "gateway:check_base",
     "    if (rc == 0 && gw_pg_sequence_locked(c, last_seq, err) < 0)",
     "    if (rc == 0 && (*last_seq = strtoull(PQgetvalue(seq, 0, 0), NULL, 10)) > UINT64_MAX)",
     ("tests",), "^pg_store_membership$"),
    # A replica cut off from the database during a change made through another: without the
    # catch-up after a reconnect it never learns the change it missed the NOTIFY of.
    ("pg-no-catch-up-after-reconnect", "gateway:connect_and_listen",
     "        return -ENOTCONN;\n    s->changed(s->changed_ctx, &s->listener);\n",
     "        return -ENOTCONN;\n", ("tests",), "^pg_store_cutoff$"),
    # --read-store (docs/operations.md §9.1): the reads on the writer's database all the same.
    ("read-store-ignored", "gateway:gw_pg_store_open",
     "    s->query.url = o->read_url ? o->read_url : o->url;", "    s->query.url = o->url;",
     ("tests",), "^pg_store_cutoff$"),
    ("pg-epochs-not-listened", "gateway:connect_and_listen",
     '"LISTEN shardgate_epochs; LISTEN shardgate_receipts"', '"LISTEN shardgate_receipts"',
     ("tests",), "^pg_store_membership$"),
    ("pg-shards-members-first", "gateway:pg_shard_totals",
     "int c = i == n ? 1 : !sh ? -1 : id_cmp(all[i].id, all[i].id_len, sh->id, sh->id_len);",
     "int c = sh ? 1 : -1;",
     ("tests",), "^pg_store_membership$"),
    ("health-store-seq-gaps-unchecked", "health:hc_store_seqs",
     "    for (int row = 0; row < PQntuples(res); row++) {\n        int64_t seq = hc_store_int(",
     "    for (int row = 0; row < 0 * PQntuples(res); row++) {\n        int64_t seq = hc_store_int(",
     ("tests",), "^health_store_check$"),
    # Which epoch a receipt's totals count under when its epoch id recurs (A -> B -> A) and a
    # batch dispatched on the first A lands after the second A's record: the latest record
    # before it with that id (docs/decisions.md §4), in each of the three; and a legacy epoch
    # record's epoch_seq (its position) in a checkpoint; and journal verify's resume check.
    # The example worker under spill: a change placed on another shard, accepted without
    # recomputing its batch's receipt.
    ("example-worker-spill-unchecked", "examples:check",
     "        if placed != [args.shard]:", "        if False:", ("tests",),
     "^client_python_package$"),
    # Receipts stored with PostgreSQL's default compression (docs/decisions.md §43).
    ("pg-receipts-not-lz4", "db/migrations/0004_receipts_compressed_with_lz4.sql",
     "SET COMPRESSION lz4;", "SET COMPRESSION pglz;", ("tests",), "^pg_store_db_command$"),
    # On PostgreSQL an epoch that comes back is two rows with one id (docs/journal.md §10):
    # joined row by row, its receipts and totals rows would count twice.
    ("health-store-receipts-per-epoch-row", "health/store_read.c",
     '"shardgate_receipts r LEFT JOIN " HC_EPOCH_FIRST " e',
     '"shardgate_receipts r LEFT JOIN shardgate_epochs e', ("tests",), "^pg_store_membership$"),
    ("health-store-totals-per-epoch-row", "health/store_read.c",
     '"shardgate_totals t LEFT JOIN " HC_EPOCH_FIRST " e',
     '"shardgate_totals t LEFT JOIN shardgate_epochs e', ("tests",), "^pg_store_membership$"),
    ("totals-under-dispatching-view", "gateway:journaled",
     "item->epoch_seq ? item->epoch_seq : item->view_epoch_seq", "item->view_epoch_seq",
     ("tests",), "^health_agree_recurring$"),
    ("health-totals-first-record-of-epoch", "health:hc_receipt_epoch",
     "    for (size_t i = j->n_epochs; i-- > 0;) {",
     "    for (size_t i = 0; i < j->n_epochs; i++) {", ("tests",), "^health_agree_recurring$"),
    ("probe-totals-first-record-of-epoch", "client:epoch",
     "        self.by_name[epoch] = self.by_name[rec[\"ring_id\"]] = seq\n",
     "        self.by_name.setdefault(epoch, seq)\n"
     "        self.by_name.setdefault(rec[\"ring_id\"], seq)\n", ("tests",),
     "^health_agree_recurring$"),
    ("health-legacy-epoch-seq-unset", "health:hc_render_epoch",
     "int64_t seq = c->legacy ? c->position : c->epoch_seq;", "int64_t seq = c->epoch_seq;",
     ("tests",), "^health_agree_legacy$"),
    ("verify-resume-sums-unchecked", "gateway:verify_resume",
     "if (rc == 0 && (at < got.len || at < full->len)) {", "if (0 && at < got.len) {",
     ("tests",), "^health_agree_(recurring|legacy)$"),
    # The state dir survives what operators mix (docs/journal.md §6-§8): a rotation repeats the
    # epoch record in force, not the start's.
    ("rotation-repeats-stale-epoch", "gateway:chain_epochs",
     "    if (c->epoch_len) /* the epoch record in force", "    if (0) /* the epoch record in force",
     ("tests",), "^http_state_mix$"),
    ("checkpoint-refused-after-epoch-record", "gateway:find_resume",
     "        c->resume_epochs++;\n        after = end;",
     "        return \"no receipt record before its offset\";", ("tests",), "^http_state_mix$"),
    ("verify-replays-what-was-archived", "gateway:replay_from_base",
     "long n = j->segs.narchived ? gw_checkpoint_list(j->dir, &seqs) : 0;", "long n = 0;",
     ("tests",), "^http_state_mix$"),
    # index/ is derived: the archived ids come back from their ids files, which archive writes
    ("archived-ids-files-not-read", "gateway:gw_journal_scan_ids",
     "        if (j->segs.archived[i].last_seq > after_seq)\n",
     "        if (0)\n", ("tests",), "^http_state_mix$"),
    # Every option is honoured: --timeout, not the default 30 s.
    ("serve-timeout-ignored", "gateway:start_daemon",
     "s->opt.timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT",
     "30u, MHD_OPTION_CONNECTION_MEMORY_LIMIT",
     ("tests",), "^reliability_slow_clients$"),
    ("health-reverify-interval-ignored", "health:hc_reverify_loop",
     "        until.tv_sec += (time_t)s->reverify_s;", "        until.tv_sec += 60;", ("tests",),
     "^health_serve_errors$"),
    # Strict at the edges: a feed cursor past the head is refused, never a skipping bookmark.
    ("feed-cursor-past-head-accepted", "gateway:begin",
     "    if (fr->q.after > head) {", "    if (0 && fr->q.after > head) {", ("tests",),
     "^http_feed$"),
    # No damaged byte served (docs/journal.md §2.1): each read path checks the line's crc32.
    ("get-serves-an-unchecked-receipt", "gateway:check_receipt_line",
     "    return gw_record_check(line, len - 1, &body);", "    return (void)body, 0;",
     ("tests",), "^http_record_checksum$"),
    ("feed-serves-an-unchecked-line", "gateway:line_record",
     "    int rc = s->checked ? gw_record_check(line, *len, &body) : 0;",
     "    int rc = s->checked ? (gw_record_check(line, *len, &body), 0) : 0;", ("tests",),
     "^http_record_checksum$"),
    ("scrub-checks-no-line", "gateway:check_lines",
     "        int rc = f->checked ? gw_record_check(buf + at, n, &body) : 0;",
     "        int rc = f->checked ? (gw_record_check(buf + at, n, &body), 0) : 0;", ("tests",),
     "^http_record_checksum$"),
    ("scrub-checks-no-seal", "gateway:scrub_segment",
     "        if (strcmp(got, sha) != 0)", "        if (0 && strcmp(got, sha) != 0)", ("tests",),
     "^http_record_checksum$"),
    ("ids-scan-passes-a-damaged-prefix", "gateway:scan_bytes",
     "        else if (nl && s->checked) /* not a receipt, as its checksum confirms */",
     "        else if (0 && nl && s->checked)", ("tests",), "^http_record_checksum$"),
    ("archived-checkpoint-short-of-its-seal", "gateway:check_position",
     "        if (archived->last_seq == c->last_seq && gw_segment_seal_at(archived, c->offset))",
     "        if (archived->last_seq == c->last_seq && (gw_segment_seal_at(archived, c->offset), 1))",
     ("tests",), "^http_state_mix$"),
    ("segment-seal-at-any-offset", "gateway:gw_segment_seal_at",
     "        return offset == s->bytes;", "        return 1;", ("tests",), "^http_state_mix$"),
    ("pg-dead-connection-not-retried", "gateway:gw_pg_once_more",
     "        if (rc == 0 || !(was_open && c->conn == NULL))", "        if (1)", ("tests",),
     "^pg_faults_store_read$"),
    # A membership change's catch-up on a readers' connection the database's restart ended.
    ("pg-catch-up-on-dead-connection", "gateway:gw_pg_store_catch_up",
     "    int rc = gw_pg_once_more(&s->reader, catch_up_on, &u, err);",
     "    int rc = catch_up_on(&s->reader, &u, err);", ("tests",), "^pg_faults_store_read$"),
    ("legacy-repeat-not-adopted-after-an-archive", "gateway:adopt_repeat",
     "    if (k + wl > n && !(n > ll && memcmp(data + at, legacy, ll) == 0))",
     "    if (k + wl > n)", ("tests",), "^http_state_mix$"),
    ("parameter-read-to-its-nul", "gateway:gw_param_value",
     "    return !*value || strlen(*value) == len ? 0 : -EINVAL;", "    return 0;",
     ("tests",), "^http_feed$"),
    ("fraction-read-by-strtod-alone", "gateway:gw_parse_fraction",
     "    if ((text[0] != '0' && text[0] != '1') || (text[1] != '\\0' && text[1] != '.'))",
     "    if (0)", ("tests",), "^http_live_plan$"),
    ("connection-pool-of-256-kib", "gateway:start_daemon", "(size_t)GW_CONNECTION_MEMORY,",
     "(size_t)(256 * 1024),", ("tests",), "^http_limits$"),
    ("reload-counts-a-stale-if-match", "gateway:gw_reload_apply",
     "    if (!rl->dry_run && !rl->stale)", "    if (!rl->dry_run)", ("tests",),
     "^http_live_admin$"),
    ("put-invalid-membership-not-a-reload", "gateway:finish_body",
     "        gw_reload_refused(r->srv, GW_SOURCE_ADMIN, &err);\n", "", ("tests",),
     "^http_live_admin$"),
    ("state-format-newer-accepted", "gateway:gw_state_format_check",
     "    if (format > GW_STATE_FORMAT) {", "    if (0) {", ("tests",), "^http_state_mix$"),
    ("state-format-never-written", "gateway:gw_state_format_check",
     "        return write ? write_marker(dir, err) : 0;",
     "        return write && 0 ? write_marker(dir, err) : 0;", ("tests",),
     "^http_state_mix$"),
    ("receipt-of-a-newer-version-read", "gateway:gw_epoch_receipt_link",
     "    if (v > 2) /* a newer shardgate's receipt", "    if (0) /* a newer shardgate's receipt",
     ("tests",), "^http_state_mix$"),
    ("reload-timestamp-moves-on-refusal", "gateway:gw_metrics_reload",
     "    if (result != GW_RELOAD_RESULT_REFUSED)\n", "    if (1)\n", ("tests",),
     "^http_live_sighup$"),
    ("process-rss-in-pages", "gateway:read_stat",
     "    *rss = (double)pages * (double)(page > 0 ? page : 4096);", "    *rss = (double)pages;",
     ("tests",), "^http_ops$"),
    ("ring-share-given-to-the-next-point", "gateway:render_ring_share",
     "        owned[p[i].shard] +=", "        owned[p[(i + 1) % n].shard] +=", ("tests",),
     "^http_ops$"),
    ("request-metrics-in-the-next-class", "gateway:gw_request_metrics_count", "status / 100 - 1",
     "status / 100", ("tests",), "^http_ops$"),
    ("environment-ignored", "gateway:parse_options", "    int rc = parse_environment(o);",
     "    int rc = 0 ? parse_environment(o) : -1;", ("tests",), "^http_ops$"),
    ("problem-details-at-q-0", "gateway:accepts_problem",
     "(len == n || p[n] == ';' || p[n] == ' ' || p[n] == '\\t') && !q_is_zero(p, len))",
     "(len == n || p[n] == ';' || p[n] == ' ' || p[n] == '\\t') && (q_is_zero(p, len) || 1))",
     ("tests",), "^http_limits$"),
    ("drain-keeps-listening", "gateway:drain",
     "gw_listener_close(&s->listener);", "", ("tests",), "^http_drain$"),
    ("echo-writes-bytes-that-are-not-utf8", "gateway:gw_buf_json_string",
     '            gw_buf_puts(b, "\\\\ufffd");', "            gw_buf_append(b, s + i, 1);",
     ("tests",), "^property/echo$"),
    ("json-string-quote-taken-as-plain", "gateway:plain_ascii",
     "    while (n < len && p[n] < 0x80 && !needs_escape(p[n]))",
     "    while (n < len && p[n] < 0x80 && (p[n] == '\"' || !needs_escape(p[n])))", ("tests",),
     "^unit/test_buf$"),
    ("feed-cache-keeps-every-page", "gateway:keep_page",
     "    if (p->body)\n        drop(p);\n    *p = (struct gw_feed_page)",
     "    *p = (struct gw_feed_page)",
     ("tests",), "^reliability_flat_memory$"),
    # Every option is honoured (docs/tools.md §11): each defect serves the option's default.
    ("listen-ignored", "gateway:open_listener", "gw_http_parse_listen(s->opt.listen, &s->addr",
     "gw_http_parse_listen(\"127.0.0.1:8080\", &s->addr", ("tests",), "^http_ipv6$"),
    ("token-file-ignored", "gateway:load_tokens", "    if (s->opt.token_file && (rc",
     "    if (0 && (rc", ("tests",), "^http_auth$"),
    ("state-dir-in-use-is-internal", "gateway:gw_exit_of_open", "rc == -EBUSY  ? GW_EXIT_IN_USE",
     "rc == -EBUSY  ? GW_EXIT_INTERNAL", ("tests",), "^http_segment_(verify|archive)$"),
    ("svg-dash-is-a-file", "gateway:gw_cli_is_stdout", "return !path || strcmp(path, \"-\") == 0;",
     "return !path;", ("tests",), "^plan_svg$"),
    ("no-token-not-required", "gateway:check_token", "if (!o->token_file && !o->no_token)",
     "if (0)", ("tests",), "^http_auth$"),
    ("no-token-over-token-file", "gateway:load_tokens", "    if (s->opt.token_file && (rc",
     "    if (s->opt.token_file && !s->opt.no_token && (rc", ("tests",), "^http_auth$"),
    ("admin-token-file-ignored", "gateway:load_tokens",
     "    if (rc == GW_EXIT_OK && s->opt.admin_token_file &&", "    if (rc == GW_EXIT_OK && 0 &&",
     ("tests",), "^http_live_admin$"),
    ("max-body-ignored", "gateway:keep", "if (r->body.len + size > r->srv->opt.max_body)",
     "if (r->body.len + size > 16777216u)", ("tests",), "^http_limits$"),
    ("max-changes-ignored", "gateway:finish_body", "r->srv->opt.max_changes,", "100000u,",
     ("tests",), "^unit/test_int_options$"),
    ("threads-ignored", "gateway:start_daemon", "MHD_OPTION_THREAD_POOL_SIZE, s->opt.threads,",
     "MHD_OPTION_THREAD_POOL_SIZE, 2u,", ("tests",), "^http_concurrency$"),
    ("max-connections-ignored", "gateway:start_daemon", "s->daemon, s->opt.max_connections,", "s->daemon, 1024u,",
     ("tests",), "^reliability_slow_clients$"),
    ("header-timeout-ignored", "gateway:start_daemon", "s->opt.header_timeout_s, &s->metrics",
     "10u, &s->metrics", ("tests",), "^reliability_slow_clients$"),
    ("max-connections-per-ip-ignored", "gateway:start_daemon", "s->opt.max_per_ip,", "256u,",
     ("tests",), "^reliability_slow_clients$"),
    ("max-body-inflight-ignored", "gateway:charge", "if (total > s->opt.max_body_inflight)",
     "if (total > 268435456u)", ("tests",), "^reliability_hostile_http$"),
    ("body-timeout-ignored", "gateway:gw_body_begin",
     "\n    r->deadline_ns = now + (uint64_t)r->srv->opt.body_timeout_s * 1000000000ULL;",
     "\n    r->deadline_ns = now + 60ULL * 1000000000ULL;", ("tests",),
     "^reliability_hostile_http$"),
    ("metrics-open-ignored", "gateway:open_route", "GW_ACCESS_METRICS_OPEN && s->opt.metrics_open;",
     "GW_ACCESS_METRICS_OPEN && 0;", ("tests",), "^reliability_hostile_http$"),
    ("segment-bytes-ignored", "gateway:replay_state", "o->state_dir, o->segment_bytes, 0, err)",
     "o->state_dir, 67108864u, 0, err)", ("tests",), "^http_segments$"),
    ("checkpoint-interval-ignored", "gateway:gw_store_start_file",
     "o->checkpoint_interval_ms, taken, err);", "10000u, taken, err);", ("tests",),
     "^http_segment_options$"),
    ("checkpoint-by-bytes-ignored", "gateway:gw_checkpointer_offer",
     "        c->journal->size < c->taken_size + c->bytes_every)", "        1)", ("tests",),
     "^http_segment_options$"),
    # The simulator (docs/operations.md §5.6) sees what only a crash at a system call shows:
    # an append acknowledged before its sync, a failed append not cut back, a rotation that
    # repeats an older epoch than the one in force, an index ahead of a cut journal kept, a
    # start that takes names it never synced as durable, a file put in place without its
    # directory's sync. Each is found by the simulator and shrunk.
    ("journal-acked-before-its-sync", "gateway:gw_journal_appendv",
     "        rc = gw_io.fdatasync(j->fd) == 0 ? 0 : -errno;", "        rc = 0;", ("tests",),
     "^sim/short$"),
    ("journal-failed-append-not-cut-back", "gateway:gw_journal_appendv",
     "    int cut = gw_io.ftruncate(j->fd, (off_t)j->size) == 0 && gw_io.fdatasync(j->fd) == 0;",
     "    int cut = 1;", ("tests",), "^sim/short$"),
    ("rotation-repeats-an-older-epoch", "gateway:chain_epochs",
     "    if (c->epoch_len) /* the epoch record in force, which a rotation repeats",
     "    if (0) /* the epoch record in force, which a rotation repeats", ("tests",),
     "^sim/short$"),
    ("index-ahead-of-the-journal-kept", "gateway:replay_state",
     "    if (rc == 0 && (f->index_durable_seq > f->journal.last_seq ||",
     "    if (rc == 0 && 0 && (f->index_durable_seq > f->journal.last_seq ||", ("tests",),
     "^sim/short$"),
    ("start-leaves-what-it-read-unsynced", "gateway:gw_store_open_file",
     "        rc = sync_what_was_read(f, err);", "        rc = f ? 0 : sync_what_was_read(f, err);",
     ("tests",), "^sim/regress-unsynced-rotation$"),
    ("rebuilt-index-not-flushed-at-stop", "gateway:gw_store_start_file",
     "        f->checkpoint_seq < f->index_durable_seq ? f->checkpoint_seq : f->index_durable_seq;",
     "        f->checkpoint_seq < f->index_durable_seq ? f->checkpoint_seq : f->checkpoint_seq;",
     ("tests",), "^unit/test_store_faults$"),
    # An index whose memtable flushed on its own before a kill -9, then a cut journal: its
    # entries past durable_seq are seen only by its top_seq (docs/journal.md §9).
    ("index-top-seq-not-checked", "gateway:replay_state",
     "                    gw_idem_top_seq(&f->idem) > f->journal.last_seq))",
     "                    (0 && gw_idem_top_seq(&f->idem))))", ("tests",),
     "^unit/test_store_faults$"),
    ("index-top-seq-not-written", "gateway:gw_idem_db_put",
     "    if (rec->seq > d->top_seq) {", "    if (0) {", ("tests",), "^unit/test_store_faults$"),
    # A start from a checkpoint taken after epoch records (a change, then a stop) resumed past
    # them: its receipts' epoch is then unknown (docs/journal.md §7).
    ("checkpoint-resumed-past-its-epoch-records", "gateway:use_checkpoint",
     "            *from = (struct gw_journal_resume){c.segment, c.resume_offset, c.last_seq};",
     "            *from = (struct gw_journal_resume){c.segment, c.offset, c.last_seq};", ("tests",),
     "^sim/short$"),
    ("directory-never-synced", "gateway:gw_sync_dir",
     "    int rc = gw_io.fsync(fd) == 0 ? 0 : -errno;", "    int rc = 0;", ("tests",),
     "^sim/short$"),
    ("checkpoint-at-half-a-segment", "gateway:gw_checkpointer_start",
     "c->bytes_every = j->segment_bytes / 4;", "c->bytes_every = j->segment_bytes / 2;",
     ("tests",), "^http_segment_options$"),
    ("idempotency-window-ignored", "gateway:open_index",
     ".window_ms = o->idempotency_window_ms}", ".window_ms = 0}", ("tests",),
     "^http_segment_options$"),
    ("max-watchers-ignored", "gateway:start_feed", "f->journal.last_seq, o->max_watchers);",
     "f->journal.last_seq, 256u);", ("tests",), "^http_feed_wait$"),
    ("scrub-rate-ignored", "gateway:gw_store_start_file", "o->state_dir, o->scrub_rate,",
     "o->state_dir, 8388608u,", ("tests",), "^http_record_checksum$"),
    ("health-max-changes-ignored", "health:hc_cmd_check", "    v.max_changes = a->max_changes_n;",
     "    v.max_changes = 100000;", ("tests",), "^health_rules$"),
    ("health-archive-dir-ignored", "health:hc_cmd_check",
     "(struct hc_seg_options){a->archive_dir, a->accept_archived};",
     "(struct hc_seg_options){NULL, a->accept_archived};", ("tests",),
     "^health_segments_archive$"),
    ("health-accept-archived-ignored", "health:hc_cmd_check",
     "(struct hc_seg_options){a->archive_dir, a->accept_archived};",
     "(struct hc_seg_options){a->archive_dir, 0};", ("tests",), "^health_segments_archive$"),
    ("health-listen-ignored", "health:hc_cmd_serve", "        a->listen,        a->journal,",
     "        \"127.0.0.1:8081\", a->journal,", ("tests",), "^health_listen$"),
    ("feed-memory-ignored", "gateway:gw_server_run",
     "gw_feed_cache_init(&s->feed_cache, s->opt.feed_memory);",
     "gw_feed_cache_init(&s->feed_cache, 67108864u);", ("tests",), "^http_feed_memory$"),
    # Long receipts are sent from their segment file, checked before and as they are sent
    # (docs/api.md §17, docs/decisions.md §35).
    ("long-receipt-unchecked", "gateway:long_found",
     "int rc = !s->checked ? 0 : tail ? gw_record_check_tail(tail, crc) : -ENOMSG;",
     "int rc = !s->checked ? 0 : tail ? (gw_record_check_tail(tail, crc), 0) : -ENOMSG;",
     ("tests",), "^unit/test_feed$"),
    ("long-receipt-stream-unchecked", "gateway:gw_feed_long_read",
     "if (at + n == len && *crc != l->crc)", "if (at + n == len && *crc != l->crc && 0)",
     ("tests",), "^(unit/test_feed|http_feed_long)$"),
    ("long-receipt-cut-placement-lost", "gateway:long_assignments",
     "size_t used = (size_t)(r.at - w.data);", "size_t used = w.len;", ("tests",),
     "^http_feed_long$"),
    ("assignments-last-without-sse-id", "gateway:gw_feed_out_assignments",
     "if (rc == 0 && matched)", "if (rc == 0 && matched && 0)", ("tests",),
     "^http_feed_(sse|long)$"),
    # The database of ops/pg.sh is closed to the host's other users (docs/operations.md §9.2).
    ("pg-trust-on-loopback", "ops/pg.sh", "--auth-host=scram-sha-256", "--auth-host=trust",
     ("tests",), "^pg_auth_closed$"),
    # Both password files to one user: the health service's user reads the owner's secret.
    ("health-user-reads-owner-secret", "ops/pg.sh",
     "[ \"$role\" = shardgate ] || owner=${SHARDGATE_PGPASS_RO_OWNER:-}", ":",
     ("tests",), "^pg_auth_closed$"),
    # A starting server refuses connections instead of holding them unanswered.
    ("listen-while-starting", "gateway:gw_listener_open",
     "    if (getsockname(l->fd, (struct sockaddr *)addr, &len) != 0)",
     "    if (listen(l->fd, SOMAXCONN) != 0 ||\n        getsockname(l->fd, (struct sockaddr *)addr, &len) != 0)",
     ("tests",), "^http_drain$"),
    # The units reach loopback only (docs/operations.md §6.3).
    ("unit-reaches-any-address", "packaging/shardgate.service.in",
     "PrivateUsers=yes\nIPAddressDeny=any\n", "PrivateUsers=yes\n", ("tests",),
     "^package/systemd_units$"),
    # The ring drawn (docs/tools.md §1.3): a sampled bin is its middle's owner; a move is a
    # change of owner by id, not by index.
    ("ring-svg-bin-owner-at-start", "gateway:draw_bins",
     "owner_at(ring, (uint32_t)(bin * BIN_LEN + BIN_LEN / 2))",
     "owner_at(ring, (uint32_t)(bin * BIN_LEN))", ("tests",), "^plan_svg$"),
    ("ring-svg-moves-by-index", "gateway:move_segment", "if (m->same[to] == from) {",
     "if (to == from) {", ("tests",), "^plan_svg$"),
    # The status page (docs/api.md §19): its policy, the ring drawn on request, exact totals.
    ("ui-without-csp", "gateway:gw_serve_static",
     "    MHD_add_response_header(resp, \"Content-Security-Policy\", r->srv->ui.csp);\n", "",
     ("tests",), "^ui_ui_http$"),
    ("ring-svg-format-ignored", "gateway:gw_handle_ring", "    if (svg) { /* the ring drawn",
     "    if (0) { /* the ring drawn", ("tests",), "^ui_ui_http$"),
    ("ui-totals-as-doubles", "ui/gateway.js",
     "  return JSON.parse(text.replace(/\"(load_total|received_total)\":(\\d+)/g, '\"$1\":\"$2\"'));",
     "  return JSON.parse(text);", ("tests",), "^ui_ui$"),
    # The page's health verdict (serve --health-url, docs/api.md §19): never green unless the
    # health service said pass with a 200, and read only where the policy and CORS allow.
    ("health-url-ignored", "gateway:setup", "    gw_ui_config_make(&s->ui, s->opt.health_url);",
     "    gw_ui_config_make(&s->ui, NULL);", ("tests",), "^ui_ui_http$"),
    ("ui-health-503-green", "ui/gateway.js",
     '  if (res.status === 200 && h.status === "pass") return ["pass (HTTP 200)", "ok"];',
     '  if (res.status !== 0) return ["pass (HTTP 200)", "ok"];', ("tests",), "^ui_ui$"),
    ("ui-health-unreachable-green", "ui/gateway.js",
     '    return [unjudged(base), "bad"];', '    return ["pass (HTTP 200)", "ok"];',
     ("tests",), "^ui_ui$"),
    ("health-allow-origin-ignored", "health:hc_serve_start",
     "    s->allow_origin = cfg->allow_origin;", "    s->allow_origin = NULL;", ("tests",),
     "^ui_ui_http$"),
    ("health-any-origin-allowed", "health:hc_queue",
     "        if (origin != NULL && strcmp(origin, allow_origin) == 0)",
     "        if (origin != NULL)", ("tests",), "^ui_ui_http$"),
    # shardgate-health's /metrics: a verdict it could not reach is never a pass.
    ("health-metrics-pass-unjudged", "health:hc_server_verdict",
     "    v->pass = extra_issue == NULL && hc_report_pass(&s->report, &end);",
     "    v->pass = hc_report_pass(&s->report, &end);", ("tests",), "^ui_ui_http$"),
    # Every metric the shipped rules and dashboard name is exported (docs/operations.md §11).
    ("metrics-watchers-missing", "gateway:render_feed",
     "    put_f(out, \"shardgate_feed_watchers %u\\n\", feed->watchers);\n", "", ("tests",),
     "^package/monitoring_metrics$"),
    # libshardgate (docs/tools.md §13) exports its API and nothing of the code inside it, and
    # refuses a batch only where the gateway does.
    # The Python package as pip installs it (docs/tools.md §14): a command named as the
    # checkout's wrapper, and an entry point that skips the command's own name.
    ("python-package-usage-names-the-wrapper", "client:console",
     "        return main(prog=prog)\n", "        return main()\n", ("tests",),
     "^client_python_package$"),
    ("python-package-entry-point-skips-console", "client/pyproject.toml",
     'shardgate-consume = "shardgate.consume:console"', 'shardgate-consume = "shardgate.consume:main"',
     ("tests",), "^client_python_package$"),
    ("libshardgate-exports-internals", "lib/shardgate.map", "  local:\n    *;\n", "",
     ("tests",), "^library_library$"),
    ("libshardgate-refuses-under-spill", "lib/shardgate.c",
     "d.over_capacity_shards && t->t.contract.policy == GW_POLICY_REJECT) {",
     "d.over_capacity_shards && t->t.contract.policy != GW_POLICY_REPORT) {", ("tests",),
     "^library_library$"),
    # The gateway image's healthcheck is green on 200 alone; no image carries python3
    # (docs/operations.md §6.1).
    ("compose-healthcheck-any-status", "docker-compose.yml",
     '| grep -q "^HTTP/1.[01] 200 "', '| grep -q "^HTTP/1.[01] "', ("tests",),
     "^client_compose_config$"),
    ("gateway-image-with-python3", "Dockerfile", "      libcurl4 \\\n",
     "      libcurl4 python3 \\\n", ("tests",), "^client_dockerfile$"),
    # shardgate-health cannot judge a state dir of a newer format (docs/journal.md §1.1).
    ("health-newer-state-format-judged", "health:hc_state_format",
     "else if (format > HC_STATE_FORMAT)", "else if (format > HC_STATE_FORMAT + 1)", ("tests",),
     "^health_segments_segments$"),
    # `shardgate admin` (docs/tools.md §1.2): apply PUTs against the epoch it planned from; the
    # totals it shows keep every digit.
    ("admin-apply-if-match-any", "gateway:put_if_match",
     "\"apply\", \"PUT\", path, c->admin_token, etag, body, a);",
     "\"apply\", \"PUT\", path, c->admin_token, \"*\", body, a);", ("tests",),
     "^http_admin_cli$"),
    ("admin-totals-rounded", "gateway:quote_totals",
     "{\"\\\"load_total\\\":\", \"\\\"received_total\\\":\"};",
     "{\"\\\"load_totals\\\":\", \"\\\"received_total\\\":\"};", ("tests",),
     "^http_admin_cli$"),
    # If-Match as RFC 9110 reads it (docs/api.md §15): strong comparison; ETag on GET /v1/ring.
    ("if-match-weak-tag-matches", "gateway:walk", "found |= epoch && !weak &&",
     "found |= epoch &&", ("tests",), "^unit/test_if_match$"),
    ("ring-answer-without-etag", "gateway:gw_handle_ring", "MHD_HTTP_HEADER_ETAG, etag);",
     "NULL, NULL);", ("tests",), "^http_live_admin$"),
    ("archive-writes-no-ids-file", "gateway:archive_one",
     "    int rc = write_ids(dir, path, data, (size_t)seg->bytes, seg->first_seq, seg->last_seq, err);",
     "    int rc = 0;", ("tests",), "^http_state_mix$"),
    # One way to put a file in place (docs/decisions.md §14): a failed rename or sync leaves no
    # temporary file behind; a short write is finished, not taken for the whole.
    ("durable-temp-left-after-a-failed-rename", "gateway:gw_durable_install",
     "        gw_io.unlink(f->tmp);\n        f->tmp[0] = '\\0';\n        return rc;",
     "        f->tmp[0] = '\\0';\n        return rc;", ("tests",),
     "^unit/test_(fileio|io_faults)$"),
    ("durable-temp-left-after-a-failed-sync", "gateway:gw_durable_sync",
     "    if (rc != 0)\n        gw_io.unlink(f->tmp);", "    if (rc != 0)\n        (void)0;",
     ("tests",), "^unit/test_io_faults$"),
    # A commit whose write or sync failed is not acknowledged and is cut back (docs/journal.md
    # §4), faults injected in-process at each call.
    ("journal-sync-failure-acknowledged", "gateway:gw_journal_appendv",
     "rc = gw_io.fdatasync(j->fd) == 0 ? 0 : -errno;", "rc = (gw_io.fdatasync(j->fd), 0);",
     ("tests",), "^unit/test_store_faults$"),
    ("journal-failed-append-not-cut", "gateway:gw_journal_appendv",
     "int cut = gw_io.ftruncate(j->fd, (off_t)j->size) == 0 && gw_io.fdatasync(j->fd) == 0;",
     "int cut = 1;", ("tests",), "^unit/test_store_faults$"),
    ("rotation-dir-sync-failure-ignored", "gateway:gw_journal_rotate",
     "(gw_io.rename(j->path, to) != 0 || gw_io.fsync(j->dir_fd) != 0)",
     "(gw_io.rename(j->path, to) != 0 || (gw_io.fsync(j->dir_fd), 0))", ("tests",),
     "^unit/test_store_faults$"),
    ("checkpoint-temp-left-after-a-failed-write", "gateway:write_file",
     "        gw_durable_abandon(&f);\n        return rc;", "        return rc;", ("tests",),
     "^unit/test_store_faults$"),
    ("archive-list-sync-failure-ignored", "gateway:append_entry",
     "    if (rc == 0 && gw_io.fdatasync(fd) != 0)\n        rc = -errno;",
     "    if (rc == 0 && gw_io.fdatasync(fd) != 0 && 0)\n        rc = -errno;", ("tests",),
     "^unit/test_store_faults$"),
    ("short-write-taken-for-whole", "gateway:gw_file_write_all",
     "        data += n;\n        len -= (size_t)n;", "        data += len;\n        len = 0;",
     ("tests",), "^unit/test_io_faults$"),
    # A writev the kernel took in part: the rest of its iovec written again from the start.
    ("writev-rest-from-the-iovec-start", "gateway:gw_file_writev_all",
     "done ? gw_io.write(fd, (const char *)iov[0].iov_base + done,",
     "done ? gw_io.write(fd, (const char *)iov[0].iov_base,", ("tests",),
     "^unit/test_io_faults$"),
    # The membership in force PUT again with max_movement: no ring was built, nothing to plan.
    ("reload-check-on-unbuilt-ring", "gateway:apply_locked",
     "(rl->dry_run || (rl->max_movement >= 0 && rl->verdict == GW_RELOAD_APPLIED))",
     "(rl->dry_run || rl->max_movement >= 0)", ("tests",), "^http_live_repeat$"),
    # A membership change in the order of docs/journal.md §11: SIGHUP's files read under the
    # lock; the shards file installed only after the epoch record, never on a failure; a file
    # that cannot be installed has the epoch in force recorded back; the record's weights join
    # the ledger at its place, before a checkpoint can be taken after it.
    ("sighup-reads-outside-lock", "gateway:gw_reload_from_files",
     "    pthread_mutex_lock(&s->reload_lock);\n    int rc = read_files(s, &contract, &members, &err);",
     "    int rc = read_files(s, &contract, &members, &err);\n    pthread_mutex_lock(&s->reload_lock);",
     ("tests",), "^http_live_repeat$"),
    ("shards-file-before-record", "gateway:switch_to",
     "        gw_crash_point(\"shards-staged\");\n        rc = gw_store_record_epoch(",
     "        gw_crash_point(\"shards-staged\");\n        rc = staged ? gw_shards_write_install(staged) : 0;\n"
     "        staged = NULL;\n        if (rc == 0)\n            rc = gw_store_record_epoch(",
     ("tests",), "^http_live_crash$"),
    ("failed-reload-leaves-shards-file", "gateway:apply_locked",
     "    if (stage) /* refused, failed or installed: no temporary file stays */\n"
     "        gw_shards_write_abandon(&staged);",
     "    if (stage && gw_shards_write_wait(&staged) == 0)\n        gw_shards_write_install(&staged);",
     ("tests",), "^http_live_(repeat|crash)$"),
    ("install-failure-not-recorded-back", "gateway:switch_to",
     "            record_back(s, cur, next.epoch, rl);", "            (void)cur;", ("tests",),
     "^http_live_crash$"),
    # Nothing derived is trusted (docs/journal.md §9): a read names its record by seq, batch id
    # and fingerprint; an index ahead of the journal is rebuilt at the start.
    ("health-head-deadline-never-enforced", "health:hc_heads_loop",
     "        while (h->first && now - h->first->since >= HC_HEAD_TIMEOUT_S)",
     "        while (0 && h->first)", ("tests",), "^health_serve_hostile$"),
    ("health-full-evicts-nothing", "health:hc_heads_opened",
     "    if (h->open > HC_HEADS_MAX && h->first && h->first != e)", "    if (0)", ("tests",),
     "^health_serve_hostile$"),
    ("lib-null-unchecked", "lib/shardgate.c", "        if (!(arg))   ", "        if (0)        ",
     ("tests",), "^library_library$"),
    ("admin-tail-prints-controls-raw", "gateway:print_text",
     "        else if (p[i] < 0x20 || p[i] == 0x7f)", "        else if (0)", ("tests",),
     "^http_admin_cli$"),
    ("admin-tail-refuses-nul", "gateway:follow_page", "json_loadb(p, len, JSON_ALLOW_NUL, NULL)",
     "json_loadb(p, len, 0, NULL)", ("tests",), "^http_admin_cli$"),
    ("plan-refuses-nul", "gateway:count_line", "JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL",
     "JSON_REJECT_DUPLICATES", ("tests",), "^http_admin_cli$"),
    ("consumer-wedged-by-one-item", "client/shardgate/consume.py",
     '        if "\\0" not in value:', "        if True:", ("tests",), "^http_admin_cli$"),
    ("ui-form-may-submit", "gateway/http/ui_health.c", "; form-action 'none'", "", ("tests",),
     "^ui_ui_http$"),
    ("api-answer-sniffable", "gateway:queue",
     '"nosniff"); /* JSON, SVG: never a page */', '"sniff"); /* JSON, SVG: never a page */',
     ("tests",), "^ui_ui_http$"),
    ("header-deadline-never-enforced", "gateway:reaper",
     "        while (h->first && now - h->first->since >= h->timeout_ns) {",
     "        while (0 && h->first) {", ("tests",), "^reliability_slow_clients$"),
    ("full-server-evicts-nothing", "gateway:hand_over",
     "&& !gw_heads_evict_oldest(l->heads)) {", "&& 1) {", ("tests",),
     "^reliability_slow_clients$"),
    ("pg-receipt-unchecked", "gateway:gw_pg_receipt_damage",
     '    if (strlen(digest_hex) != GW_PG_DIGEST_TEXT - 3 || strcmp(have + 2, digest_hex) != 0)',
     "    if (0)", ("tests",), "^pg_store_damage$"),
    ("pg-receipt-of-another-batch", "gateway:gw_pg_receipt_damage",
     "    if (!gw_receipt_names_batch(receipt, len, batch_id, strlen(batch_id)))", "    if (0)",
     ("tests",), "^pg_store_damage$"),
    # One answer to a store's verdicts (docs/decisions.md §54): a replay without its header, and
    # the index's "in flight" taken as a new claim (a second dispatch of the same batch_id).
    ("replay-answered-without-its-header", "gateway:answer_seen",
     '"Idempotent-Replayed", "true");', "NULL, NULL);", ("tests",), "^http_idempotency$"),
    ("claim-in-flight-taken-as-new", "gateway:claim_file",
     "[GW_IDEM_IN_FLIGHT] = GW_COMMIT_IN_FLIGHT", "[GW_IDEM_IN_FLIGHT] = GW_COMMIT_NEW",
     ("tests",), "^http_idempotency$"),
    # The ring object every receipt repeats is rendered once per topology: its online list
    # losing the last shard would be in every receipt of that epoch.
    ("ring-json-online-misses-last-shard", "gateway:render_once",
     "    for (uint32_t s = 0; s < n; s++) {\n        if (s)",
     "    for (uint32_t s = 0; s + 1 < n; s++) {\n        if (s)", ("tests",), "^http_golden$"),
    ("pg-replay-unchecked", "gateway:read_stored",
     "        it->verdict = damage ? GW_COMMIT_DAMAGED : GW_COMMIT_REPLAY;",
     "        it->verdict = GW_COMMIT_REPLAY;", ("tests",), "^pg_store_damage$"),
    ("pg-read-unchecked", "gateway:gw_pg_store_find",
     "    if (damage)\n        rc = gw_pg_receipt_refused(batch_id, damage, err);", "", ("tests",),
     "^pg_store_damage$"),
    ("pg-feed-unchecked", "gateway:receipt_line",
     "    if (damage)\n        return gw_pg_receipt_refused(batch_id, damage, err);", "",
     ("tests",), "^pg_store_damage$"),
    ("health-store-sha256-unchecked", "health:hc_store_sha256",
     "        if (strcmp(have, want) == 0)", "        if (1)", ("tests",), "^health_store_check$"),
    ("read-without-batch-id-check", "gateway:gw_journal_read_receipt",
     "        rc = names_the_batch(line.data, prefix, len, name);", "        rc = 0;", ("tests",),
     "^http_state_derived$"),
    ("index-beyond-journal-trusted", "gateway:replay_state",
     "    if (rc == 0 && (f->index_durable_seq > f->journal.last_seq ||",
     "    if (0 && (f->index_durable_seq > f->journal.last_seq ||", ("tests",),
     "^http_state_derived$"),
    ("archive-unchecked-segment", "gateway:archive",
     "    if (checked != GW_EXIT_OK)\n        return checked;", "    (void)checked;", ("tests",),
     "^http_state_derived$"),
    ("archive-ids-from-unchecked-line", "gateway:gw_archived_ids_build",
     "        if (checked && crc != 0) /* only checked lines give ids */",
     "        if (0 && crc != 0)", ("tests",), "^unit/test_record$"),
    ("checkpoint-past-the-journal-kept", "gateway:gw_store_open_file",
     "    if (rc == 0)\n        drop_checkpoints_ahead(s);", "", ("tests",),
     "^http_state_derived$"),
    # Hostile bytes on the wire (docs/api.md §2): a path seen before it is decoded.
    ("path-cut-at-nul", "gateway:gw_serve_path_seen", "            return gw_bad_path;",
     "            return NULL;", ("tests",), "^http_limits$"),
    ("te-with-cl-read-as-chunked", "gateway:gw_framing_fault", "    if (te && l.count) {",
     "    if (0 && te && l.count) {", ("tests",), "^http_limits$"),
    ("plan-reads-unchecked", "gateway:walk_file",
     "        const char *bad = checked && gw_record_check(",
     "        const char *bad = 0 && gw_record_check(", ("tests",), "^plan_plan_(journal|moves)$"),
    ("plan-reads-one-segment", "gateway:gw_cli_walk_journal",
     "    for (size_t i = 0; rc == GW_EXIT_OK && !stopped && i < segs.count; i++) {",
     "    for (size_t i = 0; rc == GW_EXIT_OK && !stopped && i < 0; i++) {", ("tests",),
     "^plan_plan_journal$"),
    ("shard-over-capacity-at-capacity", "gateway:gw_metrics_over_capacity_shards",
     "        if (tally[i].load > sh->capacity)", "        if (tally[i].load >= sh->capacity)",
     ("tests",), "^http_capacity$"),
    ("checkpoint-ledger-ahead-of-position", "gateway:epoch_synced",
     "    if (rc == 0 && item->chained && gw_ledger_register(",
     "    if (0 && rc == 0 && item->chained && gw_ledger_register(", ("tests",),
     "^http_state_mix$"),
    ("canonical-size-leading-zero", "gateway:take_size",
     "    if (n == 0 || (n > 1 && *from == '0') || v > GW_SAFE_INT_MAX)",
     "    if (n == 0 || v > GW_SAFE_INT_MAX)", ("tests",), "^unit/test_batch_canonical$"),
    ("canonical-batch-id-unchecked", "gateway:gw_batch_read_canonical",
     "                    gw_name_valid(out->batch_id, out->batch_id_len, GW_BATCH_ID_MAX) &&",
     "                    1 &&", ("tests",), "^unit/test_batch_canonical$"),
    ("canonical-fingerprint-of-fewer-bytes", "gateway:gw_batch_read_canonical",
     "!EVP_Digest(data, len, out->fingerprint", "!EVP_Digest(data, len - 1, out->fingerprint",
     ("tests",), "^unit/test_batch_canonical$"),
    ("u64-digit-count-one-short", "gateway:decimal_digits", "        if (v < 1000)",
     "        if (v <= 1000)", ("tests",), "^unit/test_buf$"),
]
CONTRACT = ("DISPATCH_HASH_RING=ketama\n{vnodes}DISPATCH_RING_HASH=sha1\n"
            "DISPATCH_CAPACITY_POLICY=report\n")
# Keys equal to vnode labels hash exactly onto a point ("shard-b-3" is shard-b's vnode 15), so
# `>` and `>=` differ; the sizes put shard-a over capacity, so `ok` must be false.
EDGE_BATCH = {"batch_id": "edge-1", "changes": [
    {"id": "e1", "key": "shard-a-0", "size": 25},
    {"id": "e2", "key": "shard-b-3", "size": 1},
    {"id": "e3", "key": "shard-c-31", "size": 2},
    {"id": "e4", "key": "user:842", "size": 3}]}


def sh(cmd, cwd=None, timeout=1800):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout)


def copy_tree(dst):
    files = sh(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dst, rel))


# The spill scenario (docs/contract.md §9): the spill goldens' membership with a draining shard
# sorting first (ring and membership indexes differ), and the worked example with ch-008 grown
# to 3 and a ch-009 on user:7: ch-007 and ch-009 spill, each an exact fit, and every online
# shard ends exactly full.
SPILL_DIR = os.path.join(ROOT, "tests", "golden", "spill")
SHARDS_FOR = {}


def shards_for(conf):
    return SHARDS_FOR.get(conf, os.path.join(ROOT, "input", "shards.json"))


def spill_scenario(work):
    doc = json.load(open(os.path.join(SPILL_DIR, "shards.json")))
    doc["shards"].insert(0, {"id": "shard-0", "state": "draining", "capacity": 20})
    shards = os.path.join(work, "spill-shards.json")
    json.dump(doc, open(shards, "w"))
    batch = json.load(open(os.path.join(ROOT, "input", "changes.json")))
    batch["batch_id"] = "spill-1"
    batch["changes"][7]["size"] = 3
    batch["changes"].append({"id": "ch-009", "key": "user:7", "size": 1})
    path = os.path.join(work, "spill-batch.json")
    json.dump(batch, open(path, "w"))
    conf = os.path.join(SPILL_DIR, "dispatch.env")
    SHARDS_FOR[conf] = shards
    return ("spill", conf, path, 0)


def scenarios(work):
    """(name, conf, batch, exit the gateway must give) for the probe and health detectors; the
    membership is shards_for(conf)."""
    conf = os.path.join(work, "ok.env")
    open(conf, "w").write(CONTRACT.format(vnodes="DISPATCH_VNODES=160\n"))
    no_vnodes = os.path.join(work, "no-vnodes.env")
    open(no_vnodes, "w").write(CONTRACT.format(vnodes=""))
    edge = os.path.join(work, "edge.json")
    json.dump(EDGE_BATCH, open(edge, "w"))
    example = os.path.join(ROOT, "input", "changes.json")
    return [("example", conf, example, 0), ("edge", conf, edge, 2),
            ("no-vnodes", no_vnodes, example, 3), spill_scenario(work)]


def gateway_receipts(build, work):
    """Runs the (mutated) gateway on every scenario; yields (conf, receipt, exit as expected)."""
    for name, conf, batch, want in scenarios(work):
        out = os.path.join(work, name + ".receipt.json")
        if os.path.exists(out):
            os.unlink(out)
        p = sh([os.path.join(build, "gateway", "shardgate"), "dispatch", "--conf", conf,
                "--shards", shards_for(conf), "--batch", batch,
                "--out", out])
        yield conf, out, p.returncode == want


def probe_red(build, work):
    for conf, receipt, exit_ok in gateway_receipts(build, work):
        if not exit_ok:
            return True
        if not os.path.exists(receipt):
            continue
        p = sh([sys.executable, os.path.join(ROOT, "client", "probe.py"), "--conf", conf,
                "--shards", shards_for(conf), "--receipt", receipt])
        if p.returncode != 0:
            return True
    return probe_chain_red(build, work)


def tampered_receipt(work):
    r = json.load(open(os.path.join(ROOT, "tests", "golden", "sample-0001.receipt.json")))
    r["placements"][2]["shard"] = "shard-b"
    path = os.path.join(work, "tampered.json")
    json.dump(r, open(path, "w"), separators=(",", ":"))
    return path


def health_red(build, work):
    """Red when health fails a receipt of the (mutated) gateway, passes the tampered receipt
    (a health that lost its eyes), or fails the journal scenario."""
    health = os.path.join(build, "health", "shardgate-health")
    receipts = [(c, r) for c, r, _ in gateway_receipts(build, work) if os.path.exists(r)]
    if any(health_says_fail(health, conf, receipt) for conf, receipt in receipts):
        return True
    if not health_rejects(health, scenarios(work)[0][1], tampered_receipt(work)):
        return True
    return health_journal_red(build, work)


def health_verdict(health, conf, receipt):
    """(exit code, status) of `shardgate-health check` on one receipt."""
    p = sh([health, "check", "--conf", conf, "--shards", shards_for(conf), "--receipt", receipt])
    try:
        status = json.loads(p.stdout)["status"]
    except (ValueError, KeyError, TypeError):
        status = None
    return p.returncode, status


def health_says_fail(health, conf, receipt):
    """Red is a non-zero exit or a verdict other than pass: a health check that prints "fail"
    and exits 0 is itself the defect, and the verdict shows it."""
    code, status = health_verdict(health, conf, receipt)
    return code != 0 or status != "pass"


def health_rejects(health, conf, receipt):
    """A bad receipt is rejected only by exit 2 with the verdict "fail" (docs/operations.md
    §1.1)."""
    return health_verdict(health, conf, receipt) == (2, "fail")


def tests_red(build, catchers):
    """Red when a test the defect names as its catchers fails (ctest regex). A red test keeps
    its state dirs and databases for a look; here nobody looks, so they go under a TMPDIR of
    the defect's own, removed afterwards (216 defects' kept dirs once filled the disk)."""
    tmp = tempfile.mkdtemp(prefix="shardgate-defect-")
    os.chmod(tmp, 0o755)  # the databases' dirs inside it belong to the postgres user
    try:
        return subprocess.run(["ctest", "--test-dir", build, "-j2", "--stop-on-failure", "-R",
                               catchers], capture_output=True, timeout=1800,
                              env=dict(os.environ, TMPDIR=tmp)).returncode != 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def catchers_green(build, chosen):
    """On the unmutated tree every catcher of the chosen defects passes, else a red catcher
    would prove nothing."""
    union = "|".join("(%s)" % d[5] for _, d in chosen)
    p = sh(["ctest", "--test-dir", build, "-j2", "-R", union])
    if p.returncode != 0:
        failed = [l for l in p.stdout.decode(errors="replace").splitlines() if "***" in l]
        print("catchers red on the unmutated tree:\n" + "\n".join(failed))
    return p.returncode == 0


def configure_tree(src, build):
    # Release, with the test hooks (docs/api.md §14) the crash and pause tests need.
    return sh(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
               "-DSHARDGATE_CRASH_POINTS=ON"]).returncode == 0


def build_tree(build, targets=None):
    """A defect changes one source file, never a CMake input: the build alone recompiles it
    (configuring again, which lists every test script, cost about 6 s per defect). With
    `targets`, only those are built (the binaries the detectors and the catchers run)."""
    cmd = ["cmake", "--build", build, "-j2"]
    if targets:
        cmd += ["--target"] + sorted(targets)
    return sh(cmd).returncode == 0


# The binaries the probe and health detectors run, whatever the defect.
DETECTOR_TARGETS = {"shardgate", "shardgate-health"}


def test_binaries(build):
    """{ctest name: the build tree's executables its command and environment name, and the
    targets its SHARDGATE_GATE_TARGETS names (a library it installs)}: what a defect must
    rebuild before that test can catch it."""
    listing = json.loads(sh(["ctest", "--test-dir", build, "--show-only=json-v1"]).stdout)
    found = {}
    for t in listing["tests"]:
        words, named = list(t.get("command") or []), set()
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                words += [v.split("=", 1)[-1] for v in p["value"]]
                named |= {n for v in p["value"] if v.startswith("SHARDGATE_GATE_TARGETS=")
                          for n in v.split("=", 1)[1].split(",")}
        found[t["name"]] = named | {os.path.basename(w) for w in words
                                    if w.startswith(build + os.sep) and os.access(w, os.X_OK)}
    return found


def defect_targets(binaries, catchers):
    """The targets to rebuild for one defect: the detectors' binaries and every binary a
    catcher (ctest -R regex, searched as ctest does) runs."""
    pattern = re.compile(catchers)
    targets = set(DETECTOR_TARGETS)
    for name, exes in binaries.items():
        if pattern.search(name):
            targets |= exes
    return targets


def run_defect(index, defect, src, build, work, binaries):
    name, where, old, new, detectors, catchers = defect
    label = "N%02d %s" % (index, name)
    try:
        path, original = gate_anchor.apply(src, where, old, new)
    except LookupError as e:
        print("%s: FAIL the patch does not apply: %s" % (label, e))
        return False
    started = time.monotonic()
    try:
        if not build_tree(build, defect_targets(binaries, catchers)):
            print("%s: FAIL the defect does not build" % label)
            return False
        red = {"probe": lambda: probe_red(build, work), "health": lambda: health_red(build, work),
               "tests": lambda: tests_red(build, catchers)}
        verdicts = {d: red[d]() for d in detectors}
    finally:
        gate_anchor.restore(path, original)
    ok = all(verdicts.values())
    print("%s: %s applied; %s (%.0f s)" % (label, "PASS" if ok else "FAIL", " ".join(
        "%s=%s" % (d, "red" if v else "GREEN") for d, v in verdicts.items()),
        time.monotonic() - started), flush=True)
    return ok


def selected(argv):
    """`--only NAME[,NAME...]` runs those defects alone (while working on one); default all."""
    if len(argv) == 3 and argv[1] == "--only":
        names = argv[2].split(",")
        unknown = [n for n in names if n not in [d[0] for d in DEFECTS]]
        if unknown:
            sys.exit("negative: no defect named %s" % ", ".join(unknown))
        return [(i, d) for i, d in enumerate(DEFECTS) if d[0] in names]
    if len(argv) != 1:
        sys.exit("usage: negative.py [--only NAME[,NAME...]]")
    return list(enumerate(DEFECTS))


# Defects run two at a time, each worker in a source and build tree of its own (a defect is a
# patch to one file of its tree): the catchers are mostly one test script waiting on a server,
# and two of them keep the machine's two cores busy.
WORKERS = 2


def make_tree(tmp, i):
    """(src, build, work) of worker i: a copy of the source tree, configured and built."""
    src, build, work = (os.path.join(tmp, "%s%d" % (d, i)) for d in ("src", "build", "work"))
    os.makedirs(work)
    copy_tree(src)
    return (src, build, work) if configure_tree(src, build) and build_tree(build) else None


def run_worker(tree, queue, results, binaries):
    src, build, work = tree
    while True:
        try:
            i, d = queue.pop(0)
        except IndexError:
            return
        results[i] = run_defect(i + 1, d, src, build, work, binaries)


def main():
    chosen = selected(sys.argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shardgate-negative-") as tmp:
        # the trees build side by side; the unmutated checks then run with nothing beside them
        trees = [None] * WORKERS
        builders = [threading.Thread(target=lambda k=k: trees.__setitem__(k, make_tree(tmp, k)))
                    for k in range(WORKERS)]
        for t in builders:
            t.start()
        for t in builders:
            t.join()
        if None in trees:
            print("the unmutated tree does not build")
            return 1
        _, build, work = trees[0]
        if (probe_red(build, work) or health_red(build, work) or
                not catchers_green(build, chosen)):
            print("the unmutated tree is already red: the gate would prove nothing")
            return 1
        binaries = test_binaries(build)
        queue, results = list(chosen), {}
        workers = [threading.Thread(target=run_worker, args=(t, queue, results, binaries))
                   for t in trees]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    npass = sum(results.values())
    print("gate: %d defects in %.0f s" % (len(results), time.monotonic() - started))
    print("NPASS=%d NFAIL=%d RESULT: %s" % (npass, len(results) - npass,
                                           "OK" if npass == len(results) else "BAD"))
    return 0 if npass == len(results) and len(results) == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
