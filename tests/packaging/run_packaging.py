#!/usr/bin/env python3
"""packaging suite: every way a user installs the wheel, as a new user would, with no package index.

    run_packaging.py --build BUILD --source SRC

The source tree copied as a fresh clone has it (git's files), then, sharing one meson build
directory (one compile: the backend's build-dir setting), the project's build backend
(tools/pep517/gmt_build.py) through pip:

  A  a fresh venv (no system site packages) of this Python:   pip install .
  B  a fresh venv --system-site-packages of a Python with pytest:
                                                     pip install --no-build-isolation .
  W  pip wheel . -w dist, and scripts/wheel: the wheel's contents (RECORD's hashes, WHEEL,
     METADATA, entry points, the bundled libraries, the CLI's RPATH)
  C  another fresh venv:                             pip install dist/gpumemtrace-*.whl

pip runs with no configuration, no index and no cache: nothing can be downloaded. In each venv:
`gpumemtrace --version` and `python -m gpumemtrace --version`, `gpumemtrace run -- python
victim.py` (tests/install/victim.py and its child, on tests/simcuda) and `gpumemtrace report` of
that; in B `python -m pytest --gpumemtrace` (the plugin by its entry point). Where a mount
namespace can be made (unshare -rm), C's CLI and tracer run again with the system's copies of the
bundled libraries made unreadable: the wheel alone must do. Last, the backend's sdist: its files
and PKG-INFO. Before the in-tree backend, step A failed: pip could not get meson-python.
"""
import argparse
import glob
import hashlib
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

failures = []

# what a base system has, which the wheel need not carry (tools/pep517/gmt_build.py's SYSTEM,
# written again here so that the test checks the backend rather than repeats it)
BASE = {"ld-linux-x86-64", "linux-vdso", "libc", "libm", "libdl", "libpthread", "librt",
        "libgcc_s", "libstdc++", "libz", "libbz2", "liblzma", "libzstd"}
# what must come from the user's CUDA, driver and Python, never from the wheel
NEVER = ("libc.", "libcuda", "libcudart", "libcupti", "libnvidia-ml", "libpython")


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def finish():
    if failures:
        print("\n%d check(s) failed:" % len(failures))
        for f in failures:
            print("  " + f)
        return 1
    return 0


def run(cmd, env, cwd=None, timeout=600):
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def tail(p, n=3000):
    return (p.stdout + p.stderr)[-n:]


def version(build):
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        return json.load(f)["version"]


def toolkit(build):
    with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
        return {o["name"]: o["value"] for o in json.load(f)}.get("cudatoolkit") or ""


def python_with(*modules):
    """This interpreter if it can import @p modules, else the system's, else None."""
    for exe in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if os.access(exe, os.X_OK) and subprocess.run(
                [exe, "-c", "import " + ", ".join(modules)], capture_output=True).returncode == 0:
            return exe
    return None


def user_env(build, venv=None):
    """A new user's environment: no pip configuration, index or cache (nothing downloaded), no
    tracer variables, the build tree's CLI not on PATH; the venv's bin first (as activate does);
    the simulated CUDA runtime on the loader path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUMEMTRACE_", "PIP_", "PYTHON")) and k not in
           ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "VIRTUAL_ENV")}
    tools = os.path.realpath(os.path.join(build, "tools"))
    path = [d for d in env.get("PATH", "").split(os.pathsep) if d and os.path.realpath(d) != tools]
    if venv:
        path.insert(0, os.path.join(venv, "bin"))
        env["VIRTUAL_ENV"] = venv
    env.update({"PATH": os.pathsep.join(path), "PIP_CONFIG_FILE": os.devnull,
                "PIP_NO_INDEX": "1", "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
                "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1"})
    return env


def make_venv(py, path, system_site=False):
    p = run([py, "-m", "venv"] + (["--system-site-packages"] if system_site else []) + [path],
            None)
    return check(p.returncode == 0, "a fresh venv of %s%s (%s)" % (
        py, " with system site packages" if system_site else "", tail(p).strip()))


def site_dir(venv):
    return subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                          capture_output=True, text=True).stdout.strip()


def stem(soname):
    return soname.split(".so")[0]


def ldconfig_cache():
    """[(soname, path)] of the loader's cache."""
    exe = shutil.which("ldconfig") or next((x for x in ("/sbin/ldconfig", "/usr/sbin/ldconfig")
                                           if os.access(x, os.X_OK)), None)
    out = []
    if exe:
        for line in subprocess.run([exe, "-p"], capture_output=True,
                                   text=True).stdout.splitlines():
            m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
            if m:
                out.append((m.group(1), m.group(3)))
    return out


