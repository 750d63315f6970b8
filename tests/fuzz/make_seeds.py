#!/usr/bin/env python3
"""Write the hand-made seeds of the fuzz targets into tests/fuzz/corpus/<target>/ (seed-*) and
copy what the repository has of each kind there (golden-*: the golden traces; fixture-*: the
H200 snapshot pickles). Run once after changing the lists; the files are committed. Needs the
`zstd` and `gzip` commands (the compressed target's seeds).

    python3 tests/fuzz/make_seeds.py
"""
import glob
import gzip
import json
import os
import pickle
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CORPORA = os.path.join(HERE, "corpus")
CORPUS = os.path.join(CORPORA, "trace")
GOLDEN = os.path.join(HERE, "..", "golden", "traces")

HEADER = ('{"type":"header","format":"gpumemtrace","version":1,"tracer":"0.1.0","pid":7,"ppid":1,'
          '"host":"h","argv":["python3","t.py"],"start_ts":1000,"start_unix_ns":1,"rank":null,'
          '"coverage":"full","capture":["cupti"],"options":{"ring_slots":1024,"flush_ms":100,'
          '"snapshot_ms":1000},"stacks":{"native":true,"python":"3.12","depth":64}}')
MODS = ('{"type":"modules","seq":0,"modules":[{"path":"/nonexistent/fuzz/python3","base":"0x5555000'
        '00000","build_id":"00","segments":[[0,65536]]}]}')


def ev(seq, op="alloc", ptr="0x7f0000000000", size=4096, stack=0, api="cudaMalloc", kind="device",
       extra=""):
    return ('{"type":"event","seq":%d,"ts":%d,"tid":7,"op":"%s","api":"%s","kind":"%s","device":0,'
            '"stream":"0x0","ptr":"%s","size":%s,"result":0,"stack":%d%s}'
            % (seq, 1000 + seq, op, api, kind, ptr, size, stack, extra))


TRAILER = '{"type":"trailer","ts":99999,"events":3,"dropped":0,"reason":"exit"}'


def lines(*ls):
    return ("\n".join(ls) + "\n").encode()


