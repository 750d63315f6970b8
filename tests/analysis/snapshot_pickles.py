#!/usr/bin/env python3
"""PyTorch memory snapshot pickles built here, not by torch: shaped as torch's _snapshot() makes
them (segments with their blocks, device_traces of entries, frames lists and frame dicts shared
as torch's py_symbolize shares them), and hostile ones written opcode by opcode.

    snapshot_pickles.py KIND OUT [N]

  legit N        N trace entries and the segments and blocks they leave (about 60 bytes a
                 block, 100 an entry): for the size figures of docs/performance.md
  descending N   one segment holding N live blocks listed in descending address order
  dag N          a 6 KB-class pickle whose memo references repeat: N references to one
                 segment dict, N references to one block list, N to one entries list, N to one
                 entry, N frames to one frame dict holding N keys (Python reads it in
                 milliseconds; expanded as a tree it is N^3 blocks)
  bigdict N      N / 50 entries, each with its own frames list of 200 references to one frame
                 dict of N keys
  foreign N      N entries of our export's "[not PyTorch's] API" kind, each with its own API name
  dupsegs N      N segments all of one address, each with N blocks (a tree of N^2 blocks,
                 written out: no memo sharing; overlapping segments)
  time           two entries whose times differ by more than int64 can hold (UBSan: signed
                 overflow in the converter)
  noframes       an entry whose "frames" is an int (UBSan: NULL + 0 in the converter)
"""
import pickle
import struct
import sys

KB = 1024
MB = 1024 * KB


def frames_pool(nstacks, depth):
    """Frame dicts shared by frames lists, as torch's py_symbolize shares them."""
    frames = [{"name": f"fn{i}", "filename": f"/src/model/layer{i % 17}.py", "line": 10 + i}
              for i in range(nstacks + depth)]
    return [frames[s:s + depth] for s in range(nstacks)]


