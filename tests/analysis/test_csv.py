#!/usr/bin/env python3
"""`report --format csv` and the SQL of docs/sql.md, against `report --format json`:

    test_csv.py --exe GPUMEMTRACE --root SRC CASE

  queries  every named query of docs/sql.md through sqlite3, on the golden traces, a trace made to
           grow and the H200 tensor traces: leaks per site equal leak_sites[], peaks per kind
           equal peaks[].kinds, growth equals growth[], live tensors equal the block replay
  duckdb   the same through DuckDB (@duckdb/node-api from npm; skipped, exit 77, without it)
  escape   names with commas, quotes, newlines and ESC: RFC 4180 quoting, escaped text, no raw
           control byte in any file
"""
import argparse
import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

failures = []
TABLES = ["allocations", "failures", "readings", "markers", "blocks", "segments", "sites",
          "processes"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(exe, *args):
    return subprocess.run([exe, *args], capture_output=True)


def export(exe, inputs, out):
    p = run(exe, "report", "--format", "csv", "-o", out, *inputs)
    check(p.returncode == 0, f"csv export of {inputs}: exit {p.returncode} {p.stderr[-400:]}")


def report_json(exe, inputs):
    p = run(exe, "report", "--format", "json", *inputs)
    check(p.returncode == 0, f"json report of {inputs}: exit {p.returncode}")
    return json.loads(p.stdout)


def queries(root):
    text = open(os.path.join(root, "docs", "sql.md")).read()
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- name: (\w+)\n", block)
        if m:
            out[m.group(1)] = block[m.end():]
    return out


def val(v):
    if v == "":
        return None
    if v.lstrip("-").isdigit():
        return int(v)
    return {"true": 1, "false": 0}.get(v, v)


def sqlite_db(d):
    db = sqlite3.connect(":memory:")
    for name in TABLES:
        with open(os.path.join(d, name + ".csv"), newline="") as f:
            rows = list(csv.reader(f))
        cols = rows[0]
        db.execute(f"CREATE TABLE {name} ({', '.join(cols)})")
        db.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(cols))})",
                       [[val(v) for v in r] for r in rows[1:]])
    return db


