#!/usr/bin/env python3
"""`gpumemtrace report --format html` in headless Chromium (meson suite 'html').

1. A trace whose function names, files, marker label and command line are HTML is rendered;
   the page's data element must hold exactly the JSON report (escaped so it cannot end the
   element), the page must reference nothing on the network, and in Chromium the script must
   run to the end, show the summary's numbers, show every hostile name as text and create no
   element from one.
2. A report document with timeline[], oom[] and growth[] (hand-made, docs/report-json.md) must
   draw the timeline chart with its marker and failure, the OOM explanation, the growth table and
   the flame graph.
3. Traces with PyTorch block lines (the hostile tensor trace of hostile.py and the H200 fixtures
   gpt2, frag and growth): the tensor timeline has one band per listed block, each band's tooltip
   names its site (hostile sites stay text), the OOM view has a bar per segment of the JSON with
   its blocks, the category bar a piece per category, and marker labels that do not overlap in
   the laid-out page (the widths Chromium measured) and kinds in distinct colours.
4. Every page is also used and measured in Chromium by probe.js (inserted into a copy of it): page.css
   is kept whole by the browser's parser (every rule, every declaration), the marker labels' boxes as laid out do not overlap and stay inside their chart, one chart of a
   section has labels (not one per device), the memory chart's hover read-out at the held line's
   peak shows the peak and at a marker whose label was thinned out names the marker, every handler runs without setting the page's error mark, and an exception
   in a handler does set it (<body data-error>, a warning line).
5. A directory with an empty trace file (lost: lost_traces[]) whose name is HTML beside a whole
   trace: a warning line names it and why, as text; no element is made from the name.
Screenshots (hostile.png, analyses.png, tensors-*.png) and pages stay in the build directory. Without a
chromium the test is skipped (exit 77); scripts/setup installs Debian's chromium.
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
import hostile  # noqa: E402

failures = 0


def check(cond, what, detail=""):
    global failures
    if cond:
        print("ok: %s" % what)
    else:
        failures += 1
        print("FAIL: %s" % what)
        if detail:
            print(str(detail).rstrip("\n"))


DATA_RE = re.compile(r'<script type="application/json" id="gmt-data">(.*?)</script>', re.S)


def check_file(path, doc):
    """The page as written: data escaped, nothing fetched, a small template."""
    with open(path, encoding="utf-8") as f:
        page = f.read()
    m = DATA_RE.search(page)
    check(m is not None, "the page has its data element")
    if not m:
        return
    data = m.group(1)
    check(not re.search(r"[<>&\u2028\u2029]", data),
          "the data holds no <, >, & or U+2028/2029 (they are \\u escapes)")
    check(json.loads(data) == doc, "the data element is exactly the JSON report")
    check(page.count("</script") == 2, "only the two script elements end in the page",
          page.count("</script"))
    template = page[:m.start()] + page[m.end():]
    refs = re.findall(r"(?:\bsrc\s*=|\bhref\s*=|url\(|@import|https?://)", template)
    check(not refs, "the template references nothing outside the page", refs)
    sinks = re.findall(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(",
                       template)
    check(not sinks, "the page's script builds no markup from strings", sinks)
    check(len(template.encode()) < 56 * 1024, "the template is small (%d bytes)" %
          len(template.encode()))


def render(args, chromium, page, name):
    """DOM and screenshot of @p page; returns the parsed DOM or None."""
    rc, out, err = browser.dump_dom(chromium, page)
    check(rc == 0 and "<body" in out, "%s: chromium dumps the DOM" % name, err[-2000:])
    with open(os.path.join(args.outdir, name + ".dom.html"), "w", encoding="utf-8") as f:
        f.write(out)
    png = os.path.join(args.outdir, name + ".png")
    if os.path.exists(png):
        os.unlink(png)
    rc, _, err = browser.screenshot(chromium, page, png)
    check(rc == 0 and os.path.exists(png), "%s: screenshot %s" % (name, png), err[-2000:])
    if os.path.exists(png):
        st = browser.png_stats(png)
        check(st["width"] == 1280 and st["height"] == 2000 and st["variance"] > 50 and
              st["colors"] > 20 and st["inked"] > 0.02,
              "%s: the screenshot is not blank" % name, st)
    return browser.Dom(out) if "<body" in out else None


PROBE_JS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.js")
PROBE_RE = re.compile(r'<pre id="gmt-probe">(.*?)</pre>', re.S)


def overlap(a, b):
    """Boxes [left, top, right, bottom] that share more than a hair of area."""
    eps = 0.01
    return a[0] < b[2] - eps and b[0] < a[2] - eps and a[1] < b[3] - eps and b[1] < a[3] - eps


def held_peaks(doc, proc=0):
    """The held line's highest value per device chart, in the page's chart order."""
    peaks = {}
    for s in doc.get("timeline") or []:
        if s.get("process", 0) == proc and s["kind"] == "held":
            peaks[s["device"]] = max([p[1] for p in s["points"]] or [0])
    order = []
    for s in doc.get("timeline") or []:
        if s.get("process", 0) == proc and s["device"] not in order:
            order.append(s["device"])
    return [(d, peaks[d]) for d in order if d in peaks]


def probe(args, chromium, page, name, doc):
    """Runs probe.js in a copy of @p page (see the module's item 4); returns its findings."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(PROBE_JS, encoding="utf-8") as f:
        js = f.read()
    cut = text.rindex("</body>")
    copy = os.path.join(args.outdir, name + ".probe.html")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text[:cut] + "<script>\n" + js + "</script>\n" + text[cut:])
    rc, out, err = browser.dump_dom(chromium, copy)
    m = PROBE_RE.search(out)
    check(rc == 0 and m, "%s: the probe ran in Chromium" % name, err[-2000:])
    if not m:
        return None
    res = json.loads(html.unescape(m.group(1)))
    check(not res["error_at_load"] and not res["error_after_use"] and res["events"] > 0,
          "%s: no script error while drawing or in the handlers (%d events)" %
          (name, res["events"]), (res["error_at_load"], res["error_after_use"]))
    thrown = "gmt-probe: thrown in a handler"
    check(thrown in (res["error_after_throw"] or "") and thrown in res["warnings"],
          "%s: an exception in a handler marks the page (body data-error) and shows a line" %
          name, (res["error_after_throw"], res["warnings"][-300:]))
    check(res["css_rules"][0] > 20 and res["css_rules"][0] == res["css_rules"][1] and
          not res["css_dropped"],
          "%s: Chromium keeps every rule (%d of %d) and declaration of page.css" %
          (name, res["css_rules"][1], res["css_rules"][0]), res["css_dropped"])
    labelled = {}
    for c in res["charts"]:
        labels = c["labels"]
        bad = [(a["text"], b["text"]) for k, a in enumerate(labels) for b in labels[k + 1:]
               if overlap(a["box"], b["box"])]
        check(not bad, "%s: chart %s: its %d marker labels do not overlap as laid out "
              "(%d markers)" % (name, c["id"] or c["section"], len(labels), c["markers"]),
              bad[:5])
        sx0, sx1 = c["svg"][0], c["svg"][2]
        outside = [a["text"] for a in labels if a["box"][0] < sx0 - 0.5 or a["box"][2] > sx1 + 0.5]
        check(not outside, "%s: chart %s: every marker label lies within the chart" %
              (name, c["id"] or c["section"]), outside[:5])
        unlike = [(a["text"], a["fill"], a["line"]) for a in labels if a["fill"] != a["line"]]
        check(not unlike, "%s: chart %s: each marker label is drawn in its line's colour" %
              (name, c["id"] or c["section"]), unlike[:3])
        labelled.setdefault(c["section"], []).append(len(labels))
    for sec, counts in labelled.items():
        check(sum(1 for n in counts if n) <= 1,
              "%s: %s: marker labels on one chart, not repeated per device (%s)" %
              (name, sec, counts))
    peaks = held_peaks(doc)
    check(len(res["hovers"]) == len(peaks), "%s: a hover read-out per memory chart (%d, %d)" %
          (name, len(res["hovers"]), len(peaks)))
    for (dev, peak), h in zip(peaks, res["hovers"]):
        want = "(%s bytes)" % format(peak, ",")
        line = [x for x in h["tip"].split("\n") if x.startswith("held: ")]
        check(line and want in line[0],
              "%s: GPU %d: hovering the held line's peak reads the peak, %s" % (name, dev, want),
              h)
    for h in res["hovers_hidden"]:
        label = h["title"].split(": ", 1)[-1]
        check(label and "marker: " + label in h["tip"].split("\n"),
              "%s: hovering a marker whose label was thinned out names it: %s" % (name, label),
              h)
    return res


