/*
 * @brief `gpumemtrace report --format html`: one self-contained HTML page of the JSON report.
 *
 * The page needs no network (a Content-Security-Policy forbids every fetch): its CSS and script
 * are below, and the JSON report document (gmt_report_json_doc()) is embedded as data in a
 * `<script type="application/json">` element. The page's script draws everything from that data
 * with textContent and createTextNode only, so a name from a trace (function, file, label, argv)
 * can only ever be text. The data is escaped so that nothing in it can end its element: `<`, `>`,
 * `&`, U+2028 and U+2029 are written as \uXXXX escapes, which JSON.parse reads back unchanged.
 *
 * The template is one C string per line of the page (a long line split into adjacent literals);
 * it is documented, with what the page shows, in docs/report-formats.md.
 */
#include "analysis/report/report_formats.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

/* The page before the data element. */
static const char *const html_head[] = {
    "<!DOCTYPE html>\n",
    "<html lang=\"en\">\n",
    "<head>\n",
    "<meta charset=\"utf-8\">\n",
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src "
    "'unsafe-inline'; style-src 'unsafe-inline'\">\n",
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
    "<meta name=\"generator\" content=\"gpumemtrace report --format html\">\n",
    "<title>gpumemtrace report</title>\n",
    "<style>\n",
    "body { font: 14px/1.4 system-ui, sans-serif; margin: 0 auto; padding: 0 24px 40px; "
    "max-width: 1200px; color: #1d2330; background: #fff; }\n",
    "h1 { font-size: 22px; margin: 18px 0 2px; }\n",
    "h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #d8dce4; "
    "padding-bottom: 4px; }\n",
    "h3 { font-size: 14px; margin: 14px 0 6px; }\n",
    ".sub { color: #5a6275; margin: 0 0 12px; overflow-wrap: anywhere; }\n",
    ".cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }\n",
    ".card { border: 1px solid #d8dce4; border-radius: 6px; padding: 10px 14px; "
    "min-width: 150px; background: #f7f8fa; }\n",
    ".card .v { font-size: 22px; font-weight: 600; }\n",
    ".card .k { color: #5a6275; font-size: 12px; }\n",
    ".card.bad .v { color: #b3261e; }\n",
    ".warn { background: #fff4e0; border-left: 4px solid #e8a33d; padding: 6px 10px; "
    "margin: 6px 0; }\n",
    ".note { color: #5a6275; font-style: italic; }\n",
    "table { border-collapse: collapse; width: 100%; margin: 6px 0; }\n",
    "th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eceef2; "
    "vertical-align: top; }\n",
    "th { background: #f2f4f7; font-weight: 600; }\n",
    "td.n, th.n { text-align: right; white-space: nowrap; font-variant-numeric: "
    "tabular-nums; }\n",
    "td.site { font-family: ui-monospace, monospace; font-size: 12px; overflow-wrap: "
    "anywhere; }\n",
    "tr.sel { background: #e6efff; }\n",
    "tr.click { cursor: pointer; }\n",
    ".bar { display: inline-block; height: 8px; background: #4a7bd0; margin-right: 6px; "
    "vertical-align: middle; }\n",
    ".oom { border: 1px solid #f0c4c0; border-radius: 6px; padding: 8px 12px; margin: "
    "8px 0; background: #fff8f7; }\n",
    ".oom .expl { margin: 6px 0; }\n",
    "svg { display: block; width: 100%; height: auto; }\n",
    "svg text { font: 11px system-ui, sans-serif; fill: #1d2330; }\n",
    ".axis { stroke: #9aa1b0; stroke-width: 1; }\n",
    ".grid { stroke: #eceef2; stroke-width: 1; }\n",
    ".legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; margin: "
    "4px 0 10px; }\n",
    ".sw { display: inline-block; width: 12px; height: 12px; margin-right: 4px; "
    "vertical-align: -2px; }\n",
    "#tip { position: fixed; pointer-events: none; background: #1d2330; color: #fff; "
    "padding: 6px 8px; border-radius: 4px; font-size: 12px; max-width: 520px; "
    "white-space: pre-wrap; overflow-wrap: anywhere; z-index: 10; }\n",
    "button { font: inherit; }\n",
    "select { font: inherit; max-width: 100%; }\n",
    "</style>\n",
    "</head>\n",
    "<body>\n",
    "<h1>gpumemtrace report</h1>\n",
    "<p class=\"sub\" id=\"subtitle\"></p>\n",
    "<section id=\"summary\" class=\"cards\"></section>\n",
    "<div id=\"warnings\"></div>\n",
    "<section id=\"procs-sec\"><h2>Processes</h2><label id=\"proc-label\">Process: <select "
    "id=\"proc\"></select></label><div id=\"procs\"></div></section>\n",
    "<section><h2>Memory over time</h2><div id=\"timeline\"></div></section>\n",
    "<section><h2>Top call sites at the peak</h2><div id=\"peak-sites\"></div></section>\n",
    "<section><h2>Flame graph: bytes live at the peak</h2><div "
    "id=\"flame\"></div></section>\n",
    "<section><h2>Leaks</h2><div id=\"leaks\"></div></section>\n",
    "<section><h2>Failed allocations</h2><div id=\"ooms\"></div></section>\n",
    "<section id=\"growth-sec\" hidden><h2>Growth across markers</h2><div "
    "id=\"growth\"></div></section>\n",
    "<div id=\"tip\" hidden></div>\n",
    NULL,
};

