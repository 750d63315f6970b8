'use strict';
(function () {
// Any exception, while the page is drawn or later in a handler (hover, zoom, a click), is a line
// at the top of the page and a mark on <body data-error> (tests/html looks for it), not a page
// that silently stops answering. The first one is kept.
window.addEventListener('error', function (ev) {
  var body = document.body, box = document.getElementById('warnings');
  if (!body || body.hasAttribute('data-error')) return;
  var what = String(ev.message) + (ev.lineno ? ' (page line ' + ev.lineno + ')' : '');
  body.setAttribute('data-error', what);
  if (!box) return;
  var line = document.createElement('div');
  line.className = 'warn';
  line.textContent = 'The page met an error and may be incomplete or stop answering: ' + what;
  box.appendChild(line);
});
var D = JSON.parse(document.getElementById('gmt-data').textContent);
var SVGNS = 'http' + '://www.w3.org/2000/svg';
var COLORS = ['#4a7bd0', '#d0844a', '#5aa05a', '#9a6bc0', '#c0504d', '#3aa8a8', '#b8a03a', '#7a7a7a', '#d06aa0', '#4a4ad0', '#8a5a3a', '#5a8ad0', '#a0a0a0'];

function arr(x) { return Array.isArray(x) ? x : []; }
function isNum(x) { return typeof x === 'number' && isFinite(x); }
function $(id) { return document.getElementById(id); }
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function svg(tag, attrs, parent) {
  var e = document.createElementNS(SVGNS, tag);
  for (var k in attrs) e.setAttribute(k, String(attrs[k]));
  if (parent) parent.appendChild(e);
  return e;
}
function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
function fmtBytes(b) {
  if (!isNum(b)) return '?';
  var neg = b < 0, v = Math.abs(b), units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'], u = 0;
  if (v < 1024) return (neg ? '-' : '') + v + ' B';
  v /= 1024;
  while (v >= 1023.95 && u + 1 < units.length) { v /= 1024; u++; }
  return (neg ? '-' : '') + v.toFixed(1) + ' ' + units[u];
}
function exact(b) { return isNum(b) ? String(b).replace(/\B(?=(\d{3})+(?!\d))/g, ',') + ' bytes' : '?'; }
function fmtTime(t) { return isNum(t) ? (t < 10 ? t.toFixed(3) : t.toFixed(1)) + ' s' : '?'; }
function baseName(p) { var i = p.lastIndexOf('/'); return i < 0 ? p : p.slice(i + 1); }

// A frame object as the folded format writes it.
function frameText(f) {
  if (!f) return '[no stack]';
  var fn = f['function'], file = f.file, mod = f.module;
  if (!fn && !file) return mod ? baseName(mod) + '+' + (f.offset || '?') : (f.address || '?');
  if (file && f.line) return (fn || '?') + ' (' + file + ':' + f.line + ')';
  if (file) return (fn || '?') + ' (' + file + ')';
  if (mod) return fn + ' [' + baseName(mod) + ']';
  return String(fn);
}
function callText(o) { return (o.api || '?') + (o.driver ? ' \u2192 ' + o.driver : ''); }

var procs = arr(D.processes), kindsOrder = arr(D.kinds).map(function (k) { return k.kind; });
var stacks = {};
arr(D.call_stacks).forEach(function (c) { stacks[c.process + ':' + c.stack] = c; });
function kindColor(kind) {
  if (kind === 'held') return '#1d2330';
  var i = kindsOrder.indexOf(kind);
  return COLORS[(i < 0 ? kindsOrder.length : i) % COLORS.length];
}
function stackFrames(p, id) {
  var c = stacks[p + ':' + id];
  if (!c || !c.known) return [id ? '[stack ' + id + ' not in the trace]' : '[no stack]'];
  var out = [];
  if (c.pystate === 'empty') out.push('(PyTorch autograd / worker thread: no Python frames)');
  var cs = arr(c.call_stack);
  for (var i = cs.length - 1; i >= 0; i--) if (!cs[i].hidden) out.push(frameText(cs[i]));
  return out;
}
function procName(i) {
  var p = procs[i] || {}, argv = arr(p.argv).join(' ');
  var s = 'pid ' + (p.pid === null || p.pid === undefined ? '?' : p.pid);
  if (p.rank && isNum(p.rank.rank)) s += ', rank ' + p.rank.rank;
  return s + ': ' + (argv || p.file || '?');
}
function ofProc(list, i) { return arr(list).filter(function (e) { return e.process === i; }); }

// Tooltip: text lines near the pointer.
var tip = $('tip');
function showTip(ev, lines) {
  tip.textContent = lines.join('\n');
  tip.hidden = false;
  var x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + tip.offsetWidth > window.innerWidth) x = Math.max(0, ev.clientX - tip.offsetWidth - 14);
  if (y + tip.offsetHeight > window.innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 14);
  tip.style.left = x + 'px';
  tip.style.top = y + 'px';
}
function hideTip() { tip.hidden = true; }

function table(head, rows) {
  var t = el('table'), tr = el('tr');
  head.forEach(function (h) { var th = el('th', /^(bytes|alloc|growth|first|last|size|held|rises)/i.test(h) ? 'n' : '', h); tr.appendChild(th); });
  t.appendChild(tr);
  rows.forEach(function (r) { t.appendChild(r); });
  return t;
}
function row(cells) {
  var tr = el('tr');
  cells.forEach(function (c) {
    var td;
    if (c && c.nodeType) { td = el('td'); td.appendChild(c); }
    else if (c && c.node) { td = el('td', c.cls); td.appendChild(c.node); }
    else if (c && typeof c === 'object') { td = el('td', c.cls, c.text); if (c.title) td.title = c.title; }
    else td = el('td', '', c);
    tr.appendChild(td);
  });
  return tr;
}
function bytesCell(b, max) {
  var span = el('span'), bar = el('span', 'bar');
  bar.style.width = (max > 0 ? Math.max(1, Math.round(60 * b / max)) : 0) + 'px';
  span.appendChild(bar);
  span.appendChild(document.createTextNode(fmtBytes(b)));
  span.title = exact(b);
  return { cls: 'n', node: span };
}
function limited(box, rows, head, max) {
  box.appendChild(table(head, rows.slice(0, max)));
  if (rows.length > max) box.appendChild(el('p', 'note', (rows.length - max) + ' more rows not shown'));
}

// ---- summary and warnings
function card(id, key, value, titleText, bad) {
  var c = el('div', 'card' + (bad ? ' bad' : ''));
  var v = el('div', 'v', value);
  v.id = id;
  if (titleText) c.title = titleText;
  c.appendChild(v);
  c.appendChild(el('div', 'k', key));
  return c;
}
var CACHE_LABELS = { pytorch: 'PyTorch', cupy: 'CuPy', xla: 'JAX/XLA', cuda_pool: 'a CUDA memory pool' };
function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
function cacheLabel(k) { return has(CACHE_LABELS, k) ? CACHE_LABELS[k] : String(k); }
var LIB_LABELS = { cublas: 'cuBLAS', cudnn: 'cuDNN', nccl: 'NCCL', cufft: 'cuFFT', cusparse: 'cuSPARSE', cusolver: 'cuSOLVER', curand: 'cuRAND' };
function libLabel(k) { return has(LIB_LABELS, k) ? LIB_LABELS[k] : String(k); }
// the answer first: the first out-of-memory error and why, the leak, what grows
function renderAnswer() {
  var s = D.summary || {}, box = clear($('answer')), says = [];
  var oom = arr(D.oom).filter(function (o) { return o['class'] === 'failure'; })[0], toom = null;
  procs.forEach(function (p) { var o = p.tensors && arr(p.tensors.ooms)[0]; if (o && !toom) toom = o; });
  if (toom) says.push('PyTorch ran out of memory asking for ' + fmtBytes(toom.requested) + ' at ' + toom.site + ' (' + String(toom.cause).replace(/_/g, ' ') + ')' + (arr(toom.would_help)[0] ? '; would help: ' + toom.would_help[0] : '') + '.');
  else if (oom) says.push('Out of memory: ' + (oom.explanation || oom.cause) + '');
  if (s.leaked_bytes > 0) {
    var top = null, best = 0;
    arr(D.leak_sites).forEach(function (g) { var own = g.bytes - (g.cached_bytes || 0) - (g.library_bytes || 0); if (g.at_exit && g.counted && own > best) { best = own; top = g; } });
    says.push('Leaked ' + fmtBytes(s.leaked_bytes) + ' at exit' + (top ? ', the most (' + fmtBytes(best) + ') at ' + frameText(top.site) : '') + '.');
  }
  var g = arr(D.growth_sites)[0];
  if (g) says.push('Growing: ' + frameText(g.site) + ' rose by ' + fmtBytes(g.growth_bytes) + ' across ' + (g.samples || 0) + ' ' + String(g.basis || 'samples').replace(/_/g, ' ') + '.');
  procs.forEach(function (p) {
    var tg = p.tensors && arr(p.tensors.growth)[0];
    if (!tg) return;
    var h = tg.held_by;
    says.push('Tensors growing: ' + tg.site + ' about +' + fmtBytes(tg.per_step) + ' a step' + (h ? ', kept alive by ' + (h.kind === 'graph' ? 'the autograd graphs of ' + h.roots + ' tensors in ' : '') + h.holder : '') + '.');
  });
  if (!says.length) {
    box.className = 'answer fine';
    says.push('No failed allocation, no leak, nothing growing: the peak was ' + fmtBytes(s.peak_held_bytes || 0) + ' of device memory held.');
  }
  says.forEach(function (t) { box.appendChild(el('p', '', t)); });
}
function renderSummary() {
  var s = D.summary || {}, box = clear($('summary'));
  var peak = card('sum-peak', 'peak device memory held (one process, one GPU)', fmtBytes(s.peak_held_bytes), exact(s.peak_held_bytes));
  peak.firstChild.setAttribute('data-bytes', String(s.peak_held_bytes));
  box.appendChild(peak);
  // a caching allocator's memory at exit is not the program's leak (check: --count-cached)
  var cached = s.cached_at_exit_bytes || 0, own = s.leaked_bytes || 0;
  var leak = card('sum-leaked', 'leaked at exit in ' + (s.leaked_allocations || 0) + ' allocations' + (cached ? ', caching allocators not counted' : '') + (s.library_at_exit_bytes ? ', CUDA libraries\' handles not counted' : ''), fmtBytes(own), exact(own), own > 0);
  leak.firstChild.setAttribute('data-bytes', String(own));
  box.appendChild(leak);
  if (cached) {
    var who = [], by = s.cached_at_exit || {};
    Object.keys(by).forEach(function (k) { if (by[k] && by[k].bytes) who.push(cacheLabel(k) + ' ' + fmtBytes(by[k].bytes)); });
    var c = card('sum-cached', 'kept by caching allocators at exit (' + who.join(', ') + '): theirs to free, not a leak', fmtBytes(cached), exact(cached));
    c.firstChild.setAttribute('data-bytes', String(cached));
    box.appendChild(c);
  }
  // CUDA libraries' handles (cuBLAS, cuDNN, NCCL...) keep theirs (check: --count-libraries)
  var lib = s.library_at_exit_bytes || 0;
  if (lib) {
    var libs = [], lby = s.library_at_exit || {};
    Object.keys(lby).forEach(function (k) { if (lby[k] && lby[k].bytes) libs.push(libLabel(k) + ' ' + fmtBytes(lby[k].bytes)); });
    var lc = card('sum-library', 'held by CUDA libraries for their handles at exit (' + libs.join(', ') + '): not a leak', fmtBytes(lib), exact(lib));
    lc.firstChild.setAttribute('data-bytes', String(lib));
    box.appendChild(lc);
  }
  // probes and failures the allocator recovered from are listed, not counted (check: --max-failed)
  var uncounted = (s.probe_failures || 0) + (s.recovered_failures || 0);
  // PyTorch's OOM errors that no failed CUDA call stands for (its own limit) count too, as in check --max-failed and the text
  var toom = s.tensor_oom_errors || 0, nfailed = (s.failed_allocations || 0) + toom;
  var failed = card('sum-failed', 'failed allocations' + (toom ? ' (' + toom + ' of them PyTorch out-of-memory errors with no failed CUDA call)' : '') + (uncounted ? ' (' + uncounted + ' more not counted: probes or recovered)' : ''), String(nfailed), '', nfailed > 0);
  failed.firstChild.setAttribute('data-count', String(nfailed));
  box.appendChild(failed);
  if (s.live_at_end_bytes) box.appendChild(card('sum-live-end', 'live when a process died', fmtBytes(s.live_at_end_bytes), exact(s.live_at_end_bytes)));
  box.appendChild(card('sum-procs', 'processes, ' + (s.events || 0) + ' events', String(s.processes || procs.length)));

  var w = clear($('warnings')), groups = [], byText = {};
  function warn(text) { w.appendChild(el('div', 'warn', text)); }
  // The same warning for many processes (ranks) is one line naming the first few.
  function pwarn(i, text) {
    if (!byText[text]) { byText[text] = []; groups.push(text); }
    byText[text].push(procName(i));
  }
  // trace files that yielded nothing: processes in none of the figures (check's complete-traces fails on them)
  arr(D.lost_traces).forEach(function (l) { warn('The trace file ' + l.file + ' yielded nothing (' + l.reason + '): its process is in none of the figures on this page.'); });
  if (s.dropped > 0 && s.dropped_readings === s.dropped) warn(s.dropped + ' reservation readings were dropped (ring buffer full): every allocation and free is here, the pools\' reserved bytes may lag.');
  else if (s.dropped > 0) warn(s.dropped + ' events were dropped (ring buffer full' + (s.dropped_readings > 0 ? ', ' + s.dropped_readings + ' of them reservation readings' : '') + '): every number here is a lower bound.');
  procs.forEach(function (p, i) {
    if (p.coverage && p.coverage !== 'full') pwarn(i, 'coverage is "' + p.coverage + '"' + (p.coverage_reason ? ' (' + p.coverage_reason + ')' : '') + ': allocations through the driver API or a static CUDA runtime are not seen.');
    if (p.dropped > 0) pwarn(i, p.dropped_readings === p.dropped ? 'reservation readings were dropped.' : 'events were dropped.');
    if (p.complete === false) pwarn(i, 'the process did not exit normally; what was live at its end is not a leak.');
    if (p.bad_lines > 0) pwarn(i, 'unreadable trace lines were skipped.');
    if (p.torn_last_line) pwarn(i, 'the last trace line was cut short.');
  });
  groups.forEach(function (text) {
    var names = byText[text];
    if (names.length === 1) warn(names[0] + ': ' + text);
    else warn(names.length + ' processes (' + names.slice(0, 3).join('; ') + (names.length > 3 ? '; \u2026' : '') + '): ' + text);
  });
}

// ---- processes
var current = 0;
function defaultProcess() {
  var s = D.summary || {};
  if (isNum(s.peak_process) && procs[s.peak_process]) return s.peak_process;
  var best = 0, bytes = -1;
  arr(D.peaks).forEach(function (p) { if (p.bytes > bytes) { bytes = p.bytes; best = p.process; } });
  return procs[best] ? best : 0;
}
function procPeak(i) {
  var m = 0;
  ofProc(D.peaks, i).forEach(function (p) { if (p.bytes > m) m = p.bytes; });
  return m;
}
function renderProcesses() {
  var sel = $('proc'), box = clear($('procs'));
  clear(sel);
  procs.forEach(function (p, i) {
    var o = el('option', '', procName(i));
    o.value = String(i);
    sel.appendChild(o);
  });
  sel.value = String(current);
  sel.onchange = function () { current = Number(sel.value); renderProcess(); };
  if (procs.length < 2) { $('procs-sec').hidden = true; return; }
  var rows = procs.map(function (p, i) {
    var leaked = 0, failed = ofProc(D.failed, i).length;
    ofProc(D.leaks, i).forEach(function (l) { if (l.at_exit && l.counted && !l.cached && !l.library) leaked += l.bytes; });
    var r = row([String(i), p.host || '', procName(i), { cls: 'n', text: fmtBytes(procPeak(i)), title: exact(procPeak(i)) },
      { cls: 'n', text: fmtBytes(leaked), title: exact(leaked) }, { cls: 'n', text: String(failed) }, p.complete ? 'exited' : 'died']);
    r.className = 'click' + (i === current ? ' sel' : '');
    r.onclick = function () { current = i; sel.value = String(i); renderProcess(); };
    return r;
  });
  limited(box, rows, ['#', 'host', 'process', 'peak held', 'leaked', 'failed', 'end'], 500);
}

// ---- timeline
function failuresOf(i) {
  var list = Array.isArray(D.oom) ? D.oom : arr(D.failed);
  return ofProc(list, i);
}
// about n round ticks from 0 to max: steps of 1, 2 or 5 times a power of ten (of the largest binary unit under max for bytes: 50 MiB, not 48.8)
function niceTicks(max, n, bytes) {
  if (!(max > 0)) return [0];
  var unit = 1;
  if (bytes) while (unit * 1024 <= max) unit *= 1024;
  var raw = max / unit / n, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;
  var step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p * unit, out = [];
  for (var k = 0; k * step <= max * (1 + 1e-9); k++) out.push(k * step);
  return out;
}
function valueAt(points, t) {
  var lo = 0, hi = points.length - 1, v = 0;
  while (lo <= hi) {
    var mid = (lo + hi) >> 1;
    if (points[mid][0] <= t) { v = points[mid][1]; lo = mid + 1; } else hi = mid - 1;
  }
  return v;
}
function chart(box, title, series, tEnd, markers, fails, labels) {
  var W = 1000, H = 260, L = 70, R = 12, T = markers.length && labels ? MARK_TOP + 6 : 22, B = 28, maxB = 1, maxT = isNum(tEnd) ? tEnd : 0;
  series.forEach(function (s) { s.points.forEach(function (p) { if (p[1] > maxB) maxB = p[1]; if (p[0] > maxT) maxT = p[0]; }); });
  fails.forEach(function (f) { if (isNum(f.time_s) && f.time_s > maxT) maxT = f.time_s; });
  if (maxT <= 0) maxT = 1;
  // where memory moves: from the first allocation (a little before), not from the start of the process (a PyTorch job spends its first seconds importing)
  var minT = maxT;
  series.forEach(function (s) { if (s.points.length && s.points[0][0] < minT) minT = s.points[0][0]; });
  fails.forEach(function (f) { if (isNum(f.time_s) && f.time_s < minT) minT = f.time_s; });
  var t0 = Math.max(0, minT - (maxT - minT) * 0.03);
  if (!(maxT > t0)) t0 = 0;
  maxB *= 1.08;
  function X(t) { return L + (W - L - R) * (t - t0) / (maxT - t0); }
  function Y(b) { return T + (H - T - B) * (1 - b / maxB); }
  box.appendChild(el('h3', '', title));
  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
  box.appendChild(s); // laid out: drawMarkers measures its labels
  niceTicks(maxB / 1.08, 4, true).forEach(function (b) {
    svg('line', { x1: L, x2: W - R, y1: Y(b), y2: Y(b), 'class': 'grid' }, s);
    svg('text', { x: L - 6, y: Y(b) + 4, 'text-anchor': 'end' }, s).textContent = fmtBytes(Math.round(b));
  });
  var tt = niceTicks(maxT - t0, 5), step = tt.length > 1 ? tt[1] : maxT - t0;
  for (var tk = Math.ceil(t0 / step - 1e-9) * step, k = 0; tk <= maxT * (1 + 1e-9); tk += step, k++)
    svg('text', { x: X(tk), y: H - 8, 'text-anchor': tk > t0 + (maxT - t0) * 0.95 ? 'end' : tk - t0 < (maxT - t0) * 0.05 ? 'start' : 'middle' }, s).textContent = fmtTime(tk);
  svg('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }, s);
  svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }, s);
  var mkinds = drawMarkers(s, markers, X, L, W - R, T, H - B, labels);
  series.forEach(function (sr) {
    var d = '', last = null;
    sr.points.forEach(function (p) {
      d += d ? ' H' + X(p[0]).toFixed(1) + ' V' + Y(p[1]).toFixed(1) : 'M' + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1);
      last = p;
    });
    if (last) d += ' H' + X(maxT).toFixed(1);
    svg('path', { d: d, fill: 'none', stroke: kindColor(sr.kind), 'stroke-width': sr.kind === 'held' ? 2.5 : 1.5 }, s);
  });
  fails.forEach(function (f) {
    if (!isNum(f.time_s)) return;
    var y = isNum(f.held_bytes) ? Y(f.held_bytes) : T + 6;
    svg('circle', { cx: X(f.time_s), cy: y, r: 5, fill: '#b3261e', stroke: '#fff' }, s);
  });
  var guide = svg('line', { x1: 0, x2: 0, y1: T, y2: H - B, stroke: '#1d2330', visibility: 'hidden' }, s);
  var hit = svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: 'transparent' }, s);
  hit.addEventListener('mousemove', function (ev) {
    var r = s.getBoundingClientRect(), x = (ev.clientX - r.left) * W / r.width, t = t0 + (x - L) / (W - L - R) * (maxT - t0);
    guide.setAttribute('x1', x); guide.setAttribute('x2', x); guide.setAttribute('visibility', 'visible');
    var lines = ['t = ' + fmtTime(t)];
    series.forEach(function (sr) { lines.push(sr.kind + ': ' + fmtBytes(valueAt(sr.points, t)) + ' (' + exact(valueAt(sr.points, t)) + ')'); });
    markers.forEach(function (m) { if (Math.abs(X(m.time_s) - x) < 4) lines.push('marker: ' + m.label); });
    fails.forEach(function (f) { if (Math.abs(X(f.time_s) - x) < 6) lines.push('failed ' + callText(f) + ' of ' + exact(f.size)); });
    showTip(ev, lines);
  });
  hit.addEventListener('mouseleave', function () { guide.setAttribute('visibility', 'hidden'); hideTip(); });
  var lg = el('div', 'legend');
  series.forEach(function (sr) {
    var item = el('span'), sw = el('span', 'sw'), peak = 0;
    sr.points.forEach(function (p) { if (p[1] > peak) peak = p[1]; });
    sw.style.background = kindColor(sr.kind);
    item.appendChild(sw);
    item.appendChild(document.createTextNode(sr.kind + ' (peak ' + fmtBytes(peak) + ')'));
    item.title = exact(peak);
    lg.appendChild(item);
  });
  if (fails.length) { var o = el('span', '', '\u25cf failed allocation'); o.style.color = '#b3261e'; lg.appendChild(o); }
  markerLegend(lg, mkinds);
  box.appendChild(lg);
}
function peaksFallback(box, i) {
  box.appendChild(el('p', 'note', 'This report has no timeline (timeline[]): the peak of each kind is shown instead.'));
  ofProc(D.peaks, i).forEach(function (pk) {
    box.appendChild(el('h3', '', 'GPU ' + pk.device + ': ' + fmtBytes(pk.bytes) + ' held at the peak' + (isNum(pk.time_s) ? ', at ' + fmtTime(pk.time_s) : '')));
    var rows = [], max = pk.bytes || 1, ks = pk.kinds || {};
    kindsOrder.forEach(function (k) { if (ks[k] && ks[k].peak_bytes > max) max = ks[k].peak_bytes; });
    rows.push(['held (peak)', bytesCell(pk.bytes, max), '']);
    rows.push(['held (end)', bytesCell(pk.held_at_end_bytes, max), '']);
    kindsOrder.forEach(function (k) {
      if (ks[k] && ks[k].peak_bytes > 0) rows.push([k + ' (own peak)', bytesCell(ks[k].peak_bytes, max), fmtTime(ks[k].peak_time_s)]);
    });
    box.appendChild(table(['what', 'bytes', 'when'], rows.map(row)));
  });
  var marks = arr((procs[i] || {}).markers);
  if (marks.length) {
    box.appendChild(el('h3', '', 'Markers'));
    limited(box, marks.map(function (m) { return row([fmtTime(m.time_s), String(m.label)]); }), ['time', 'label'], 200);
  }
}
function renderTimeline(i) {
  var box = clear($('timeline')), p = procs[i] || {}, marks = arr(p.markers), fails = failuresOf(i);
  if (!Array.isArray(D.timeline)) { peaksFallback(box, i); return; }
  var byDev = {}, devs = [];
  ofProc(D.timeline, i).forEach(function (s) {
    if (!byDev[s.device]) { byDev[s.device] = []; devs.push(s.device); }
    byDev[s.device].push({ kind: s.kind, points: arr(s.points) });
  });
  if (!devs.length) { box.appendChild(el('p', 'note', 'No memory was held.')); return; }
  devs.forEach(function (d, k) {
    var f = fails.filter(function (x) { return x.device === d; });
    chart(box, 'GPU ' + d, byDev[d], p.end_time_s, marks, f, k === 0);
  });
}