class Sqlite:
    def __init__(self, d):
        self.db = sqlite_db(d)

    def query(self, sql):
        cur = self.db.execute(sql)
        names = [c[0] for c in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


def norm(rows):
    """Rows compared by value: the Python loader keeps decimals as text ('1.300000000'), the
    shell's typed columns as REAL (1.3)."""
    def one(v):
        if isinstance(v, str):
            try:
                return float(v)
            except ValueError:
                return v
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v
    return [{k: one(v) for k, v in r.items()} for r in rows]


class SqliteShell(Sqlite):
    """The same tables loaded the documented way through the sqlite3 shell (docs/sql.md's
    load_sqlite_shell: .import, then NULL for empty fields)."""

    def __init__(self, d, load, tmp):
        work = tempfile.mkdtemp(dir=tmp)
        os.symlink(d, os.path.join(work, "tables"))
        p = subprocess.run(["sqlite3", "tables.db"], input=load, cwd=work, capture_output=True,
                           text=True, timeout=120)
        check(p.returncode == 0 and not p.stderr.strip(),
              f"sqlite3 runs load_sqlite_shell: {p.returncode} {p.stderr[-400:]}")
        self.db = sqlite3.connect(os.path.join(work, "tables.db"))


DUCK_JS = r"""
const { DuckDBInstance } = require('@duckdb/node-api');
const fs = require('fs');
const [load, sql] = [fs.readFileSync(process.argv[2], 'utf8'), fs.readFileSync(0, 'utf8')];
(async () => {
  const i = await DuckDBInstance.create(':memory:'); const c = await i.connect();
  await c.run(load);
  const r = await c.runAndReadAll(sql);
  console.log(JSON.stringify(r.getRowObjectsJson()));
})().catch(e => { console.error(String(e)); process.exit(1); });
"""


def duck_env():
    env = dict(os.environ)
    if os.environ.get("GMT_DUCKDB_NODE_MODULES"):
        env["NODE_PATH"] = os.environ["GMT_DUCKDB_NODE_MODULES"]
    try:
        p = subprocess.run(["node", "-e", "require('@duckdb/node-api')"], env=env,
                           capture_output=True)
    except OSError:
        return None
    return env if p.returncode == 0 else None


class Duck:
    """docs/sql.md's load_duckdb views over the files of @d, then the query."""

    def __init__(self, d, env, tmp, load):
        self.env = env
        self.js = os.path.join(tmp, "duck.cjs")
        open(self.js, "w").write(DUCK_JS)
        self.load = os.path.join(d, "load.sql")
        open(self.load, "w").write(load.replace("'tables/", f"'{d}/"))

    def query(self, sql):
        p = subprocess.run(["node", self.js, self.load], input=sql, text=True, capture_output=True,
                           env=self.env)
        if not check(p.returncode == 0, f"duckdb: {p.stderr[-600:]}"):
            return []
        rows = json.loads(p.stdout)
        # JSON rows give big integers as strings and booleans as such: the SQLite shapes
        return [{k: (int(v) if isinstance(v, str) and re.fullmatch(r"-?\d+", v) else
                     int(v) if isinstance(v, bool) else v) for k, v in r.items()} for r in rows]


def site_texts(eng):
    return {(r["process"], r["stack"]): r["site"] for r in eng.query("SELECT * FROM sites")}


def compare_leaks(eng, qs, doc, what):
    """leaks_by_site is the program's own leaks (the report's leaked_bytes, sites less what a
    cache or a CUDA library keeps); live_at_end_by_site everything live, as leak_sites[]."""
    sites = site_texts(eng)
    for query, own in (("leaks_by_site", True), ("live_at_end_by_site", False)):
        got = {}
        for r in eng.query(qs[query]):
            k = (r["process"], r["site"], r["api"], r["driver"], r["kind"])
            b, a = got.get(k, (0, 0))
            got[k] = (b + r["bytes"], a + r["allocations"])
        want = {}
        for g in doc["leak_sites"]:
            b, a = g["bytes"], g["allocations"]
            if own:
                if not g["at_exit"] or not g["counted"]:
                    continue
                b -= g["cached_bytes"] + g["library_bytes"]
                a -= g["cached_allocations"] + g["library_allocations"]
                if b <= 0:
                    continue
            site = sites.get((g["process"], g["stacks"][0]["stack"])) if g["stacks"] else None
            k = (g["process"], site, g["api"], g["driver"], g["kind"])
            wb, wa = want.get(k, (0, 0))
            want[k] = (wb + b, wa + a)
        check(got == want, f"{what}: {query} {got} != leak_sites {want}")
        if own:
            total = sum(b for b, _ in got.values())
            check(total == doc["summary"]["leaked_bytes"],
                  f"{what}: leaks_by_site sums to the report's leaked_bytes "
                  f"({total} != {doc['summary']['leaked_bytes']})")


def compare_peaks(eng, qs, doc, what):
    got = {(r["process"], r["device"], r["kind"]): r["peak_bytes"]
           for r in eng.query(qs["peak_by_kind"])}
    n = 0
    for p in doc["peaks"]:
        for kind, k in p["kinds"].items():
            if kind in ("pool_reserve", "graph_reserve") or not k["allocations"]:
                continue
            n += 1
            check(got.get((p["process"], p["device"], kind)) == k["peak_bytes"],
                  f"{what}: peak of {kind} on {p['device']}: sql "
                  f"{got.get((p['process'], p['device'], kind))} != {k['peak_bytes']}")
    return n


def compare_growth(eng, qs, doc, what):
    got = {(r["process"], r["device"], r["kind"], r["api"], r["stack"]): r
           for r in eng.query(qs["growth"])}
    n = 0
    for g in doc.get("growth", []):
        if g["basis"] != "markers" or g.get("first_label") is None:
            continue
        n += 1
        r = got.get((g["process"], g["device"], g["kind"], g["api"], g["stack"]))
        if check(r is not None, f"{what}: growth site {g['stack']} found by SQL"):
            check((r["first_bytes"], r["last_bytes"]) == (g["first_bytes"], g["last_bytes"]),
                  f"{what}: growth {r} != {g}")
    return n


def compare_tensors(eng, qs, doc, what):
    t = [p["tensors"] for p in doc["processes"] if "tensors" in p]
    if not t:
        return 0
    rows = eng.query(qs["live_tensors_at_end"])
    live = sum(r["requested_bytes"] or 0 for r in rows)
    want = sum(s.get("requested", 0) for s in t[0].get("live_at_exit", []))
    check(live == want, f"{what}: live tensors' requested bytes {live} != live_at_exit {want}")
    by_site = eng.query(qs["tensor_bytes_by_site"])
    check(sum(r["live_at_end"] for r in by_site) == live,
          f"{what}: tensor_bytes_by_site live_at_end adds up to the live tensors")
    completed = eng.query("SELECT device, count(*) AS n, sum(requested_bytes) AS b FROM blocks "
                          "WHERE free_completed_seq IS NULL GROUP BY device")
    for r in completed:
        d = [x for x in t[0]["devices"] if x["device"] == r["device"]]
        if check(d, f"{what}: device {r['device']} in tensors.devices"):
            check((r["n"], r["b"]) == (d[0]["end"]["blocks"], d[0]["end"]["requested"]),
                  f"{what}: blocks not back in the cache {r} != end {d[0]['end']}")
    return 1


GROW = """{"type":"header","format":"gpumemtrace","version":1,"pid":7,"start_ts":1000,"coverage":"full"}
{"type":"stack","id":1,"frames":["0x401000"]}
{"type":"stack","id":2,"frames":["0x402000"]}
"""


def grow_trace(path):
    lines = [GROW]
    seq = 1
    for step in range(5):
        for sid, ptr in ((1, 0x10000000 + step * 0x100000), (2, 0x20000000)):
            lines.append(json.dumps({"type": "event", "seq": seq, "ts": 2000 + seq, "op": "alloc",
                                     "api": "cudaMalloc", "kind": "device", "device": 0,
                                     "ptr": hex(ptr), "size": 1 << 20, "result": 0,
                                     "stack": sid}) + "\n")
            seq += 1
        lines.append(json.dumps({"type": "event", "seq": seq, "ts": 2000 + seq, "op": "free",
                                 "api": "cudaFree", "kind": "device", "device": 0,
                                 "ptr": hex(0x20000000), "result": 0}) + "\n")
        seq += 1
        lines.append(json.dumps({"type": "marker", "seq": seq, "ts": 2000 + seq, "tid": 7,
                                 "label": f"step {step}"}) + "\n")
        seq += 1
    lines.append(json.dumps({"type": "trailer", "ts": 9000, "events": seq - 1, "dropped": 0,
                             "reason": "exit"}) + "\n")
    open(path, "w").write("".join(lines))


def inputs(root, tmp):
    g = os.path.join(root, "tests", "golden", "traces")
    fx = os.path.join(root, "tests", "fixtures", "h200-torch2.11", "tensors")
    grow = os.path.join(tmp, "grow.jsonl")
    grow_trace(grow)
    sets = [[os.path.join(g, n)] for n in sorted(os.listdir(g)) if n.endswith(".jsonl")
            and n not in ("empty.jsonl", "version2.jsonl", "garbled.jsonl")]
    sets.append([os.path.join(g, "multi")])
    sets.append([grow])
    sets += [[os.path.join(fx, n)] for n in ("blocks-default.jsonl", "blocks-expandable.jsonl",
                                             "frag.jsonl", "growth.jsonl")]
    return sets


def case_queries(exe, root, engine):
    qs = queries(root)
    check(len(qs) >= 7, f"named queries in docs/sql.md: {sorted(qs)}")
    totals = {"peaks": 0, "growth": 0, "tensors": 0}
    with tempfile.TemporaryDirectory() as tmp:
        env = duck_env() if engine == "duckdb" else None
        if engine == "duckdb" and env is None:
            print("SKIP: DuckDB (@duckdb/node-api) is not installed; set GMT_DUCKDB_NODE_MODULES")
            sys.exit(77)
        for i, ins in enumerate(inputs(root, tmp)):
            d = os.path.join(tmp, f"t{i}")
            export(exe, ins, d)
            doc = report_json(exe, ins)
            eng = Duck(d, env, tmp, qs["load_duckdb"]) if engine == "duckdb" else Sqlite(d)
            what = f"{engine} {os.path.basename(ins[0])}"
            compare_leaks(eng, qs, doc, what)
            totals["peaks"] += compare_peaks(eng, qs, doc, what)
            totals["growth"] += compare_growth(eng, qs, doc, what)
            totals["tensors"] += compare_tensors(eng, qs, doc, what)
            for name in ("failures_with_stacks", "short_lived"):
                eng.query(qs[name])  # runs (no figure of the report to compare with)
            if engine == "sqlite" and shutil.which("sqlite3"):
                shell = SqliteShell(d, qs["load_sqlite_shell"], tmp)
                for name, sql in qs.items():
                    if name.startswith("load_"):
                        continue
                    a, b = norm(eng.query(sql)), norm(shell.query(sql))
                    check(a == b, f"{what}: {name} through the sqlite3 shell's import: "
                                  f"{b[:3]} != {a[:3]}")
    check(totals["peaks"] >= 10 and totals["growth"] >= 1 and totals["tensors"] >= 3,
          f"the comparisons covered something: {totals}")
    print(f"{engine}: compared {totals}")


def case_escape(exe, root):
    name = 'lo,ss "x"\nnext\x1b[31mred'
    trace = "".join(json.dumps(x) + "\n" for x in [
        {"type": "header", "format": "gpumemtrace", "version": 1, "pid": 1, "start_ts": 0,
         "argv": ["a,b", "q\"\n\x1b]0;t\x07"]},
        {"type": "pycode", "id": 1, "file": "/w/tr,ain\".py", "name": name, "qualname": name,
         "firstlineno": 3, "python": "3.11", "linetable": "ef00"},
        {"type": "stack", "id": 1, "frames": ["0x401000"], "py": [[1, 0, 1]]},
        {"type": "event", "seq": 1, "ts": 10, "op": "alloc", "api": "cudaMalloc",
         "kind": "device", "device": 0, "ptr": "0x1000", "size": 4096, "result": 0, "stack": 1},
        {"type": "marker", "seq": 2, "ts": 11, "tid": 1, "label": "ep,\"1\"\n\x1b"},
        {"type": "trailer", "ts": 20, "events": 2, "dropped": 0, "reason": "exit"}])
    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, "esc.jsonl")
        open(t, "w").write(trace)
        d = os.path.join(tmp, "out")
        export(exe, [t], d)
        for n in TABLES:
            raw = open(os.path.join(d, n + ".csv"), "rb").read()
            bad = [b for b in set(raw) if b < 0x20 and b not in (0x0a, 0x0d) or b == 0x7f]
            check(not bad, f"{n}.csv: raw control bytes {bad}")
            if n != "sites":
                check(b"\n" not in raw.replace(b"\r\n", b""), f"{n}.csv: a bare line break")
        rows = {n: list(csv.DictReader(open(os.path.join(d, n + ".csv"), newline="")))
                for n in TABLES}
        site = rows["allocations"][0]["site"]
        check("lo,ss \"x\"\\nnext\\033[31mred" in site, f"site escaped and read back: {site!r}")
        check(rows["sites"][0]["site"] == site, "sites.csv names the same site")
        check(rows["markers"][0]["label"] == 'ep,"1"\\n\\033', f"label {rows['markers'][0]}")
        check(rows["processes"][0]["argv"] == 'a,b q"\\n\\033]0;t\\a',
              f"argv {rows['processes'][0]['argv']!r}")
        raw = open(os.path.join(d, "allocations.csv"), "rb").read().decode()
        check('"' + site.replace('"', '""') + '"' in raw, "the site field is quoted, quotes doubled")
    # usage: csv needs -o DIR, and takes no range
    p = run(exe, "report", "--format", "csv", os.path.join(root, "tests/golden/traces/basic.jsonl"))
    check(p.returncode == 2 and b"-o DIR" in p.stderr, f"csv without -o: {p.returncode}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("case", choices=["queries", "duckdb", "escape"])
    a = ap.parse_args()
    if a.case == "escape":
        case_escape(a.exe, a.root)
    else:
        case_queries(a.exe, a.root, "duckdb" if a.case == "duckdb" else "sqlite")
    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
