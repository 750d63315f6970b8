"""Headless Chromium for the html test: find it, dump a page's DOM, take a screenshot, read the
PNG back (zlib only, no imaging library), parse the dumped DOM."""
import html.parser
import os
import shutil
import struct
import subprocess
import tempfile
import zlib


def find_chromium():
    for name in (os.environ.get("GMT_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def run_chromium(exe, url, extra):
    """Runs headless Chromium on @p url with nothing on the network: every host resolves to
    nothing and a dead proxy takes every request (the page's CSP already forbids fetches)."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-extensions", "--disable-background-networking", "--disable-sync",
               "--disable-component-update", "--disable-dev-shm-usage",
               "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
               "--user-data-dir=" + profile] + extra + [url]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def dump_dom(exe, path):
    return run_chromium(exe, "file://" + os.path.abspath(path), ["--dump-dom"])


def screenshot(exe, path, png):
    return run_chromium(exe, "file://" + os.path.abspath(path),
                        ["--screenshot=" + os.path.abspath(png), "--window-size=1280,2000",
                         "--hide-scrollbars"])


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_rows(path):
    """(width, height, bytes per pixel, rows) of an 8-bit RGB/RGBA, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    w, h, depth, color, _, _, interlace = hdr
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError("unsupported PNG layout %r" % (hdr,))
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytes(stride)
    rows = []
    for y in range(h):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ftype == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                upleft = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], upleft)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def png_stats(path, step=4):
    """Luminance variance, distinct colours and the share of non-white pixels, sampled."""
    w, h, bpp, rows = png_rows(path)
    lum, colors, inked = [], set(), 0
    for y in range(0, h, step):
        row = rows[y]
        for x in range(0, w, step):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            colors.add((r, g, b))
            lum.append(0.299 * r + 0.587 * g + 0.114 * b)
            inked += (r, g, b) != (255, 255, 255)
    mean = sum(lum) / len(lum)
    var = sum((v - mean) ** 2 for v in lum) / len(lum)
    return {"width": w, "height": h, "variance": var, "colors": len(colors),
            "inked": inked / len(lum)}


class Dom(html.parser.HTMLParser):
    """Elements (tag, attributes, ancestor ids) and text nodes (text, ancestor ids) of a page;
    the text of script and style elements is kept apart."""
    VOID = {"meta", "link", "br", "img", "input", "hr", "area", "base", "col", "embed",
            "source", "track", "wbr"}

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements, self.texts, self.raw_texts = [], [], [], []
        self.feed(text)
        self.close()

    def ids(self):
        return [i for _, i in self.stack if i]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a, self.ids()))
        if tag not in self.VOID:
            self.stack.append((tag, a.get("id")))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), self.ids()))

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] in ("script", "style"):
            self.raw_texts.append(data)
        else:
            self.texts.append((data, self.ids()))

    def find(self, tag=None, **attrs):
        return [e for e in self.elements if (tag is None or e[0] == tag) and
                all(e[1].get(k) == v for k, v in attrs.items())]

    def text_under(self, element_id):
        return "".join(t for t, ids in self.texts if element_id in ids)

    def all_text(self):
        return "".join(t for t, _ in self.texts)