// ---- top sites at the peak
function renderPeakSites(i) {
  var box = clear($('peak-sites')), list = ofProc(D.peak_sites, i), max = 0;
  if (!list.length) { box.appendChild(el('p', 'note', 'Nothing was live at the peak.')); return; }
  list.forEach(function (r) { if (r.bytes > max) max = r.bytes; });
  var rows = list.map(function (r) {
    return row(['GPU ' + r.device, bytesCell(r.bytes, max), { cls: 'n', text: String(r.allocations) }, callText(r), r.kind, { cls: 'site', text: frameText(r.site) }]);
  });
  limited(box, rows, ['GPU', 'bytes', 'allocations', 'call', 'kind', 'call site'], 50);
}

// ---- flame graph (icicle), outermost frame on top
function flameTree(i) {
  // a node's children by name in a map with no prototype: a frame or API named __proto__ or
  // constructor is a name like any other, not Object's own machinery
  var root = { name: 'all', value: 0, children: [], index: Object.create(null) }, sites = ofProc(D.peak_sites, i), devs = {};
  sites.forEach(function (r) { devs[r.device] = 1; });
  var multi = Object.keys(devs).length > 1;
  sites.forEach(function (r) {
    arr(r.stacks).forEach(function (st) {
      var path = stackFrames(i, st.stack).concat([r.api || '?']);
      if (r.driver) path.push(r.driver);
      if (multi) path.unshift('GPU ' + r.device);
      var n = root;
      n.value += st.bytes;
      path.forEach(function (name) {
        var c = n.index[name];
        if (!c) { c = { name: name, value: 0, children: [], index: Object.create(null), parent: n }; n.index[name] = c; n.children.push(c); }
        c.value += st.bytes;
        n = c;
      });
    });
  });
  return root;
}
function depthOf(n) { var d = 0; n.children.forEach(function (c) { d = Math.max(d, depthOf(c)); }); return d + 1; }
function nameColor(name) {
  var h = 0;
  for (var k = 0; k < name.length; k++) h = (h * 31 + name.charCodeAt(k)) >>> 0;
  return 'hsl(' + (15 + h % 40) + ',' + (65 + h % 20) + '%,' + (62 + h % 14) + '%)';
}
function renderFlame(i, focus) {
  var box = clear($('flame')), root = flameTree(i);
  if (!root.value) { box.appendChild(el('p', 'note', 'No call stacks at the peak.')); return; }
  var top = focus || root, W = 1000, RH = 18, rows = depthOf(top);
  box.appendChild(el('p', 'note', 'Each box is a frame, its width the bytes live at the peak under it (outermost frame on top). Click a box to zoom.'));
  if (focus) {
    var b = el('button', '', 'Reset zoom');
    b.onclick = function () { renderFlame(i); };
    box.appendChild(b);
  }
  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + rows * RH, id: 'flame-svg' });
  function draw(n, x, w, depth) {
    if (w < 0.3) return;
    var g = svg('g', {}, s);
    svg('rect', { x: x.toFixed(2), y: depth * RH, width: Math.max(0.5, w - 0.5).toFixed(2), height: RH - 1, fill: n === root ? '#c9cfdb' : nameColor(n.name), rx: 2 }, g);
    var chars = Math.floor((w - 6) / 6.2);
    if (chars >= 3) {
      var label = n.name.length > chars ? n.name.slice(0, chars - 1) + '\u2026' : n.name;
      svg('text', { x: (x + 3).toFixed(2), y: depth * RH + 13 }, g).textContent = label;
    }
    g.addEventListener('mousemove', function (ev) {
      showTip(ev, [n.name, fmtBytes(n.value) + ' (' + exact(n.value) + '), ' + (100 * n.value / root.value).toFixed(1) + '% of the peak']);
    });
    g.addEventListener('mouseleave', hideTip);
    g.addEventListener('click', function () { hideTip(); renderFlame(i, n === root ? null : n); });
    var cx = x;
    n.children.slice().sort(function (p, q) { return q.value - p.value; }).forEach(function (c) {
      var cw = w * c.value / n.value;
      draw(c, cx, cw, depth + 1);
      cx += cw;
    });
  }
  draw(top, 0, W, 0);
  box.appendChild(s);
}