def check_ran(dom, name):
    body = dom.find("body")
    check(body and body[0][1].get("data-rendered") == "1" and "data-error" not in body[0][1],
          "%s: the page's script ran to the end" % name, body)


def check_hostile_dom(dom):
    check_ran(dom, "hostile")
    peak = dom.find(id="sum-peak")
    check(peak and peak[0][1].get("data-bytes") == str(hostile.PEAK) and
          dom.text_under("sum-peak") == "3.0 MiB", "summary: peak held 3.0 MiB (3145728)",
          peak)
    leaked = dom.find(id="sum-leaked")
    check(leaked and leaked[0][1].get("data-bytes") == str(hostile.PEAK) and
          dom.text_under("sum-leaked") == "3.0 MiB", "summary: leaked 3.0 MiB", leaked)
    failed = dom.find(id="sum-failed")
    check(failed and failed[0][1].get("data-count") == "1", "summary: 1 failed allocation")
    scripts = dom.find("script")
    check(len(scripts) == 2, "no script element was injected", scripts)
    for tag in ("img", "b", "i", "iframe", "object"):
        check(not dom.find(tag), "no <%s> element was injected" % tag)
    handlers = [(t, a) for t, a, _ in dom.elements if any(k.startswith("on") for k in a)]
    check(not handlers, "no element has an event-handler attribute", handlers)
    text = dom.all_text()
    for what, s in (("function name", hostile.FUNC), ("file name", hostile.FILE),
                    ("qualified name with quotes and &amp;", hostile.QUAL2),
                    ("file with quotes and &amp;", hostile.FILE2),
                    ("marker label", hostile.LABEL), ("command line", hostile.ARGV[1])):
        check(s in text, "the %s shows as text: %s" % (what, s))
    check(hostile.FUNC in dom.text_under("leaks") and hostile.QUAL2 in dom.text_under(
        "peak-sites"), "the sites are in the leak and peak tables")


