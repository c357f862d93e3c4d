// shardgate-health's page (docs/operations.md §1.4): /healthz every REFRESH_MS, the verdict,
// its issues and every criterion, without reloading. Plain JavaScript, no library.
"use strict";

const REFRESH_MS = 5000;

function observed(checks, name) {
  const c = checks[name];
  return c ? c[0].observedValue : null;
}

// "criterion: subject: detail" (docs/operations.md §1.2): the criterion apart.
function renderIssues(issues) {
  const items = document.createDocumentFragment();
  for (const text of issues) {
    const cut = text.indexOf(": ");
    const li = el("li");
    li.dataset.criterion = cut > 0 ? text.slice(0, cut) : "";
    li.append(el("strong", cut > 0 ? text.slice(0, cut) : text), cut > 0 ? text.slice(cut) : "");
    items.append(li);
  }
  $("issues").replaceChildren(items);
  $("issues-none").hidden = issues.length > 0;
}

function renderCriteria(checks) {
  const names = Object.keys(checks).filter((n) => checks[n][0].observedUnit === "evaluations" && n !== "checks_ran");
  names.sort((a, b) => (checks[b][0].issues > 0) - (checks[a][0].issues > 0));  // failing first
  const rows = document.createDocumentFragment();
  for (const name of names) {
    const c = checks[name][0];
    const tr = el("tr");
    tr.dataset.criterion = name;
    tr.append(el("td", name, "mono"), el("td", c.status, c.status === "pass" ? "ok" : "bad"),
      el("td", c.observedValue, "num"), el("td", c.issues, "num" + (c.issues ? " bad" : "")));
    rows.append(tr);
  }
  $("criteria").tBodies[0].replaceChildren(rows);
}

function setStatus(kind, text) {
  $("state").textContent = text;
  $("state").className = "badge " + (kind === "pass" ? "ok" : "bad");
  document.body.dataset.state = kind;
}

async function refresh() {
  try {
    let res;
    try {
      res = await fetch("/healthz", { cache: "no-store" });
    } catch (e) {
      throw new Error("The health service at " + location.host + " does not answer (" + e.message +
        "): the figures below are from before, and nothing is verified now.");
    }
    const h = JSON.parse(await res.text());
    const checks = h.checks || {};
    fillList($("verdict"), [
      ["status", h.status + " (HTTP " + res.status + ")", h.status === "pass" ? "ok" : "bad"],
      ["checks ran", observed(checks, "checks_ran")],
      ["receipts verified", observed(checks, "receipts_verified")],
      ["placements verified", observed(checks, "placements_verified")],
      ["last full verification", h.last_full_verification || "not yet"],
      ["re-verified every", h.reverify_interval_s + " s"],
      ["pending tail", h.pending_tail_bytes + " bytes"],
      ["epoch of the files", h.files_epoch || "(cannot read them)", "mono"],
    ]);
    renderIssues(h.issues || []);
    renderCriteria(checks);
    $("banner").hidden = true;
    setStatus(h.status === "pass" ? "pass" : "fail", h.status === "pass" ? "pass" : "fail");
    $("updated").textContent = "verified " + new Date().toLocaleTimeString();
  } catch (e) {
    $("banner").textContent = e.message;
    $("banner").hidden = false;
    setStatus("down", "down");
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
