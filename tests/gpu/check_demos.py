#!/usr/bin/env python3
"""The checks of the H200 demos (scripts/gpu-check, group `demos`): what `gpumemtrace report`
and `gpumemtrace check` say about a traced run of tests/gpu/demo_*.py.

    check_demos.py --build BUILD leak DIR       DIR: gpumemtrace run -o DIR -- python3 demo_leak.py
    check_demos.py --build BUILD frag_oom DIR
    check_demos.py --build BUILD clean DIR
    check_demos.py --self-test                  the judges against hand-made reports (no GPU)

Each demo script marks its lines with comments (`# LEAK-SITE`, `# FILL-SITE`, `# OOM-SITE`);
the checks find the lines there, never in the report. The demo's --stats file (DIR/demo-stats.json,
written by gpu-check's run) gives what PyTorch itself saw. Sites are matched by the script's file
name and the line (a script run by a relative path has a relative `file`).

leak: growth_sites[] (docs/report-json.md; growth[] in an older report) has one entry at
  demo_leak.py:LEAK-SITE per call (its stacks merged), basis "markers",
  rising in at least half of the intervals, more than 64 MiB, the largest growth of the report;
  the growth of all sites in the script is at least 90% of what torch.cuda.memory_allocated()
  grew between the first and last marker (the CUDA-level view sees segments, which hold at least
  the tensors). `gpumemtrace check
  --max-growth-bytes 64MiB DIR` exits 1 and names demo_leak.py:LEAK-SITE. The text report names
  the line.
frag_oom: oom[] has a failed cudaMalloc of the demo's request (rounded up to PyTorch's 2 MiB),
  cause "held_by_cache"; its explanation names the request size (bytes, or KiB/MiB/GiB within
  rounding) and says that what is inside PyTorch's cache is not visible at the CUDA level; its
  top site is the FILL-SITE line of demo_frag_oom.py with cache "pytorch"; held_bytes is within
  5% of torch.cuda.memory_reserved() at the failure (the segments are what torch reserved); the
  failed[] entry of the same seq is at the OOM-SITE line; the text report names the OOM-SITE line.
clean: `gpumemtrace check --max-growth-bytes 64MiB --max-leaked-bytes 0 DIR` exits 0, and no
  growth[] entry of demo_clean.py exceeds 64 MiB. What leaks[] says about memory live at exit is
  printed: PyTorch's cached segments (cache "pytorch") are expected there; anything else is
  named (a WARNING, the check's exit status is the assertion).

Exit status 0 when every assertion holds, 1 otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
GROWTH_LIMIT = "64MiB"
GROWTH_LIMIT_BYTES = 64 * MiB
SCRIPTS = {"leak": "demo_leak.py", "frag_oom": "demo_frag_oom.py", "clean": "demo_clean.py"}


def marker_lines(path):
    """{TAG: line} of the `# TAG` comments (LEAK-SITE, FILL-SITE, ...) of a script."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"#\s*([A-Z]+-SITE)\b", line)
            if m:
                out[m.group(1)] = n
    return out


def site_of(entry):
    return (entry or {}).get("site") or {}


def at_line(site, script, line):
    return os.path.basename(site.get("file") or "") == script and site.get("line") == line


def describe(site):
    return f"{site.get('file') or site.get('module') or '?'}:{site.get('line') or 0} in {site.get('function') or '?'}"


def names_line(text, script, line):
    return re.search(re.escape(script) + r"(:| line )" + str(line) + r"\b", text or "") is not None


def fmt_bytes(n):
    """As the analyzer prints sizes (src/analysis/units.c): 1 decimal, binary units."""
    if n < 1024:
        return f"{n} B"
    v, units = n / 1024.0, ["KiB", "MiB", "GiB", "TiB"]
    u = 0
    while v >= 1023.95 and u + 1 < len(units):
        v /= 1024.0
        u += 1
    return f"{v:.1f} {units[u]}"


def names_size(text, size):
    """Whether text gives size: as an integer (with or without separators) or in a unit within rounding."""
    text = text or ""
    plain = re.sub(r"(?<=\d)[,_ ](?=\d{3}\b)", "", text)
    if re.search(r"\b%d\b" % size, plain):
        return True
    scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
             "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\b", text):
        value = float(num) * scale[unit]
        decimals = len(num.split(".")[1]) if "." in num else 0
        slack = 0.5 * 10 ** -decimals * scale[unit] + 1
        if abs(value - size) <= slack:
            return True
    return False