def check_analyses_dom(dom):
    check_ran(dom, "analyses")
    leaked, cached = dom.find(id="sum-leaked"), dom.find(id="sum-cached")
    check(leaked and leaked[0][1].get("data-bytes") == str(hostile.PEAK) and cached
          and cached[0][1].get("data-bytes") == str(hostile.CACHED),
          "summary: PyTorch's 20 MiB at exit shown apart, not as leaked", (leaked, cached))
    check("kept by caching allocators at exit (PyTorch 20.0 MiB)" in dom.text_under("summary"),
          "summary: the card names the allocator", dom.text_under("summary"))
    check("kept by PyTorch's cache (not a leak)" in dom.text_under("leaks"),
          "leaks: the cache's site is marked as the cache, not leaked", dom.text_under("leaks"))
    tl = [e for e in dom.elements if "timeline" in e[2]]
    paths = [e for e in tl if e[0] == "path"]
    check(len(paths) == 2, "timeline: one line per series (held, device)", paths)
    check(any(e[0] == "circle" for e in tl), "timeline: the failed allocation is marked")
    check(hostile.LABEL in dom.text_under("timeline"), "timeline: the marker's label as text")
    check(hostile.EXPLANATION in dom.text_under("ooms"), "oom: the explanation as text")
    check("held_outside" in dom.text_under("ooms"), "oom: the cause")
    sec = dom.find(id="growth-sec")
    check(sec and "hidden" not in sec[0][1] and "2.0 MiB" in dom.text_under("growth"),
          "growth: the site grew by 2.0 MiB", sec)
    rects = [e for e in dom.elements if e[0] == "rect" and "flame-svg" in e[2]]
    # all, the two Python frames, cudaMalloc, cuMemAlloc_v2 of stack 2; stack 1's own chain
    check(len(rects) >= 6, "flame graph: a box per frame (%d)" % len(rects))
    check("all" in dom.text_under("flame-svg"), "flame graph: labels as text")
    check(not dom.find("i"), "no <i> element from the explanation")