def ldd(path):
    out = {}
    p = subprocess.run(["ldd", path], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|(\S+) \(0x)", line)
        if m:
            out[m.group(1)] = m.group(3)
    return out


def leak_sites(rep):
    return {(os.path.basename((s.get("site") or {}).get("file") or ""), s["bytes"])
            for s in rep["leak_sites"]}


# --- the source tree and the wheel --------------------------------------------------------------

def clone(src, top):
    """A copy of the source tree as a fresh clone has it: git's files (tracked, and untracked
    but not ignored, so that a change under test is in), else everything but build directories."""
    dst = os.path.join(top, "clone")
    p = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard"], capture_output=True) if shutil.which("git") \
        else None
    if p is not None and p.returncode == 0:
        names = [n for n in p.stdout.decode().split("\0") if n]
    else:
        names = []
        for d, dirs, files in os.walk(src):
            dirs[:] = [x for x in dirs if not re.match(r"build|\.git$|__pycache__$", x)]
            names += [os.path.relpath(os.path.join(d, f), src) for f in files]
    for n in names:
        if os.path.isfile(os.path.join(src, n)):
            os.makedirs(os.path.dirname(os.path.join(dst, n)), exist_ok=True)
            shutil.copy2(os.path.join(src, n), os.path.join(dst, n))
    return dst


def check_sdist(src, top, env):
    """The backend's build_sdist (what `python -m build --sdist` calls), in the git checkout."""
    out = os.path.join(top, "sdist")
    p = run([sys.executable, "-c", "import sys; sys.path.insert(0, 'tools/pep517'); "
             "import gmt_build as b; print(b.build_sdist(sys.argv[1]))", out], env, cwd=src)
    name = p.stdout.strip()
    if not os.path.exists(os.path.join(src, ".git")):  # a file in a worktree
        print("note: %s is not a git checkout: no sdist" % src)
        return
    if not check(p.returncode == 0 and name.endswith(".tar.gz"),
                 "build_sdist writes an sdist (%s)" % tail(p)):
        return
    with tarfile.open(os.path.join(out, name)) as t:
        names = t.getnames()
        pkg_info = t.extractfile(t.getmember(name[:-7] + "/PKG-INFO")).read().decode() \
            if name[:-7] + "/PKG-INFO" in names else ""
    root = name[:-len(".tar.gz")] + "/"
    want = {root + n for n in ("pyproject.toml", "meson.build", "README.md",
                               "tools/pep517/gmt_build.py", "src/meson.build", "tools/meson.build")}
    check(want <= set(names) and "Version: %s\n" % version_of(src) in pkg_info,
          "the sdist %s has PKG-INFO with the version, pyproject.toml, the sources and the "
          "build backend (missing %s)" % (name, sorted(want - set(names))))
    check(not [n for n in names if re.search(r"^[^/]+/(build[^/]*|\.git|dist)/|__pycache__", n)],
          "... and no build directory, .git or byte code")


def check_refusals(src, top, build, venv):
    """What the backend says instead of a traceback: pip install -e (refused: compiled parts),
    no meson or ninja on PATH; and the metadata it writes under Python 3.10 (no tomllib)."""
    p = run(["python", "-m", "pip", "install", "-e", "."], user_env(build, venv), cwd=src)
    check(p.returncode != 0 and "gpumemtrace: pip install -e (editable) is not supported"
          in p.stdout + p.stderr and "Traceback" not in p.stdout + p.stderr,
          "pip install -e . is refused in one line, no traceback (%s)" % tail(p, 1500))
    env = user_env(build)
    bare = os.path.join(top, "bare-bin")
    os.makedirs(bare, exist_ok=True)
    for tool in ("ldd", "cc", "git"):  # a PATH with neither meson nor ninja
        if shutil.which(tool):
            os.symlink(shutil.which(tool), os.path.join(bare, tool))
    env["PATH"] = bare
    p = run([sys.executable, "-c", "import sys; sys.path.insert(0, 'tools/pep517'); "
             "import gmt_build as b; b.build_wheel(sys.argv[1])", os.path.join(top, "nowheel")],
            env, cwd=src)
    lines = p.stderr.strip().splitlines()
    if subprocess.run([sys.executable, "-c", "import mesonbuild"],
                      capture_output=True).returncode != 0:
        check(p.returncode == 1 and len(lines) == 1 and "needs meson" in lines[0] and
              "apt install meson ninja-build" in lines[0],
              "without meson and ninja on PATH: one line naming what to install (%s)"
              % p.stderr.strip())
    # Python 3.10 has no tomllib: the same METADATA and entry points without it
    show = ("import sys; sys.path.insert(0, 'tools/pep517'); %s import gmt_build as b; "
            "print(b._metadata('.') + '@@' + b._entry_points('.'))")
    with_toml = run([sys.executable, "-c", show % ""], env, cwd=src)
    without = run([sys.executable, "-c", show % "sys.modules['tomllib'] = None;"], env, cwd=src)
    check(with_toml.returncode == 0 and with_toml.stdout == without.stdout,
          "without tomllib (Python 3.10) the backend writes the same METADATA and entry points "
          "(%s)" % [l for l in difflib_lines(with_toml.stdout, without.stdout)][:10])


def difflib_lines(a, b):
    import difflib
    return [l for l in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if l[:1] in "+-" and l[:3] not in ("+++", "---")]


def version_of(src):
    with open(os.path.join(src, "meson.build")) as f:
        return re.search(r"version : '([^']+)'", f.read()).group(1)


def check_wheel(whl, ver, src):
    """The wheel's contents against PEP 427 and the project: its gpumemtrace/ file set."""
    z = zipfile.ZipFile(whl)
    names = z.namelist()
    check(os.path.basename(whl) == "gpumemtrace-%s-py3-none-%s.whl" % (
        ver, re.sub(r"[^A-Za-z0-9_]", "_", __import__("sysconfig").get_platform())),
        "the wheel's name has the project's version and a py3-none tag (%s)"
        % os.path.basename(whl))
    info = "gpumemtrace-%s.dist-info/" % ver
    record = z.read(info + "RECORD").decode().splitlines() if info + "RECORD" in names else []
    rows = {}
    for line in record:
        path, digest, size = line.rsplit(",", 2)
        rows[path] = (digest, size)
    check(set(rows) == set(names), "RECORD lists every file of the wheel (missing %s, extra %s)"
          % (sorted(set(names) - set(rows)), sorted(set(rows) - set(names))))
    bad = []
    for n in names:
        if n == info + "RECORD":
            ok = rows.get(n) == ("", "")
        else:
            data = z.read(n)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
                b"=").decode()
            ok = rows.get(n) == (want, str(len(data)))
        if not ok:
            bad.append(n)
    check(record and not bad, "each RECORD row has the file's sha256 and size (wrong: %s)" % bad)
    wheel = z.read(info + "WHEEL").decode() if info + "WHEEL" in names else ""
    check("Wheel-Version: 1.0\n" in wheel and "Root-Is-Purelib: false\n" in wheel and
          "Tag: py3-none-" in wheel, "WHEEL: version 1.0, platlib, the py3-none tag (%r)" % wheel)
    meta = z.read(info + "METADATA").decode() if info + "METADATA" in names else ""
    check(re.search(r"^Name: gpumemtrace$", meta, re.M) and
          re.search(r"^Version: %s$" % re.escape(ver), meta, re.M) and
          re.search(r"^Requires-Python: ", meta, re.M),
          "METADATA names gpumemtrace, meson.build's version and Requires-Python")
    eps = z.read(info + "entry_points.txt").decode() if info + "entry_points.txt" in names else ""
    check("[console_scripts]\ngpumemtrace = gpumemtrace.__main__:main" in eps and
          "[pytest11]\ngpumemtrace = gpumemtrace.pytest_plugin" in eps,
          "entry_points.txt: the console script and the pytest plugin (%r)" % eps)
    cli = z.getinfo("gpumemtrace/bin/gpumemtrace") if "gpumemtrace/bin/gpumemtrace" in names \
        else None
    check(cli and (cli.external_attr >> 16) & 0o111, "bin/gpumemtrace is executable in the zip")

    pkg = {n[len("gpumemtrace/"):] for n in names if n.startswith("gpumemtrace/")}
    want = set()
    pysrc = os.path.join(src, "python", "gpumemtrace")
    for d, dirs, files in os.walk(pysrc):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        want |= {os.path.relpath(os.path.join(d, f), pysrc) for f in files
                 if not f.endswith(".pyc")}
    want |= {"bin/gpumemtrace", "lib/libgpumemtrace.so", "torch_entry.h"}
    libs = sorted(n[6:] for n in pkg - want if re.match(r"\.libs/lib[^/]+\.so\.[0-9.]+$", n))
    check(pkg - want == {".libs/" + n for n in libs} and want <= pkg,
          "gpumemtrace/ holds the package, bin/gpumemtrace, lib/libgpumemtrace.so and shared "
          "libraries in .libs/, nothing else (missing %s, extra %s)"
          % (sorted(want - pkg), sorted(pkg - want - {".libs/" + n for n in libs})))
    check(not [n for n in names if not n.startswith(("gpumemtrace/", info))],
          "nothing outside gpumemtrace/ and the dist-info")
    never = [n for n in libs if n.startswith(NEVER)]
    check(not never, "no C library, CUDA library, NVML or libpython in the wheel (%s)" % never)
    return libs


