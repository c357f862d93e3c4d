// shardgate's status page (docs/api.md §19). Plain JavaScript, no library and no build step:
// it reads the JSON API with the token the operator gives (kept for this tab only), redraws
// what changed every REFRESH_MS without reloading the page, and says plainly when the token is
// refused or the gateway does not answer.
"use strict";

const REFRESH_MS = 5000;
const EPOCHS_SHOWN = 50;
const ROWS_SHOWN = 1000; // of the shards that match the filter: 10,000 rows take seconds to lay out
const HEALTH_TIMEOUT_MS = 10000; // a verdict not given by then is "cannot judge"
const TOKENS = { client: "shardgate.token", admin: "shardgate.admin-token" };

class PageError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind; // "token", "down" or "api"
  }
}

// What is on screen: the epoch drawn, the ETag a dry run names, the shards answer shown and
// what the table was drawn from.
const state = { etag: null, drawn: null, shardsText: null, shards: [], metrics: null, timer: null,
  healthUrl: undefined, healthBusy: false };

function token(which) {
  return sessionStorage.getItem(TOKENS[which]) || "";
}

async function call(path, { method = "GET", body, headers = {}, which = "client" } = {}) {
  const sent = Object.assign({}, headers);
  if (token(which)) sent.Authorization = "Bearer " + token(which);
  let res;
  try {
    res = await fetch(path, { method, body, headers: sent, cache: "no-store" });
  } catch (e) {
    throw new PageError("down", "The gateway at " + location.host + " does not answer (" +
      e.message + "): it is down or unreachable; the figures below are from before.");
  }
  if (res.status === 401) {
    throw new PageError("token", which === "admin"
      ? "The admin token was refused (401 unauthorized): enter the gateway's admin token."
      : "The token was refused (401 unauthorized): enter the gateway's client token above.");
  }
  return res;
}

// The error document of docs/api.md §2, as one line.
async function problem(res) {
  const text = await res.text();
  try {
    const e = JSON.parse(text).error;
    return "HTTP " + res.status + " " + e.code + ": " + e.message + (e.path ? " (at " + e.path + ")" : "");
  } catch (_) {
    return "HTTP " + res.status + ": " + text.slice(0, 200);
  }
}

// Totals are exact big integers (docs/api.md §7): kept as their digits, never as doubles.
function exact(text) {
  return JSON.parse(text.replace(/"(load_total|received_total)":(\d+)/g, '"$1":"$2"'));
}

async function getJson(path) {
  const res = await call(path);
  if (!res.ok) throw new PageError("api", "GET " + path + ": " + await problem(res));
  const text = await res.text();
  return { body: exact(text), text, res };
}

// The samples of /metrics (Prometheus text format), by family: [{labels, value}].
function parseMetrics(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const m = /^(shardgate_[a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m) (out[m[1]] = out[m[1]] || []).push({ labels: m[2] || "", value: m[3] });
  }
  return out;
}

function labelOf(labels, name) {
  const m = new RegExp(name + '="([^"]*)"').exec(labels);
  return m ? m[1] : null;
}

function sample(metrics, family, name, value) {
  const s = (metrics[family] || []).find((x) => name === undefined || labelOf(x.labels, name) === value);
  return s ? s.value : null;
}

function percent(ratio) {
  return (100 * ratio).toFixed(3) + "%";
}

function unixTime(seconds) {
  return seconds === null ? "never" : new Date(Number(seconds) * 1000).toISOString();
}

function drawInto(container, svgText) {
  const doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
  if (doc.querySelector("parsererror")) throw new PageError("api", "the drawing is not SVG");
  container.replaceChildren(document.importNode(doc.documentElement, true));
}

function renderEpoch(ring, epochs) {
  const current = epochs.filter((e) => e.epoch === ring.epoch).pop() || {};
  fillList($("epoch"), [
    ["epoch", ring.epoch, "mono"],
    ["epoch_seq", current.epoch_seq],
    ["source", current.source],
    ["since", current.time || "(not recorded)"],
    ["ring", ring.id, "mono"],
    ring.table !== undefined
      ? ["slots", ring.table + " (" + ring.algorithm + " table, " + ring.hash + ")"]
      : ["points", ring.vnodes_total + " (" + ring.vnodes + " per unit of weight, " + ring.hash + ")"],
    ["online shards", ring.online.length],
  ]);
  const rows = document.createDocumentFragment();
  for (const e of epochs.slice(-EPOCHS_SHOWN).reverse()) {
    const tr = el("tr");
    tr.dataset.epoch = e.epoch;
    tr.append(el("td", e.epoch_seq, "num"), el("td", e.epoch.slice(0, 12), "mono"),
      el("td", e.ring.slice(0, 12), "mono"), el("td", e.source), el("td", e.time || ""),
      el("td", e.first_seq, "num"));
    rows.append(tr);
  }
  $("epochs").tBodies[0].replaceChildren(rows);
}