BAND_RE = re.compile(r'<polygon class="blk"[^>]*>\s*<title>(.*?)</title>', re.S)
SVG_RE = re.compile(r'<svg[^>]*id="([^"]+)"[^>]*>(.*?)</svg>', re.S)
LABEL_RE = re.compile(r'<text[^>]*class="mlabel"[^>]*>')
ATTR_RE = re.compile(r'([\w-]+)="([^"]*)"')


def check_markers(out, name, markers):
    """Marker labels in each chart: no two in a row overlap (the x extents Chromium measured),
    each marker has a tooltip, the kinds have distinct colours."""
    svgs = re.findall(r'<svg[^>]*>.*?</svg>', out, re.S)
    shown = hidden = 0
    for body in svgs:
        rows = {}
        for tag in LABEL_RE.findall(body):
            a = dict(ATTR_RE.findall(tag))
            if "data-row" in a:
                rows.setdefault(a["data-row"], []).append((float(a["data-x0"]),
                                                          float(a["data-x1"])))
        for r, spans in rows.items():
            spans.sort()
            shown += len(spans)
            bad = [(p, q) for p, q in zip(spans, spans[1:]) if q[0] < p[1]]
            check(not bad, "%s: marker labels of row %s do not overlap" % (name, r), bad)
        hidden += body.count('data-label="hidden"')
    groups = re.findall(r'<g class="marker" data-kind="(\w+)"[^>]*><title>(.*?)</title>'
                        r'<line[^>]*stroke="([^"]+)"', out, re.S)
    timed = [m for m in markers if m.get("time_s") is not None]
    check(len(groups) >= len(timed) and all(t for _, t, _ in groups),
          "%s: every marker has a tooltip (%d lines, %d markers)" % (name, len(groups),
                                                                       len(timed)))
    colours = {}
    for kind, _, colour in groups:
        colours.setdefault(kind, set()).add(colour)
    flat = [c for cs in colours.values() for c in cs]
    check(all(len(c) == 1 for c in colours.values()) and len(set(flat)) == len(flat),
          "%s: each marker kind has its own colour" % name, colours)
    return shown, hidden


def check_tensor_page(args, chromium, page, name, doc, site_text=None):
    dom = render(args, chromium, page, name)
    if not dom:
        return
    check_ran(dom, name)
    with open(os.path.join(args.outdir, name + ".dom.html"), encoding="utf-8") as f:
        out = f.read()
    proc = doc["processes"][0]
    t = proc["tensors"]
    sec = dom.find(id="tensors-sec")
    check(sec and "hidden" not in sec[0][1], "%s: the tensor section is shown" % name)
    svgs = dict(SVG_RE.findall(out))
    for dev in t["timeline"]["devices"]:
        want = [b for b in t["timeline"]["blocks"] if b[4] == dev["device"]]
        body = svgs.get("tensor-svg-%d" % dev["device"], "")
        titles = [html.unescape(x) for x in BAND_RE.findall(body)]
        check(len(titles) == len(want) and want,
              "%s: GPU %d: one band per listed block (%d bands, %d blocks)" %
              (name, dev["device"], len(titles), len(want)))
        sites = t["block_sites"]
        # the bands are drawn in the order of the list
        check(all(sites[b[3]]["site"] in tt for b, tt in zip(want, titles)),
              "%s: each band's tooltip names its size and site" % name, titles[:2])
        check('data-band="cache"' in body, "%s: the cache's free memory is a band" % name)
    for k, o in enumerate(t["ooms"]):
        body = svgs.get("oom-svg-%d" % k, "")
        segs = body.count('class="seg"')
        pieces = re.findall(r'class="piece" data-state="(\w+)"', body)
        check(segs == len(o["segments"]) and segs > 0,
              "%s: OOM %d: a bar per segment of the JSON (%d)" % (name, k, segs))
        check(len(pieces) == sum(len(g["blocks"]) for g in o["segments"]) and
              {"allocated", "free"} <= set(pieces) and 'class="request"' in body,
              "%s: OOM %d: allocated and free pieces and the request" % (name, k), pieces)
    cats = [c for c in t["categories"] if c["bytes_at_peak"] > 0]
    bars = re.findall(r'class="cat" data-category="(\w+)" data-bytes="(\d+)"', out)
    check([(c["category"], str(c["bytes_at_peak"])) for c in cats] == bars,
          "%s: the category bar has a piece per category with bytes at the peak" % name, bars)
    if site_text:
        check(site_text in dom.text_under("tensors-sec"),
              "%s: the hostile site shows as text in the tensor section" % name)
    return check_markers(out, name, proc.get("markers", []))