def check_installed_libs(pkgdir, libs):
    """The installed CLI and tracer load what is not a base system's from the wheel, by the RPATH
    $ORIGIN/../.libs (an RPATH: it also serves libdw's own libelf)."""
    cli = os.path.join(pkgdir, "bin", "gpumemtrace")
    tracer = os.path.join(pkgdir, "lib", "libgpumemtrace.so")
    if shutil.which("readelf"):
        for elf in (cli, tracer):
            dyn = subprocess.run(["readelf", "-d", elf], capture_output=True, text=True).stdout
            rp = re.findall(r"\((RPATH|RUNPATH)\)\s+Library r\w*path: \[([^\]]*)\]", dyn)
            check(rp == [("RPATH", "$ORIGIN/../.libs")],
                  "%s: RPATH $ORIGIN/../.libs and nothing else (%s)"
                  % (os.path.relpath(elf, pkgdir), rp))
    libdir = os.path.realpath(os.path.join(pkgdir, ".libs"))
    for elf in (cli, tracer):
        outside = {n: p for n, p in ldd(elf).items()
                   if stem(n) not in BASE and (p is None or os.path.dirname(os.path.realpath(p))
                                               != libdir)}
        check(not outside, "every library %s loads beyond a base system is the wheel's (%s)"
              % (os.path.relpath(elf, pkgdir), outside))
    if "libunwind.so.8" in dict(ldconfig_cache()):
        check("libunwind.so.8" in libs, "libunwind.so.8, which the tracer opens, is in the wheel")