static const char *const html_tail[] = {
    "<script>\n",
    "'use strict';\n",
    "(function () {\n",
    "var D = JSON.parse(document.getElementById('gmt-data').textContent);\n",
    "var SVGNS = 'http' + '://www.w3.org/2000/svg';\n",
    "var COLORS = ['#4a7bd0', '#d0844a', '#5aa05a', '#9a6bc0', '#c0504d', '#3aa8a8', "
    "'#b8a03a', '#7a7a7a', '#d06aa0', '#4a4ad0', '#8a5a3a', '#5a8ad0', '#a0a0a0'];\n",
    "\n",
    "function arr(x) { return Array.isArray(x) ? x : []; }\n",
    "function isNum(x) { return typeof x === 'number' && isFinite(x); }\n",
    "function $(id) { return document.getElementById(id); }\n",
    "function el(tag, cls, text) {\n",
    "  var e = document.createElement(tag);\n",
    "  if (cls) e.className = cls;\n",
    "  if (text !== undefined && text !== null) e.textContent = String(text);\n",
    "  return e;\n",
    "}\n",
    "function svg(tag, attrs, parent) {\n",
    "  var e = document.createElementNS(SVGNS, tag);\n",
    "  for (var k in attrs) e.setAttribute(k, String(attrs[k]));\n",
    "  if (parent) parent.appendChild(e);\n",
    "  return e;\n",
    "}\n",
    "function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }\n",
    "function fmtBytes(b) {\n",
    "  if (!isNum(b)) return '?';\n",
    "  var neg = b < 0, v = Math.abs(b), units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', "
    "'EiB'], u = 0;\n",
    "  if (v < 1024) return (neg ? '-' : '') + v + ' B';\n",
    "  v /= 1024;\n",
    "  while (v >= 1023.95 && u + 1 < units.length) { v /= 1024; u++; }\n",
    "  return (neg ? '-' : '') + v.toFixed(1) + ' ' + units[u];\n",
    "}\n",
    "function exact(b) { return isNum(b) ? String(b).replace(/\\B(?=(\\d{3})+(?!\\d))/g, "
    "',') + ' bytes' : '?'; }\n",
    "function fmtTime(t) { return isNum(t) ? (t < 10 ? t.toFixed(3) : t.toFixed(1)) + ' "
    "s' : '?'; }\n",
    "function baseName(p) { var i = p.lastIndexOf('/'); return i < 0 ? p : p.slice(i + "
    "1); }\n",
    "\n",
    "// A frame object as the folded format writes it.\n",
    "function frameText(f) {\n",
    "  if (!f) return '[no stack]';\n",
    "  var fn = f['function'], file = f.file, mod = f.module;\n",
    "  if (!fn && !file) return mod ? baseName(mod) + '+' + (f.offset || '?') : "
    "(f.address || '?');\n",
    "  if (file && f.line) return (fn || '?') + ' (' + file + ':' + f.line + ')';\n",
    "  if (file) return (fn || '?') + ' (' + file + ')';\n",
    "  if (mod) return fn + ' [' + baseName(mod) + ']';\n",
    "  return String(fn);\n",
    "}\n",
    "function callText(o) { return (o.api || '?') + (o.driver ? ' \\u2192 ' + o.driver : "
    "''); }\n",
    "\n",
    "var procs = arr(D.processes), kindsOrder = arr(D.kinds).map(function (k) { return "
    "k.kind; });\n",
    "var stacks = {};\n",
    "arr(D.call_stacks).forEach(function (c) { stacks[c.process + ':' + c.stack] = c; });\n",
    "function kindColor(kind) {\n",
    "  if (kind === 'held') return '#1d2330';\n",
    "  var i = kindsOrder.indexOf(kind);\n",
    "  return COLORS[(i < 0 ? kindsOrder.length : i) % COLORS.length];\n",
    "}\n",
    "function stackFrames(p, id) {\n",
    "  var c = stacks[p + ':' + id];\n",
    "  if (!c || !c.known) return [id ? '[stack ' + id + ' not in the trace]' : '[no "
    "stack]'];\n",
    "  var out = [];\n",
    "  if (c.pystate === 'empty') out.push('(PyTorch autograd / worker thread: no Python "
    "frames)');\n",
    "  var cs = arr(c.call_stack);\n",
    "  for (var i = cs.length - 1; i >= 0; i--) if (!cs[i].hidden) "
    "out.push(frameText(cs[i]));\n",
    "  return out;\n",
    "}\n",
    "function procName(i) {\n",
    "  var p = procs[i] || {}, argv = arr(p.argv).join(' ');\n",
    "  var s = 'pid ' + (p.pid === null || p.pid === undefined ? '?' : p.pid);\n",
    "  if (p.rank && isNum(p.rank.rank)) s += ', rank ' + p.rank.rank;\n",
    "  return s + ': ' + (argv || p.file || '?');\n",
    "}\n",
    "function ofProc(list, i) { return arr(list).filter(function (e) { return e.process "
    "=== i; }); }\n",
    "\n",
    "// Tooltip: text lines near the pointer.\n",
    "var tip = $('tip');\n",
    "function showTip(ev, lines) {\n",
    "  tip.textContent = lines.join('\\n');\n",
    "  tip.hidden = false;\n",
    "  var x = ev.clientX + 14, y = ev.clientY + 14;\n",
    "  if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, ev.clientX - "
    "tip.offsetWidth - 14);\n",
    "  if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, ev.clientY - "
    "tip.offsetHeight - 14);\n",
    "  tip.style.left = x + 'px';\n",
    "  tip.style.top = y + 'px';\n",
    "}\n",
    "function hideTip() { tip.hidden = true; }\n",
    "\n",
    "function table(head, rows) {\n",
    "  var t = el('table'), tr = el('tr');\n",
    "  head.forEach(function (h) { var th = el('th', "
    "/^(bytes|alloc|growth|first|last|size|held|rises)/i.test(h) ? 'n' : '', h); "
    "tr.appendChild(th); });\n",
    "  t.appendChild(tr);\n",
    "  rows.forEach(function (r) { t.appendChild(r); });\n",
    "  return t;\n",
    "}\n",
    "function row(cells) {\n",
    "  var tr = el('tr');\n",
    "  cells.forEach(function (c) {\n",
    "    var td;\n",
    "    if (c && c.nodeType) { td = el('td'); td.appendChild(c); }\n",
    "    else if (c && c.node) { td = el('td', c.cls); td.appendChild(c.node); }\n",
    "    else if (c && typeof c === 'object') { td = el('td', c.cls, c.text); if "
    "(c.title) td.title = c.title; }\n",
    "    else td = el('td', '', c);\n",
    "    tr.appendChild(td);\n",
    "  });\n",
    "  return tr;\n",
    "}\n",
    "function bytesCell(b, max) {\n",
    "  var span = el('span'), bar = el('span', 'bar');\n",
    "  bar.style.width = (max > 0 ? Math.max(1, Math.round(60 * b / max)) : 0) + 'px';\n",
    "  span.appendChild(bar);\n",
    "  span.appendChild(document.createTextNode(fmtBytes(b)));\n",
    "  span.title = exact(b);\n",
    "  return { cls: 'n', node: span };\n",
    "}\n",
    "function limited(box, rows, head, max) {\n",
    "  box.appendChild(table(head, rows.slice(0, max)));\n",
    "  if (rows.length > max) box.appendChild(el('p', 'note', (rows.length - max) + ' "
    "more rows not shown'));\n",
    "}\n",
    "\n",
    "// ---- summary and warnings\n",
    "function card(id, key, value, titleText, bad) {\n",
    "  var c = el('div', 'card' + (bad ? ' bad' : ''));\n",
    "  var v = el('div', 'v', value);\n",
    "  v.id = id;\n",
    "  if (titleText) c.title = titleText;\n",
    "  c.appendChild(v);\n",
    "  c.appendChild(el('div', 'k', key));\n",
    "  return c;\n",
    "}\n",
    "var CACHE_LABELS = { pytorch: 'PyTorch', cupy: 'CuPy', xla: 'JAX/XLA', cuda_pool: 'a CUDA "
    "memory pool' };\n",
    "function cacheLabel(k) { return CACHE_LABELS.hasOwnProperty(k) ? CACHE_LABELS[k] : String(k); "
    "}\n",
    "function renderSummary() {\n",
    "  var s = D.summary || {}, box = clear($('summary'));\n",
    "  var peak = card('sum-peak', 'peak device memory held (one process, one GPU)', "
    "fmtBytes(s.peak_held_bytes), exact(s.peak_held_bytes));\n",
    "  peak.firstChild.setAttribute('data-bytes', String(s.peak_held_bytes));\n",
    "  box.appendChild(peak);\n",
    "  // a caching allocator's memory at exit is not the program's leak (check: --count-cached)\n",
    "  var cached = s.cached_at_exit_bytes || 0, own = s.leaked_bytes || 0;\n",
    "  var leak = card('sum-leaked', 'leaked at exit in ' + (s.leaked_allocations || 0) + ' "
    "allocations' + (cached ? ', caching allocators not counted' : ''), fmtBytes(own), "
    "exact(own), own > 0);\n",
    "  leak.firstChild.setAttribute('data-bytes', String(own));\n",
    "  box.appendChild(leak);\n",
    "  if (cached) {\n",
    "    var who = [], by = s.cached_at_exit || {};\n",
    "    Object.keys(by).forEach(function (k) { if (by[k] && by[k].bytes) who.push(cacheLabel(k) "
    "+ ' ' + fmtBytes(by[k].bytes)); });\n",
    "    var c = card('sum-cached', 'kept by caching allocators at exit (' + who.join(', ') + "
    "'): theirs to free, not a leak', fmtBytes(cached), exact(cached));\n",
    "    c.firstChild.setAttribute('data-bytes', String(cached));\n",
    "    box.appendChild(c);\n",
    "  }\n",
    "  // probes and failures the allocator recovered from are listed, not counted (check: "
    "--max-failed)\n",
    "  var uncounted = (s.probe_failures || 0) + (s.recovered_failures || 0);\n",
    "  var failed = card('sum-failed', 'failed allocations' + (uncounted ? ' (' + uncounted + "
    "' more not counted: probes or recovered)' : ''), String(s.failed_allocations || 0), '', "
    "s.failed_allocations > 0);\n",
    "  failed.firstChild.setAttribute('data-count', String(s.failed_allocations || 0));\n",
    "  box.appendChild(failed);\n",
    "  if (s.live_at_end_bytes) box.appendChild(card('sum-live-end', 'live when a "
    "process died', fmtBytes(s.live_at_end_bytes), exact(s.live_at_end_bytes)));\n",
    "  box.appendChild(card('sum-procs', 'processes, ' + (s.events || 0) + ' events', "
    "String(s.processes || procs.length)));\n",
    "\n",
    "  var w = clear($('warnings')), groups = [], byText = {};\n",
    "  function warn(text) { w.appendChild(el('div', 'warn', text)); }\n",
    "  // The same warning for many processes (ranks) is one line naming the first few.\n",
    "  function pwarn(i, text) {\n",
    "    if (!byText[text]) { byText[text] = []; groups.push(text); }\n",
    "    byText[text].push(procName(i));\n",
    "  }\n",
    "  if (s.dropped > 0) warn(s.dropped + ' events were dropped (ring buffer full): "
    "every number here is a lower bound.');\n",
    "  procs.forEach(function (p, i) {\n",
    "    if (p.coverage && p.coverage !== 'full') pwarn(i, 'coverage is \"' + p.coverage "
    "+ '\"' + (p.coverage_reason ? ' (' + p.coverage_reason + ')' : '') + ': allocations "
    "through the driver API or a static CUDA runtime are not seen.');\n",
    "    if (p.dropped > 0) pwarn(i, 'events were dropped.');\n",
    "    if (p.complete === false) pwarn(i, 'the process did not exit normally; what was "
    "live at its end is not a leak.');\n",
    "    if (p.bad_lines > 0) pwarn(i, 'unreadable trace lines were skipped.');\n",
    "    if (p.torn_last_line) pwarn(i, 'the last trace line was cut short.');\n",
    "  });\n",
    "  groups.forEach(function (text) {\n",
    "    var who = byText[text];\n",
    "    if (who.length === 1) warn(who[0] + ': ' + text);\n",
    "    else warn(who.length + ' processes (' + who.slice(0, 3).join('; ') + "
    "(who.length > 3 ? '; \\u2026' : '') + '): ' + text);\n",
    "  });\n",
    "}\n",
    "\n",
    "// ---- processes\n",
    "var current = 0;\n",
    "function defaultProcess() {\n",
    "  var s = D.summary || {};\n",
    "  if (isNum(s.peak_process) && procs[s.peak_process]) return s.peak_process;\n",
    "  var best = 0, bytes = -1;\n",
    "  arr(D.peaks).forEach(function (p) { if (p.bytes > bytes) { bytes = p.bytes; best "
    "= p.process; } });\n",
    "  return procs[best] ? best : 0;\n",
    "}\n",
    "function procPeak(i) {\n",
    "  var m = 0;\n",
    "  ofProc(D.peaks, i).forEach(function (p) { if (p.bytes > m) m = p.bytes; });\n",
    "  return m;\n",
    "}\n",
    "function renderProcesses() {\n",
    "  var sel = $('proc'), box = clear($('procs'));\n",
    "  clear(sel);\n",
    "  procs.forEach(function (p, i) {\n",
    "    var o = el('option', '', procName(i));\n",
    "    o.value = String(i);\n",
    "    sel.appendChild(o);\n",
    "  });\n",
    "  sel.value = String(current);\n",
    "  sel.onchange = function () { current = Number(sel.value); renderProcess(); };\n",
    "  if (procs.length < 2) { $('procs-sec').hidden = true; return; }\n",
    "  var rows = procs.map(function (p, i) {\n",
    "    var leaked = 0, failed = ofProc(D.failed, i).length;\n",
    "    ofProc(D.leaks, i).forEach(function (l) { if (l.at_exit && l.counted && !l.cached) "
    "leaked += l.bytes; });\n",
    "    var r = row([String(i), p.host || '', procName(i), { cls: 'n', text: "
    "fmtBytes(procPeak(i)), title: exact(procPeak(i)) },\n",
    "      { cls: 'n', text: fmtBytes(leaked), title: exact(leaked) }, { cls: 'n', text: "
    "String(failed) }, p.complete ? 'exited' : 'died']);\n",
    "    r.className = 'click' + (i === current ? ' sel' : '');\n",
    "    r.onclick = function () { current = i; sel.value = String(i); renderProcess(); "
    "};\n",
    "    return r;\n",
    "  });\n",
    "  limited(box, rows, ['#', 'host', 'process', 'peak held', 'leaked', 'failed', "
    "'end'], 500);\n",
    "}\n",
    "\n",
    "// ---- timeline\n",
    "function failuresOf(i) {\n",
    "  var list = Array.isArray(D.oom) ? D.oom : arr(D.failed);\n",
    "  return ofProc(list, i);\n",
    "}\n",
    "function niceTicks(max, n) {\n",
    "  var out = [];\n",
    "  for (var k = 0; k <= n; k++) out.push(max * k / n);\n",
    "  return out;\n",
    "}\n",
    "function valueAt(points, t) {\n",
    "  var lo = 0, hi = points.length - 1, v = 0;\n",
    "  while (lo <= hi) {\n",
    "    var mid = (lo + hi) >> 1;\n",
    "    if (points[mid][0] <= t) { v = points[mid][1]; lo = mid + 1; } else hi = mid - "
    "1;\n",
    "  }\n",
    "  return v;\n",
    "}\n",
    "function chart(box, title, series, tEnd, markers, fails) {\n",
    "  var W = 1000, H = 260, L = 70, R = 12, T = 22, B = 28, maxB = 1, maxT = "
    "isNum(tEnd) ? tEnd : 0;\n",
    "  series.forEach(function (s) { s.points.forEach(function (p) { if (p[1] > maxB) "
    "maxB = p[1]; if (p[0] > maxT) maxT = p[0]; }); });\n",
    "  fails.forEach(function (f) { if (isNum(f.time_s) && f.time_s > maxT) maxT = "
    "f.time_s; });\n",
    "  if (maxT <= 0) maxT = 1;\n",
    "  maxB *= 1.08;\n",
    "  function X(t) { return L + (W - L - R) * t / maxT; }\n",
    "  function Y(b) { return T + (H - T - B) * (1 - b / maxB); }\n",
    "  box.appendChild(el('h3', '', title));\n",
    "  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });\n",
    "  niceTicks(maxB / 1.08, 4).forEach(function (b) {\n",
    "    svg('line', { x1: L, x2: W - R, y1: Y(b), y2: Y(b), 'class': 'grid' }, s);\n",
    "    svg('text', { x: L - 6, y: Y(b) + 4, 'text-anchor': 'end' }, s).textContent = "
    "fmtBytes(Math.round(b));\n",
    "  });\n",
    "  niceTicks(maxT, 5).forEach(function (t, k) {\n",
    "    svg('text', { x: X(t), y: H - 8, 'text-anchor': k === 5 ? 'end' : 'middle' }, "
    "s).textContent = fmtTime(t);\n",
    "  });\n",
    "  svg('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }, s);\n",
    "  svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }, s);\n",
    "  markers.forEach(function (m) {\n",
    "    if (!isNum(m.time_s)) return;\n",
    "    svg('line', { x1: X(m.time_s), x2: X(m.time_s), y1: T, y2: H - B, stroke: "
    "'#8a8fa0', 'stroke-dasharray': '3,3' }, s);\n",
    "    if (markers.length <= 20) svg('text', { x: X(m.time_s) + 3, y: T - 6 }, "
    "s).textContent = String(m.label);\n",
    "  });\n",
    "  series.forEach(function (sr) {\n",
    "    var d = '', last = null;\n",
    "    sr.points.forEach(function (p) {\n",
    "      d += d ? ' H' + X(p[0]).toFixed(1) + ' V' + Y(p[1]).toFixed(1) : 'M' + "
    "X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1);\n",
    "      last = p;\n",
    "    });\n",
    "    if (last) d += ' H' + X(maxT).toFixed(1);\n",
    "    svg('path', { d: d, fill: 'none', stroke: kindColor(sr.kind), 'stroke-width': "
    "sr.kind === 'held' ? 2.5 : 1.5 }, s);\n",
    "  });\n",
    "  fails.forEach(function (f) {\n",
    "    if (!isNum(f.time_s)) return;\n",
    "    var y = isNum(f.held_bytes) ? Y(f.held_bytes) : T + 6;\n",
    "    svg('circle', { cx: X(f.time_s), cy: y, r: 5, fill: '#b3261e', stroke: '#fff' "
    "}, s);\n",
    "  });\n",
    "  var guide = svg('line', { x1: 0, x2: 0, y1: T, y2: H - B, stroke: '#1d2330', "
    "visibility: 'hidden' }, s);\n",
    "  var hit = svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: "
    "'transparent' }, s);\n",
    "  hit.addEventListener('mousemove', function (ev) {\n",
    "    var r = s.getBoundingClientRect(), x = (ev.clientX - r.left) * W / r.width, t = "
    "(x - L) / (W - L - R) * maxT;\n",
    "    guide.setAttribute('x1', x); guide.setAttribute('x2', x); "
    "guide.setAttribute('visibility', 'visible');\n",
    "    var lines = ['t = ' + fmtTime(t)];\n",
    "    series.forEach(function (sr) { lines.push(sr.kind + ': ' + "
    "fmtBytes(valueAt(sr.points, t)) + ' (' + exact(valueAt(sr.points, t)) + ')'); });\n",
    "    markers.forEach(function (m) { if (Math.abs(X(m.time_s) - x) < 4) "
    "lines.push('marker: ' + m.label); });\n",
    "    fails.forEach(function (f) { if (Math.abs(X(f.time_s) - x) < 6) "
    "lines.push('failed ' + callText(f) + ' of ' + exact(f.size)); });\n",
    "    showTip(ev, lines);\n",
    "  });\n",
    "  hit.addEventListener('mouseleave', function () { guide.setAttribute('visibility', "
    "'hidden'); hideTip(); });\n",
    "  box.appendChild(s);\n",
    "  var lg = el('div', 'legend');\n",
    "  series.forEach(function (sr) {\n",
    "    var item = el('span'), sw = el('span', 'sw'), peak = 0;\n",
    "    sr.points.forEach(function (p) { if (p[1] > peak) peak = p[1]; });\n",
    "    sw.style.background = kindColor(sr.kind);\n",
    "    item.appendChild(sw);\n",
    "    item.appendChild(document.createTextNode(sr.kind + ' (peak ' + fmtBytes(peak) + "
    "')'));\n",
    "    item.title = exact(peak);\n",
    "    lg.appendChild(item);\n",
    "  });\n",
    "  if (fails.length) { var o = el('span', '', '\\u25cf failed allocation'); "
    "o.style.color = '#b3261e'; lg.appendChild(o); }\n",
    "  box.appendChild(lg);\n",
    "}\n",
    "function peaksFallback(box, i) {\n",
    "  box.appendChild(el('p', 'note', 'This report has no timeline (timeline[]): the "
    "peak of each kind is shown instead.'));\n",
    "  ofProc(D.peaks, i).forEach(function (pk) {\n",
    "    box.appendChild(el('h3', '', 'GPU ' + pk.device + ': ' + fmtBytes(pk.bytes) + ' "
    "held at the peak' + (isNum(pk.time_s) ? ', at ' + fmtTime(pk.time_s) : '')));\n",
    "    var rows = [], max = pk.bytes || 1, ks = pk.kinds || {};\n",
    "    kindsOrder.forEach(function (k) { if (ks[k] && ks[k].peak_bytes > max) max = "
    "ks[k].peak_bytes; });\n",
    "    rows.push(['held (peak)', bytesCell(pk.bytes, max), '']);\n",
    "    rows.push(['held (end)', bytesCell(pk.held_at_end_bytes, max), '']);\n",
    "    kindsOrder.forEach(function (k) {\n",
    "      if (ks[k] && ks[k].peak_bytes > 0) rows.push([k + ' (own peak)', "
    "bytesCell(ks[k].peak_bytes, max), fmtTime(ks[k].peak_time_s)]);\n",
    "    });\n",
    "    box.appendChild(table(['what', 'bytes', 'when'], rows.map(row)));\n",
    "  });\n",
    "  var marks = arr((procs[i] || {}).markers);\n",
    "  if (marks.length) {\n",
    "    box.appendChild(el('h3', '', 'Markers'));\n",
    "    limited(box, marks.map(function (m) { return row([fmtTime(m.time_s), "
    "String(m.label)]); }), ['time', 'label'], 200);\n",
    "  }\n",
    "}\n",
    "function renderTimeline(i) {\n",
    "  var box = clear($('timeline')), p = procs[i] || {}, marks = arr(p.markers), fails "
    "= failuresOf(i);\n",
    "  if (!Array.isArray(D.timeline)) { peaksFallback(box, i); return; }\n",
    "  var byDev = {}, devs = [];\n",
    "  ofProc(D.timeline, i).forEach(function (s) {\n",
    "    if (!byDev[s.device]) { byDev[s.device] = []; devs.push(s.device); }\n",
    "    byDev[s.device].push({ kind: s.kind, points: arr(s.points) });\n",
    "  });\n",
    "  if (!devs.length) { box.appendChild(el('p', 'note', 'No memory was held.')); "
    "return; }\n",
    "  devs.forEach(function (d) {\n",
    "    var f = fails.filter(function (x) { return x.device === d; });\n",
    "    chart(box, 'GPU ' + d, byDev[d], p.end_time_s, marks, f);\n",
    "  });\n",
    "}\n",
    "\n",
    "// ---- top sites at the peak\n",
    "function renderPeakSites(i) {\n",
    "  var box = clear($('peak-sites')), list = ofProc(D.peak_sites, i), max = 0;\n",
    "  if (!list.length) { box.appendChild(el('p', 'note', 'Nothing was live at the "
    "peak.')); return; }\n",
    "  list.forEach(function (r) { if (r.bytes > max) max = r.bytes; });\n",
    "  var rows = list.map(function (r) {\n",
    "    return row(['GPU ' + r.device, bytesCell(r.bytes, max), { cls: 'n', text: "
    "String(r.allocations) }, callText(r), r.kind, { cls: 'site', text: "
    "frameText(r.site) }]);\n",
    "  });\n",
    "  limited(box, rows, ['GPU', 'bytes', 'allocations', 'call', 'kind', 'call site'], "
    "50);\n",
    "}\n",
    "\n",
    "// ---- flame graph (icicle), outermost frame on top\n",
    "function flameTree(i) {\n",
    "  var root = { name: 'all', value: 0, children: [], index: {} }, sites = "
    "ofProc(D.peak_sites, i), devs = {};\n",
    "  sites.forEach(function (r) { devs[r.device] = 1; });\n",
    "  var multi = Object.keys(devs).length > 1;\n",
    "  sites.forEach(function (r) {\n",
    "    arr(r.stacks).forEach(function (st) {\n",
    "      var path = stackFrames(i, st.stack).concat([r.api || '?']);\n",
    "      if (r.driver) path.push(r.driver);\n",
    "      if (multi) path.unshift('GPU ' + r.device);\n",
    "      var n = root;\n",
    "      n.value += st.bytes;\n",
    "      path.forEach(function (name) {\n",
    "        var c = n.index[name];\n",
    "        if (!c) { c = { name: name, value: 0, children: [], index: {}, parent: n }; "
    "n.index[name] = c; n.children.push(c); }\n",
    "        c.value += st.bytes;\n",
    "        n = c;\n",
    "      });\n",
    "    });\n",
    "  });\n",
    "  return root;\n",
    "}\n",
    "function depthOf(n) { var d = 0; n.children.forEach(function (c) { d = Math.max(d, "
    "depthOf(c)); }); return d + 1; }\n",
    "function nameColor(name) {\n",
    "  var h = 0;\n",
    "  for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) >>> 0;\n",
    "  return 'hsl(' + (15 + h % 40) + ',' + (65 + h % 20) + '%,' + (62 + h % 14) + '%)';\n",
    "}\n",
    "function renderFlame(i, focus) {\n",
    "  var box = clear($('flame')), root = flameTree(i);\n",
    "  if (!root.value) { box.appendChild(el('p', 'note', 'No call stacks at the "
    "peak.')); return; }\n",
    "  var top = focus || root, W = 1000, RH = 18, rows = depthOf(top);\n",
    "  box.appendChild(el('p', 'note', 'Each box is a frame, its width the bytes live at "
    "the peak under it (outermost frame on top). Click a box to zoom.'));\n",
    "  if (focus) {\n",
    "    var b = el('button', '', 'Reset zoom');\n",
    "    b.onclick = function () { renderFlame(i); };\n",
    "    box.appendChild(b);\n",
    "  }\n",
    "  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + rows * RH, id: 'flame-svg' });\n",
    "  function draw(n, x, w, depth) {\n",
    "    if (w < 0.3) return;\n",
    "    var g = svg('g', {}, s);\n",
    "    svg('rect', { x: x.toFixed(2), y: depth * RH, width: Math.max(0.5, w - "
    "0.5).toFixed(2), height: RH - 1, fill: n === root ? '#c9cfdb' : nameColor(n.name), "
    "rx: 2 }, g);\n",
    "    var chars = Math.floor((w - 6) / 6.2);\n",
    "    if (chars >= 3) {\n",
    "      var label = n.name.length > chars ? n.name.slice(0, chars - 1) + '\\u2026' : "
    "n.name;\n",
    "      svg('text', { x: (x + 3).toFixed(2), y: depth * RH + 13 }, g).textContent = "
    "label;\n",
    "    }\n",
    "    g.addEventListener('mousemove', function (ev) {\n",
    "      showTip(ev, [n.name, fmtBytes(n.value) + ' (' + exact(n.value) + '), ' + (100 "
    "* n.value / root.value).toFixed(1) + '% of the peak']);\n",
    "    });\n",
    "    g.addEventListener('mouseleave', hideTip);\n",
    "    g.addEventListener('click', function () { hideTip(); renderFlame(i, n === root "
    "? null : n); });\n",
    "    var cx = x;\n",
    "    n.children.slice().sort(function (a, b) { return b.value - a.value; "
    "}).forEach(function (c) {\n",
    "      var cw = w * c.value / n.value;\n",
    "      draw(c, cx, cw, depth + 1);\n",
    "      cx += cw;\n",
    "    });\n",
    "  }\n",
    "  draw(top, 0, W, 0);\n",
    "  box.appendChild(s);\n",
    "}\n",
    "\n",
    "// ---- leaks\n",
    "function renderLeaks(i) {\n",
    "  var box = clear($('leaks')), list = ofProc(D.leak_sites, i), max = 0;\n",
    "  if (!list.length) { box.appendChild(el('p', 'note', 'Nothing was live at the end "
    "of the trace.')); return; }\n",
    "  list.forEach(function (r) { if (r.bytes > max) max = r.bytes; });\n",
    "  var rows = list.map(function (r) {\n",
    "    var what = r.at_exit ? 'leaked' : 'live at death';\n",
    "    if (r.at_exit && r.cached_bytes && r.cached_bytes >= r.bytes) what = 'kept by ' + "
    "cacheLabel(r.cache) + \"'s cache (not a leak)\";\n",
    "    else if (r.at_exit && r.cached_bytes) what += ' (' + fmtBytes(r.cached_bytes) + ' of "
    "it kept by a caching allocator)';\n",
    "    if (r.counted === false) what += ' (not counted: ' + r.kind + ' is not memory "
    "this process allocated)';\n",
    "    return row([bytesCell(r.bytes, max), { cls: 'n', text: String(r.allocations) }, "
    "callText(r), r.kind, what, { cls: 'site', text: frameText(r.site) }]);\n",
    "  });\n",
    "  limited(box, rows, ['bytes', 'allocations', 'call', 'kind', 'status', 'call "
    "site'], 50);\n",
    "}\n",
    "\n",
    "// ---- failed allocations and their explanations\n",
    "function renderOoms(i) {\n",
    "  var box = clear($('ooms')), list = failuresOf(i);\n",
    "  if (!list.length) { box.appendChild(el('p', 'note', 'No allocation failed.')); "
    "return; }\n",
    "  list.slice(0, 100).forEach(function (f) {\n",
    "    var d = el('div', 'oom');\n",
    "    d.appendChild(el('strong', '', callText(f) + ' of ' + fmtBytes(f.size) + ' "
    "failed on GPU ' + f.device + ' at ' + fmtTime(f.time_s) + (f.cause ? ' (' + f.cause "
    "+ ')' : '') + (f['class'] === 'probe' ? ' \u2014 a probe, not counted' : f['class'] === "
    "'recovered' ? ' \u2014 recovered by a retry, not counted' : '')));\n",
    "    d.title = exact(f.size);\n",
    "    if (f.explanation) d.appendChild(el('p', 'expl', f.explanation));\n",
    "    var facts = ['error ' + f.result];\n",
    "    if (isNum(f.held_bytes)) facts.push('held by this process ' + "
    "fmtBytes(f.held_bytes));\n",
    "    if (isNum(f.free_bytes)) facts.push('free ' + fmtBytes(f.free_bytes) + ' of ' + "
    "fmtBytes(f.total_bytes));\n",
    "    if (isNum(f.untracked_bytes)) facts.push('untracked ' + "
    "fmtBytes(f.untracked_bytes));\n",
    "    d.appendChild(el('div', 'note', facts.join(', ')));\n",
    "    if (f.site) d.appendChild(el('div', 'site', 'at ' + frameText(f.site)));\n",
    "    var ts = arr(f.top_sites);\n",
    "    if (ts.length) {\n",
    "      var max = 0;\n",
    "      ts.forEach(function (r) { if (r.bytes > max) max = r.bytes; });\n",
    "      d.appendChild(table(['bytes', 'allocations', 'call', 'kind', 'holding site'], "
    "ts.map(function (r) {\n",
    "        return row([bytesCell(r.bytes, max), { cls: 'n', text: "
    "String(r.allocations) }, callText(r), r.kind, { cls: 'site', text: "
    "frameText(r.site) }]);\n",
    "      })));\n",
    "    }\n",
    "    box.appendChild(d);\n",
    "  });\n",
    "  if (list.length > 100) box.appendChild(el('p', 'note', (list.length - 100) + ' "
    "more failures not shown'));\n",
    "}\n",
    "\n",
    "// ---- growth\n",
    "function renderGrowth(i) {\n",
    "  var sec = $('growth-sec'), box = clear($('growth'));\n",
    "  var all = Array.isArray(D.growth_sites) ? D.growth_sites : D.growth;\n",
    "  sec.hidden = !Array.isArray(all);\n",
    "  if (sec.hidden) return;\n",
    "  var list = ofProc(all, i), max = 0;\n",
    "  if (!list.length) { box.appendChild(el('p', 'note', 'No call site grew.')); "
    "return; }\n",
    "  list.forEach(function (r) { if (r.growth_bytes > max) max = r.growth_bytes; });\n",
    "  var rows = list.map(function (r) {\n",
    "    var over = r.basis === 'markers' ? r.samples + ' markers (' + r.first_label + ' "
    "\\u2192 ' + r.last_label + ')' : r.samples + ' ' + r.basis;\n",
    "    var rises = r.stacks === undefined ? r.rises + ' / ' + r.falls : (r.min_rises === "
    "r.max_rises ? '' + r.max_rises : r.min_rises + '\\u2013' + r.max_rises) + "
    "(r.stacks.length > 1 ? ' (' + r.stacks.length + ' stacks)' : '');\n",
    "    return row([bytesCell(r.growth_bytes, max), { cls: 'n', text: "
    "fmtBytes(r.first_bytes), title: exact(r.first_bytes) },\n",
    "      { cls: 'n', text: fmtBytes(r.last_bytes), title: exact(r.last_bytes) }, { "
    "cls: 'n', text: rises }, over, callText(r), { cls: 'site', "
    "text: frameText(r.site) }]);\n",
    "  });\n",
    "  limited(box, rows, ['growth', 'first', 'last', 'rises', 'over', 'call', "
    "'call site'], 50);\n",
    "}\n",
    "\n",
    "function renderProcess() {\n",
    "  var trs = document.querySelectorAll('#procs tr.click');\n",
    "  for (var k = 0; k < trs.length; k++) trs[k].className = 'click' + (k === current "
    "? ' sel' : '');\n",
    "  renderTimeline(current);\n",
    "  renderPeakSites(current);\n",
    "  renderFlame(current);\n",
    "  renderLeaks(current);\n",
    "  renderOoms(current);\n",
    "  renderGrowth(current);\n",
    "}\n",
    "\n",
    "try {\n",
    "  var first = procs[0] || {};\n",
    "  document.title = 'gpumemtrace: ' + (arr(first.argv).join(' ') || first.file || "
    "'report');\n",
    "  $('subtitle').textContent = procs.length === 1 ? procName(0) + ' (' + (first.file "
    "|| '') + ')' : procs.length + ' processes';\n",
    "  current = defaultProcess();\n",
    "  renderSummary();\n",
    "  renderProcesses();\n",
    "  renderProcess();\n",
    "  document.body.setAttribute('data-rendered', '1');\n",
    "} catch (e) {\n",
    "  $('warnings').appendChild(el('div', 'warn', 'The report could not be drawn: ' + "
    "e));\n",
    "  document.body.setAttribute('data-error', String(e));\n",
    "}\n",
    "})();\n",
    "</script>\n",
    "</body>\n",
    "</html>\n",
    NULL,
};