def check_tensors(args, chromium):
    trace = os.path.join(args.outdir, "tensors-hostile.jsonl")
    hostile.write_tensor_trace(trace)
    fixtures = [("tensors-hostile", trace)] + [
        ("tensors-" + n, os.path.join(args.fixtures, n + ".jsonl"))
        for n in ("gpt2", "frag", "growth")]
    for name, path in fixtures:
        doc = hostile.report_doc(args.exe, path)
        page = os.path.join(args.outdir, name + ".html")
        p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, path],
                           stderr=subprocess.PIPE, timeout=120)
        check(p.returncode == 0, "%s: report --format html: exit 0" % name, p.stderr[-2000:])
        check_file(page, doc)
        res = check_tensor_page(args, chromium, page, name, doc,
                                hostile.FUNC if name == "tensors-hostile" else None)
        probe(args, chromium, page, name, doc)
        if name == "tensors-frag":
            dom = browser.Dom(open(os.path.join(args.outdir, name + ".dom.html"),
                                   encoding="utf-8").read())
            answer = dom.text_under("answer")
            check(answer.startswith("PyTorch ran out of memory asking for 256.0 MiB") and
                  "(fragmentation)" in answer and "expandable_segments" in answer,
                  "tensors-frag: the page leads with the OOM and its cause", answer[:400])
            failed = dom.find(id="sum-failed")
            check(failed and failed[0][1].get("data-count") == "1",
                  "tensors-frag: the headline counts PyTorch's OOM (no CUDA call failed): 1 "
                  "failed allocation, not 0", failed)
        if name == "tensors-hostile" and res:
            shown, hidden = res
            check(shown >= 3 and hidden > 0,
                  "tensors-hostile: of %d close markers, %d labels shown, %d thinned out" %
                  (hostile.TENSOR_MARKS, shown, hidden))
            dom = browser.Dom(open(os.path.join(args.outdir, name + ".dom.html"),
                                   encoding="utf-8").read())
            check(len(dom.find("script")) == 2 and not dom.find("img") and
                  not dom.find("b") and not dom.find("u"),
                  "tensors-hostile: no element was injected from a site or label")


def check_callers(args, chromium):
    """A user's allocation helper called from two lines: the leak table shows each caller with
    its share beside the helper's site, and the library line's status."""
    MiB = 1 << 20
    lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "pid": 7, "start_ts": 0,
              "argv": ["train.py"]}]
    for cid, f, name, line in ((1, "/home/u/helper.py", "malloc", 38),
                               (2, "/home/u/train.py", "load_weights", 10),
                               (3, "/home/u/train.py", "step", 89)):
        lines.append({"type": "pycode", "id": cid, "file": f, "name": name, "qualname": name,
                      "firstlineno": line, "python": "3.12", "linetable": "e800"})
    for sid, caller in ((11, 2), (12, 3)):
        lines.append({"type": "stack", "id": sid, "frames": [], "py": [[1, 0, 0], [caller, 0, 1]]})
    seq = 0
    for sid, size, n in ((11, 64 * MiB, 1), (12, 2 * MiB, 5)):
        for i in range(n):
            seq += 1
            lines.append({"type": "event", "seq": seq, "ts": seq * 1000, "tid": 7, "op": "alloc",
                          "api": "cudaMalloc", "kind": "device", "device": 0,
                          "ptr": hex(0x7f0000000000 + seq * 128 * MiB), "size": size,
                          "result": 0, "stack": sid})
    lines.append({"type": "trailer", "ts": seq * 1000 + 1, "events": seq, "dropped": 0,
                  "reason": "exit"})
    trace = os.path.join(args.outdir, "callers.jsonl")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    page = os.path.join(args.outdir, "callers.html")
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, trace],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "callers: report --format html: exit 0", p.stderr)
    dom = render(args, chromium, page, "callers")
    if dom:
        text = dom.text_under("leaks")
        check("from load_weights (/home/u/train.py:10): 64.0 MiB; step (/home/u/train.py:89): "
              "10.0 MiB" in text, "callers: the leak row names each caller with its share",
              text[:600])