# --- one installed venv -------------------------------------------------------------------------

def traced_run(venv, src, top, build, what, extra_env=None, prefix=()):
    """gpumemtrace run -- python victim.py from the venv, and report: the wheel's parts in use."""
    env = user_env(build, venv)
    env.update(extra_env or {})
    pkgdir = os.path.realpath(os.path.join(site_dir(venv), "gpumemtrace"))
    out = tempfile.mkdtemp(prefix="out-", dir=top)
    shutil.rmtree(out)
    script = os.path.join(src, "tests", "install", "victim.py")
    p = run(list(prefix) + ["gpumemtrace", "run", "-o", out, "--", "python", script], env,
            cwd=top)
    check(p.returncode == 0, "%s: gpumemtrace run -- python victim.py (%d: %s)"
          % (what, p.returncode, tail(p)))
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    check(len(lines) == 2, "%s: the victim and its child both ran (%d lines)" % (what, len(lines)))
    for info in lines:
        who = "%s: %s" % (what, "child" if info["child"] else "victim")
        check(info["enabled"], "%s: gpumemtrace.enabled()" % who)
        check(os.path.realpath(info["module"]) == os.path.join(pkgdir, "__init__.py"),
              "%s: `import gpumemtrace` is the venv's (%s)" % (who, info["module"]))
        check(os.path.realpath(info["preload"].split(":")[0]) == os.path.join(
            pkgdir, "lib", "libgpumemtrace.so"),
            "%s: LD_PRELOAD is the venv's tracer (%s)" % (who, info["preload"]))
    complaints = [l for l in p.stderr.splitlines() if "cannot" in l or "error" in l.lower()]
    check(not complaints, "%s: no complaint from the tracer or the CLI: %s" % (what, complaints))
    rep = run(list(prefix) + ["gpumemtrace", "report", "--format", "json", out], env, cwd=top)
    if check(rep.returncode == 0, "%s: gpumemtrace report reads the traces (%s)"
             % (what, tail(rep))):
        rep = json.loads(rep.stdout)
        check(len(rep["processes"]) == 2 and ("victim.py", 3 << 20) in leak_sites(rep),
              "%s: two traces, and the report names victim.py for the 3 MiB leak (%s)"
              % (what, leak_sites(rep)))


