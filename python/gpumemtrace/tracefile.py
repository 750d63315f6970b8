"""Reading a gpumemtrace trace file's lines from Python: plain (`.jsonl`), compressed as the
tracer writes it by default (`.jsonl.zst`: one complete zstd frame per flush,
docs/trace-format.md) or gzip'd (`.jsonl.gz`).

    from gpumemtrace import tracefile
    for rec in tracefile.records("gpumemtrace.host.1234.jsonl.zst"):
        ...

zstd frames are decoded with libzstd.so.1 through ctypes (the library the tracer compressed with;
Python's standard library has no zstd before 3.14). A file cut by a killed process yields the
lines of its complete frames; a damaged frame raises ValueError naming the file and the byte.
`gpumemtrace report` is still the way to analyse a trace: this module is for scripts that want the
raw records (docs/trace-format.md describes them).
"""
import ctypes
import gzip
import json

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CONTENTSIZE_ERROR = (1 << 64) - 2  # ZSTD_CONTENTSIZE_UNKNOWN and _ERROR are the top two values


class Frames:
    """Complete zstd frames out of a growing byte string: feed() the bytes as they come, get the
    plain bytes of every frame they complete; a frame not yet wholly there waits for the next
    feed()."""

    def __init__(self):
        try:
            z = ctypes.CDLL("libzstd.so.1")
        except OSError as e:
            raise OSError("libzstd.so.1 cannot be loaded (%s): a .jsonl.zst trace needs it" % e)
        for name, res, args in (
                ("ZSTD_findFrameCompressedSize", ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t]),
                ("ZSTD_getFrameContentSize", ctypes.c_ulonglong, [ctypes.c_char_p, ctypes.c_size_t]),
                ("ZSTD_decompress", ctypes.c_size_t,
                 [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]),
                ("ZSTD_isError", ctypes.c_uint, [ctypes.c_size_t])):
            fn = getattr(z, name)
            fn.restype, fn.argtypes = res, args
        self._z = z
        self._pending = b""
        self.consumed = 0  # compressed bytes of the frames decoded so far

    def feed(self, data):
        """The plain bytes of the frames @p data completes. ValueError on a damaged frame."""
        z = self._z
        buf = self._pending + data
        out, at = [], 0
        while len(buf) - at >= 6:  # the smallest frame header
            view = buf[at:]
            n = z.ZSTD_findFrameCompressedSize(view, len(view))
            if z.ZSTD_isError(n):
                if view[:4] != ZSTD_MAGIC:
                    raise ValueError("not a zstd frame at byte %d" % (self.consumed + at))
                break  # a frame still being written (or cut)
            size = z.ZSTD_getFrameContentSize(view, n)
            if size >= _CONTENTSIZE_ERROR:
                raise ValueError("a zstd frame without its content size at byte %d"
                                 % (self.consumed + at))
            dst = ctypes.create_string_buffer(max(int(size), 1))
            got = z.ZSTD_decompress(dst, len(dst), view, n)
            if z.ZSTD_isError(got):
                raise ValueError("a damaged zstd frame at byte %d" % (self.consumed + at))
            out.append(dst.raw[:got])
            at += n
        self._pending = buf[at:]
        self.consumed += at
        return b"".join(out)

    @property
    def pending(self):
        """Compressed bytes received that no complete frame holds yet."""
        return len(self._pending)


def lines(path, chunk=1 << 20):
    """The lines (bytes, newline removed) of the trace at @p path, whatever its compression (told
    by its first bytes, not its name). A last line without its newline (a cut file) is not
    returned."""
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(0)
        if head == ZSTD_MAGIC:
            frames = Frames()
            decode = frames.feed
        elif head[:2] == b"\x1f\x8b":
            g = gzip.GzipFile(fileobj=f)
            f = g
            decode = bytes
        else:
            decode = bytes
        rest = b""
        while True:
            raw = f.read(chunk)
            if not raw:
                break
            parts = (rest + decode(raw)).split(b"\n")
            rest = parts.pop()
            for line in parts:
                yield line


def records(path):
    """The JSON records of the trace at @p path (docs/trace-format.md), in file order; lines that
    are not JSON are skipped."""
    for line in lines(path):
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError:
                continue


def main(argv):
    """`python3 -m gpumemtrace.tracefile TRACE...`: the plain lines of each trace on standard
    output (as `zstdcat` would, also for a file cut inside its last frame)."""
    import sys
    if not argv:
        sys.stderr.write("usage: python3 -m gpumemtrace.tracefile TRACE...\n")
        return 2
    out = sys.stdout.buffer
    for path in argv:
        try:
            for line in lines(path):
                out.write(line + b"\n")
            out.flush()
        except BrokenPipeError:
            # the reader went (`... | head`): stop quietly, as zstdcat does (SIGPIPE's status)
            import os
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141
        except (OSError, ValueError) as e:
            sys.stderr.write("%s: %s\n" % (path, e))
            return 3
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