// a site reached from several callers (an allocation helper): each with its share
function callersText(r) {
  var c = r.callers || [];
  if (c.length < 2) return '';
  return ' — from ' + c.slice(0, 5).map(function (x) { return (x.site ? frameText(x.site) : '(no caller)') + ': ' + fmtBytes(x.bytes); }).join('; ') + (c.length > 5 ? '; …' : '');
}
// ---- leaks
function renderLeaks(i) {
  var box = clear($('leaks')), list = ofProc(D.leak_sites, i), max = 0;
  if (!list.length) { box.appendChild(el('p', 'note', 'Nothing was live at the end of the trace.')); return; }
  list.forEach(function (r) { if (r.bytes > max) max = r.bytes; });
  var rows = list.map(function (r) {
    var what = r.at_exit ? 'leaked' : 'live at death';
    if (r.at_exit && r.cached_bytes && r.cached_bytes >= r.bytes) what = 'kept by ' + cacheLabel(r.cache) + "'s cache (not a leak)";
    else if (r.at_exit && r.cached_bytes) what += ' (' + fmtBytes(r.cached_bytes) + ' of it kept by a caching allocator)';
    if (r.at_exit && r.library_bytes && r.library_bytes >= r.bytes) what = 'held by a CUDA library for its handles (not a leak)';
    else if (r.at_exit && r.library_bytes) what += ' (' + fmtBytes(r.library_bytes) + ' of it held by a CUDA library for its handles)';
    if (r.counted === false) what += ' (not counted: ' + r.kind + ' is not memory this process allocated)';
    return row([bytesCell(r.bytes, max), { cls: 'n', text: String(r.allocations) }, callText(r), r.kind, what, { cls: 'site', text: frameText(r.site) + callersText(r) }]);
  });
  limited(box, rows, ['bytes', 'allocations', 'call', 'kind', 'status', 'call site'], 50);
}