def check_venv(venv, src, top, build, ver, what):
    env = user_env(build, venv)
    for cmd in (["gpumemtrace"], ["python", "-m", "gpumemtrace"]):
        p = run(cmd + ["--version"], env, cwd=top)
        check(p.returncode == 0 and p.stdout.strip() == "gpumemtrace " + ver,
              "%s: `%s --version` (%s)" % (what, " ".join(cmd), tail(p).strip()))
    check(os.path.realpath(shutil.which("gpumemtrace", path=env["PATH"]) or "") ==
          os.path.realpath(os.path.join(venv, "bin", "gpumemtrace")),
          "%s: the gpumemtrace on PATH is the venv's console script" % what)
    traced_run(venv, src, top, build, what)


def check_pytest(venv, src, top, build, what):
    """python -m pytest --gpumemtrace in the venv: the plugin by its entry point (no -p)."""
    env = user_env(build, venv)
    work = tempfile.mkdtemp(prefix="pytest-", dir=top)
    shutil.copy(os.path.join(src, "tests", "pytest", "cases_ctypes.py"),
                os.path.join(work, "test_gpu.py"))
    junit = os.path.join(work, "junit.xml")
    p = run(["python", "-m", "pytest", "-p", "no:cacheprovider", "--gpumemtrace",
             "--gpumemtrace-dir", os.path.join(work, "traces"), "--junitxml", junit,
             "test_gpu.py"], env, cwd=work)
    import xml.etree.ElementTree as ET
    failed = sorted(tc.get("name") for tc in ET.parse(junit).getroot().iter("testcase")
                    if tc.find("failure") is not None) if os.path.exists(junit) else None
    check(p.returncode == 1 and failed == ["test_leaks", "test_method_leaks",
                                           "test_own_failure", "test_peak_over"],
          "%s: python -m pytest --gpumemtrace: the tests over their limits fail (%d, %s: %s)"
          % (what, p.returncode, failed, tail(p, 2000)))
    check(len(glob.glob(os.path.join(work, "traces", "*.jsonl.zst"))) == 1,
          "%s: ... traced by the venv's CLI and tracer" % what)


