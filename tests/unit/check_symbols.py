#!/usr/bin/env python3
"""The tracer library exports exactly what its version script lists, each with its version.

An extra export would interpose something by accident; a missing one silently stops capturing.
"""
import re
import subprocess
import sys

lib, script = sys.argv[1], sys.argv[2]
text = re.sub(r"/\*.*?\*/", "", open(script).read(), flags=re.S)
expected = {}
for node in re.finditer(r"([\w.]+)\s*\{(.*?)\}", text, flags=re.S):
    version, body = node.group(1), node.group(2)
    glob = re.search(r"global:(.*?)(local:|$)", body, flags=re.S)
    for sym in re.findall(r"[\w*]+", glob.group(1) if glob else ""):
        expected[sym] = version

out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
actual = {}
for line in out.splitlines():
    parts = line.split()
    if len(parts) != 3 or parts[1] == "A":
        continue
    name, _, version = parts[2].partition("@@")
    actual[name] = version

ok = True
for sym, ver in sorted(expected.items()):
    if sym not in actual:
        print(f"{lib}: missing export {sym}@@{ver}")
        ok = False
    elif actual[sym] != ver:
        print(f"{lib}: {sym} has version {actual[sym]!r}, expected {ver!r}")
        ok = False
for sym in sorted(set(actual) - set(expected)):
    print(f"{lib}: unexpected export {sym}@@{actual[sym]}")
    ok = False
print("symbols: ok" if ok else "symbols: FAILED")
sys.exit(0 if ok else 1)
