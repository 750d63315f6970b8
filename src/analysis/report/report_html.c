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
    ".answer { border-left: 4px solid #b8432f; background: #fdf5f3; padding: 4px 14px; margin: "
    "12px 0; }\n",
    ".answer.fine { border-left-color: #3b8f5a; background: #f3faf5; }\n",
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
    "<section id=\"answer\" class=\"answer\"></section>\n",
    "<section id=\"summary\" class=\"cards\"></section>\n",
    "<div id=\"warnings\"></div>\n",
    "<section id=\"procs-sec\"><h2>Processes</h2><label id=\"proc-label\">Process: <select "
    "id=\"proc\"></select></label><div id=\"procs\"></div></section>\n",
    "<section><h2>Memory over time</h2><div id=\"timeline\"></div></section>\n",
    "<section id=\"tensors-sec\" hidden><h2>PyTorch tensors</h2><div "
    "id=\"tensor-timeline\"></div><h3>Categories at the peak</h3><div "
    "id=\"tensor-cats\"></div><div id=\"tensor-ooms\"></div></section>\n",
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
    "var LIB_LABELS = { cublas: 'cuBLAS', cudnn: 'cuDNN', nccl: 'NCCL', cufft: 'cuFFT', cusparse: "
    "'cuSPARSE', cusolver: 'cuSOLVER', curand: 'cuRAND' };\n",
    "function libLabel(k) { return LIB_LABELS.hasOwnProperty(k) ? LIB_LABELS[k] : String(k); }\n",
    "// the answer first: the first out-of-memory error and why, the leak, what grows\n",
    "function renderAnswer() {\n",
    "  var s = D.summary || {}, box = clear($('answer')), says = [];\n",
    "  var oom = arr(D.oom).filter(function (o) { return o['class'] === 'failure'; })[0], toom = "
    "null;\n",
    "  procs.forEach(function (p) { var o = p.tensors && arr(p.tensors.ooms)[0]; if (o && !toom) "
    "toom = o; });\n",
    "  if (toom) says.push('PyTorch ran out of memory asking for ' + fmtBytes(toom.requested) + "
    "' at ' + toom.site + ' (' + String(toom.cause).replace(/_/g, ' ') + ')' + "
    "(arr(toom.would_help)[0] ? '; would help: ' + toom.would_help[0] : '') + '.');\n",
    "  else if (oom) says.push('Out of memory: ' + (oom.explanation || oom.cause) + '');\n",
    "  if (s.leaked_bytes > 0) {\n",
    "    var top = null, best = 0;\n",
    "    arr(D.leak_sites).forEach(function (g) { var own = g.bytes - (g.cached_bytes || 0) - "
    "(g.library_bytes || 0); if (g.at_exit && g.counted && own > best) { best = own; top = g; } "
    "});\n",
    "    says.push('Leaked ' + fmtBytes(s.leaked_bytes) + ' at exit' + (top ? ', the most (' + "
    "fmtBytes(best) + ') at ' + frameText(top.site) : '') + '.');\n",
    "  }\n",
    "  var g = arr(D.growth_sites)[0];\n",
    "  if (g) says.push('Growing: ' + frameText(g.site) + ' rose by ' + fmtBytes(g.growth_bytes) + "
    "' across ' + (g.samples || 0) + ' ' + String(g.basis || 'samples').replace(/_/g, ' ') + "
    "'.');\n",
    "  procs.forEach(function (p) {\n",
    "    var tg = p.tensors && arr(p.tensors.growth)[0];\n",
    "    if (!tg) return;\n",
    "    var h = tg.held_by;\n",
    "    says.push('Tensors growing: ' + tg.site + ' about +' + fmtBytes(tg.per_step) + ' a step' "
    "+ (h ? ', kept alive by ' + (h.kind === 'graph' ? 'the autograd graphs of ' + h.roots + ' "
    "tensors in ' : '') + h.holder : '') + '.');\n",
    "  });\n",
    "  if (!says.length) {\n",
    "    box.className = 'answer fine';\n",
    "    says.push('No failed allocation, no leak, nothing growing: the peak was ' + "
    "fmtBytes(s.peak_held_bytes || 0) + ' of device memory held.');\n",
    "  }\n",
    "  says.forEach(function (t) { box.appendChild(el('p', '', t)); });\n",
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
    "allocations' + (cached ? ', caching allocators not counted' : '') + "
    "(s.library_at_exit_bytes ? ', CUDA libraries\\' handles not counted' : ''), fmtBytes(own), "
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
    "  // CUDA libraries' handles (cuBLAS, cuDNN, NCCL...) keep theirs (check: "
    "--count-libraries)\n",
    "  var lib = s.library_at_exit_bytes || 0;\n",
    "  if (lib) {\n",
    "    var libs = [], lby = s.library_at_exit || {};\n",
    "    Object.keys(lby).forEach(function (k) { if (lby[k] && lby[k].bytes) libs.push(libLabel(k) "
    "+ ' ' + fmtBytes(lby[k].bytes)); });\n",
    "    var lc = card('sum-library', 'held by CUDA libraries for their handles at exit (' + "
    "libs.join(', ') + '): not a leak', fmtBytes(lib), exact(lib));\n",
    "    lc.firstChild.setAttribute('data-bytes', String(lib));\n",
    "    box.appendChild(lc);\n",
    "  }\n",
    "  // probes and failures the allocator recovered from are listed, not counted (check: "
    "--max-failed)\n",
    "  var uncounted = (s.probe_failures || 0) + (s.recovered_failures || 0);\n",
    "  // PyTorch's OOM errors that no failed CUDA call stands for (its own limit) count too, as "
    "in check --max-failed and the text\n",
    "  var toom = s.tensor_oom_errors || 0, nfailed = (s.failed_allocations || 0) + toom;\n",
    "  var failed = card('sum-failed', 'failed allocations' + (toom ? ' (' + toom + ' of them "
    "PyTorch out-of-memory errors with no failed CUDA call)' : '') + (uncounted ? ' (' + "
    "uncounted + ' more not counted: probes or recovered)' : ''), String(nfailed), '', "
    "nfailed > 0);\n",
    "  failed.firstChild.setAttribute('data-count', String(nfailed));\n",
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
    "    ofProc(D.leaks, i).forEach(function (l) { if (l.at_exit && l.counted && !l.cached && "
    "!l.library) "
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
    "// about n round ticks from 0 to max: steps of 1, 2 or 5 times a power of ten (of the largest "
    "binary unit under max for bytes: 50 MiB, not 48.8)\n",
    "function niceTicks(max, n, bytes) {\n",
    "  if (!(max > 0)) return [0];\n",
    "  var unit = 1;\n",
    "  if (bytes) while (unit * 1024 <= max) unit *= 1024;\n",
    "  var raw = max / unit / n, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = "
    "raw / p;\n",
    "  var step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p * unit, out = [];\n",
    "  for (var k = 0; k * step <= max * (1 + 1e-9); k++) out.push(k * step);\n",
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
    "  var W = 1000, H = 260, L = 70, R = 12, T = markers.length ? MARK_TOP + 6 : 22, B = 28, "
    "maxB = 1, maxT = isNum(tEnd) ? tEnd : 0;\n",
    "  series.forEach(function (s) { s.points.forEach(function (p) { if (p[1] > maxB) "
    "maxB = p[1]; if (p[0] > maxT) maxT = p[0]; }); });\n",
    "  fails.forEach(function (f) { if (isNum(f.time_s) && f.time_s > maxT) maxT = "
    "f.time_s; });\n",
    "  if (maxT <= 0) maxT = 1;\n",
    "  // where memory moves: from the first allocation (a little before), not from the start of "
    "the process (a PyTorch job spends its first seconds importing)\n",
    "  var minT = maxT;\n",
    "  series.forEach(function (s) { if (s.points.length && s.points[0][0] < minT) minT = "
    "s.points[0][0]; });\n",
    "  fails.forEach(function (f) { if (isNum(f.time_s) && f.time_s < minT) minT = f.time_s; });\n",
    "  var t0 = Math.max(0, minT - (maxT - minT) * 0.03);\n",
    "  if (!(maxT > t0)) t0 = 0;\n",
    "  maxB *= 1.08;\n",
    "  function X(t) { return L + (W - L - R) * (t - t0) / (maxT - t0); }\n",
    "  function Y(b) { return T + (H - T - B) * (1 - b / maxB); }\n",
    "  box.appendChild(el('h3', '', title));\n",
    "  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });\n",
    "  box.appendChild(s); // laid out: drawMarkers measures its labels\n",
    "  niceTicks(maxB / 1.08, 4, true).forEach(function (b) {\n",
    "    svg('line', { x1: L, x2: W - R, y1: Y(b), y2: Y(b), 'class': 'grid' }, s);\n",
    "    svg('text', { x: L - 6, y: Y(b) + 4, 'text-anchor': 'end' }, s).textContent = "
    "fmtBytes(Math.round(b));\n",
    "  });\n",
    "  var tt = niceTicks(maxT - t0, 5), step = tt.length > 1 ? tt[1] : maxT - t0;\n",
    "  for (var tk = Math.ceil(t0 / step - 1e-9) * step, k = 0; tk <= maxT * (1 + 1e-9); tk += "
    "step, k++)\n",
    "    svg('text', { x: X(tk), y: H - 8, 'text-anchor': tk > t0 + (maxT - t0) * 0.95 ? 'end' : "
    "tk - t0 < (maxT - t0) * 0.05 ? 'start' : 'middle' }, s).textContent = fmtTime(tk);\n",
    "  svg('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }, s);\n",
    "  svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }, s);\n",
    "  var mkinds = drawMarkers(s, markers, X, L, W - R, T, H - B);\n",
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
    "  markerLegend(lg, mkinds);\n",
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
    "// a site reached from several callers (an allocation helper): each with its share\n",
    "function callersText(r) {\n",
    "  var c = r.callers || [];\n",
    "  if (c.length < 2) return '';\n",
    "  return ' \u2014 from ' + c.slice(0, 5).map(function (x) { return (x.site ? "
    "frameText(x.site) "
    ": '(no caller)') + ': ' + fmtBytes(x.bytes); }).join('; ') + (c.length > 5 ? '; \u2026' : "
    "'');\n",
    "}\n",
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
    "    if (r.at_exit && r.library_bytes && r.library_bytes >= r.bytes) what = 'held by a CUDA "
    "library for its handles (not a leak)';\n",
    "    else if (r.at_exit && r.library_bytes) what += ' (' + fmtBytes(r.library_bytes) + ' of "
    "it held by a CUDA library for its handles)';\n",
    "    if (r.counted === false) what += ' (not counted: ' + r.kind + ' is not memory "
    "this process allocated)';\n",
    "    return row([bytesCell(r.bytes, max), { cls: 'n', text: String(r.allocations) }, "
    "callText(r), r.kind, what, { cls: 'site', text: frameText(r.site) + callersText(r) }]);\n",
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
    "// ---- markers: labels in up to three rows, never overlapping; one that fits in none is "
    "left\n",
    "// out (its line keeps a tooltip). A mark, a range's start and its end have their own "
    "colours.\n",
    "var MARK_COLORS = { mark: '#5a6275', push: '#2e8b57', pop: '#c0602e' };\n",
    "var MARK_NAMES = { mark: 'marker', push: 'range start', pop: 'range end' };\n",
    "var MARK_ROWS = 3, MARK_ROW_H = 13, MARK_TOP = 8 + MARK_ROWS * MARK_ROW_H;\n",
    "function markKind(m) { return m.range === 'push' ? 'push' : m.range === 'pop' ? 'pop' : "
    "'mark'; }\n",
    "function drawMarkers(s, markers, X, xMin, xMax, top, bottom) {\n",
    "  var rowEnd = [], kinds = {};\n",
    "  markers.filter(function (m) { return isNum(m.time_s); }).sort(function (a, b) { return "
    "a.time_s - b.time_s; }).forEach(function (m) {\n",
    "    var x = X(m.time_s);\n",
    "    if (x < xMin - 0.5 || x > xMax + 0.5) return;\n",
    "    var k = markKind(m), col = MARK_COLORS[k];\n",
    "    kinds[k] = 1;\n",
    "    var g = svg('g', { 'class': 'marker', 'data-kind': k }, s);\n",
    "    svg('title', {}, g).textContent = MARK_NAMES[k] + ' at ' + fmtTime(m.time_s) + ': ' + "
    "m.label;\n",
    "    svg('line', { x1: x, x2: x, y1: top, y2: bottom, stroke: col, 'stroke-dasharray': k === "
    "'mark' ? '3,3' : '6,2' }, g);\n",
    "    svg('line', { x1: x, x2: x, y1: top - MARK_TOP + 8, y2: bottom, stroke: 'transparent', "
    "'stroke-width': 7 }, g);\n",
    "    var label = String(m.label);\n",
    "    if (label.length > 28) label = label.slice(0, 27) + '\\u2026';\n",
    "    var t = svg('text', { x: x + 3, y: top - 4, fill: col, 'class': 'mlabel' }, g);\n",
    "    t.textContent = label;\n",
    "    var w = t.getComputedTextLength ? t.getComputedTextLength() : 0;\n",
    "    if (!w) w = label.length * 6.2;\n",
    "    var a = x + 3, anchor = 'start';\n",
    "    if (a + w > xMax) { a = x - 3 - w; anchor = 'end'; }\n",
    "    var r = 0;\n",
    "    while (r < MARK_ROWS && rowEnd[r] !== undefined && rowEnd[r] > a) r++;\n",
    "    if (r === MARK_ROWS || a < 0) { g.removeChild(t); g.setAttribute('data-label', 'hidden'); "
    "return; }\n",
    "    rowEnd[r] = a + w + 6;\n",
    "    t.setAttribute('x', (anchor === 'end' ? x - 3 : x + 3).toFixed(1));\n",
    "    t.setAttribute('text-anchor', anchor);\n",
    "    t.setAttribute('y', top - 4 - r * MARK_ROW_H);\n",
    "    t.setAttribute('data-row', r);\n",
    "    t.setAttribute('data-x0', a.toFixed(1));\n",
    "    t.setAttribute('data-x1', (a + w).toFixed(1));\n",
    "  });\n",
    "  return kinds;\n",
    "}\n",
    "function markerLegend(lg, kinds) {\n",
    "  Object.keys(MARK_COLORS).forEach(function (k) {\n",
    "    if (!kinds[k]) return;\n",
    "    var item = el('span'), sw = el('span', 'sw');\n",
    "    sw.style.background = MARK_COLORS[k];\n",
    "    item.appendChild(sw);\n",
    "    item.appendChild(document.createTextNode(MARK_NAMES[k]));\n",
    "    lg.appendChild(item);\n",
    "  });\n",
    "}\n",
    "\n",
    "// ---- PyTorch tensors: live blocks over time (as memory_viz), the categories, each OOM's "
    "cache\n",
    "function siteLines(i, site) {\n",
    "  if (!site) return ['[no site]'];\n",
    "  var out = [String(site.site)];\n",
    "  arr(site.callers).forEach(function (c) { out.push('  called from ' + c); });\n",
    "  if (site.category) out.push('category: ' + site.category);\n",
    "  var fr = stackFrames(i, site.stack);\n",
    "  if (fr.length && stacks[i + ':' + site.stack]) { out.push('stack:'); fr.slice(0, "
    "24).forEach(function (f) { out.push('  ' + f); }); }\n",
    "  return out;\n",
    "}\n",
    "// a site's hue; its blocks in lightnesses of it, so neighbours stay apart\n",
    "function siteColor(k, b) { return 'hsl(' + ((k * 47) % 360) + ',55%,' + (45 + (b * 11) % 30) "
    "+ '%)'; }\n",
    "var BAND_COLORS = { other: '#b7bcc8', cache: '#e6e9ef', outside: '#6b7080' };\n",
    "var BAND_NAMES = { other: 'other tensors (not listed)', cache: \"cache's free memory "
    "(reserved \\u2212 allocated)\", outside: 'not PyTorch (device memory outside the cache)' };\n",
    "function tensorChart(box, i, dv, blocks, sites, tl, markers) {\n",
    "  var W = 1000, H = 300, L = 70, R = 12, T = MARK_TOP + 6, B = 28;\n",
    "  var pts = arr(dv.points), full0 = Infinity, full1 = -Infinity;\n",
    "  pts.forEach(function (p) { full0 = Math.min(full0, p[0]); full1 = Math.max(full1, p[0]); "
    "});\n",
    "  blocks.forEach(function (b) { full0 = Math.min(full0, b[0]); full1 = Math.max(full1, "
    "isNum(b[1]) ? b[1] : b[0]); });\n",
    "  var pe = (procs[i] || {}).end_time_s;\n",
    "  if (isNum(pe) && pe > full1) full1 = pe;\n",
    "  if (!isFinite(full0)) return;\n",
    "  if (full1 <= full0) full1 = full0 + 1e-3;\n",
    "  box.appendChild(el('h3', '', 'GPU ' + dv.device + ': live tensors, the ' + blocks.length + "
    "' largest of ' + (tl.blocks_all || blocks.length) + ' blocks as bands (allocation order, "
    "bottom up), the rest as one band'));\n",
    "  box.appendChild(el('p', 'note', 'Hover a band for its size, site and stack. Drag to zoom to "
    "a time range, the wheel zooms around the pointer, double-click or Reset shows "
    "everything.'));\n",
    "  var reset = el('button', '', 'Reset zoom');\n",
    "  box.appendChild(reset);\n",
    "  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', id: 'tensor-svg-' + "
    "dv.device, 'class': 'tensor-svg' });\n",
    "  box.appendChild(s);\n",
    "  var lives = blocks.map(function (b, k) {\n",
    "    var f = isNum(b[1]) ? Math.max(b[1], b[0] + 1e-7) : null;\n",
    "    return { a: b[0], f: f, bytes: b[2], site: sites[b[3]], si: b[3], k: k };\n",
    "  });\n",
    "  function bandsAt(t) {\n",
    "    var lo = 0, hi = pts.length - 1, v = null;\n",
    "    while (lo <= hi) { var mid = (lo + hi) >> 1; if (pts[mid][0] <= t) { v = pts[mid]; lo = "
    "mid + 1; } else hi = mid - 1; }\n",
    "    return v ? { other: v[2], cache: v[3], outside: v[4] } : { other: 0, cache: 0, outside: 0 "
    "};\n",
    "  }\n",
    "  function draw(t0, t1) {\n",
    "    clear(s);\n",
    "    s.setAttribute('data-t0', t0); s.setAttribute('data-t1', t1);\n",
    "    var X = function (t) { return L + (W - L - R) * (t - t0) / (t1 - t0); };\n",
    "    var times = [t0, t1];\n",
    "    pts.forEach(function (p) { if (p[0] > t0 && p[0] < t1) times.push(p[0]); });\n",
    "    lives.forEach(function (l) { if (l.a > t0 && l.a < t1) times.push(l.a); if (l.f !== null "
    "&& l.f > t0 && l.f < t1) times.push(l.f); });\n",
    "    times.sort(function (a, b) { return a - b; });\n",
    "    times = times.filter(function (t, k) { return k === 0 || t !== times[k - 1]; });\n",
    "    var iv = [], maxB = 1;\n",
    "    for (var k = 0; k + 1 < times.length; k++) {\n",
    "      var t = times[k], y = 0, off = {};\n",
    "      lives.forEach(function (l) { if (l.a <= t && (l.f === null || l.f > t)) { off[l.k] = y; "
    "y += l.bytes; } });\n",
    "      var bd = bandsAt(t), tops = { listed: y };\n",
    "      ['other', 'cache', 'outside'].forEach(function (n) { tops[n] = y; y += bd[n] || 0; "
    "});\n",
    "      if (y > maxB) maxB = y;\n",
    "      iv.push({ x0: X(t), x1: X(times[k + 1]), off: off, tops: tops, bd: bd });\n",
    "    }\n",
    "    maxB *= 1.05;\n",
    "    var Y = function (b) { return T + (H - T - B) * (1 - b / maxB); };\n",
    "    niceTicks(maxB / 1.05, 4, true).forEach(function (b) {\n",
    "      svg('line', { x1: L, x2: W - R, y1: Y(b), y2: Y(b), 'class': 'grid' }, s);\n",
    "      svg('text', { x: L - 6, y: Y(b) + 4, 'text-anchor': 'end' }, s).textContent = "
    "fmtBytes(Math.round(b));\n",
    "    });\n",
    "    niceTicks(t1 - t0, 5).forEach(function (d, k) {\n",
    "      svg('text', { x: X(t0 + d), y: H - 8, 'text-anchor': d > (t1 - t0) * 0.95 ? 'end' : k ? "
    "'middle' : "
    "'start' }, s).textContent = fmtTime(t0 + d);\n",
    "    });\n",
    "    function poly(get, attrs, lines) {\n",
    "      var top = [], bot = [];\n",
    "      iv.forEach(function (v) {\n",
    "        var r = get(v);\n",
    "        if (!r || r[1] <= 0) return;\n",
    "        top.push(v.x0.toFixed(1) + ',' + Y(r[0] + r[1]).toFixed(1), v.x1.toFixed(1) + ',' + "
    "Y(r[0] + r[1]).toFixed(1));\n",
    "        bot.unshift(v.x1.toFixed(1) + ',' + Y(r[0]).toFixed(1), v.x0.toFixed(1) + ',' + "
    "Y(r[0]).toFixed(1));\n",
    "      });\n",
    "      if (!top.length) return null;\n",
    "      attrs.points = top.concat(bot).join(' ');\n",
    "      var p = svg('polygon', attrs, s);\n",
    "      svg('title', {}, p).textContent = lines.join('\\n');\n",
    "      p.addEventListener('mousemove', function (ev) { showTip(ev, lines); });\n",
    "      p.addEventListener('mouseleave', hideTip);\n",
    "      return p;\n",
    "    }\n",
    "    lives.forEach(function (l) {\n",
    "      var lines = [fmtBytes(l.bytes) + ' (' + exact(l.bytes) + '), from ' + fmtTime(l.a) + "
    "(l.f === null ? ', live at the end' : ' to ' + fmtTime(l.f))].concat(siteLines(i, l.site));\n",
    "      poly(function (v) { return v.off.hasOwnProperty(l.k) ? [v.off[l.k], l.bytes] : null; }, "
    "{ 'class': 'blk', 'data-block': l.k, fill: siteColor(l.si, l.k), stroke: '#fff', "
    "'stroke-width': "
    "0.3 }, lines);\n",
    "    });\n",
    "    ['other', 'cache', 'outside'].forEach(function (n) {\n",
    "      poly(function (v) { return [v.tops[n], v.bd[n] || 0]; }, { 'class': 'band', "
    "'data-band': n, fill: BAND_COLORS[n] }, [BAND_NAMES[n]]);\n",
    "    });\n",
    "    svg('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }, s);\n",
    "    svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }, s);\n",
    "    kinds = drawMarkers(s, markers, X, L, W - R, T, H - B);\n",
    "    sel = svg('rect', { x: 0, y: T, width: 0, height: H - T - B, fill: "
    "'rgba(74,123,208,0.2)', visibility: 'hidden' }, s);\n",
    "  }\n",
    "  var view = [full0, full1], kinds = {}, sel = null, drag = null;\n",
    "  function tAt(ev) { var r = s.getBoundingClientRect(), x = (ev.clientX - r.left) * W / "
    "r.width; return view[0] + (Math.min(Math.max(x, L), W - R) - L) / (W - L - R) * (view[1] - "
    "view[0]); }\n",
    "  function zoom(a, b) { a = Math.max(full0, a); b = Math.min(full1, b); if (b - a > 1e-7) { "
    "view = [a, b]; draw(a, b); } }\n",
    "  s.addEventListener('mousedown', function (ev) { drag = tAt(ev); ev.preventDefault(); });\n",
    "  s.addEventListener('mousemove', function (ev) {\n",
    "    if (drag === null || !sel) return;\n",
    "    var X = function (t) { return L + (W - L - R) * (t - view[0]) / (view[1] - view[0]); }, a "
    "= X(Math.min(drag, tAt(ev))), b = X(Math.max(drag, tAt(ev)));\n",
    "    sel.setAttribute('x', a); sel.setAttribute('width', b - a); "
    "sel.setAttribute('visibility', 'visible');\n",
    "  });\n",
    "  window.addEventListener('mouseup', function (ev) {\n",
    "    if (drag === null) return;\n",
    "    var a = drag, b = tAt(ev);\n",
    "    drag = null;\n",
    "    if (Math.abs(b - a) > (view[1] - view[0]) / 200) zoom(Math.min(a, b), Math.max(a, b)); "
    "else if (sel) sel.setAttribute('visibility', 'hidden');\n",
    "  });\n",
    "  s.addEventListener('wheel', function (ev) {\n",
    "    ev.preventDefault();\n",
    "    var c = tAt(ev), f = ev.deltaY < 0 ? 0.8 : 1.25;\n",
    "    zoom(c - (c - view[0]) * f, c + (view[1] - c) * f);\n",
    "  }, { passive: false });\n",
    "  s.addEventListener('dblclick', function () { view = [full0, full1]; draw(full0, full1); "
    "});\n",
    "  reset.onclick = function () { view = [full0, full1]; draw(full0, full1); };\n",
    "  draw(full0, full1);\n",
    "  var lg = el('div', 'legend');\n",
    "  ['other', 'cache', 'outside'].forEach(function (n) {\n",
    "    var item = el('span'), sw = el('span', 'sw');\n",
    "    sw.style.background = BAND_COLORS[n];\n",
    "    item.appendChild(sw);\n",
    "    item.appendChild(document.createTextNode(BAND_NAMES[n]));\n",
    "    lg.appendChild(item);\n",
    "  });\n",
    "  markerLegend(lg, kinds);\n",
    "  box.appendChild(lg);\n",
    "}\n",
    "function renderCategories(t) {\n",
    "  var box = clear($('tensor-cats')), cats = arr(t.categories).filter(function (c) { return "
    "c.bytes_at_peak > 0; }), sum = 0;\n",
    "  cats.forEach(function (c) { sum += c.bytes_at_peak; });\n",
    "  if (!sum) { box.appendChild(el('p', 'note', 'No tensor was live at the peak.')); return; "
    "}\n",
    "  var W = 1000, s = svg('svg', { viewBox: '0 0 ' + W + ' 28', id: 'cat-svg' }), x = 0, lg = "
    "el('div', 'legend');\n",
    "  cats.forEach(function (c, k) {\n",
    "    var w = W * c.bytes_at_peak / sum, col = COLORS[k % COLORS.length], text = c.category + "
    "': ' + fmtBytes(c.bytes_at_peak) + ' (' + (100 * c.bytes_at_peak / sum).toFixed(1) + '%)';\n",
    "    var r = svg('rect', { x: x.toFixed(2), y: 2, width: Math.max(0.5, w).toFixed(2), height: "
    "24, fill: col, 'class': 'cat', 'data-category': c.category, 'data-bytes': c.bytes_at_peak }, "
    "s);\n",
    "    svg('title', {}, r).textContent = text + ', ' + exact(c.bytes_at_peak);\n",
    "    if (w > 90) svg('text', { x: (x + 4).toFixed(2), y: 18 }, s).textContent = c.category;\n",
    "    x += w;\n",
    "    var item = el('span'), sw = el('span', 'sw');\n",
    "    sw.style.background = col;\n",
    "    item.appendChild(sw);\n",
    "    item.appendChild(document.createTextNode(text));\n",
    "    item.title = exact(c.bytes_at_peak);\n",
    "    lg.appendChild(item);\n",
    "  });\n",
    "  box.appendChild(el('p', 'note', 'Bytes of live tensors at the peak by category (' + "
    "fmtBytes(sum) + ' in all; rules in docs/report-json.md, categories[]).'));\n",
    "  box.appendChild(s);\n",
    "  box.appendChild(lg);\n",
    "}\n",
    "var PIECE_COLORS = { allocated: '#4a7bd0', pending: '#e8a33d', free: '#ffffff' };\n",
    "function renderTensorOoms(i, t, sites) {\n",
    "  var box = clear($('tensor-ooms')), list = arr(t.ooms);\n",
    "  if (!list.length) return;\n",
    "  box.appendChild(el('h3', '', 'The cache at each out-of-memory error'));\n",
    "  list.slice(0, 20).forEach(function (o, n) {\n",
    "    var d = el('div', 'oom');\n",
    "    d.appendChild(el('strong', '', 'GPU ' + o.device + ' at ' + fmtTime(o.time_s) + ': asked "
    "for ' + fmtBytes(o.requested) + ' (' + fmtBytes(o.rounded) + ' rounded) at ' + o.site + ' (' "
    "+ o.cause + ')'));\n",
    "    d.appendChild(el('div', 'note', fmtBytes(o.allocated) + ' allocated, ' + "
    "fmtBytes(o.reserved_unallocated) + ' reserved but unallocated in ' + o.free_blocks + ' free "
    "blocks, the largest ' + fmtBytes(o.largest_free) + '; CUDA said ' + fmtBytes(o.device_free) + "
    "' free'));\n",
    "    arr(o.would_help).forEach(function (h) { d.appendChild(el('div', 'expl', 'would help: ' + "
    "h)); });\n",
    "    var segs = arr(o.segments), maxS = o.rounded || 1;\n",
    "    segs.forEach(function (g) { if (g.size > maxS) maxS = g.size; });\n",
    "    var W = 1000, L = 150, RH = segs.length > 32 ? 8 : 14, H = (segs.length + 1) * (RH + 2) + "
    "4;\n",
    "    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'oom-svg', id: 'oom-svg-' + "
    "n }), sc = (W - L - 4) / maxS;\n",
    "    var req = svg('rect', { x: L, y: 2, width: Math.max(1, o.rounded * sc).toFixed(2), "
    "height: RH, fill: '#b3261e', 'class': 'request' }, s);\n",
    "    svg('title', {}, req).textContent = 'the request: ' + exact(o.rounded);\n",
    "    svg('text', { x: L - 6, y: 2 + RH - 3, 'text-anchor': 'end' }, s).textContent = 'request "
    "' + fmtBytes(o.rounded);\n",
    "    segs.forEach(function (g, k) {\n",
    "      var y = 2 + (k + 1) * (RH + 2), gr = svg('g', {}, s);\n",
    "      var r = svg('rect', { x: L, y: y, width: Math.max(1, g.size * sc).toFixed(2), height: "
    "RH, fill: '#c9cfdb', stroke: '#9aa1b0', 'stroke-width': 0.5, 'class': 'seg' }, gr);\n",
    "      svg('title', {}, r).textContent = 'segment ' + g.address + ' (' + g.pool + ' pool, "
    "stream ' + g.stream + '): ' + exact(g.size) + '; allocated ' + fmtBytes(g.allocated) + ', "
    "free ' + fmtBytes(g.free) + (g.pending ? ', freed waiting for streams ' + fmtBytes(g.pending) "
    ": '') + (g.blocks_all > arr(g.blocks).length ? '; ' + (g.blocks_all - arr(g.blocks).length) + "
    "' blocks not listed' : '');\n",
    "      if (RH >= 12) svg('text', { x: L - 6, y: y + RH - 3, 'text-anchor': 'end' }, "
    "gr).textContent = fmtBytes(g.size);\n",
    "      arr(g.blocks).forEach(function (b) {\n",
    "        var p = svg('rect', { x: (L + b[0] * sc).toFixed(2), y: y + 1, width: Math.max(0.5, "
    "b[1] * sc - 0.5).toFixed(2), height: RH - 2, fill: PIECE_COLORS[b[2]] || '#fff', stroke: b[2] "
    "=== 'free' ? '#5aa05a' : 'none', 'stroke-width': 0.8, 'class': 'piece', 'data-state': b[2] }, "
    "gr);\n",
    "        svg('title', {}, p).textContent = [b[2] + ' block of ' + exact(b[1]) + ' at offset ' "
    "+ b[0]].concat(b[3] === null || b[3] === undefined ? [] : siteLines(i, "
    "sites[b[3]])).join('\\n');\n",
    "      });\n",
    "    });\n",
    "    d.appendChild(s);\n",
    "    var lg = el('div', 'legend');\n",
    "    [['request', '#b3261e'], ['allocated', PIECE_COLORS.allocated], ['freed, waiting for its "
    "streams', PIECE_COLORS.pending], ['free (outlined)', '#dff0df'], ['segment part not listed', "
    "'#c9cfdb']].forEach(function (e) {\n",
    "      var item = el('span'), sw = el('span', 'sw');\n",
    "      sw.style.background = e[1];\n",
    "      item.appendChild(sw);\n",
    "      item.appendChild(document.createTextNode(e[0]));\n",
    "      lg.appendChild(item);\n",
    "    });\n",
    "    d.appendChild(lg);\n",
    "    if (o.segments_all > segs.length) d.appendChild(el('p', 'note', 'The ' + segs.length + ' "
    "largest of ' + o.segments_all + ' segments.'));\n",
    "    box.appendChild(d);\n",
    "  });\n",
    "  if (list.length > 20) box.appendChild(el('p', 'note', (list.length - 20) + ' more "
    "out-of-memory errors not shown'));\n",
    "}\n",
    "function renderTensors(i) {\n",
    "  var sec = $('tensors-sec'), t = (procs[i] || {}).tensors;\n",
    "  sec.hidden = !t;\n",
    "  if (!t) return;\n",
    "  var tl = t.timeline || {}, sites = arr(t.block_sites), box = clear($('tensor-timeline'));\n",
    "  arr(tl.devices).forEach(function (dv) {\n",
    "    tensorChart(box, i, dv, arr(tl.blocks).filter(function (b) { return b[4] === dv.device; "
    "}), sites, tl, arr((procs[i] || {}).markers));\n",
    "  });\n",
    "  if (!box.firstChild) box.appendChild(el('p', 'note', 'No tensor was allocated.'));\n",
    "  renderCategories(t);\n",
    "  renderTensorOoms(i, t, sites);\n",
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
    "  renderTensors(current);\n",
    "}\n",
    "\n",
    "try {\n",
    "  var first = procs[0] || {};\n",
    "  document.title = 'gpumemtrace: ' + (arr(first.argv).join(' ') || first.file || "
    "'report');\n",
    "  $('subtitle').textContent = procs.length === 1 ? procName(0) + ' (' + (first.file "
    "|| '') + ')' : procs.length + ' processes';\n",
    "  current = defaultProcess();\n",
    "  renderAnswer();\n",
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