SEEDS = {
    # a last line without its newline, and one cut in the middle of a string
    "torn": lines(HEADER, ev(1)) + b'{"type":"event","seq":2,"op":"fr',
    "torn-mid-string": lines(HEADER, ev(1), '{"type":"marker","seq":2,"label":"ab') + b"\n",
    # numbers JSON allows but no C integer holds
    "huge-numbers": lines(HEADER, ev(1, size="18446744073709551616"),
                          ev(2, size="1e308"), ev(3, size="-1"),
                          ev(4, ptr="0xffffffffffffffffffff"),
                          '{"type":"event","seq":99999999999999999999999,"ts":-5,"tid":1e9,'
                          '"op":"alloc","api":"cudaMalloc","kind":"device","device":2147483648,'
                          '"stream":"0x0","ptr":"0x10","size":18446744073709551615,"result":0,'
                          '"stack":4294967296}',
                          ev(5, op="free", size=0), TRAILER),
    # deep nesting in a value the reader skips and in one it reads
    "deep-nesting": lines(HEADER, '{"type":"event","x":' + "[" * 5000 + "]" * 5000 + '}',
                          '{"type":"stack","id":1,"frames":' + "[" * 3000 + "]" * 3000 + '}',
                          ev(1), TRAILER),
    # invalid UTF-8 in keys and values, a NUL inside a string, overlong encodings
    "bad-utf8": lines(HEADER).replace(b'"t.py"', b'"t\xff\xfe.py"')
    + b'{"type":"marker","seq":1,"ts":2,"tid":7,"label":"\xc0\xafx\xed\xa0\x80"}\n'
    + b'{"type":"marker","seq":2,"ts":3,"tid":7,"label":"a\\u0000b"}\n'
    + b'{"type":"marker","seq":3,"ts":4,"tid":7,"label":"\\ud800"}\n'
    + b'{"ty\x80pe":"event"}\n' + lines(ev(4), TRAILER),
    # one key twice on a line, two headers, two trailers
    "duplicate-keys": lines('{"type":"header","type":"event",' + HEADER[len('{"type":"header",'):],
                            HEADER,
                            ev(1).replace('"size":4096', '"size":4096,"size":"big","ptr":null'),
                            ev(2, extra=',"seq":1,"op":"free"'), TRAILER, TRAILER),
    # events naming stacks and code objects that were never defined or are out of range
    "stack-ids": lines(HEADER, MODS,
                       '{"type":"pycode","id":1,"file":"t.py","name":"f","qualname":"f",'
                       '"firstlineno":1,"python":"3.12","linetable":"8001"}',
                       '{"type":"stack","id":1,"frames":["0x555500001000"],"py":[[1,0,1],[4294967295,99,1],[0,0,0]]}',
                       '{"type":"stack","id":0,"frames":["0x1"]}',
                       '{"type":"stack","id":4294967295,"frames":[]}',
                       '{"type":"stack","id":-3,"frames":["nothex"]}',
                       ev(1, stack=1), ev(2, ptr="0x7f0000100000", stack=2),
                       ev(3, ptr="0x7f0000200000", stack=4294967295),
                       ev(4, ptr="0x7f0000300000", stack=99999999), TRAILER),
    # line tables that are garbage for each version's decoder
    "pycode-garbage": lines(HEADER, MODS,
                            '{"type":"pycode","id":1,"file":"a.py","name":"a","qualname":"a","firstlineno":1,"python":"3.10","linetable":"ff7f80ff7f80"}',
                            '{"type":"pycode","id":2,"file":"b.py","name":"b","qualname":"b","firstlineno":-2147483648,"python":"3.11","linetable":"f8ffffffffffffffffff"}',
                            '{"type":"pycode","id":3,"file":"c.py","name":"c","qualname":"c","firstlineno":2147483647,"python":"3.12","linetable":"' + "bf" * 200 + '"}',
                            '{"type":"pycode","id":4,"file":"d.py","name":"d","qualname":"d","firstlineno":5,"python":"3.13","linetable":"e"}',
                            '{"type":"pycode","id":5,"file":"e.py","name":"e","qualname":"e","firstlineno":5,"python":"2.7","linetable":"zz"}',
                            '{"type":"pycode","id":6,"file":"f.py","name":"f","qualname":"f","firstlineno":5,"python":"3.12","linetable":"80"}',
                            '{"type":"stack","id":1,"frames":["0x555500001000"],"py":[[1,4000000000,1],[2,7,1],[3,1,0],[4,2,1],[5,0,1],[6,999,1]]}',
                            ev(1, stack=1), TRAILER),
    # markers and ranges (docs/trace-format.md "marker"), balanced and not
    "markers": lines(HEADER,
                     '{"type":"marker","seq":1,"ts":1001,"tid":7,"label":"start"}',
                     '{"type":"marker","seq":2,"ts":1002,"tid":7,"label":"epoch","range":"push","depth":1}',
                     ev(3),
                     '{"type":"marker","seq":4,"ts":1004,"tid":7,"label":"step","range":"push","depth":2}',
                     ev(5, op="free", size=0),
                     '{"type":"marker","seq":6,"ts":1006,"tid":7,"label":"step","range":"pop","depth":2}',
                     '{"type":"marker","seq":7,"ts":1007,"tid":7,"label":"epoch","range":"pop","depth":1}',
                     '{"type":"marker","seq":8,"ts":1008,"tid":7,"label":"","range":"pop","depth":0}',
                     '{"type":"marker","seq":9,"ts":1009,"tid":8,"label":"x","range":"sideways","depth":-1}',
                     '{"type":"marker","seq":10,"label":7,"range":null}',
                     TRAILER),
    # frees before allocations, the same address twice, seq going backwards
    "replay-order": lines(HEADER, ev(5, op="free", size=0), ev(3), ev(3), ev(1, size=0),
                          ev(2, op="free", ptr="0x0", size=0), TRAILER),
    # a bounded trace's elided lines (format/elided.h), good and bad: bins out of range, wrong
    # shapes, reading kinds, huge counts, an escape in a kind, a stack never defined
    "elided": lines(HEADER.replace('"snapshot_ms":1000', '"snapshot_ms":1000,"bounded":true,"bucket_ms":5'),
                    ev(1),
                    '{"type":"elided","seq":2,"ts":1002,"api":"cudaMalloc","driver":null,"kind":"device","device":0,"allocations":3,"bytes":300,"temporaries":1,"temporary_bytes":100,"sizes":[[6,3,300]],"lifetimes":[[10,3]],"stack":0}',
                    '{"type":"elided","seq":3,"ts":1003,"api":"cudaMalloc","kind":"device","device":0,"allocations":9223372036854775807,"bytes":9223372036854775807,"sizes":[[63,9223372036854775807,9223372036854775807],[0,1,1]],"lifetimes":[[63,9223372036854775807]],"stack":99999}',
                    '{"type":"elided","seq":4,"ts":1004,"api":"cudaMalloc","kind":"device","device":0,"allocations":1,"bytes":1,"sizes":[[64,1,1]],"stack":0}',
                    '{"type":"elided","seq":5,"ts":1005,"api":"cudaMalloc","kind":"device","device":0,"allocations":1,"bytes":1,"sizes":[[-1,1,1]],"lifetimes":[[1]],"stack":0}',
                    '{"type":"elided","seq":6,"ts":1006,"api":"cudaMalloc","kind":"\\u001b[2J","device":0,"allocations":1,"bytes":1}',
                    '{"type":"elided","seq":7,"ts":1007,"api":"cudaMalloc","kind":"nvml_used","device":0,"allocations":1,"bytes":1}',
                    '{"type":"elided","seq":8,"ts":1008,"api":"cudaMalloc","kind":"pinned","device":-1,"allocations":2,"bytes":8,"sizes":"x"}',
                    '{"type":"elided","seq":9,"ts":1009,"kind":"device","device":0,"allocations":1,"bytes":1,"sizes":[{"a":1}]}',
                    ev(10, op="free", size=0),
                    '{"type":"trailer","ts":99999,"events":2,"dropped":0,"reason":"exit","elided":9223372036854775807,"late":1,"buckets":3}'),
    # a bounded trace's elided_blocks lines (PyTorch blocks left out, format/elided.h) among
    # block lines, good and bad: a device no CUDA ordinal, huge counts, wrong types, a stack
    # never defined, keys missing
    "elided-blocks": lines(HEADER.replace('"snapshot_ms":1000', '"snapshot_ms":1000,"bounded":true,"bucket_ms":5'),
                           '{"type":"block","seq":1,"ts":1001,"tid":7,"action":"segment_alloc","device":0,"ptr":"0x7f0000000000","size":2097152,"stream":"0x0","pool":[0,0]}',
                           '{"type":"block","seq":2,"ts":1002,"tid":7,"action":"alloc","device":0,"ptr":"0x7f0000000000","size":1000,"stream":"0x0","pool":[0,0],"stack":0}',
                           '{"type":"elided_blocks","seq":5,"ts":1005,"device":0,"allocations":3,"bytes":3072,"stack":0}',
                           '{"type":"elided_blocks","seq":6,"ts":1006,"device":0,"allocations":18446744073709551615,"bytes":18446744073709551615,"stack":99999}',
                           '{"type":"elided_blocks","seq":7,"ts":1007,"device":64,"allocations":1,"bytes":512,"stack":0}',
                           '{"type":"elided_blocks","seq":8,"ts":1008,"device":-1,"allocations":1,"bytes":512}',
                           '{"type":"elided_blocks","seq":9,"ts":1009,"device":"0","allocations":1,"bytes":512}',
                           '{"type":"elided_blocks","seq":10,"ts":1010,"device":0,"allocations":-1,"bytes":512}',
                           '{"type":"elided_blocks","seq":11,"ts":1011,"device":0,"bytes":512}',
                           '{"type":"elided_blocks","seq":12,"ts":1012,"device":0,"allocations":1,"bytes":512,"stack":4294967296}',
                           '{"type":"elided_blocks","ts":1013,"device":0,"allocations":1,"bytes":512}',
                           '{"type":"block","seq":14,"ts":1014,"tid":7,"action":"free_requested","device":0,"ptr":"0x7f0000000000","size":0,"stream":"0x0","pool":[0,0]}',
                           '{"type":"block","seq":15,"ts":1015,"tid":7,"action":"free_completed","device":0,"ptr":"0x7f0000000000","size":0,"stream":"0x0","pool":[0,0]}',
                           '{"type":"trailer","ts":99999,"events":4,"dropped":0,"reason":"exit","elided":30,"late":0,"buckets":1}'),
    "only-header": lines(HEADER),
    "not-json": b"\x00\x01\x02 hello\n{]\n[1,2,3]\n\"type\"\nnull\n",
    "no-newline-at-all": HEADER.encode(),
}