// ---- failed allocations and their explanations
function renderOoms(i) {
  var box = clear($('ooms')), list = failuresOf(i);
  if (!list.length) { box.appendChild(el('p', 'note', 'No allocation failed.')); return; }
  list.slice(0, 100).forEach(function (f) {
    var d = el('div', 'oom');
    d.appendChild(el('strong', '', callText(f) + ' of ' + fmtBytes(f.size) + ' failed on GPU ' + f.device + ' at ' + fmtTime(f.time_s) + (f.cause ? ' (' + f.cause + ')' : '') + (f['class'] === 'probe' ? ' — a probe, not counted' : f['class'] === 'recovered' ? ' — recovered by a retry, not counted' : '')));
    d.title = exact(f.size);
    if (f.explanation) d.appendChild(el('p', 'expl', f.explanation));
    var facts = ['error ' + f.result];
    if (isNum(f.held_bytes)) facts.push('held by this process ' + fmtBytes(f.held_bytes));
    if (isNum(f.free_bytes)) facts.push('free ' + fmtBytes(f.free_bytes) + ' of ' + fmtBytes(f.total_bytes));
    if (isNum(f.untracked_bytes)) facts.push('untracked ' + fmtBytes(f.untracked_bytes));
    d.appendChild(el('div', 'note', facts.join(', ')));
    if (f.site) d.appendChild(el('div', 'site', 'at ' + frameText(f.site)));
    var ts = arr(f.top_sites);
    if (ts.length) {
      var max = 0;
      ts.forEach(function (r) { if (r.bytes > max) max = r.bytes; });
      d.appendChild(table(['bytes', 'allocations', 'call', 'kind', 'holding site'], ts.map(function (r) {
        return row([bytesCell(r.bytes, max), { cls: 'n', text: String(r.allocations) }, callText(r), r.kind, { cls: 'site', text: frameText(r.site) }]);
      })));
    }
    box.appendChild(d);
  });
  if (list.length > 100) box.appendChild(el('p', 'note', (list.length - 100) + ' more failures not shown'));
}

