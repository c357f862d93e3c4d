// What both pages build their DOM with (the gateway's, docs/api.md §19, and shardgate-health's,
// docs/operations.md §1.4): loaded before each page's app.js.
"use strict";

const $ = (id) => document.getElementById(id);

// An element with its text (never parsed as HTML) and class.
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// A <dl> of [name, value, class] rows, replaced whole.
function fillList(dl, pairs) {
  const frag = document.createDocumentFragment();
  for (const [name, value, cls] of pairs) frag.append(el("dt", name), el("dd", value, cls));
  dl.replaceChildren(frag);
}