def check_object_names(args, chromium):
    """Names that are also the names of a JavaScript object's own machinery (__proto__,
    constructor, hasOwnProperty) are names like any other: each call site is a box in the flame
    graph, and nothing leaks onto every object (an element attribute value="NaN")."""
    names = ["__proto__", "constructor", "hasOwnProperty"]
    lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "pid": 7, "start_ts": 0,
              "argv": ["train.py"]}]
    for k, api in enumerate(names):
        lines.append({"type": "event", "seq": k + 1, "ts": (k + 1) * 1000, "tid": 7,
                      "op": "alloc", "api": api, "kind": "device", "device": 0,
                      "ptr": hex(0x7f0000000000 + k * (1 << 24)), "size": (k + 1) << 20,
                      "result": 0})
    lines.append({"type": "trailer", "ts": 10000, "events": 3, "dropped": 0, "reason": "exit"})
    trace = os.path.join(args.outdir, "object-names.jsonl")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    page = os.path.join(args.outdir, "object-names.html")
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, trace],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "object-names: report --format html: exit 0", p.stderr[-2000:])
    dom = render(args, chromium, page, "object-names")
    if not dom:
        return
    check_ran(dom, "object-names")
    boxes = dom.text_under("flame-svg")
    check(all(n in boxes for n in names),
          "object-names: the flame graph has a box for each site (%s)" % ", ".join(names), boxes)
    stray = [(t, a) for t, a, _ in dom.elements if t in ("text", "rect", "svg") and "value" in a]
    check(not stray, "object-names: no attribute leaked onto the page's elements from a name",
          stray[:3])


def check_lost(args, chromium):
    """A trace file that yielded nothing (empty: its process ended before its tracer wrote a
    line) beside a whole trace: the page's warnings name it and why, its name (HTML) as text."""
    d = os.path.join(args.outdir, "lost")
    shutil.rmtree(d, ignore_errors=True)
    os.mkdir(d)
    hostile.write_trace(os.path.join(d, "rank0.jsonl"))
    empty = os.path.join(d, "rank1 <img src=x onerror=alert(3)><b>&amp;.jsonl")
    open(empty, "w").close()
    doc = hostile.report_doc(args.exe, d)
    page = os.path.join(args.outdir, "lost.html")
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, d],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0 and doc.get("lost_traces") == [{"file": empty,
                                                        "reason": "empty file, not a trace"}],
          "lost: report --format html: exit 0, the empty trace in lost_traces", p.stderr[-2000:])
    check_file(page, doc)
    dom = render(args, chromium, page, "lost")
    if not dom:
        return
    check_ran(dom, "lost")
    check("The trace file %s yielded nothing (empty file, not a trace): its process is in none "
          "of the figures on this page." % empty in dom.text_under("warnings"),
          "lost: a warning names the file, as text, and why", dom.text_under("warnings"))
    for tag in ("img", "b"):
        check(not dom.find(tag), "lost: no <%s> element from the file's name" % tag)