// ---- growth
function renderGrowth(i) {
  var sec = $('growth-sec'), box = clear($('growth'));
  var all = Array.isArray(D.growth_sites) ? D.growth_sites : D.growth;
  sec.hidden = !Array.isArray(all);
  if (sec.hidden) return;
  var list = ofProc(all, i), max = 0;
  if (!list.length) { box.appendChild(el('p', 'note', 'No call site grew.')); return; }
  list.forEach(function (r) { if (r.growth_bytes > max) max = r.growth_bytes; });
  var rows = list.map(function (r) {
    var over = r.basis === 'markers' ? r.samples + ' markers (' + r.first_label + ' \u2192 ' + r.last_label + ')' : r.samples + ' ' + r.basis;
    var rises = r.stacks === undefined ? r.rises + ' / ' + r.falls : (r.min_rises === r.max_rises ? '' + r.max_rises : r.min_rises + '\u2013' + r.max_rises) + (r.stacks.length > 1 ? ' (' + r.stacks.length + ' stacks)' : '');
    return row([bytesCell(r.growth_bytes, max), { cls: 'n', text: fmtBytes(r.first_bytes), title: exact(r.first_bytes) },
      { cls: 'n', text: fmtBytes(r.last_bytes), title: exact(r.last_bytes) }, { cls: 'n', text: rises }, over, callText(r), { cls: 'site', text: frameText(r.site) }]);
  });
  limited(box, rows, ['growth', 'first', 'last', 'rises', 'over', 'call', 'call site'], 50);
}

