#!/usr/bin/env python3
"""The tracer library exports exactly what its version script lists, each with its version.

An extra export would interpose something by accident; a missing one silently stops capturing.
A node that lists no names and is named like the first libcudart node (libcudart.so.12 after
libcudart.so.13) holds the same names at a non-default version (the .symver copies of
src/capture/interpose.c): each must be exported as name@version, and nothing else there.
"""
import re
import subprocess
import sys

lib, script = sys.argv[1], sys.argv[2]
text = re.sub(r"/\*.*?\*/", "", open(script).read(), flags=re.S)
expected = {}
mirrors = []
for node in re.finditer(r"([\w.]+)\s*\{(.*?)\}", text, flags=re.S):
    version, body = node.group(1), node.group(2)
    if not body.strip():
        mirrors.append(version)
        continue
    glob = re.search(r"global:(.*?)(local:|$)", body, flags=re.S)
    for sym in re.findall(r"[\w*]+", glob.group(1) if glob else ""):
        expected[sym] = version
for version in mirrors:
    first = next((v for v in expected.values() if v.split(".so.")[0] == version.split(".so.")[0]), None)
    if first is None:
        print(f"{script}: empty node {version} mirrors no node of its library")
        sys.exit(1)
    for sym in [s for s, v in expected.items() if v == first]:
        expected[f"{sym}@{version}"] = ""

out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
actual = {}
for line in out.splitlines():
    parts = line.split()
    if len(parts) != 3 or parts[1] == "A":
        continue
    name, _, version = parts[2].partition("@@")
    actual[name] = version  # name@version (not the default) stays whole, version ""

ok = True
for sym, ver in sorted(expected.items()):
    if sym not in actual:
        print(f"{lib}: missing export {sym}@@{ver}" if ver else f"{lib}: missing export {sym}")
        ok = False
    elif actual[sym] != ver:
        print(f"{lib}: {sym} has version {actual[sym]!r}, expected {ver!r}")
        ok = False
for sym in sorted(set(actual) - set(expected)):
    print(f"{lib}: unexpected export {sym}@@{actual[sym]}")
    ok = False
print("symbols: ok" if ok else "symbols: FAILED")
sys.exit(0 if ok else 1)