function renderReady(code, ready) {
  const pairs = [["status", ready.status + " (HTTP " + code + ")", code === 200 ? "ok" : "bad"]];
  for (const [check, value] of Object.entries(ready.checks || {})) {
    pairs.push([check, value, value === "ok" ? "ok" : "bad"]);
  }
  fillList($("ready"), pairs);
}

function renderReloads(metrics, failure) {
  if (failure) {
    fillList($("reloads"), [["metrics", failure, "bad"]]);
    return;
  }
  const reloads = (r) => sample(metrics, "shardgate_reloads_total", "result", r) || "0";
  fillList($("reloads"), [
    ["applied", reloads("applied")],
    ["unchanged", reloads("unchanged")],
    ["refused", reloads("refused"), reloads("refused") === "0" ? "" : "bad"],
    ["last applied or unchanged", unixTime(sample(metrics, "shardgate_reload_last_success_timestamp_seconds"))],
    ["views alive", sample(metrics, "shardgate_views_alive")],
  ]);
}

// A metrics family by its shard label: Map(id -> value).
function byShard(metrics, family) {
  return new Map(((metrics && metrics[family]) || []).map((x) => [labelOf(x.labels, "shard"), x.value]));
}

// What a shard's row warns of, in words and colour: a state that takes no changes, and batches
// that put more on it than its capacity (capacity is per batch: docs/contract.md §2).
function shardFlags(s, overBatches) {
  const flags = [];
  if (s.state === "draining") flags.push(["draining: leaving; set it offline once its data is copied", "flag warn"]);
  if (s.state === "offline") flags.push(["offline: takes no changes", "flag muted"]);
  if (overBatches && overBatches !== "0") {
    flags.push(["over capacity in " + overBatches + (overBatches === "1" ? " batch" : " batches"), "flag bad"]);
  }
  return flags;
}

function renderShards(shards, metrics) {
  const capacity = shards.filter((s) => s.state === "online").reduce((sum, s) => sum + s.capacity, 0);
  const shares = byShard(metrics, "shardgate_ring_share_ratio");
  const over = byShard(metrics, "shardgate_shard_over_capacity_batches_total");
  const filter = $("shard-filter").value;
  const matching = filter ? shards.filter((s) => s.id.includes(filter)) : shards;
  const shown = matching.slice(0, ROWS_SHOWN);
  $("shards-count").textContent = shards.length + " shards" +
    (filter ? ", " + matching.length + " matching" : "") +
    (shown.length < matching.length ? "; the first " + shown.length + " shown: filter by id to see others" : "");
  const rows = document.createDocumentFragment();
  for (const s of shown) {
    const share = shares.get(s.id);
    const tr = el("tr");
    tr.dataset.shard = s.id;
    const flags = el("td", "", "flags");
    for (const [text, kind] of shardFlags(s, over.get(s.id))) flags.append(el("span", text, kind));
    tr.classList.toggle("over-capacity", over.has(s.id) && over.get(s.id) !== "0");
    tr.append(el("td", s.id, "mono"), el("td", s.state, "state-" + s.state), flags,
      el("td", s.weight, "num"), el("td", s.capacity, "num"),
      el("td", s.load_total, "num load"), el("td", s.received_total, "num received"),
      el("td", share === null || share === undefined ? "—" : percent(Number(share)), "num share"),
      el("td", s.state === "online" && capacity ? percent(s.capacity / capacity) : "—", "num"));
    rows.append(tr);
  }
  $("shards").tBodies[0].replaceChildren(rows);
}

// The health service's verdict (serve --health-url): read by this page from that service, which
// must allow this origin (shardgate-health serve --allow-origin). Anything but a 200 "pass" is
// not green: a failing verdict, or no verdict at all ("cannot judge").
function unjudged(base) {
  return "cannot judge: " + base + "healthz does not answer this page (down, or without " +
    "--allow-origin " + location.origin + ")";
}