// ---- markers: labels in one row above the chart, never overlapping: one that would overlap the
// label before it is left out (its line keeps a tooltip), so a run of close marks (automatic
// steps) shows every few. Only the first chart of a section (the first device) has labels; the
// charts below it repeat the lines, not the words. A mark, a range's start and its end have
// their own colours.
var MARK_COLORS = { mark: '#5a6275', push: '#2e8b57', pop: '#c0602e' };
var MARK_NAMES = { mark: 'marker', push: 'range start', pop: 'range end' };
var MARK_ROWS = 1, MARK_ROW_H = 13, MARK_TOP = 8 + MARK_ROWS * MARK_ROW_H;
function markKind(m) { return m.range === 'push' ? 'push' : m.range === 'pop' ? 'pop' : 'mark'; }
function drawMarkers(s, markers, X, xMin, xMax, top, bottom, labels) {
  var rowEnd = [], kinds = {};
  markers.filter(function (m) { return isNum(m.time_s); }).sort(function (a, b) { return a.time_s - b.time_s; }).forEach(function (m) {
    var x = X(m.time_s);
    if (x < xMin - 0.5 || x > xMax + 0.5) return;
    var k = markKind(m), col = MARK_COLORS[k];
    kinds[k] = 1;
    var g = svg('g', { 'class': 'marker', 'data-kind': k }, s);
    svg('title', {}, g).textContent = MARK_NAMES[k] + ' at ' + fmtTime(m.time_s) + ': ' + m.label;
    svg('line', { x1: x, x2: x, y1: top, y2: bottom, stroke: col, 'stroke-dasharray': k === 'mark' ? '3,3' : '6,2' }, g);
    svg('line', { x1: x, x2: x, y1: labels ? top - MARK_TOP + 8 : top, y2: bottom, stroke: 'transparent', 'stroke-width': 7 }, g);
    if (!labels) { g.setAttribute('data-label', 'above'); return; }
    var label = String(m.label);
    if (label.length > 28) label = label.slice(0, 27) + '\u2026';
    var t = svg('text', { x: x + 3, y: top - 4, 'class': 'mlabel' }, g);
    t.style.fill = col; // the style, not the fill attribute, which page.css's svg text rule overrides
    t.textContent = label;
    var w = t.getComputedTextLength ? t.getComputedTextLength() : 0;
    if (!w) w = label.length * 6.2;
    var a = x + 3, anchor = 'start';
    if (a + w > xMax) { a = x - 3 - w; anchor = 'end'; }
    var r = 0;
    while (r < MARK_ROWS && rowEnd[r] !== undefined && rowEnd[r] > a) r++;
    if (r === MARK_ROWS || a < 0) { g.removeChild(t); g.setAttribute('data-label', 'hidden'); return; }
    rowEnd[r] = a + w + 6;
    t.setAttribute('x', (anchor === 'end' ? x - 3 : x + 3).toFixed(1));
    t.setAttribute('text-anchor', anchor);
    t.setAttribute('y', top - 4 - r * MARK_ROW_H);
    t.setAttribute('data-row', r);
    t.setAttribute('data-x0', a.toFixed(1));
    t.setAttribute('data-x1', (a + w).toFixed(1));
  });
  return kinds;
}
function markerLegend(lg, kinds) {
  Object.keys(MARK_COLORS).forEach(function (k) {
    if (!kinds[k]) return;
    var item = el('span'), sw = el('span', 'sw');
    sw.style.background = MARK_COLORS[k];
    item.appendChild(sw);
    item.appendChild(document.createTextNode(MARK_NAMES[k]));
    lg.appendChild(item);
  });
}