def write(target, name, data):
    d = os.path.join(CORPORA, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def goldens():
    for path in sorted(glob.glob(os.path.join(GOLDEN, "**", "*.jsonl"), recursive=True)):
        with open(path, "rb") as f:
            yield os.path.relpath(path, GOLDEN).replace(os.sep, "-"), f.read()


def line_seeds():
    """target line: each kind of line once per shape the golden traces and seeds have."""
    seen = set()
    sources = [data for _, data in goldens()] + list(SEEDS.values())
    n = 0
    for data in sources:
        for line in data.split(b"\n"):
            if not line or len(line) > 4096 or line in seen or line.startswith(b'{"type":"header"'):
                continue
            seen.add(line)
            # one per (type, first keys) shape is plenty: libFuzzer finds the rest
            shape = line[:40]
            if shape in seen:
                continue
            seen.add(shape)
            write("line", "seed-%03d.jsonl" % n, line)
            n += 1
    # several lines at once, and a stack the fast path must decline
    write("line", "seed-stack-spaces.jsonl", b'{"type":"stack", "id":1, "frames":["0x1" ,"0x2"]}')
    write("line", "seed-two-lines.jsonl", lines(ev(1), ev(2, op="free", size=0)).rstrip(b"\n"))


def snapshot(segments, traces, settings=None):
    d = {"segments": segments, "device_traces": traces}
    if settings is not None:
        d["allocator_settings"] = settings
    return d


def pickle_seeds():
    """target pickle: torch's own snapshots (the H200 fixtures) and small ones of each shape."""
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "*", "snapshots",
                                              "*.pickle"))):
        shutil.copyfile(path, os.path.join(CORPORA, "pickle", "fixture-" + os.path.basename(path)))
    frames = [{"filename": "t.py", "line": 3, "name": "f"},
              {"filename": "/x/torch/nn/linear.py", "line": 9, "name": "forward"}]
    block = {"address": 0x7f0000000000, "size": 512, "requested_size": 500,
             "state": "active_allocated", "frames": frames}
    seg = {"device": 0, "address": 0x7f0000000000, "total_size": 2097152, "allocated_size": 512,
           "active_size": 512, "requested_size": 500, "stream": 0, "segment_type": "small",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames,
           "blocks": [block, {"address": 0x7f0000000200, "size": 2097152 - 512,
                                     "state": "inactive"}]}
    trace = [{"action": "segment_alloc", "addr": 0x7f0000000000, "size": 2097152, "stream": 0,
              "time_us": 1, "frames": frames},
             {"action": "alloc", "addr": 0x7f0000000000, "size": 512, "stream": 0, "time_us": 2,
              "frames": frames},
             {"action": "free_requested", "addr": 0x7f0000000000, "size": 512, "stream": 0,
              "time_us": 3, "frames": frames},
             {"action": "free_completed", "addr": 0x7f0000000000, "size": 512, "stream": 0,
              "time_us": 4, "frames": frames},
             {"action": "oom", "addr": 0, "size": 1 << 40, "stream": 0, "time_us": 5,
              "device_free": 1024, "frames": []},
             {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 6}]
    docs = {
        "empty": snapshot([], []),
        "one-segment": snapshot([seg], [[]]),
        "history": snapshot([seg], [trace, []], {"expandable_segments": False}),
        "huge-ints": snapshot([dict(seg, address=1 << 70, total_size=-1)],
                              [[dict(trace[1], addr=-5, size=1 << 65)]]),
        "wrong-types": snapshot([{"blocks": "x"}, 7, None], [None, [3, "a"]], []),
        "no-segments": {"device_traces": []},
        "list-root": [1, 2.5, "s", b"b", None, True],
    }
    for name, doc in docs.items():
        for proto in (2, 4, 5):
            write("pickle", "seed-%s-p%d.pickle" % (name, proto), pickle.dumps(doc, protocol=proto))
    # memo references (the same list twice), and opcodes that would run code: refused
    shared = [seg]
    write("pickle", "seed-memo.pickle", pickle.dumps(snapshot(shared, [trace, trace]), protocol=4))
    write("pickle", "seed-global.pickle", b"\x80\x04cos\nsystem\n(S'true'\ntR.")
    write("pickle", "seed-truncated.pickle", pickle.dumps(docs["history"], protocol=4)[:200])