def legit(n):
    stacks = frames_pool(256, 12)
    seg_size = 20 * MB
    blk = 512 * KB
    per_seg = seg_size // blk
    nblocks = max(1, n // 2)
    nsegs = (nblocks + per_seg - 1) // per_seg
    base = 0x7F0000000000
    segments = []
    for s in range(nsegs):
        addr = base + s * seg_size
        blocks = []
        for b in range(per_seg):
            i = s * per_seg + b
            live = i < nblocks
            blocks.append({"address": addr + b * blk, "size": blk,
                           "requested_size": blk - 8 if live else 0,
                           "state": "active_allocated" if live else "inactive",
                           "frames": stacks[i % len(stacks)] if live else []})
        segments.append({"device": 0, "address": addr, "total_size": seg_size,
                         "allocated_size": 0, "active_size": 0, "requested_size": 0,
                         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": stacks[s % len(stacks)],
                         "blocks": blocks})
    # the history: the segments' allocs, then for every live block an alloc, and pairs of
    # alloc/free_requested/free_completed of temporaries in the remaining entries
    entries = []
    t = 1_700_000_000_000_000
    for s in range(nsegs):
        entries.append({"action": "segment_alloc", "addr": base + s * seg_size,
                        "size": seg_size, "stream": 0, "time_us": t,
                        "frames": stacks[s % len(stacks)]})
        t += 1
    for i in range(nblocks):
        s, b = divmod(i, per_seg)
        entries.append({"action": "alloc", "addr": base + s * seg_size + b * blk,
                        "size": blk - 8, "stream": 0, "time_us": t,
                        "frames": stacks[i % len(stacks)]})
        t += 1
    tmp_addr = base + nsegs * seg_size
    segments.append({"device": 0, "address": tmp_addr, "total_size": seg_size,
                     "allocated_size": 0, "active_size": 0, "requested_size": 0,
                     "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                     "is_expandable": False, "frames": stacks[0], "blocks": []})
    entries.insert(0, {"action": "segment_alloc", "addr": tmp_addr, "size": seg_size,
                       "stream": 0, "time_us": t - 10**6, "frames": stacks[0]})
    i = 0
    while len(entries) < n:
        a = tmp_addr + (i % per_seg) * blk
        for action in ("alloc", "free_requested", "free_completed"):
            entries.append({"action": action, "addr": a, "size": blk - 8, "stream": 0,
                            "time_us": t, "frames": stacks[i % len(stacks)]})
        t += 1
        i += 1
    return {"segments": segments, "device_traces": [entries],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}, "external_annotations": []}


def descending(n):
    """Written opcode by opcode (a million blocks in a second, no Python dicts)."""
    blk = 512
    base = 0x7F0000000000
    o, keys = Ops(), {}
    o.op(b"}(")
    o.key("segments", keys)
    o.op(b"](}(")
    for k, v in (("device", 0), ("address", base), ("total_size", n * blk), ("stream", 0)):
        o.key(k, keys)
        o.i(v)
    o.key("blocks", keys)
    o.op(b"](")
    for i in reversed(range(n)):
        o.op(b"}(")
        o.key("address", keys)
        o.i(base + i * blk)
        o.key("size", keys)
        o.i(blk)
        o.key("requested_size", keys)
        o.i(blk)
        o.key("state", keys)
        o.key("active_allocated", keys)
        o.op(b"u")
        if i % 1000 == 0:  # APPENDS in batches, as Python writes them
            o.op(b"e(")
    o.op(b"e")
    o.op(b"u")  # the segment
    o.op(b"e")  # segments
    o.key("device_traces", keys)
    o.op(b"](]e")
    o.op(b"u")
    return o.stop()


# --- opcode by opcode ----------------------------------------------------------------------------

class Ops:
    """A pickle written by hand: memo keys chosen here, so references can repeat."""

    def __init__(self):
        self.b = bytearray(b"\x80\x04")
        self.memo = 0

    def put(self):  # BINPUT/LONG_BINPUT the top of the stack; its key
        k = self.memo
        self.memo += 1
        self.b += b"q" + bytes([k]) if k < 256 else b"r" + struct.pack("<I", k)
        return k

    def get(self, k):
        self.b += b"h" + bytes([k]) if k < 256 else b"j" + struct.pack("<I", k)

    def s(self, text):
        raw = text.encode()
        self.b += b"\x8c" + bytes([len(raw)]) + raw

    def i(self, v):
        if 0 <= v < 256:
            self.b += b"K" + bytes([v])
        elif -2**31 <= v < 2**31:
            self.b += b"J" + struct.pack("<i", v)
        else:
            self.b += b"\x8a\x08" + struct.pack("<q", v)

    def key(self, name, cache):  # a str key memoized once
        if name in cache:
            self.get(cache[name])
        else:
            self.s(name)
            cache[name] = self.put()

    def op(self, raw):
        self.b += raw

    def stop(self):
        self.b += b"."
        return bytes(self.b)


def dag(n):
    o, keys = Ops(), {}
    o.op(b"}(")  # root dict, MARK
    # a frame dict of n keys (memo: "name", "filename", "line" come last)
    o.op(b"}(")
    o.s("x")
    kx = o.put()
    o.i(1)
    one = o.put()
    for _ in range(n):
        o.get(kx)
        o.get(one)
    for name, val in (("name", "f"), ("filename", "/a.py"), ("line", 7)):
        o.key(name, keys)
        o.s(val) if isinstance(val, str) else o.i(val)
    o.op(b"u")
    frame = o.put()
    o.op(b"0")  # POP: kept in the memo only
    # a frames list of n references to that frame
    o.op(b"](")
    for _ in range(n):
        o.get(frame)
    o.op(b"e")
    frames = o.put()
    o.op(b"0")
    # one block, n references to it in one blocks list
    o.op(b"}(")
    for k, v in (("address", 0x10000), ("size", 512), ("requested_size", 512)):
        o.key(k, keys)
        o.i(v)
    o.key("state", keys)
    o.s("active_allocated")
    o.key("frames", keys)
    o.get(frames)
    o.op(b"u")
    block = o.put()
    o.op(b"0](")
    for _ in range(n):
        o.get(block)
    o.op(b"e")
    blocks = o.put()
    o.op(b"0")
    # one segment holding them, n references to it
    o.op(b"}(")
    for k, v in (("device", 0), ("address", 0x10000), ("total_size", 1 << 20), ("stream", 0)):
        o.key(k, keys)
        o.i(v)
    o.key("blocks", keys)
    o.get(blocks)
    o.op(b"u")
    seg = o.put()
    o.op(b"0")
    o.key("segments", keys)
    o.op(b"](")
    for _ in range(n):
        o.get(seg)
    o.op(b"e")
    # one entry, n references in one list, n references to that list
    o.key("device_traces", keys)
    o.op(b"}(")
    o.key("action", keys)
    o.s("alloc")
    for k, v in (("addr", 0x10000), ("size", 512), ("stream", 0), ("time_us", 5)):
        o.key(k, keys)
        o.i(v)
    o.key("frames", keys)
    o.get(frames)
    o.op(b"u")
    entry = o.put()
    o.op(b"0](")
    for _ in range(n):
        o.get(entry)
    o.op(b"e")
    elist = o.put()
    o.op(b"0](")
    for _ in range(n):
        o.get(elist)
    o.op(b"e")
    o.op(b"u")  # SETITEMS of the root
    return o.stop()


def bigdict(n):
    """One frame dict of n keys, referenced by the frames of n // 50 entries, each with its own
    frames list of 200 references: every frame looked up in a dict of n keys."""
    o, keys = Ops(), {}
    o.op(b"}(")  # the root, MARK
    o.op(b"}(")  # the frame dict
    o.s("x")
    kx = o.put()
    o.get(kx)  # the first pair: "x": "x"
    for _ in range(n - 1):
        o.get(kx)
        o.get(kx)
    o.op(b"u")
    frame = o.put()
    o.op(b"0")  # kept in the memo only
    o.key("segments", keys)
    o.op(b"]")
    o.key("device_traces", keys)
    o.op(b"](](")
    for i in range(n // 50):
        o.op(b"}(")
        o.key("action", keys)
        o.key("alloc", keys)
        for k, v in (("addr", 0x10000 + 512 * i), ("size", 512), ("time_us", i)):
            o.key(k, keys)
            o.i(v)
        o.key("frames", keys)
        o.op(b"](")
        for _ in range(200):
            o.get(frame)
        o.op(b"e")
        o.op(b"u")
    o.op(b"e")  # entries
    o.op(b"e")  # device_traces
    o.op(b"u")  # root
    return o.stop()


def foreign(n):
    entries = [{"action": "alloc", "addr": 0x10000 + 512 * i, "size": 512, "stream": 0,
                "time_us": i, "frames": [{"name": f"[not PyTorch's] api{i}", "filename": "",
                                          "line": 0}]} for i in range(n)]
    return {"segments": [], "device_traces": [entries]}


def dupsegs(n):
    blocks = lambda: [{"address": 0x10000 + 512 * i, "size": 512, "state": "active_allocated"}
                      for i in range(n)]
    return {"segments": [{"address": 0x10000, "total_size": 512 * n, "blocks": blocks()}
                         for _ in range(n)],
            "device_traces": [[]]}


def time_overflow():
    e = {"action": "alloc", "addr": 0x10000, "size": 512, "stream": 0}
    return {"segments": [], "device_traces": [[dict(e, time_us=-2**62 - 5),
                                               dict(e, addr=0x20000, time_us=2**62 + 5)]]}


def noframes():
    return {"segments": [], "device_traces": [[{"action": "alloc", "addr": 0x10000, "size": 512,
                                                "time_us": 1, "frames": 5}]]}


def build(kind, n=None):
    if kind == "dag":
        return dag(n or 700)
    if kind == "bigdict":
        return bigdict(n or 20000)
    if kind == "descending":
        return descending(n or 200000)
    data = {"legit": lambda: legit(n or 100000), "foreign": lambda: foreign(n or 20000), "dupsegs": lambda: dupsegs(n or 1000),
            "time": time_overflow, "noframes": noframes}[kind]()
    return pickle.dumps(data, protocol=4)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else None
    data = build(kind, n)
    with open(out, "wb") as f:
        f.write(data)
    print(f"{out}: {len(data)} bytes")


if __name__ == "__main__":
    main()