// ---- PyTorch tensors: live blocks over time (as memory_viz), the categories, each OOM's cache
function siteLines(i, site) {
  if (!site) return ['[no site]'];
  var out = [String(site.site)];
  arr(site.callers).forEach(function (c) { out.push('  called from ' + c); });
  if (site.category) out.push('category: ' + site.category);
  var fr = stackFrames(i, site.stack);
  if (fr.length && stacks[i + ':' + site.stack]) { out.push('stack:'); fr.slice(0, 24).forEach(function (f) { out.push('  ' + f); }); }
  return out;
}
// a site's hue; its blocks in lightnesses of it, so neighbours stay apart
function siteColor(k, b) { return 'hsl(' + ((k * 47) % 360) + ',55%,' + (45 + (b * 11) % 30) + '%)'; }
var BAND_COLORS = { other: '#b7bcc8', cache: '#e6e9ef', outside: '#6b7080' };
var BAND_NAMES = { other: 'other tensors (not listed)', cache: "cache's free memory (reserved \u2212 allocated)", outside: 'not PyTorch (device memory outside the cache)' };
function tensorChart(box, i, dv, blocks, sites, tl, markers, labels) {
  var W = 1000, H = 300, L = 70, R = 12, T = labels ? MARK_TOP + 6 : 22, B = 28;
  var pts = arr(dv.points), full0 = Infinity, full1 = -Infinity;
  pts.forEach(function (p) { full0 = Math.min(full0, p[0]); full1 = Math.max(full1, p[0]); });
  blocks.forEach(function (b) { full0 = Math.min(full0, b[0]); full1 = Math.max(full1, isNum(b[1]) ? b[1] : b[0]); });
  var pe = (procs[i] || {}).end_time_s;
  if (isNum(pe) && pe > full1) full1 = pe;
  if (!isFinite(full0)) return;
  if (full1 <= full0) full1 = full0 + 1e-3;
  box.appendChild(el('h3', '', 'GPU ' + dv.device + ': live tensors, the ' + blocks.length + ' largest of ' + (tl.blocks_all || blocks.length) + ' blocks as bands (allocation order, bottom up), the rest as one band'));
  box.appendChild(el('p', 'note', 'Hover a band for its size, site and stack. Drag to zoom to a time range, the wheel zooms around the pointer, double-click or Reset shows everything.'));
  var reset = el('button', '', 'Reset zoom');
  box.appendChild(reset);
  var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', id: 'tensor-svg-' + dv.device, 'class': 'tensor-svg' });
  box.appendChild(s);
  var lives = blocks.map(function (b, k) {
    var f = isNum(b[1]) ? Math.max(b[1], b[0] + 1e-7) : null;
    return { a: b[0], f: f, bytes: b[2], site: sites[b[3]], si: b[3], k: k };
  });
  function bandsAt(t) {
    var lo = 0, hi = pts.length - 1, v = null;
    while (lo <= hi) { var mid = (lo + hi) >> 1; if (pts[mid][0] <= t) { v = pts[mid]; lo = mid + 1; } else hi = mid - 1; }
    return v ? { other: v[2], cache: v[3], outside: v[4] } : { other: 0, cache: 0, outside: 0 };
  }
  function draw(t0, t1) {
    clear(s);
    s.setAttribute('data-t0', t0); s.setAttribute('data-t1', t1);
    var X = function (t) { return L + (W - L - R) * (t - t0) / (t1 - t0); };
    var times = [t0, t1];
    pts.forEach(function (p) { if (p[0] > t0 && p[0] < t1) times.push(p[0]); });
    lives.forEach(function (l) { if (l.a > t0 && l.a < t1) times.push(l.a); if (l.f !== null && l.f > t0 && l.f < t1) times.push(l.f); });
    times.sort(function (a, b) { return a - b; });
    times = times.filter(function (t, k) { return k === 0 || t !== times[k - 1]; });
    var iv = [], maxB = 1;
    for (var k = 0; k + 1 < times.length; k++) {
      var t = times[k], y = 0, off = {};
      lives.forEach(function (l) { if (l.a <= t && (l.f === null || l.f > t)) { off[l.k] = y; y += l.bytes; } });
      var bd = bandsAt(t), tops = { listed: y };
      ['other', 'cache', 'outside'].forEach(function (n) { tops[n] = y; y += bd[n] || 0; });
      if (y > maxB) maxB = y;
      iv.push({ x0: X(t), x1: X(times[k + 1]), off: off, tops: tops, bd: bd });
    }
    maxB *= 1.05;
    var Y = function (b) { return T + (H - T - B) * (1 - b / maxB); };
    niceTicks(maxB / 1.05, 4, true).forEach(function (b) {
      svg('line', { x1: L, x2: W - R, y1: Y(b), y2: Y(b), 'class': 'grid' }, s);
      svg('text', { x: L - 6, y: Y(b) + 4, 'text-anchor': 'end' }, s).textContent = fmtBytes(Math.round(b));
    });
    niceTicks(t1 - t0, 5).forEach(function (d, j) {
      svg('text', { x: X(t0 + d), y: H - 8, 'text-anchor': d > (t1 - t0) * 0.95 ? 'end' : j ? 'middle' : 'start' }, s).textContent = fmtTime(t0 + d);
    });
    function poly(get, attrs, lines) {
      var top = [], bot = [];
      iv.forEach(function (v) {
        var r = get(v);
        if (!r || r[1] <= 0) return;
        top.push(v.x0.toFixed(1) + ',' + Y(r[0] + r[1]).toFixed(1), v.x1.toFixed(1) + ',' + Y(r[0] + r[1]).toFixed(1));
        bot.unshift(v.x1.toFixed(1) + ',' + Y(r[0]).toFixed(1), v.x0.toFixed(1) + ',' + Y(r[0]).toFixed(1));
      });
      if (!top.length) return null;
      attrs.points = top.concat(bot).join(' ');
      var p = svg('polygon', attrs, s);
      svg('title', {}, p).textContent = lines.join('\n');
      p.addEventListener('mousemove', function (ev) { showTip(ev, lines); });
      p.addEventListener('mouseleave', hideTip);
      return p;
    }
    lives.forEach(function (l) {
      var lines = [fmtBytes(l.bytes) + ' (' + exact(l.bytes) + '), from ' + fmtTime(l.a) + (l.f === null ? ', live at the end' : ' to ' + fmtTime(l.f))].concat(siteLines(i, l.site));
      poly(function (v) { return has(v.off, l.k) ? [v.off[l.k], l.bytes] : null; }, { 'class': 'blk', 'data-block': l.k, fill: siteColor(l.si, l.k), stroke: '#fff', 'stroke-width': 0.3 }, lines);
    });
    ['other', 'cache', 'outside'].forEach(function (n) {
      poly(function (v) { return [v.tops[n], v.bd[n] || 0]; }, { 'class': 'band', 'data-band': n, fill: BAND_COLORS[n] }, [BAND_NAMES[n]]);
    });
    svg('line', { x1: L, x2: L, y1: T, y2: H - B, 'class': 'axis' }, s);
    svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, 'class': 'axis' }, s);
    kinds = drawMarkers(s, markers, X, L, W - R, T, H - B, labels);
    sel = svg('rect', { x: 0, y: T, width: 0, height: H - T - B, fill: 'rgba(74,123,208,0.2)', visibility: 'hidden' }, s);
  }
  var view = [full0, full1], kinds = {}, sel = null, drag = null;
  function tAt(ev) { var r = s.getBoundingClientRect(), x = (ev.clientX - r.left) * W / r.width; return view[0] + (Math.min(Math.max(x, L), W - R) - L) / (W - L - R) * (view[1] - view[0]); }
  function zoom(a, b) { a = Math.max(full0, a); b = Math.min(full1, b); if (b - a > 1e-7) { view = [a, b]; draw(a, b); } }
  s.addEventListener('mousedown', function (ev) { drag = tAt(ev); ev.preventDefault(); });
  s.addEventListener('mousemove', function (ev) {
    if (drag === null || !sel) return;
    var X = function (t) { return L + (W - L - R) * (t - view[0]) / (view[1] - view[0]); }, a = X(Math.min(drag, tAt(ev))), b = X(Math.max(drag, tAt(ev)));
    sel.setAttribute('x', a); sel.setAttribute('width', b - a); sel.setAttribute('visibility', 'visible');
  });
  window.addEventListener('mouseup', function (ev) {
    if (drag === null) return;
    var a = drag, b = tAt(ev);
    drag = null;
    if (Math.abs(b - a) > (view[1] - view[0]) / 200) zoom(Math.min(a, b), Math.max(a, b)); else if (sel) sel.setAttribute('visibility', 'hidden');
  });
  s.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var c = tAt(ev), f = ev.deltaY < 0 ? 0.8 : 1.25;
    zoom(c - (c - view[0]) * f, c + (view[1] - c) * f);
  }, { passive: false });
  s.addEventListener('dblclick', function () { view = [full0, full1]; draw(full0, full1); });
  reset.onclick = function () { view = [full0, full1]; draw(full0, full1); };
  draw(full0, full1);
  var lg = el('div', 'legend');
  ['other', 'cache', 'outside'].forEach(function (n) {
    var item = el('span'), sw = el('span', 'sw');
    sw.style.background = BAND_COLORS[n];
    item.appendChild(sw);
    item.appendChild(document.createTextNode(BAND_NAMES[n]));
    lg.appendChild(item);
  });
  markerLegend(lg, kinds);
  box.appendChild(lg);
}
function renderCategories(t) {
  var box = clear($('tensor-cats')), cats = arr(t.categories).filter(function (c) { return c.bytes_at_peak > 0; }), sum = 0;
  cats.forEach(function (c) { sum += c.bytes_at_peak; });
  if (!sum) { box.appendChild(el('p', 'note', 'No tensor was live at the peak.')); return; }
  var W = 1000, s = svg('svg', { viewBox: '0 0 ' + W + ' 28', id: 'cat-svg' }), x = 0, lg = el('div', 'legend');
  cats.forEach(function (c, k) {
    var w = W * c.bytes_at_peak / sum, col = COLORS[k % COLORS.length], text = c.category + ': ' + fmtBytes(c.bytes_at_peak) + ' (' + (100 * c.bytes_at_peak / sum).toFixed(1) + '%)';
    var r = svg('rect', { x: x.toFixed(2), y: 2, width: Math.max(0.5, w).toFixed(2), height: 24, fill: col, 'class': 'cat', 'data-category': c.category, 'data-bytes': c.bytes_at_peak }, s);
    svg('title', {}, r).textContent = text + ', ' + exact(c.bytes_at_peak);
    if (w > 90) svg('text', { x: (x + 4).toFixed(2), y: 18 }, s).textContent = c.category;
    x += w;
    var item = el('span'), sw = el('span', 'sw');
    sw.style.background = col;
    item.appendChild(sw);
    item.appendChild(document.createTextNode(text));
    item.title = exact(c.bytes_at_peak);
    lg.appendChild(item);
  });
  box.appendChild(el('p', 'note', 'Bytes of live tensors at the peak by category (' + fmtBytes(sum) + ' in all; rules in docs/report-json.md, categories[]).'));
  box.appendChild(s);
  box.appendChild(lg);
}
var PIECE_COLORS = { allocated: '#4a7bd0', pending: '#e8a33d', free: '#ffffff' };
function renderTensorOoms(i, t, sites) {
  var box = clear($('tensor-ooms')), list = arr(t.ooms);
  if (!list.length) return;
  box.appendChild(el('h3', '', 'The cache at each out-of-memory error'));
  list.slice(0, 20).forEach(function (o, n) {
    var d = el('div', 'oom');
    d.appendChild(el('strong', '', 'GPU ' + o.device + ' at ' + fmtTime(o.time_s) + ': asked for ' + fmtBytes(o.requested) + ' (' + fmtBytes(o.rounded) + ' rounded) at ' + o.site + ' (' + o.cause + ')'));
    d.appendChild(el('div', 'note', fmtBytes(o.allocated) + ' allocated, ' + fmtBytes(o.reserved_unallocated) + ' reserved but unallocated in ' + o.free_blocks + ' free blocks, the largest ' + fmtBytes(o.largest_free) + '; CUDA said ' + fmtBytes(o.device_free) + ' free'));
    arr(o.would_help).forEach(function (h) { d.appendChild(el('div', 'expl', 'would help: ' + h)); });
    var segs = arr(o.segments), maxS = o.rounded || 1;
    segs.forEach(function (g) { if (g.size > maxS) maxS = g.size; });
    var W = 1000, L = 150, RH = segs.length > 32 ? 8 : 14, H = (segs.length + 1) * (RH + 2) + 4;
    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, 'class': 'oom-svg', id: 'oom-svg-' + n }), sc = (W - L - 4) / maxS;
    var req = svg('rect', { x: L, y: 2, width: Math.max(1, o.rounded * sc).toFixed(2), height: RH, fill: '#b3261e', 'class': 'request' }, s);
    svg('title', {}, req).textContent = 'the request: ' + exact(o.rounded);
    svg('text', { x: L - 6, y: 2 + RH - 3, 'text-anchor': 'end' }, s).textContent = 'request ' + fmtBytes(o.rounded);
    segs.forEach(function (g, k) {
      var y = 2 + (k + 1) * (RH + 2), gr = svg('g', {}, s);
      var r = svg('rect', { x: L, y: y, width: Math.max(1, g.size * sc).toFixed(2), height: RH, fill: '#c9cfdb', stroke: '#9aa1b0', 'stroke-width': 0.5, 'class': 'seg' }, gr);
      svg('title', {}, r).textContent = 'segment ' + g.address + ' (' + g.pool + ' pool, stream ' + g.stream + '): ' + exact(g.size) + '; allocated ' + fmtBytes(g.allocated) + ', free ' + fmtBytes(g.free) + (g.pending ? ', freed waiting for streams ' + fmtBytes(g.pending) : '') + (g.blocks_all > arr(g.blocks).length ? '; ' + (g.blocks_all - arr(g.blocks).length) + ' blocks not listed' : '');
      if (RH >= 12) svg('text', { x: L - 6, y: y + RH - 3, 'text-anchor': 'end' }, gr).textContent = fmtBytes(g.size);
      arr(g.blocks).forEach(function (b) {
        var p = svg('rect', { x: (L + b[0] * sc).toFixed(2), y: y + 1, width: Math.max(0.5, b[1] * sc - 0.5).toFixed(2), height: RH - 2, fill: PIECE_COLORS[b[2]] || '#fff', stroke: b[2] === 'free' ? '#5aa05a' : 'none', 'stroke-width': 0.8, 'class': 'piece', 'data-state': b[2] }, gr);
        svg('title', {}, p).textContent = [b[2] + ' block of ' + exact(b[1]) + ' at offset ' + b[0]].concat(b[3] === null || b[3] === undefined ? [] : siteLines(i, sites[b[3]])).join('\n');
      });
    });
    d.appendChild(s);
    var lg = el('div', 'legend');
    [['request', '#b3261e'], ['allocated', PIECE_COLORS.allocated], ['freed, waiting for its streams', PIECE_COLORS.pending], ['free (outlined)', '#dff0df'], ['segment part not listed', '#c9cfdb']].forEach(function (e) {
      var item = el('span'), sw = el('span', 'sw');
      sw.style.background = e[1];
      item.appendChild(sw);
      item.appendChild(document.createTextNode(e[0]));
      lg.appendChild(item);
    });
    d.appendChild(lg);
    if (o.segments_all > segs.length) d.appendChild(el('p', 'note', 'The ' + segs.length + ' largest of ' + o.segments_all + ' segments.'));
    box.appendChild(d);
  });
  if (list.length > 20) box.appendChild(el('p', 'note', (list.length - 20) + ' more out-of-memory errors not shown'));
}
function renderTensors(i) {
  var sec = $('tensors-sec'), t = (procs[i] || {}).tensors;
  sec.hidden = !t;
  if (!t) return;
  var tl = t.timeline || {}, sites = arr(t.block_sites), box = clear($('tensor-timeline'));
  arr(tl.devices).forEach(function (dv, k) {
    tensorChart(box, i, dv, arr(tl.blocks).filter(function (b) { return b[4] === dv.device; }), sites, tl, arr((procs[i] || {}).markers), k === 0);
  });
  if (!box.firstChild) box.appendChild(el('p', 'note', 'No tensor was allocated.'));
  renderCategories(t);
  renderTensorOoms(i, t, sites);
}

function renderProcess() {
  var trs = document.querySelectorAll('#procs tr.click');
  for (var k = 0; k < trs.length; k++) trs[k].className = 'click' + (k === current ? ' sel' : '');
  renderTimeline(current);
  renderPeakSites(current);
  renderFlame(current);
  renderLeaks(current);
  renderOoms(current);
  renderGrowth(current);
  renderTensors(current);
}

try {
  var first = procs[0] || {};
  document.title = 'gpumemtrace: ' + (arr(first.argv).join(' ') || first.file || 'report');
  $('subtitle').textContent = procs.length === 1 ? procName(0) + ' (' + (first.file || '') + ')' : procs.length + ' processes';
  current = defaultProcess();
  renderAnswer();
  renderSummary();
  renderProcesses();
  renderProcess();
  document.body.setAttribute('data-rendered', '1');
} catch (e) {
  $('warnings').appendChild(el('div', 'warn', 'The report could not be drawn: ' + e));
  document.body.setAttribute('data-error', String(e));
}
})();