def check_marker_devices(args, chromium):
    """Marker labels neither stack nor repeat (issue 32 item 6): a run on two devices with 80
    automatic steps a few milliseconds apart. Labels stand in one row, never overlapping (the
    ones that would are thinned out, their lines keep tooltips); only the first device's chart
    has labels, the second repeats the lines alone."""
    MiB = 1 << 20
    lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "pid": 9, "start_ts": 0,
              "argv": ["train.py"]}]
    seq = 0
    for step in range(80):
        for dev in (0, 1):
            seq += 1
            lines.append({"type": "event", "seq": seq, "ts": step * 3_000_000 + dev, "tid": 9,
                          "op": "alloc", "api": "cudaMalloc", "kind": "device", "device": dev,
                          "ptr": hex(0x7f0000000000 + seq * 4 * MiB), "size": MiB, "result": 0})
        seq += 1
        lines.append({"type": "marker", "seq": seq, "ts": step * 3_000_000 + 5, "tid": 9,
                      "label": "forward %d" % (step + 1), "auto": "step"})
    lines.append({"type": "trailer", "ts": 80 * 3_000_000, "events": seq, "dropped": 0,
                  "reason": "exit"})
    trace = os.path.join(args.outdir, "two-devices.jsonl")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    page = os.path.join(args.outdir, "two-devices.html")
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, trace],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "two-devices: report --format html: exit 0", p.stderr[-2000:])
    probe(args, chromium, page, "two-devices", hostile.report_doc(args.exe, trace))
    dom = render(args, chromium, page, "two-devices")
    if not dom:
        return
    check_ran(dom, "two-devices")
    with open(os.path.join(args.outdir, "two-devices.dom.html"), encoding="utf-8") as f:
        out = f.read()
    timeline = out[out.index('id="timeline"'):out.index('id="tensors-sec"')]
    charts = re.findall(r"<svg[^>]*>.*?</svg>", timeline, re.S)
    check(len(charts) == 2, "two-devices: a chart per device (%d)" % len(charts))
    labelled = [len(LABEL_RE.findall(c)) for c in charts]
    check(len(labelled) == 2 and labelled[0] >= 3 and labelled[1] == 0,
          "two-devices: labels on the first device's chart only (%s)" % labelled)
    rows = {dict(ATTR_RE.findall(t)).get("data-row") for c in charts for t in LABEL_RE.findall(c)}
    check(rows == {"0"}, "two-devices: the labels stand in one row, not stacked (%s)" % rows)
    shown, hidden = check_markers(out, "two-devices", [
        {"time_s": 0.0}] * 80)
    check(shown >= 3 and hidden > 0 and shown + hidden == 80,
          "two-devices: of 80 close steps, %d labels shown, %d thinned out" % (shown, hidden))
    second = charts[1] if len(charts) == 2 else ""
    check(second.count('data-label="above"') == 80,
          "two-devices: the second chart has the 80 lines, their labels above it (%d)"
          % second.count('data-label="above"'))


