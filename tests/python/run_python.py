"""Run a test script under one interpreter, or skip (exit 77) when it is not installed.

Usage: run_python.py VERSION|system SCRIPT ARGS...
  VERSION "3.12": the newest ${PYENV_ROOT:-/root/.pyenv}/versions/3.12*/bin/python3.12
  (free-threaded "t" builds are left out); "system": /usr/bin/python3.
GMT_TEST_PRELOAD: preloaded into that interpreter only (the sanitizer stages of scripts/test put a
sanitizer's runtime there: the walker is instrumented, the interpreter is not).
"""
import glob
import os
import subprocess
import sys


def find(which):
    if which == "system":
        return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else None
    root = os.environ.get("PYENV_ROOT", "/root/.pyenv")
    found = [p for p in glob.glob(os.path.join(root, "versions", which + "*", "bin",
                                               "python" + which))
             if os.access(p, os.X_OK) and "t/" not in p.split("versions/")[1][:12]]

    def patch(p):
        v = p.split("versions/")[1].split("/")[0].split(".")
        return int(v[2]) if len(v) > 2 and v[2].isdigit() else -1

    return max(found, key=patch) if found else None


def main():
    which, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    interp = find(which)
    if interp is None:
        print("no python %s here: skipped" % which)
        return 77
    print("using", interp)
    sys.stdout.flush()
    env = dict(os.environ)
    if env.get("GMT_TEST_PRELOAD"):
        env["LD_PRELOAD"] = env["GMT_TEST_PRELOAD"]
    return subprocess.call([interp, script] + args, env=env)


sys.exit(main())