static void
write_lines(FILE *out, const char *const *lines)
{
	for (size_t i = 0; lines[i]; i++)
		fputs(lines[i], out);
}

/*
 * The JSON inside a script element: `</script>` or `<!--` in a string must not end or change the
 * element, and U+2028/U+2029 are line terminators to older JavaScript parsers. JSON has these
 * characters only inside strings, where the \u escape means the same character. Written as
 * jansson dumps it, piece by piece (the document as one string would double the memory of a
 * large report), so the first bytes of U+2028 wait in `held` for the next piece.
 */
struct script_out {
	FILE *out;
	unsigned held; /* 0, 1: 0xe2 held, 2: 0xe2 0x80 held */
};

static int
script_safe_piece(const char *buf, size_t size, void *data)
{
	struct script_out *so = data;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (so->held == 1 && c == 0x80) {
			so->held = 2;
			continue;
		}
		if (so->held == 2 && (c == 0xa8 || c == 0xa9)) {
			fputs(c == 0xa8 ? "\\u2028" : "\\u2029", so->out);
			so->held = 0;
			continue;
		}
		if (so->held)
			fputs(so->held == 1 ? "\xe2" : "\xe2\x80", so->out);
		so->held = 0;
		if (c == 0xe2)
			so->held = 1;
		else if (c == '<')
			fputs("\\u003c", so->out);
		else if (c == '>')
			fputs("\\u003e", so->out);
		else if (c == '&')
			fputs("\\u0026", so->out);
		else
			fputc(c, so->out);
	}
	return 0;
}