def compress(cmd, data):
    return subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True).stdout


def compressed_seeds():
    """target compressed: golden traces as zstd and gzip, cut short, several frames/members."""
    for name, data in goldens():
        if name not in ("basic.jsonl", "cupti.jsonl", "garbled.jsonl", "pool.jsonl"):
            continue
        z = compress(["zstd", "-q", "-c", "-3"], data)
        g = gzip.compress(data, mtime=0)
        base = name[:-len(".jsonl")]
        write("compressed", "golden-%s.jsonl.zst" % base, z)
        write("compressed", "golden-%s.jsonl.gz" % base, g)
        write("compressed", "seed-%s-cut.jsonl.zst" % base, z[:len(z) * 2 // 3])
        write("compressed", "seed-%s-cut.jsonl.gz" % base, g[:len(g) * 2 // 3])
    half = len(SEEDS["markers"]) // 2
    a, b = SEEDS["markers"][:half], SEEDS["markers"][half:]
    # two frames, and two members, as a writer that restarted its stream (and `cat`) leave them
    write("compressed", "seed-two-frames.jsonl.zst",
          compress(["zstd", "-q", "-c"], a) + compress(["zstd", "-q", "-c"], b))
    write("compressed", "seed-two-members.jsonl.gz", gzip.compress(a, mtime=0) + gzip.compress(b, mtime=0))
    # frames that give their size, as the tracer writes them (zstd writes an unsized frame from
    # a pipe unless told the size): only those go to util/zread's decoder threads, so the corpus
    # replay (under ASan and UBSan too, in scripts/test's sanitizer stage) runs them
    chunks = [lines(HEADER)] + [lines(*[ev(40 * f + i + 1, op="free" if i % 2 else "alloc",
                                            ptr="0x7f%010x" % ((40 * f + i // 2) << 12))
                                         for i in range(40)])
                                for f in range(16)]
    write("compressed", "seed-sized-frames.jsonl.zst",
          b"".join(compress(["zstd", "-q", "-c", "--stream-size=%d" % len(c)], c) for c in chunks))
    # a frame with its checksum, one with garbage after it, and a long run of one byte
    write("compressed", "seed-checksum.jsonl.zst", compress(["zstd", "-q", "-c", "--check"], a))
    write("compressed", "seed-trailing-garbage.jsonl.gz", gzip.compress(a, mtime=0) + b"\x1f\x8bxx")
    write("compressed", "seed-long-line.jsonl.zst",
          compress(["zstd", "-q", "-c", "-19"], lines(HEADER) + b'{"type":"marker","label":"' +
                   b"a" * 200000 + b'"}\n'))


def bounded_seeds():
    """target bounded: the body of a bounded trace (the header is the target's)."""
    body = SEEDS["elided"].split(b"\n", 1)[1]
    write("bounded", "seed-elided.jsonl", body)
    write("bounded", "seed-one-elided.jsonl", lines(
        ev(1),
        '{"type":"elided","seq":2,"ts":1002,"api":"cudaMalloc","driver":"cuMemAlloc_v2",'
        '"kind":"device","device":0,"allocations":4,"bytes":4096,"temporaries":4,'
        '"temporary_bytes":4096,"sizes":[[10,4,4096]],"lifetimes":[[3,4]],"stack":0}',
        ev(3, op="free", size=0),
        '{"type":"trailer","ts":99999,"events":2,"dropped":0,"reason":"exit","elided":4,"late":0,'
        '"buckets":1}'))
    write("bounded", "seed-no-trailer.jsonl", lines(
        '{"type":"elided","seq":1,"ts":1001,"api":"cudaMallocHost","kind":"pinned","device":-1,'
        '"allocations":1,"bytes":64,"sizes":[[6,1,64]]}'))


def suppress_seeds():
    write("suppress", "seed-every-type.supp", b"# known\nleak:^b$\nleak:no_such_function\n"
          b"peak:cuMemAlloc\ngrowth:b\n\n   leak :  model.py  \n")
    write("suppress", "seed-globs.supp", b"leak:*\npeak:?\ngrowth:^*forward*$\n"
          b"leak:c10::cuda::*::malloc\npeak:^$\nleak:**?*?**\n")
    write("suppress", "seed-bad.supp", b"leak\nfoo:bar\npeak:\ngrowth:^\n\xff\xfe:\x00\n")
    write("suppress", "seed-crlf.supp", b"leak:a\r\npeak:b\r\n")


def categories_seeds():
    write("categories", "seed-rules.txt", b"# mine\nparameter py-file */init.py\n"
          b"activation py-func ^forward\nworkspace native *cublas*\n"
          b"temporary module *libtorch*\ngradient thread autograd\n")
    write("categories", "seed-no-builtin.txt", b"no-builtin\nother native *\n")
    write("categories", "seed-bad.txt", b"parameter\nnonsense py-file x\nparameter nowhere x\n")
    write("categories", "seed-brackets.txt", b"parameter native [a-\nother py-func [!x]*\n"
          b"activation module \\*\n")


def summary_seeds():
    """Per-rank summaries (docs/multi-host.md): one well-formed rank of a job of two, and the
    ways one goes wrong. Summaries that `gpumemtrace summarize` wrote of the golden traces and of
    generated ranks sit beside them as summarized-* (made by hand, see tests/fuzz/README.md)."""
    base = {"kind": "summary", "summary_version": 1, "report_version": 1, "file": "r1.jsonl",
            "host": "node1", "pid": 101, "rank": {"rank": 1, "local_rank": 1, "world_size": 2},
            "devices": [0, 1], "start_unix_s": 1796228579.5, "end_unix_s": 1796228588.0,
            "clock_uncertainty_s": 0.25, "end_time_s": 8.5, "coverage": "full",
            "complete": False, "dropped": 3, "events": 12, "bad_lines": 1,
            "process": {"pid": 101, "host": "node1", "complete": False, "events": 12,
                        "peak_held_bytes": 3 << 20, "peak_time_s": 2.0,
                        "peak_unix_s": 1796228581.5, "first_failure_time_s": 1.0,
                        "first_failure_unix_s": 1796228580.5},
            "summary": {"processes": 1, "events": 12, "peak_held_bytes": 3 << 20,
                        "leaked_bytes": 4096, "leaked_allocations": 1,
                        "failed_allocations": 2, "cached_at_exit_bytes": 1 << 20,
                        "library_at_exit_bytes": 65536},
            "peaks": [{"device": 0, "bytes": 3 << 20, "time_s": 2.0, "unix_s": 1796228581.5,
                       "nccl_bytes": 1024,
                       "peak_sites": [{"process": 0, "device": 0, "bytes": 3 << 20,
                                       "allocations": 2, "api": "cudaMalloc", "stack": 0}]},
                      {"device": 1, "bytes": 0}],
            "nccl": {"at_peak_bytes": 1024, "at_exit_bytes": 0},
            "leak_sites": [{"bytes": 4096, "allocations": 1, "stack": 0, "api": "cudaMalloc"}],
            "failed_sites": [{"failures": 2, "bytes": 1 << 30, "stack": 0}],
            "oom": [{"time_s": 1.0, "requested": 1 << 30, "cause": "live_tensors"}],
            "growth_sites": [{"growth_bytes": 1 << 20, "stack": 0}], "tensors": None,
            "timeline": [[0.0, 0], [2.0, 3 << 20], [8.5, 4096]],
            "call_stacks": [{"id": 0, "frames": [{"function": "step", "file": "train.py",
                                                   "line": 9}]}]}

    def put(name, doc):
        write("summary", "seed-" + name + ".summary.json",
              (doc if isinstance(doc, str) else json.dumps(doc)).encode()
              if not isinstance(doc, bytes) else doc)

    put("rank1", base)
    odd = json.loads(json.dumps(base))
    odd["host"] = "evil\x1b]0;pwned\x07host"
    odd["rank"] = {"rank": "three", "local_rank": [], "world_size": None}
    odd["process"]["peak_held_bytes"] = -5
    odd["process"]["first_failure_unix_s"] = "soon"
    odd["peaks"] = [{"device": "x", "bytes": {}}, 7, None, {"device": -1, "bytes": 2 ** 64 - 1}]
    odd["summary"]["leaked_bytes"] = 2 ** 62
    odd["call_stacks"] = [{"id": 0, "frames": [{"function": "\u202e<script>", "line": -1}]}, 3]
    put("odd-values", odd)
    other = json.loads(json.dumps(base))
    other["rank"] = {"rank": 0, "local_rank": 0, "world_size": 8}
    other["start_unix_s"] = other["end_unix_s"] = 1.0
    put("other-job", other)
    same = json.loads(json.dumps(base))
    same["rank"] = {"rank": 0, "local_rank": 0, "world_size": 2}
    put("rank0-again", same)
    put("version2", dict(base, summary_version=2))
    put("foreign", {"kind": "report", "rank": 1})
    put("missing-peaks", {k: v for k, v in base.items() if k != "peaks"})
    put("truncated", json.dumps(base)[:300])
    put("duplicate-keys", '{"kind":"summary","kind":"summary","summary_version":1}')
    put("nested", '{"kind":"summary","summary_version":1,"process":' + "[" * 500 + "]" * 500 +
        "}")
    put("nan-times", json.dumps(dict(base, start_unix_s=1e308, end_unix_s=-1e308,
                                     clock_uncertainty_s=-3)))
    put("binary", b"\xef\xbb\xbf{\"kind\":\"summary\"\x00}")


def main():
    os.makedirs(CORPUS, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(CORPUS, "seed-" + name + ".jsonl"), "wb") as f:
            f.write(data)
    for rel, data in goldens():
        write("trace", "golden-" + rel, data)
    os.makedirs(os.path.join(CORPORA, "pickle"), exist_ok=True)
    line_seeds()
    pickle_seeds()
    compressed_seeds()
    bounded_seeds()
    suppress_seeds()
    categories_seeds()
    summary_seeds()


main()
