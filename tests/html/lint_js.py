#!/usr/bin/env python3
"""The html page's script (src/analysis/report/html/page.js), linted as the file it is: node's own
parser (`node --check`) must accept it, in strict mode. Exits 77 (skipped) without node.

    lint_js.py PAGE.js
"""
import shutil
import subprocess
import sys


def main():
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        print("SKIP: no node on PATH (Debian: nodejs): the page's script is not linted here; "
              "tests/html's Chromium run still executes it")
        return 77
    path = sys.argv[1]
    src = open(path, encoding="utf-8").read()
    if not src.startswith("'use strict';\n"):
        print("FAIL: %s does not start with 'use strict';" % path)
        return 1
    p = subprocess.run([node, "--check", path], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print("FAIL: node --check %s:\n%s" % (path, p.stderr))
        return 1
    print("ok: node --check %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