async function healthVerdict(base) {
  let res, h;
  try {
    res = await fetch(base + "healthz", { mode: "cors", credentials: "omit", cache: "no-store",
      signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    h = JSON.parse(await res.text());
  } catch (e) {
    return [unjudged(base), "bad"];
  }
  if (res.status === 200 && h.status === "pass") return ["pass (HTTP 200)", "ok"];
  const issues = Array.isArray(h.issues) ? h.issues.length : 0;
  return [h.status + " (HTTP " + res.status + "): " + issues + (issues === 1 ? " issue" : " issues"), "bad"];
}

async function renderHealth() {
  if (state.healthUrl === undefined) {
    const res = await call("/ui/config.json");
    if (!res.ok) throw new PageError("api", "GET /ui/config.json: " + await problem(res));
    state.healthUrl = JSON.parse(await res.text()).health_url;
  }
  const base = state.healthUrl;
  $("health-page").hidden = !base;
  if (!base) {
    fillList($("health"), [["verdict", "not linked: serve --health-url URL names the health service", "muted"]]);
    return;
  }
  $("health-link").href = base + "ui/";
  const [text, kind] = await healthVerdict(base);
  fillList($("health"), [["verdict", text, kind], ["service", base, "mono"]]);
  $("health").dataset.checked = Number($("health").dataset.checked || 0) + 1; // verdicts read
}

async function readMetrics() {
  const res = await call("/metrics");
  if (!res.ok) return { failure: "GET /metrics: " + await problem(res) };
  return { metrics: parseMetrics(await res.text()) };
}

function setStatus(kind, text) {
  const badge = $("state");
  badge.textContent = text;
  badge.className = "badge " + (kind === "ready" ? "ok" : "bad");
  document.body.dataset.state = kind;
}

function setBanner(message) {
  const banner = $("banner");
  banner.hidden = !message;
  banner.textContent = message || "";
}

async function refresh() {
  clearTimeout(state.timer);
  try {
    const ring = await getJson("/v1/ring");
    state.etag = ring.res.headers.get("ETag");
    const [epochs, shards, readyRes, m] = await Promise.all([
      getJson("/v1/epochs"), getJson("/v1/shards"), call("/readyz"), readMetrics()]);
    const ready = JSON.parse(await readyRes.text());
    renderEpoch(ring.body, epochs.body.epochs);
    renderReady(readyRes.status, ready);
    renderReloads(m.metrics, m.failure);
    if (!state.healthBusy) { // in the background: a slow verdict never holds the page back
      state.healthBusy = true;
      renderHealth().catch((e) => fillList($("health"), [["verdict", e.message, "bad"]]))
        .finally(() => { state.healthBusy = false; });
    }
    const shown = shards.text + (m.metrics ? JSON.stringify([m.metrics.shardgate_ring_share_ratio,
      m.metrics.shardgate_shard_over_capacity_batches_total]) : "");
    if (shown !== state.shardsText) {
      state.shards = shards.body.shards;
      state.metrics = m.metrics;
      renderShards(state.shards, state.metrics);
      state.shardsText = shown;
    }
    if (state.drawn !== ring.body.epoch) {
      const svg = await call("/v1/ring?format=svg");
      if (!svg.ok) throw new PageError("api", "GET /v1/ring?format=svg: " + await problem(svg));
      drawInto($("ring"), await svg.text());
      state.drawn = ring.body.epoch;
    }
    setBanner(null);
    setStatus(readyRes.status === 200 ? "ready" : "unready", readyRes.status === 200 ? "ready" : "not ready");
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    setBanner(e.message);
    setStatus(e.kind || "api", e.kind === "token" ? "token refused" : e.kind === "down" ? "down" : "error");
  } finally {
    state.timer = setTimeout(refresh, REFRESH_MS);
  }
}

async function dryRun() {
  const status = $("plan-status");
  status.className = "";
  status.textContent = "asking the gateway…";
  try {
    if (!state.etag) throw new PageError("api", "the current epoch is not known yet: wait for the page to load");
    const res = await call("/v1/admin/membership?dry_run=1&format=svg", {
      method: "PUT", body: $("proposal").value, which: "admin",
      headers: { "Content-Type": "application/json", "If-Match": state.etag },
    });
    if (res.status === 412) {
      refresh();
      throw new PageError("api", "The membership changed after this page read it: the page has been refreshed; run the dry run again.");
    }
    if (!res.ok) throw new PageError("api", await problem(res));
    drawInto($("plan"), await res.text());
    status.textContent = "Drawn below: the current ring, and around it the arcs that would move. Nothing was changed.";
  } catch (e) {
    status.className = "error";
    status.textContent = e.message;
  }
}

function start() {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    for (const [which, id] of [["client", "token"], ["admin", "admin-token"]]) {
      if ($(id).value) sessionStorage.setItem(TOKENS[which], $(id).value);
      $(id).value = "";
    }
    state.drawn = null;
    refresh();
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKENS.client);
    sessionStorage.removeItem(TOKENS.admin);
    refresh();
  });
  $("proposal-file").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    if (file) $("proposal").value = await file.text();
  });
  $("dry-run").addEventListener("click", dryRun);
  $("shard-filter").addEventListener("input", () => renderShards(state.shards, state.metrics));
  refresh();
}

start();
