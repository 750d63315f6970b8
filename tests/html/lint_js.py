#!/usr/bin/env python3
"""The html page's script (src/analysis/report/html/page.js) and tests/html's probe.js, linted as
the files they are.

    lint_js.py PAGE.js...                     node's own parser (`node --check`) accepts each, and
                                              each is strict mode; exits 77 (skipped) without node
    lint_js.py --eslint TOOLS_DIR PAGE.js...  ESLint with TOOLS_DIR's configuration
                                              (tools/eslint/eslint.config.mjs: eslint:recommended,
                                              every global named, no markup or code from strings);
                                              exits 77 (skipped) when scripts/eslint-setup has not
                                              installed ESLint into TOOLS_DIR/node_modules

Each finding is printed as FILE:LINE:COL: message (rule).
"""
import json
import os
import shutil
import subprocess
import sys


def node_check(paths):
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        print("SKIP: no node on PATH (Debian: nodejs): the page's script is not parsed here; "
              "tests/html's Chromium run still executes it")
        return 77
    bad = 0
    for path in paths:
        src = open(path, encoding="utf-8").read()
        if not src.startswith("'use strict';\n"):
            print("FAIL: %s does not start with 'use strict';" % path)
            bad += 1
            continue
        p = subprocess.run([node, "--check", path], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            print("FAIL: node --check %s:\n%s" % (path, p.stderr))
            bad += 1
        else:
            print("ok: node --check %s" % path)
    return 1 if bad else 0


def eslint(tools, paths):
    tools = os.path.abspath(tools)
    exe = os.path.join(tools, "node_modules", ".bin", "eslint")
    node = shutil.which("node") or shutil.which("nodejs")
    if not node or not os.path.exists(exe):
        print("SKIP: ESLint is not installed in %s (scripts/eslint-setup installs it with npm; "
              "scripts/setup runs it where npm is on PATH): the page's script is only parsed "
              "(html-lint) and run in Chromium (html-browser)" % os.path.join(tools, "node_modules"))
        return 77
    bad = 0
    for path in paths:
        # ESLint lints only files under its configuration's directory: the file goes in on stdin
        # under its own name, and the findings are reported against the real path
        with open(path, encoding="utf-8") as f:
            p = subprocess.run([exe, "--format", "json", "--stdin", "--stdin-filename",
                                os.path.basename(path)], stdin=f, cwd=tools,
                               capture_output=True, text=True, timeout=300)
        try:
            results = json.loads(p.stdout)
        except ValueError:
            print("FAIL: eslint %s: exit %d, no report:\n%s" % (path, p.returncode,
                                                                p.stderr[-3000:]))
            bad += 1
            continue
        found = [m for r in results for m in r["messages"]]
        for m in found:
            print("%s:%s:%s: %s (%s)" % (path, m.get("line", 0), m.get("column", 0),
                                         m["message"], m.get("ruleId") or "eslint"))
        if found or p.returncode != 0:
            print("FAIL: eslint %s: %d finding(s)" % (path, len(found)))
            bad += 1
        else:
            print("ok: eslint %s" % path)
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    if args and args[0] == "--eslint":
        return eslint(args[1], args[2:])
    return node_check(args)


if __name__ == "__main__":
    sys.exit(main())
