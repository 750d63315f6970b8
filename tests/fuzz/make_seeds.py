#!/usr/bin/env python3
"""Write the hand-made seeds of the trace fuzzer into tests/fuzz/corpus/ (seed-*.jsonl) and copy
the golden traces (golden-*.jsonl). Run once after changing the list; the files are committed.

    python3 tests/fuzz/make_seeds.py
"""
import glob
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
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
    "only-header": lines(HEADER),
    "not-json": b"\x00\x01\x02 hello\n{]\n[1,2,3]\n\"type\"\nnull\n",
    "no-newline-at-all": HEADER.encode(),
}


def main():
    os.makedirs(CORPUS, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(CORPUS, "seed-" + name + ".jsonl"), "wb") as f:
            f.write(data)
    for path in glob.glob(os.path.join(GOLDEN, "**", "*.jsonl"), recursive=True):
        rel = os.path.relpath(path, GOLDEN).replace(os.sep, "-")
        shutil.copyfile(path, os.path.join(CORPUS, "golden-" + rel))


main()