CACHE_INVISIBLE = re.compile(r"not (be )?(visible|seen)|invisible|cannot see|can't see|can not see|"
                             r"does not see|doesn't see|cannot tell|can't tell|not known|hidden|opaque|"
                             r"cannot be seen|is not seen", re.I)


def says_cache_invisible(text):
    t = text or ""
    return "pytorch" in t.lower() and "cache" in t.lower() and "cuda" in t.lower() and CACHE_INVISIBLE.search(t) is not None


# --- judges: pure functions of (report, text, check result, stats); each returns problems -------

def judge_leak(rep, text, chk, stats, script_dir=HERE, out=print):
    script = SCRIPTS["leak"]
    line = marker_lines(os.path.join(script_dir, script)).get("LEAK-SITE")
    problems = []
    if not line:
        return [f"{script} has no LEAK-SITE comment"]
    # growth_sites[]: one entry per line (its stacks merged); growth[] in a report before it
    key = "growth_sites" if isinstance(rep.get("growth_sites"), list) else "growth"
    growth = rep.get(key)
    if not isinstance(growth, list):
        return [f"the report has no growth[] (the analysis is missing): expected {script}:{line}"] + \
            check_exit(chk, 1, script, line)

    def rises(g):  # growth_sites[]: the fewest rises among its stacks
        return g.get("min_rises", g.get("rises")) or 0
    out(f"{key}[]: {len(growth)} sites")
    for g in growth[:6]:
        stacks = len(g.get("stacks") or [1])
        out(f"  {g.get('growth_bytes', 0) / MiB:10.1f} MiB  {g.get('first_bytes', 0) / MiB:8.1f} -> "
            f"{g.get('last_bytes', 0) / MiB:8.1f} MiB  rises {rises(g)}-{g.get('max_rises', g.get('rises'))} of "
            f"{(g.get('samples') or 1) - 1} intervals ({g.get('basis')}), {stacks} stack(s)  {g.get('api')}  "
            f"{describe(site_of(g))}")
    hits = [g for g in growth if at_line(site_of(g), script, line)]
    if not hits:
        problems.append(f"{key}[] has no site at {script}:{line} (LEAK-SITE); sites: "
                        + ", ".join(describe(site_of(g)) for g in growth[:5]))
    else:
        if key == "growth_sites" and len({(h.get("api"), h.get("kind"), h.get("device")) for h in hits}) < len(hits):
            problems.append(f"growth_sites[] lists {script}:{line} {len(hits)} times for one call (not merged)")
        g = max(hits, key=lambda h: h.get("growth_bytes") or 0)
        intervals = (g.get("samples") or 0) - 1
        if g.get("basis") != "markers":
            problems.append(f"the LEAK-SITE growth is sampled by {g.get('basis')!r}, not the demo's markers")
        if intervals < 2 or rises(g) * 2 < intervals:
            problems.append(f"the LEAK-SITE rose in {rises(g)} of {intervals} intervals (expected at least half)")
        if (g.get("growth_bytes") or 0) <= GROWTH_LIMIT_BYTES:
            problems.append(f"the LEAK-SITE grew {g.get('growth_bytes')} bytes, not more than {GROWTH_LIMIT}")
        top = max(growth, key=lambda h: h.get("growth_bytes") or 0)
        if top is not g:
            problems.append(f"the largest growth is at {describe(site_of(top))}, not the LEAK-SITE")
        # the batches (x, y) are kept too, at their own lines: compare torch's figure with every
        # line of the script
        torch_growth = (stats or {}).get("allocated_growth")
        mine = sum(h.get("growth_bytes") or 0 for h in growth
                   if os.path.basename(site_of(h).get("file") or "") == script)
        if torch_growth:
            out(f"torch.cuda.memory_allocated() grew {torch_growth / MiB:.1f} MiB over the markers; "
                f"the report's sites in {script} grew {mine / MiB:.1f} MiB")
            if mine < 0.9 * torch_growth:
                problems.append(f"the sites in {script} grew {mine} bytes, less than 90% of torch's own "
                                f"{torch_growth} (memory_allocated between the first and last marker)")
    problems += check_exit(chk, 1, script, line)
    if not names_line(text, script, line):
        problems.append(f"the text report does not name {script}:{line}")
    return problems


