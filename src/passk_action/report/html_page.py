"""The self-contained HTML page: its Content-Security-Policy, style, script and shell.

Self-contained means no request leaves the page: styles and the small
sorting/filtering script are inline, charts are inline SVG (:mod:`.charts`),
and a strict Content-Security-Policy (``default-src 'none'``) makes the
browser refuse anything else, so a value that slipped through escaping still
could not load or send anything.  Markdown fragments (text :mod:`.escape`
already made inert) become HTML through markdown-it-py with raw HTML
*disabled*: any ``<`` left becomes ``&lt;``, and markdown-it refuses
``javascript:`` links by itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from markdown_it import MarkdownIt

from .charts import xml_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""Nothing but inline style, inline script and data: images; no fetch, no font, no frame."""


def _md() -> MarkdownIt:
    # commonmark with GFM tables; "html": False turns any raw HTML into text.
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def markdown_html(text: str) -> str:
    """A Markdown fragment as HTML, raw HTML disabled (see the module docstring)."""
    return str(_md().render(text))


_STYLE = """
:root { color-scheme: light; --ok: #047857; --bad: #b91c1c; --muted: #4b5563;
  --line: #e5e7eb; --soft: #f9fafb; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: #111827; background: #ffffff; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 20px 64px; }
nav { position: sticky; top: 0; z-index: 2; background: #ffffffee; border-bottom: 1px solid
  var(--line); padding: 8px 20px; font-size: 14px; }
nav a { margin-right: 16px; color: #1d4ed8; text-decoration: none; }
nav a:hover { text-decoration: underline; }
h1 { font-size: 24px; line-height: 1.3; margin: 8px 0 16px; }
h2 { font-size: 19px; margin: 36px 0 12px; padding-bottom: 4px; border-bottom: 1px solid
  var(--line); }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
th, td { border: 1px solid var(--line); padding: 5px 9px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--soft);
  padding: 1px 4px; border-radius: 4px; }
pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--soft);
  border: 1px solid var(--line); padding: 8px; overflow-x: auto; white-space: pre-wrap;
  word-break: break-all; max-height: 320px; }
pre code { padding: 0; background: none; font: inherit; }
.figures { display: flex; flex-wrap: wrap; gap: 24px; }
figure { margin: 0; flex: 1 1 480px; max-width: 100%; }
figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.noise { padding: 10px 14px; border-left: 4px solid #2563eb; background: #eff6ff; }
.controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 8px 0; }
.controls input, .controls select { font: inherit; padding: 4px 8px; border: 1px solid #9ca3af;
  border-radius: 4px; }
#row-count { color: var(--muted); }
#rows-table { width: 100%; }
#rows-table thead th { position: sticky; top: 37px; z-index: 1; }
#rows-table th button { font: inherit; font-weight: 600; background: none; border: 0;
  padding: 0; cursor: pointer; color: inherit; }
#rows-table th[aria-sort="ascending"] button::after { content: " ▲"; }
#rows-table th[aria-sort="descending"] button::after { content: " ▼"; }
#rows-table tr.blocking td:first-child { box-shadow: inset 4px 0 0 var(--bad); }
#rows-table details summary { cursor: pointer; }
#rows-table td[data-key="id"] { min-width: 15em; max-width: 40em; overflow-wrap: anywhere; }
#rows-table details table { margin: 6px 0; font-size: 13px; overflow-wrap: normal; }
/* An opened row's attempts get a full-width row of their own (the script moves them
   there; at 1280 px the id cell squeezed them to one letter per line), and never
   inherit the id's break-anywhere. */
#rows-table .attempts table { overflow-wrap: normal; margin: 6px 0; font-size: 13px; }
#rows-table .attempts th, #rows-table .attempts td:nth-child(-n+2),
  #rows-table .attempts td:last-child { white-space: nowrap; }
#rows-table .attempts td:nth-child(3) { min-width: 7em; }
#rows-table .attempts td.checks { min-width: 12em; }
#rows-table tr.attempts-row > td { background: #fbfbfc; padding: 4px 16px 12px; }
#rows-table tr.attempts-row .attempts { display: flex; flex-wrap: wrap; gap: 0 24px; }
#rows-table tr.attempts-row .attempts > * { flex: 1 1 480px; }
.cls { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 13px;
  white-space: nowrap; }
.cls-stable-correct { background: #d1fae5; color: #065f46; }
.cls-stable-wrong { background: #e5e7eb; color: #1f2937; }
.cls-flip { background: #ffedd5; color: #9a3412; }
.cls-unclassified { background: #ede9fe; color: #5b21b6; }
.right { color: var(--ok); } .wrong { color: var(--bad); } .err { color: #6d28d9; }
.gate-fail { color: var(--bad); font-weight: 600; }
.muted { color: var(--muted); }
"""