def hidden_libraries(venv, src, top, build, libs):
    """C's wheel with the system's copies of its bundled libraries unreadable (/dev/null bound
    over each in a private mount namespace): a machine without those packages."""
    cache = {}
    for name, path in ldconfig_cache():
        if name in libs:
            cache.setdefault(name, set()).add(os.path.realpath(path))
    paths = sorted(p for s in cache.values() for p in s)
    if not check(paths, "the system has copies of the bundled libraries to hide (%s)" % libs):
        return
    script = os.path.join(top, "hide.sh")
    with open(script, "w") as f:
        f.write("set -e\nfor p in %s; do mount --bind /dev/null \"$p\"; done\nexec \"$@\"\n"
                % " ".join("'%s'" % p for p in paths))
    probe = subprocess.run(["unshare", "-rm", "sh", script, "true"], capture_output=True,
                           text=True) if shutil.which("unshare") else None
    if not probe or probe.returncode != 0:
        print("note: no private mount namespace here (unshare -rm, mount --bind: %s): the wheel "
              "is not run without the system's libraries" % (probe and probe.stderr.strip()))
        return
    prefix = ["unshare", "-rm", "sh", script]
    env = user_env(build, venv)
    probe = run(prefix + ["python", "-c", "import ctypes; ctypes.CDLL(%r)" % libs[0]], env)
    check(probe.returncode != 0, "hidden: the system's %s cannot be loaded (%s)"
          % (libs[0], tail(probe, 300).strip()))
    traced_run(venv, src, top, build, "C, system's %s hidden" % ", ".join(sorted(cache)),
               prefix=prefix)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    build, src0 = os.path.abspath(a.build), os.path.abspath(a.source)
    ver = version(build)
    py = sys.executable
    if not check(python_with("venv", "ensurepip") == py,
                 "%s has venv and ensurepip (Debian: python3-venv, which scripts/setup installs)"
                 % py):
        return finish()
    top = tempfile.mkdtemp(prefix="gmt-packaging-")
    try:
        src = clone(src0, top)
        shared = ["--config-settings", "build-dir=" + os.path.join(top, "build")]
        if toolkit(build):
            shared += ["--config-settings", "setup-args=-Dcudatoolkit=" + toolkit(build)]

        # A: pip install . (build isolation, the default) in a venv of its own
        venv_a = os.path.join(top, "venv-a")
        if make_venv(py, venv_a):
            p = run(["python", "-m", "pip", "install"] + shared + ["."], user_env(build, venv_a),
                    cwd=src)
            if check(p.returncode == 0, "A: pip install . in a fresh venv, no index (%d: %s)"
                     % (p.returncode, tail(p))):
                check_venv(venv_a, src, top, build, ver, "A")

        # B: the system's packages visible (Debian's pytest), --no-build-isolation
        syspy = python_with("pytest", "venv", "ensurepip")
        venv_b = os.path.join(top, "venv-b")
        if not check(syspy, "a Python with pytest and venv (Debian: python3-pytest, "
                     "python3-venv; scripts/setup installs them)"):
            return finish()
        if make_venv(syspy, venv_b, system_site=True):
            p = run(["python", "-m", "pip", "install", "--no-build-isolation"] + shared + ["."],
                    user_env(build, venv_b), cwd=src)
            if check(p.returncode == 0, "B: pip install --no-build-isolation . in a venv with "
                     "system site packages (%d: %s)" % (p.returncode, tail(p))):
                check_venv(venv_b, src, top, build, ver, "B")
                check_pytest(venv_b, src, top, build, "B")

        # W: pip wheel . -w dist, and scripts/wheel
        dist = os.path.join(top, "dist")
        env = user_env(build, venv_a if os.path.isdir(venv_a) else None)
        p = run([os.path.join(venv_a, "bin", "python"), "-m", "pip", "wheel", "--no-deps", "-w",
                 dist] + shared + ["."], env, cwd=src)
        wheels = glob.glob(os.path.join(dist, "*.whl"))
        if not check(p.returncode == 0 and len(wheels) == 1, "W: pip wheel . -w dist builds one "
                     "wheel (%d: %s)" % (p.returncode, tail(p))):
            return finish()
        libs = check_wheel(wheels[0], ver, src0)
        script = os.path.join(src, "scripts", "wheel")
        p = run([script if os.access(script, os.X_OK) else "false", "-o",
                 os.path.join(top, "dist2"), "--build-dir", os.path.join(top, "build")] +
                (["--", "-Dcudatoolkit=" + toolkit(build)] if toolkit(build) else []),
                user_env(build), cwd=top)
        other = glob.glob(os.path.join(top, "dist2", "*.whl"))
        check(p.returncode == 0 and len(other) == 1 and p.stdout.strip() == other[0] and
              sorted(zipfile.ZipFile(other[0]).namelist()) ==
              sorted(zipfile.ZipFile(wheels[0]).namelist()),
              "scripts/wheel -o DIR writes the same wheel and prints its path (%d: %s)"
              % (p.returncode, tail(p)))

        # C: the wheel alone in another fresh venv
        venv_c = os.path.join(top, "venv-c")
        if make_venv(py, venv_c):
            p = run(["python", "-m", "pip", "install", wheels[0]], user_env(build, venv_c),
                    cwd=top)
            if check(p.returncode == 0, "C: pip install dist/%s in a fresh venv (%s)"
                     % (os.path.basename(wheels[0]), tail(p))):
                check_installed_libs(os.path.join(site_dir(venv_c), "gpumemtrace"), libs)
                check_venv(venv_c, src, top, build, ver, "C")
                if libs:
                    hidden_libraries(venv_c, src, top, build, libs)
                # RECORD is what pip uninstalls by: the CLI, the tracer, the libraries, the script
                p = run(["python", "-m", "pip", "uninstall", "-y", "gpumemtrace"],
                        user_env(build, venv_c), cwd=top)
                left = [x for x in (os.path.join(site_dir(venv_c), "gpumemtrace"),
                                    os.path.join(venv_c, "bin", "gpumemtrace"))
                        if os.path.exists(x)]
                check(p.returncode == 0 and not left,
                      "C: pip uninstall removes everything the wheel installed (left: %s)" % left)
        check_sdist(src0, top, user_env(build))
        if os.path.isdir(venv_a):
            check_refusals(src, top, build, venv_a)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