def check_exit(chk, want, script=None, line=None):
    """Problems with a `gpumemtrace check` run: its exit status, and that it names script:line."""
    if chk is None:
        return ["gpumemtrace check was not run"]
    rc, output = chk
    shown = " | ".join(l for l in (output or "").splitlines()[:8])
    if rc not in (0, 1):
        return [f"gpumemtrace check exited {rc} (usage or unreadable input?): {shown[:400]}"]
    if rc != want:
        return [f"gpumemtrace check exited {rc}, expected {want}: {shown[:400]}"]
    if script and not names_line(output, script, line):
        return [f"gpumemtrace check failed as expected but does not name {script}:{line}: {shown[:400]}"]
    return []


def judge_frag_oom(rep, text, chk, stats, script_dir=HERE, out=print):
    script = SCRIPTS["frag_oom"]
    lines = marker_lines(os.path.join(script_dir, script))
    fill, oom_line = lines.get("FILL-SITE"), lines.get("OOM-SITE")
    if not fill or not oom_line:
        return [f"{script} lacks the FILL-SITE or OOM-SITE comment"]
    problems = []
    ooms = rep.get("oom")
    if not isinstance(ooms, list):
        return ["the report has no oom[] (the analysis is missing)"]
    request = (stats or {}).get("request")
    out(f"oom[]: {len(ooms)} failed allocations" + (f"; the demo requested {request} bytes" if request else ""))
    for o in ooms[:4]:
        out(f"  seq {o.get('seq')} {o.get('api')} {o.get('size')} bytes result {o.get('result')} cause "
            f"{o.get('cause')}: held {o.get('held_bytes')} (cache {o.get('cache_bytes')}), free "
            f"{o.get('free_bytes')} of {o.get('total_bytes')}")
        out(f"    {o.get('explanation')}")
    cands = [o for o in ooms if o.get("api") == "cudaMalloc" and o.get("result") == 2]
    if request:
        want = -(-request // (2 * MiB)) * (2 * MiB)
        cands = [o for o in cands if o.get("size") == want]
        if not cands:
            return [f"oom[] has no failed cudaMalloc of {want} bytes (the demo's {request} rounded up to 2 MiB)"]
    elif not cands:
        return ["oom[] has no failed cudaMalloc (result 2)"]
    o = cands[0]
    size = o.get("size") or 0
    if o.get("cause") != "held_by_cache":
        problems.append(f"cause is {o.get('cause')!r}, expected 'held_by_cache'")
    expl = o.get("explanation") or ""
    if not names_size(expl, size):
        problems.append(f"the explanation does not name the request size ({size} bytes = {fmt_bytes(size)})")
    if not says_cache_invisible(expl):
        problems.append("the explanation does not say that what is inside PyTorch's cache is not visible at the CUDA level")
    tops = o.get("top_sites") or []
    if not tops:
        problems.append("oom entry has no top_sites")
    else:
        t = tops[0]
        out(f"  top site: {(t.get('bytes') or 0) / 2**30:.2f} GiB in {t.get('allocations')} allocations, cache "
            f"{t.get('cache')}, {describe(site_of(t))}")
        if not at_line(site_of(t), script, fill):
            problems.append(f"the top site is {describe(site_of(t))}, not {script}:{fill} (FILL-SITE)")
        if t.get("cache") != "pytorch":
            problems.append(f"the top site's cache is {t.get('cache')!r}, not 'pytorch'")
    reserved = (stats or {}).get("reserved")
    held = o.get("held_bytes")
    if reserved:
        out(f"  torch.cuda.memory_reserved() at the failure: {reserved}; the report's held_bytes: {held}")
        if not isinstance(held, int) or abs(held - reserved) > 0.05 * reserved:
            problems.append(f"held_bytes {held} is not within 5% of torch's memory_reserved() {reserved}")
    failed = [f for f in rep.get("failed") or [] if f.get("seq") == o.get("seq") and f.get("process") == o.get("process")]
    if not failed:
        problems.append(f"failed[] has no entry of seq {o.get('seq')}")
    elif not at_line(site_of(failed[0]), script, oom_line):
        problems.append(f"the failed call is at {describe(site_of(failed[0]))}, not {script}:{oom_line} (OOM-SITE)")
    if not names_line(text, script, oom_line):
        problems.append(f"the text report does not name {script}:{oom_line}")
    return problems


def judge_clean(rep, text, chk, stats, script_dir=HERE, out=print):
    script = SCRIPTS["clean"]
    problems = check_exit(chk, 0)
    growth = rep.get("growth")
    if isinstance(growth, list):
        mine = [g for g in growth if os.path.basename(site_of(g).get("file") or "") == script]
        out(f"growth[]: {len(growth)} sites, {len(mine)} in {script}")
        for g in mine:
            out(f"  {(g.get('growth_bytes') or 0) / MiB:.1f} MiB at {describe(site_of(g))}")
            if (g.get("growth_bytes") or 0) > GROWTH_LIMIT_BYTES:
                problems.append(f"growth[] lists {describe(site_of(g))} growing {g.get('growth_bytes')} bytes in the clean loop")
    else:
        out("growth[]: absent from the report")
    leaks = [l for l in rep.get("leaks") or [] if l.get("at_exit") and l.get("counted", True)]
    by_cache = {}
    for l in leaks:
        by_cache.setdefault(l.get("cache", "(no cache key)"), []).append(l)
    out(f"live at exit (leaks[], at_exit, counted): {sum(l.get('bytes') or 0 for l in leaks)} bytes in "
        f"{len(leaks)} entries; summary.leaked_bytes {(rep.get('summary') or {}).get('leaked_bytes')}")
    for cache, ls in sorted(by_cache.items(), key=lambda kv: str(kv[0])):
        out(f"  cache {cache}: {sum(l.get('bytes') or 0 for l in ls)} bytes in {len(ls)} entries, e.g. "
            + "; ".join(f"{l.get('api')} {describe(site_of(l))}" for l in ls[:3]))
    others = [l for l in leaks if l.get("cache") != "pytorch"]
    if others:
        out(f"WARNING: {len(others)} leaks[] entries live at exit are not PyTorch's cache (cache "
            f"{sorted({str(l.get('cache', '(no cache key)')) for l in others})}): if `check --max-leaked-bytes 0` counts them, "
            "the clean loop fails for memory it does not own (cuBLAS handles, the CUDA context's libraries)")
    if chk and chk[0] == 1 and by_cache.get("pytorch"):
        problems.append("the check fails the clean loop; leaks[] has PyTorch's cache live at exit "
                        f"({sum(l.get('bytes') or 0 for l in by_cache['pytorch'])} bytes, cache 'pytorch'): "
                        "the check counts caching-allocator memory as a leak")
    return problems


JUDGES = {"leak": judge_leak, "frag_oom": judge_frag_oom, "clean": judge_clean}
CHECK_ARGS = {"leak": ["--max-growth-bytes", GROWTH_LIMIT], "frag_oom": None,
              "clean": ["--max-growth-bytes", GROWTH_LIMIT, "--max-leaked-bytes", "0"]}


def gather(build, demo, trace):
    exe = os.path.join(build, "tools", "gpumemtrace")
    p = subprocess.run([exe, "report", "--format", "json", trace], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"check_demos: gpumemtrace report --format json {trace} exited {p.returncode}: {p.stderr.strip()[:400]}")
    rep = json.loads(p.stdout)
    text = subprocess.run([exe, "report", trace], capture_output=True, text=True).stdout
    chk = None
    if CHECK_ARGS[demo] is not None:
        c = subprocess.run([exe, "check"] + CHECK_ARGS[demo] + [trace], capture_output=True, text=True)
        chk = (c.returncode, c.stdout + c.stderr)
        print(f"gpumemtrace check {' '.join(CHECK_ARGS[demo])}: exit {c.returncode}")
        for l in chk[1].splitlines()[:10]:
            print(f"  | {l}")
    stats = None
    path = os.path.join(trace, "demo-stats.json")
    if os.path.exists(path):
        with open(path) as f:
            stats = json.load(f)
    return rep, text, chk, stats


# --- self-test: hand-made reports, each expected to pass or to fail ------------------------------

def _site(script, line, fn="main"):
    return {"kind": "python", "function": fn, "file": "tests/gpu/" + script, "line": line, "module": None,
            "offset": None, "address": None, "inlined": False, "status": "ok", "hidden": False, "index": 3}


def _fixtures():
    L = marker_lines(os.path.join(HERE, SCRIPTS["leak"]))["LEAK-SITE"]
    fo = marker_lines(os.path.join(HERE, SCRIPTS["frag_oom"]))
    fill, oom_line = fo["FILL-SITE"], fo["OOM-SITE"]
    per = 136 * MiB
    leak_rep = {"growth": [
        {"process": 0, "api": "cudaMalloc", "driver": "cuMemAlloc_v2", "kind": "device", "cache": "pytorch",
         "site": _site("demo_leak.py", L), "stack": 7, "basis": "markers", "samples": 31,
         "first_bytes": 0, "last_bytes": 30 * per, "growth_bytes": 30 * per, "rises": 30, "falls": 0,
         "first_label": "micro-batch 0", "last_label": "after the loop"},
        {"process": 0, "api": "cudaMalloc", "driver": "cuMemAlloc_v2", "kind": "device", "cache": "pytorch",
         "site": _site("demo_leak.py", L - 3), "stack": 8, "basis": "markers", "samples": 31,
         "first_bytes": 0, "last_bytes": 30 * 20 * MiB, "growth_bytes": 30 * 20 * MiB, "rises": 15, "falls": 0}]}
    leak_text = f"growth across markers:\n  4.0 GiB  cudaMalloc at tests/gpu/demo_leak.py:{L} in main\n"
    leak_chk = (1, f"gpumemtrace check: FAIL growth 4.0 GiB > 64.0 MiB at tests/gpu/demo_leak.py:{L} in main\n")
    leak_stats = {"allocated_growth": 30 * 130 * MiB}

    req = 35 * (1 << 30) + 6 * MiB
    oom = {"process": 0, "pid": 1, "seq": 60001, "time_s": 3.2, "device": 0, "api": "cudaMalloc", "kind": "device",
           "size": req, "result": 2, "free_bytes": 14 << 30, "total_bytes": 150754820096,
           "held_bytes": 126 << 30, "cache_bytes": 126 << 30, "cause": "held_by_cache",
           "explanation": f"A request of {fmt_bytes(req)} failed with 14.0 GiB free: PyTorch's caching allocator "
                          "holds 126.0 GiB of this process's 126.0 GiB. How much of it is free inside PyTorch's "
                          "cache is not visible at the CUDA level (see torch.cuda.memory_summary()).",
           "top_sites": [{"site": _site("demo_frag_oom.py", fill), "api": "cudaMalloc", "kind": "device",
                          "bytes": 126 << 30, "allocations": 6300, "cache": "pytorch", "stack": 4}]}
    oom_rep = {"oom": [oom], "failed": [{"process": 0, "seq": 60001, "site": _site("demo_frag_oom.py", oom_line)}]}
    oom_text = f"failed allocations:\n  35.0 GiB cudaMalloc at tests/gpu/demo_frag_oom.py:{oom_line} in main\n"
    oom_stats = {"request": req - 1000, "reserved": (126 << 30) + 5 * MiB}

    clean_rep = {"growth": [], "summary": {"leaked_bytes": 3 << 30},
                 "leaks": [{"at_exit": True, "counted": True, "bytes": 3 << 30, "api": "cudaMalloc",
                            "cache": "pytorch", "site": _site("demo_clean.py", 60)}]}
    # each fixture: [report, text report, (check exit, check output), demo stats]
    return (L, fill, oom_line, [leak_rep, leak_text, leak_chk, leak_stats],
            [oom_rep, oom_text, None, oom_stats], [clean_rep, "", (0, "gpumemtrace check: ok\n"), None])


def self_test():
    import copy
    L, fill, oom_line, leak, oom, clean = _fixtures()
    quiet = lambda *a: None  # noqa: E731

    def variant(base, change):
        v = copy.deepcopy(base)
        change(v)
        return v

    def set_(path, value):
        def change(v):
            obj = v
            for k in path[:-1]:
                obj = obj[k]
            obj[path[-1]] = value
        return change

    cases = [
        ("leak: good", "leak", leak, True),
        ("leak: growth[] absent", "leak", variant(leak, lambda v: v[0].pop("growth")), False),
        ("leak: site on another line", "leak", variant(leak, set_((0, "growth", 0, "site", "line"), L + 1)), False),
        ("leak: site in another file", "leak", variant(leak, set_((0, "growth", 0, "site", "file"), "/x/train.py")), False),
        ("leak: rose in too few intervals", "leak", variant(leak, set_((0, "growth", 0, "rises"), 5)), False),
        ("leak: sampled by snapshots", "leak", variant(leak, set_((0, "growth", 0, "basis"), "snapshots")), False),
        ("leak: less than torch saw", "leak", variant(leak, set_((3, "allocated_growth"), 60 * 136 * MiB)), False),
        ("leak: not the largest growth", "leak", variant(leak, set_((0, "growth", 1, "growth_bytes"), 90 * 136 * MiB)), False),
        ("leak: check passes", "leak", variant(leak, set_((2,), (0, "ok\n"))), False),
        ("leak: check not there (usage error)", "leak", variant(leak, set_((2,), (2, "gpumemtrace: unknown command: check\n"))), False),
        ("leak: check does not name the line", "leak", variant(leak, set_((2,), (1, "growth above the limit\n"))), False),
        ("leak: text report silent", "leak", variant(leak, set_((1,), "nothing\n")), False),
        ("frag_oom: good", "frag_oom", oom, True),
        ("frag_oom: oom[] absent", "frag_oom", variant(oom, lambda v: v[0].pop("oom")), False),
        ("frag_oom: cause held_by_process", "frag_oom", variant(oom, set_((0, "oom", 0, "cause"), "held_by_process")), False),
        ("frag_oom: explanation without the size", "frag_oom", variant(oom, set_((0, "oom", 0, "explanation"),
            "PyTorch's cache holds the memory; what is free inside PyTorch's cache is not visible at the CUDA level.")), False),
        ("frag_oom: explanation silent on the cache", "frag_oom", variant(oom, set_((0, "oom", 0, "explanation"),
            f"A request of {fmt_bytes(35 * (1 << 30) + 6 * MiB)} failed.")), False),
        ("frag_oom: size in bytes is fine", "frag_oom", variant(oom, set_((0, "oom", 0, "explanation"),
            f"The request of {35 * (1 << 30) + 6 * MiB:,} bytes failed: PyTorch's cache holds most memory, and what "
            "is free inside it cannot be seen at the CUDA level.")), True),
        ("frag_oom: another size", "frag_oom", variant(oom, set_((0, "oom", 0, "size"), 40 << 30)), False),
        ("frag_oom: top site elsewhere", "frag_oom", variant(oom, set_((0, "oom", 0, "top_sites", 0, "site", "line"), fill + 2)), False),
        ("frag_oom: top site not the cache", "frag_oom", variant(oom, set_((0, "oom", 0, "top_sites", 0, "cache"), None)), False),
        ("frag_oom: held is not what torch reserved", "frag_oom", variant(oom, set_((3, "reserved"), 100 << 30)), False),
        ("frag_oom: failed call elsewhere", "frag_oom", variant(oom, set_((0, "failed", 0, "site", "line"), oom_line - 1)), False),
        ("clean: good", "clean", clean, True),
        ("clean: check fails on the cache", "clean", variant(clean, set_((2,), (1, "leaked 3.0 GiB > 0 B\n"))), False),
        ("clean: a site grows", "clean", variant(clean, set_((0, "growth"), [
            {"site": _site("demo_clean.py", 61), "growth_bytes": 100 * MiB}])), False),
        ("clean: no growth key, check passes", "clean", variant(clean, lambda v: v[0].pop("growth")), True),
    ]
    bad = 0
    for name, demo, (rep, text, chk, stats), want_ok in cases:
        problems = JUDGES[demo](rep, text, chk, stats, out=quiet)
        ok = not problems
        verdict = "ok" if ok == want_ok else "WRONG"
        bad += ok != want_ok
        print(f"  {verdict:5} {name}: {'passes' if ok else 'fails: ' + problems[0][:110]}")
    print(f"check_demos self-test: {len(cases) - bad}/{len(cases)} cases judged as expected")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--build")
    ap.add_argument("demo", nargs="?", choices=sorted(JUDGES))
    ap.add_argument("trace", nargs="?")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not (args.build and args.demo and args.trace):
        ap.error("--build, a demo and a trace directory are required (or --self-test)")
    rep, text, chk, stats = gather(args.build, args.demo, args.trace)
    problems = JUDGES[args.demo](rep, text, chk, stats)
    for p in problems:
        print(f"FAIL: {p}")
    print(f"check_demos {args.demo}: " + ("FAIL" if problems else "PASS"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