# Sorting and filtering of the row table, and state kept in the URL fragment
# (#sort=key:dir&q=text&show=tag) so a filtered view can be linked to.
_SCRIPT = r"""
(function () {
  "use strict";
  var table = document.getElementById("rows-table");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  rows.forEach(function (row, i) { row.setAttribute("data-order", String(i)); });
  var input = document.getElementById("row-filter");
  var show = document.getElementById("row-show");
  var count = document.getElementById("row-count");
  var state = { sort: "", dir: "asc" };

  function value(row, key) {
    if (!key) { return Number(row.getAttribute("data-order")); }
    var cell = row.querySelector('[data-key="' + key + '"]');
    if (!cell) { return ""; }
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent;
    var num = Number(raw);
    return raw !== "" && !isNaN(num) ? num : raw.toLowerCase();
  }

  // An opened row's attempts move to a row of their own under it, as wide as the table;
  // closing the row puts them back.  Sorting and filtering carry that row along.
  var columns = table.tHead.rows[0].cells.length;
  function place(row) {
    if (row.attemptsRow) {
      body.insertBefore(row.attemptsRow, row.nextSibling);
      row.attemptsRow.hidden = row.hidden;
    }
  }
  body.addEventListener("toggle", function (event) {
    var details = event.target;
    var row = details.closest && details.closest("tr");
    if (!row || row.parentNode !== body || row.classList.contains("attempts-row")) { return; }
    if (details.open && !row.attemptsRow) {
      var block = details.querySelector(".attempts");
      if (!block) { return; }
      var extra = document.createElement("tr");
      extra.className = "attempts-row";
      var cell = extra.insertCell();
      cell.colSpan = columns;
      cell.appendChild(block);
      row.attemptsRow = extra;
      place(row);
    } else if (!details.open && row.attemptsRow) {
      details.appendChild(row.attemptsRow.querySelector(".attempts"));
      body.removeChild(row.attemptsRow);
      row.attemptsRow = null;
    }
  }, true);

  function sortRows(key, dir) {
    state.sort = key; state.dir = dir === "desc" ? "desc" : "asc";
    var sign = state.dir === "desc" ? -1 : 1;
    rows.sort(function (a, b) {
      var x = value(a, key), y = value(b, key);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      if (x < y) { return -sign; }
      if (x > y) { return sign; }
      return Number(a.getAttribute("data-order")) - Number(b.getAttribute("data-order"));
    });
    rows.forEach(function (row) { body.appendChild(row); });
    rows.forEach(place);
    table.setAttribute("data-sorted", key ? key + ":" + state.dir : "none");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var button = th.querySelector("button");
      var mine = button && button.getAttribute("data-key") === key;
      if (mine) { th.setAttribute("aria-sort", state.dir === "asc" ? "ascending" : "descending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }

  function applyFilter() {
    var q = input.value.trim().toLowerCase();
    var tag = show.value;
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search") || "";
      var tags = (row.getAttribute("data-tags") || "").split(" ");
      var ok = (!q || text.indexOf(q) !== -1) && (tag === "all" || tags.indexOf(tag) !== -1);
      row.hidden = !ok;
      if (row.attemptsRow) { row.attemptsRow.hidden = !ok; }
      if (ok) { shown += 1; }
    });
    count.textContent = "Showing " + shown + " of " + rows.length + " rows";
    table.setAttribute("data-shown", String(shown));
  }

  function save() {
    var parts = [];
    if (state.sort) { parts.push("sort=" + encodeURIComponent(state.sort + ":" + state.dir)); }
    if (input.value) { parts.push("q=" + encodeURIComponent(input.value)); }
    if (show.value !== "all") { parts.push("show=" + encodeURIComponent(show.value)); }
    try { history.replaceState(null, "", parts.length ? "#" + parts.join("&") : "#rows"); }
    catch (e) { /* some file:// contexts refuse; the view still works */ }
  }

  function load() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq > 0) {
        try { params[part.slice(0, eq)] = decodeURIComponent(part.slice(eq + 1)); }
        catch (e) { /* a malformed fragment is ignored */ }
      }
    });
    if (params.q) { input.value = params.q; }
    if (params.show && show.querySelector('option[value="' + CSS.escape(params.show) + '"]')) {
      show.value = params.show;
    }
    var sort = (params.sort || "").split(":");
    var known = sort[0] && table.querySelector('button[data-key="' + CSS.escape(sort[0]) + '"]');
    sortRows(known ? sort[0] : "", sort[1] || "asc");
    applyFilter();
  }

  table.tHead.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-key]");
    if (!button) { return; }
    var key = button.getAttribute("data-key");
    sortRows(key, state.sort === key && state.dir === "asc" ? "desc" : "asc");
    save();
  });
  input.addEventListener("input", function () { applyFilter(); save(); });
  show.addEventListener("change", function () { applyFilter(); save(); });
  document.getElementById("row-controls").hidden = false;
  table.setAttribute("data-ready", "true");
  load();
})();
"""


def page(title: str, nav: Sequence[tuple[str, str]], sections: Sequence[str]) -> str:
    links = "".join(f'<a href="#{xml_text(anchor)}">{xml_text(label)}</a>' for anchor, label in nav)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="referrer" content="no-referrer">',
            # An empty data: icon, so browsers do not ask a server for /favicon.ico.
            '<link rel="icon" href="data:,">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{xml_text(title)}</title>",
            f"<style>{_STYLE}</style>",
            "</head>",
            "<body>",
            f'<nav aria-label="Sections">{links}</nav>',
            "<main>",
            *sections,
            "</main>",
            f"<script>{_SCRIPT}</script>",
            "</body>",
            "</html>",
            "",
        ]
    )