/* The page around the data: the document's bytes come from @p dump. */
static int
html_page(FILE *out, int (*dump)(struct script_out *so, const void *arg), const void *arg)
{
	struct script_out so = {.out = out};
	int rc;

	write_lines(out, html_head);
	fputs("<script type=\"application/json\" id=\"gmt-data\">", out);
	rc = dump(&so, arg);
	if (so.held)
		fputs(so.held == 1 ? "\xe2" : "\xe2\x80", out);
	if (rc != 0)
		return rc == -ENOMEM ? -ENOMEM : -EIO;
	fputs("</script>\n", out);
	write_lines(out, html_tail);
	return ferror(out) ? -EIO : 0;
}

#define HTML_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static int
dump_doc(struct script_out *so, const void *doc)
{
	return json_dump_callback(doc, script_safe_piece, so, HTML_JSON_FLAGS);
}

int
gmt_report_html_doc(FILE *out, const json_t *doc)
{
	return html_page(out, dump_doc, doc);
}

struct models_arg {
	struct gmt_model *const *models;
	size_t n;
};

static int
dump_models(struct script_out *so, const void *arg)
{
	const struct models_arg *ma = arg;

	return gmt_report_json_stream(ma->models, ma->n, HTML_JSON_FLAGS, script_safe_piece, so);
}

int
gmt_report_html(FILE *out, struct gmt_model *const *models, size_t n)
{
	struct models_arg ma = {models, n};

	/* streamed: the call stacks, most of a large page, are never one document */
	return html_page(out, dump_models, &ma);
}
