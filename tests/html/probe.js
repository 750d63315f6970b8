'use strict';
// tests/html's probe: test_html.py inserts this script after the page's own (a copy of the page,
// never the report itself) and reads what it found from the element pre#gmt-probe in Chromium's
// --dump-dom. It measures and uses the page as a reader would, independently of the positions the
// page's script wrote into its own attributes:
// - page.css as the browser parsed it (every rule and declaration kept);
// - every chart's marker labels with the boxes the browser laid out (getBoundingClientRect);
// - the memory charts' hover read-out at the held line's peak, and at markers whose labels were
//   thinned out;
// - every handler the page installs (hover, drag, wheel, double-click, reset, flame clicks, the
//   process list), so an exception in one shows as the page's error mark;
// - and last the error mark itself: an exception thrown in a handler must set <body data-error>
//   and show a warning line.
(function () {
  var out = { error_at_load: document.body.getAttribute('data-error'), charts: [], hovers: [], hovers_hidden: [], events: 0 };
  function each(list, f) { Array.prototype.forEach.call(list, f); }
  function box(e) {
    var r = e.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom];
  }
  function section(e) {
    for (var p = e.parentNode; p && p !== document.body; p = p.parentNode)
      if (p.id === 'timeline' || p.id === 'tensor-timeline') return p.id;
    return '';
  }
  function fire(target, type, opts) {
    var init = { bubbles: true, cancelable: true, view: window };
    for (var k in opts) init[k] = opts[k];
    var ev = type === 'wheel' ? new WheelEvent(type, init) : new MouseEvent(type, init);
    target.dispatchEvent(ev);
    out.events++;
  }
  // a point of the chart's own coordinates (its viewBox) on the screen
  function screenAt(s, x, y) {
    var r = s.getBoundingClientRect(), vb = s.viewBox.baseVal;
    return { clientX: r.left + x * r.width / vb.width, clientY: r.top + y * r.height / vb.height };
  }

  // page.css as Chromium read it: every rule kept, every declaration understood (a misspelt
  // property or a value the browser rejects is dropped without a word)
  out.css_dropped = [];
  var style = document.querySelector('style'), sheet = style && style.sheet;
  var src = style ? style.textContent.replace(/\/\*[\s\S]*?\*\//g, '') : '', rules = [], m, re = /([^{}]+)\{([^{}]*)\}/g;
  while ((m = re.exec(src)) !== null) rules.push({ sel: m[1].trim(), decls: m[2] });
  out.css_rules = [rules.length, sheet ? sheet.cssRules.length : -1];
  rules.forEach(function (r, k) {
    var got = sheet && sheet.cssRules[k];
    if (!got || !got.style) { out.css_dropped.push(r.sel); return; }
    r.decls.split(';').forEach(function (d) {
      var c = d.indexOf(':');
      if (c < 0) return;
      var prop = d.slice(0, c).trim();
      if (prop && !got.style.getPropertyValue(prop)) out.css_dropped.push(r.sel + ' { ' + d.trim() + ' }');
    });
  });

  // marker labels, as laid out
  each(document.querySelectorAll('svg'), function (s) {
    var marks = s.querySelectorAll('g.marker');
    if (!marks.length) return;
    var labels = [];
    each(s.querySelectorAll('text.mlabel'), function (t) {
      var line = t.parentNode.querySelector('line');
      labels.push({ text: t.textContent, box: box(t), fill: getComputedStyle(t).fill, line: line ? getComputedStyle(line).stroke : '' });
    });
    out.charts.push({ id: s.id, section: section(s), svg: box(s), markers: marks.length, labels: labels });
  });

  // the memory charts' read-out where the held line is highest (a step line: M x y, then H x V y)
  each(document.querySelectorAll('#timeline svg'), function (s) {
    var held = null;
    each(s.querySelectorAll('path'), function (p) { if (p.getAttribute('stroke-width') === '2.5') held = p; });
    var hit = null;
    each(s.querySelectorAll('rect'), function (r) { if (r.getAttribute('fill') === 'transparent') hit = r; });
    if (!held || !hit) return;
    var tok = held.getAttribute('d').match(/[MHV]|-?[\d.]+/g), x = 0, y = 0, segs = [], k = 0;
    while (k < tok.length) {
      var c = tok[k++];
      if (c === 'M') { x = Number(tok[k++]); y = Number(tok[k++]); }
      else if (c === 'H') { var nx = Number(tok[k++]); segs.push({ x0: x, x1: nx, y: y }); x = nx; }
      else if (c === 'V') y = Number(tok[k++]);
    }
    var best = null;
    segs.forEach(function (g) {
      if (!best || g.y < best.y - 0.05 || (Math.abs(g.y - best.y) <= 0.05 && g.x1 - g.x0 > best.x1 - best.x0)) best = g;
    });
    if (!best) return;
    var at = screenAt(s, (best.x0 + best.x1) / 2, best.y);
    fire(hit, 'mousemove', at);
    var tip = document.getElementById('tip');
    out.hovers.push({ section: 'timeline', width: best.x1 - best.x0, tip: tip.hidden ? '' : tip.textContent });
    fire(hit, 'mouseleave', at);
    // a marker whose label was thinned out: hovering its line names it
    var hidden = s.querySelectorAll('g.marker[data-label="hidden"]');
    each(hidden, function (g, j) {
      if (j % Math.ceil(hidden.length / 5)) return;
      var line = g.querySelector('line'), title = g.querySelector('title');
      var pt = screenAt(s, Number(line.getAttribute('x1')), (Number(line.getAttribute('y1')) + Number(line.getAttribute('y2'))) / 2);
      fire(hit, 'mousemove', pt);
      out.hovers_hidden.push({ title: title ? title.textContent : '', tip: tip.hidden ? '' : tip.textContent });
      fire(hit, 'mouseleave', pt);
    });
  });

  // every handler, as a reader would use them
  each(document.querySelectorAll('svg.tensor-svg'), function (s) {
    var a = screenAt(s, 300, 150), b = screenAt(s, 600, 150);
    each(s.querySelectorAll('polygon'), function (p, k) { if (k < 20) { fire(p, 'mousemove', a); fire(p, 'mouseleave', a); } });
    fire(s, 'mousedown', a); fire(s, 'mousemove', b); fire(window, 'mouseup', b);
    fire(s, 'wheel', { clientX: a.clientX, clientY: a.clientY, deltaY: -120 });
    fire(s, 'wheel', { clientX: b.clientX, clientY: b.clientY, deltaY: 120 });
    fire(s, 'dblclick', a);
  });
  each(document.querySelectorAll('#tensor-timeline button'), function (b) { b.click(); out.events++; });
  var flame = document.querySelectorAll('#flame-svg g');
  if (flame.length > 1) {
    fire(flame[1], 'mousemove', { clientX: 10, clientY: 10 });
    fire(flame[1], 'click', {});
    each(document.querySelectorAll('#flame button'), function (b) { b.click(); out.events++; });
  }
  var sel = document.getElementById('proc');
  if (sel && sel.options.length > 1) {
    var was = sel.value;
    sel.value = sel.options[sel.options.length - 1].value;
    sel.dispatchEvent(new Event('change')); out.events++;
    sel.value = was;
    sel.dispatchEvent(new Event('change')); out.events++;
  }
  out.error_after_use = document.body.getAttribute('data-error');

  // the error mark: an exception in a handler
  var probe = document.createElement('span');
  probe.addEventListener('click', function () { throw new Error('gmt-probe: thrown in a handler'); });
  document.body.appendChild(probe);
  probe.click();
  out.error_after_throw = document.body.getAttribute('data-error');
  var w = document.getElementById('warnings');
  out.warnings = w ? w.textContent : '';

  var pre = document.createElement('pre');
  pre.id = 'gmt-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