def check_tensor_devices(args, chromium):
    """PyTorch blocks on two devices with 80 automatic steps a few milliseconds apart: the tensor
    section has a chart per device, labels on the first only, in one row, thinned out (the probe
    measures that they do not overlap as laid out)."""
    MiB = 1 << 20
    lines = [{"type": "header", "format": "gpumemtrace", "version": 1, "pid": 11,
              "start_ts": 0, "argv": ["train.py"]}]
    seq, ts = [0], [0]

    def add(d, dt=1_000_000):
        seq[0] += 1
        ts[0] += dt
        d.update(seq=seq[0], ts=ts[0], tid=11)
        lines.append(d)

    add({"type": "torch", "version": "2.11.0", "backend": "native", "alloc_conf": "",
         "layer": "blocks"})
    segs = {0: 0x7f1000000000, 1: 0x7f2000000000}
    for dev, seg in segs.items():
        add({"type": "event", "op": "alloc", "api": "cudaMalloc", "kind": "device",
             "device": dev, "ptr": hex(seg), "size": 256 * MiB, "result": 0})
        add({"type": "block", "action": "segment_alloc", "device": dev, "ptr": hex(seg),
             "size": 256 * MiB, "stream": "0x0", "pool": [0, 0]})
    for step in range(80):
        add({"type": "marker", "label": "step %d" % (step + 1), "auto": "step"}, dt=3_000_000)
        for dev, seg in segs.items():
            add({"type": "block", "action": "alloc", "device": dev,
                 "ptr": hex(seg + (step % 64) * 2 * MiB), "size": 2 * MiB, "stream": "0x0",
                 "pool": [0, 0]}, dt=1000)
            for action in ("free_requested", "free_completed"):
                add({"type": "block", "action": action, "device": dev,
                     "ptr": hex(seg + (step % 64) * 2 * MiB), "size": 2 * MiB,
                     "stream": "0x0", "pool": [0, 0]}, dt=1000)
    lines.append({"type": "trailer", "ts": ts[0] + 1_000_000, "events": 2, "dropped": 0,
                  "reason": "exit"})
    trace = os.path.join(args.outdir, "tensor-devices.jsonl")
    with open(trace, "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    page = os.path.join(args.outdir, "tensor-devices.html")
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, trace],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "tensor-devices: report --format html: exit 0", p.stderr[-2000:])
    res = probe(args, chromium, page, "tensor-devices", hostile.report_doc(args.exe, trace))
    if not res:
        return
    charts = [c for c in res["charts"] if c["section"] == "tensor-timeline"]
    counts = [len(c["labels"]) for c in charts]
    check(len(charts) == 2 and counts[0] >= 3 and counts[1] == 0 and
          all(c["markers"] == 80 for c in charts),
          "tensor-devices: a tensor chart per device with the 80 markers, labels on the first "
          "only (%s)" % counts)
    if charts:
        tops = {round(a["box"][1]) for a in charts[0]["labels"]}
        check(len(tops) == 1 and 3 <= counts[0] < 80,
              "tensor-devices: the labels stand in one row (tops %s), %d of 80 shown" %
              (sorted(tops), counts[0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--render-doc", required=True)
    ap.add_argument("--golden-traces", required=True)
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--fixtures", required=True,
                    help="tests/fixtures/h200-torch2.11/tensors (gpt2, frag, growth)")
    args = ap.parse_args()

    chromium = browser.find_chromium()
    if not chromium:
        print("SKIP: no chromium, chromium-browser or google-chrome on PATH (GMT_CHROMIUM "
              "names another); scripts/setup installs Debian's chromium")
        return 77

    trace = os.path.join(args.outdir, "hostile.jsonl")
    page = os.path.join(args.outdir, "hostile.html")
    hostile.write_trace(trace)
    doc = hostile.report_doc(args.exe, trace)
    p = subprocess.run([args.exe, "report", "--format", "html", "-o", page, trace],
                       stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "report --format html: exit 0", p.stderr)
    check_file(page, doc)
    dom = render(args, chromium, page, "hostile")
    if dom:
        check_hostile_dom(dom)
        with open(os.path.join(args.outdir, "hostile.dom.html"), encoding="utf-8") as f:
            title = re.search(r"<title>(.*?)</title>", f.read(), re.S)
        check(title and html.unescape(title.group(1)).startswith("gpumemtrace: ") and
              html.unescape(title.group(1)) not in ("pwned", "argv"),
              "no script from a name or label ran (the document's title is the page's own)",
              title and title.group(1))
    probe(args, chromium, page, "hostile", doc)

    fixture = os.path.join(args.outdir, "analyses.json")
    page = os.path.join(args.outdir, "analyses.html")
    with open(fixture, "w", encoding="utf-8") as f:
        json.dump(hostile.with_analyses(doc), f)
    with open(page, "wb") as f:
        p = subprocess.run([args.render_doc, "html", fixture], stdout=f, timeout=60)
    check(p.returncode == 0, "render_doc html: exit 0")
    dom = render(args, chromium, page, "analyses")
    if dom:
        check_analyses_dom(dom)
    probe(args, chromium, page, "analyses", hostile.with_analyses(doc))

    check_tensors(args, chromium)
    check_callers(args, chromium)
    check_object_names(args, chromium)
    check_lost(args, chromium)
    check_marker_devices(args, chromium)
    check_tensor_devices(args, chromium)

    if failures:
        print("%d check(s) failed" % failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
