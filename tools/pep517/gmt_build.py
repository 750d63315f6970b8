"""gpumemtrace's PEP 517 build backend: `pip install .`, `pip wheel .` and `python -m build` with
nothing to download (pyproject.toml: `requires = []`, `backend-path`). Standard library only.

A wheel is the meson build's `-Dwheel=true` install (meson.build: the package, bin/gpumemtrace and
lib/libgpumemtrace.so inside site-packages/gpumemtrace), zipped as PEP 427 says, tagged
`py3-none-<platform>` (a native program and a preloaded library, no Python extension: any Python
3.10+ of the platform runs it). Self-contained: the shared libraries the CLI and the tracer need
that a base system may not have (libjansson, libdw and libelf; libunwind, which the tracer opens
for native stacks) are copied into gpumemtrace/.libs, which the build's rpath names
($ORIGIN/../.libs, DT_RPATH so that libdw finds its libelf there too). The C library, libstdc++,
zlib, xz, bzip2 and zstd are the system's; libcuda, libcudart and libcupti are never bundled (the
program's own CUDA and PyTorch bring them).

It needs what a meson build needs: meson (1.0 or later) and ninja on PATH (or the `mesonbuild`
module), a C compiler, the jansson, libunwind and elfutils headers, the CUDA 13 headers
(/usr/local/cuda or CUDA_HOME). What is missing is said in one line. config_settings:
`setup-args` (one string or a list: more `meson setup` options, as meson-python takes them),
`build-dir` (meson's build directory, kept and used again by the next build: scripts/wheel
--build-dir, tests/packaging). `pip install -e` is refused in one line: the CLI and the tracer
are compiled, an editable install would run stale ones.
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

NAME = "gpumemtrace"
# sonames that a Linux base system has (the C library and its loader, the C++ runtime, the
# compressors): never bundled; everything else the CLI or the tracer loads is
SYSTEM = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
          "libstdc++.so", "libgcc_s.so", "libz.so", "liblzma.so", "libbz2.so", "libzstd.so")
# loaded at run time by name (dlopen), so ldd does not list them: bundled when found
DLOPENED = ("libunwind.so.8",)
# the program's own CUDA: never
NEVER = ("libcuda.so", "libcudart.so", "libcupti.so", "libnvidia-ml.so")


class BuildError(Exception):
    pass


def _one_line(hook):
    """A hook whose BuildError is one line on stderr and exit status 1, not a traceback: pip
    shows the hook's output, and a traceback would bury what to install."""
    def run(*args, **kwargs):
        try:
            return hook(*args, **kwargs)
        except BuildError as e:
            sys.stderr.write("%s\n" % e)
            raise SystemExit(1)

    run.__name__, run.__doc__ = hook.__name__, hook.__doc__
    return run


def _root():
    return os.getcwd()  # PEP 517: the backend runs in the source tree


def _version(root):
    with open(os.path.join(root, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"version\s*:\s*'([^']+)'", f.read())
    if not m:
        raise BuildError("meson.build: no project version")
    return m.group(1)


def _project(root):
    """pyproject.toml's [project] table (tomllib on Python 3.11+, else _toml)."""
    path = os.path.join(root, "pyproject.toml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
    except ImportError:
        return _toml(text, path).get("project", {})
    return tomllib.loads(text).get("project", {})


def _toml(text, where):
    """The TOML that pyproject.toml is written in, for Python 3.10 (no tomllib): [tables] and
    [dotted.tables]; key = value where a value is a string, a boolean, an integer, an array (over
    several lines, with comments) or an inline table. Anything else is an error naming the line."""
    pos = [0]

    def fail():
        raise BuildError("%s:%d: the build backend cannot read this (Python 3.10 has no tomllib; "
                         "3.11 reads all of TOML)" % (where, text.count("\n", 0, pos[0]) + 1))

    def skip(newlines=True):
        while pos[0] < len(text):
            c = text[pos[0]]
            if c in " \t\r" or (newlines and c == "\n"):
                pos[0] += 1
            elif c == "#":
                end = text.find("\n", pos[0])
                pos[0] = len(text) if end < 0 else end
            else:
                return

    def key():
        m = re.compile(r'"([^"\\\n]*)"|([A-Za-z0-9_-]+)').match(text, pos[0])
        if not m:
            fail()
        pos[0] = m.end()
        return m.group(1) if m.group(1) is not None else m.group(2)

    def value():
        c = text[pos[0]:pos[0] + 1]
        if c == '"':
            m = re.compile(r'"((?:[^"\\\n]|\\.)*)"').match(text, pos[0])
            if not m:
                fail()
            pos[0] = m.end()
            return re.sub(r"\\(.)", lambda e: {"n": "\n", "t": "\t"}.get(e.group(1), e.group(1)),
                          m.group(1))
        if c == "'":
            end = text.find("'", pos[0] + 1)
            if end < 0:
                fail()
            start, pos[0] = pos[0] + 1, end + 1
            return text[start:end]
        if c in ("[", "{"):
            close, out = ("]", []) if c == "[" else ("}", {})
            pos[0] += 1
            skip()
            while text[pos[0]:pos[0] + 1] != close:
                if c == "[":
                    out.append(value())
                else:
                    k = key()
                    skip(False)
                    if text[pos[0]:pos[0] + 1] != "=":
                        fail()
                    pos[0] += 1
                    skip(False)
                    out[k] = value()
                skip()
                if text[pos[0]:pos[0] + 1] == ",":
                    pos[0] += 1
                    skip()
                elif text[pos[0]:pos[0] + 1] != close:
                    fail()
            pos[0] += 1
            return out
        m = re.compile(r"true|false|[+-]?[0-9]+").match(text, pos[0])
        if not m:
            fail()
        pos[0] = m.end()
        return {"true": True, "false": False}.get(m.group(0)) if m.group(0) in (
            "true", "false") else int(m.group(0))

    top = table = {}
    while True:
        skip()
        if pos[0] >= len(text):
            return top
        if text[pos[0]] == "[":
            pos[0] += 1
            table = top
            while True:
                skip(False)
                table = table.setdefault(key(), {})
                skip(False)
                if text[pos[0]:pos[0] + 1] == ".":
                    pos[0] += 1
                    continue
                if text[pos[0]:pos[0] + 1] != "]":
                    fail()
                pos[0] += 1
                break
        else:
            k = key()
            skip(False)
            if text[pos[0]:pos[0] + 1] != "=":
                fail()
            pos[0] += 1
            skip(False)
            table[k] = value()
        skip(False)
        if pos[0] < len(text) and text[pos[0]] != "\n":
            fail()


def _metadata(root):
    p = _project(root)
    lines = ["Metadata-Version: 2.1", "Name: %s" % p.get("name", NAME),
             "Version: %s" % _version(root)]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    lic = p.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append("License: %s" % lic["text"])
    for c in p.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    readme = os.path.join(root, "README.md")
    body = ""
    if os.path.isfile(readme):
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + open(readme, encoding="utf-8").read()
    return "\n".join(lines) + "\n" + body


def _entry_points(root):
    p = _project(root)
    out = []
    if p.get("scripts"):
        out.append("[console_scripts]")
        out += ["%s = %s" % kv for kv in sorted(p["scripts"].items())]
        out.append("")
    for group, eps in sorted(p.get("entry-points", {}).items()):
        out.append("[%s]" % group)
        out += ["%s = %s" % kv for kv in sorted(eps.items())]
        out.append("")
    return "\n".join(out)


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-%s" % plat


def _beside_python(name):
    """@p name installed beside the Python that runs the backend (pip install meson ninja into a
    venv that is not activated: pip's isolation hides the venv's packages, not its bin/)."""
    for d in dict.fromkeys([os.path.dirname(sys.executable), sysconfig.get_path("scripts")]):
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _meson():
    """The meson to run, after checking that there is a ninja for it (meson's own error about a
    missing ninja names neither package)."""
    missing = BuildError("gpumemtrace: building needs meson (1.0 or later) and ninja: install "
                         "them (Debian/Ubuntu: apt install meson ninja-build; or pip install "
                         "meson ninja) and try again")
    if not (os.environ.get("NINJA") or shutil.which("ninja") or shutil.which("ninja-build") or
            shutil.which("samu")):
        ninja = _beside_python("ninja")
        if not ninja:
            raise missing
        os.environ["NINJA"] = ninja  # how meson is told where ninja is
    exe = shutil.which("meson") or _beside_python("meson")
    if exe:
        return [exe]
    try:
        import mesonbuild  # noqa: F401
        return [sys.executable, "-m", "mesonbuild.mesonmain"]
    except ImportError:
        raise missing


def _tool_env():
    """The environment for meson and the compilers: without what pip's build isolation sets for
    its own Python (PYTHONPATH to a sitecustomize that hides the system's site-packages, which a
    meson of the system's Python, /usr/bin/meson, needs for its mesonbuild module)."""
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME", "PYTHONSAFEPATH"):
        env.pop(k, None)
    return env


def _run(cmd, log):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=_tool_env())
    log.write("$ %s\n%s\n" % (" ".join(cmd), p.stdout))
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-25:])
        raise BuildError("gpumemtrace: `%s` failed (%d):\n%s" % (" ".join(cmd[:3]), p.returncode,
                                                                   tail))


def _setup_args(config_settings):
    v = (config_settings or {}).get("setup-args", [])
    return [v] if isinstance(v, str) else list(v)


def _needed(path):
    """{soname: resolved path or None} of what @p path loads (ldd), itself excluded."""
    p = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)?", line)
        if m:
            out[m.group(1)] = m.group(2) if m.group(2) and m.group(2) != "not" else None
    return out


def _find_lib(soname):
    """Where the loader finds @p soname for this machine's word size (ldconfig's cache), or
    None."""
    arch = {"x86_64": "x86-64", "aarch64": "AArch64"}.get(os.uname().machine)
    try:
        p = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        lines = p.stdout.splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.strip().split(" => ")
        if len(parts) == 2 and parts[0].split(" ")[0] == soname and (
                not arch or arch in parts[0]):
            return parts[1]
    return None


def _bundle(pkg):
    """Copy into pkg/.libs the shared libraries of pkg/bin/gpumemtrace and pkg/lib/*.so that a
    base system may lack (SYSTEM is the system's, NEVER the program's own CUDA), transitively;
    returns their sonames."""
    libs = os.path.join(pkg, ".libs")
    todo = [os.path.join(pkg, "bin", NAME)] + [
        os.path.join(pkg, "lib", n) for n in os.listdir(os.path.join(pkg, "lib"))]
    for so in DLOPENED:
        found = _find_lib(so)
        if found:
            todo.append(("dlopen", so, found))
    done, bundled = set(), []
    while todo:
        item = todo.pop()
        if isinstance(item, tuple):
            _, soname, path = item
            deps = {soname: path}
        else:
            deps = _needed(item)
        for soname, path in deps.items():
            if soname in done or soname.startswith(SYSTEM) or soname.startswith(NEVER):
                continue
            done.add(soname)
            if not path:
                raise BuildError("gpumemtrace: %s needs %s, which is not installed here"
                                 % (os.path.basename(item if isinstance(item, str) else soname),
                                    soname))
            os.makedirs(libs, exist_ok=True)
            dst = os.path.join(libs, soname)
            shutil.copyfile(os.path.realpath(path), dst)
            os.chmod(dst, 0o755)
            bundled.append(soname)
            todo.append(dst)
    return sorted(bundled)


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(wheel_directory, root, pkg):
    version = _version(root)
    tag = _tag()
    distinfo = "%s-%s.dist-info" % (NAME, version)
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    path = os.path.join(wheel_directory, name)
    records = []

    def add(zf, arc, data, mode=0o644):
        zi = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = (0o100000 | mode) << 16
        zf.writestr(zi, data)
        records.append("%s,%s,%d" % (arc, _record_hash(data), len(data)))

    with zipfile.ZipFile(path, "w") as zf:
        for d, dirs, files in os.walk(pkg):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in sorted(files):
                if f.endswith(".pyc"):
                    continue
                full = os.path.join(d, f)
                arc = "%s/%s" % (NAME, os.path.relpath(full, pkg).replace(os.sep, "/"))
                mode = 0o755 if os.access(full, os.X_OK) else 0o644
                with open(full, "rb") as fp:
                    add(zf, arc, fp.read(), mode)
        add(zf, distinfo + "/METADATA", _metadata(root).encode())
        add(zf, distinfo + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: gpumemtrace gmt_build\n"
                                      "Root-Is-Purelib: false\nTag: %s\n" % tag).encode())
        add(zf, distinfo + "/entry_points.txt", _entry_points(root).encode())
        if os.path.isfile(os.path.join(root, "LICENSE")):
            add(zf, distinfo + "/LICENSE", open(os.path.join(root, "LICENSE"), "rb").read())
        records.append(distinfo + "/RECORD,,")
        zi = zipfile.ZipInfo(distinfo + "/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(zi, "\n".join(records) + "\n")
    return name


def _installed_package(staging):
    """The gpumemtrace package meson installed under @p staging (site-packages/gpumemtrace)."""
    for d, dirs, files in os.walk(staging):
        if os.path.basename(d) == NAME and "__init__.py" in files and \
                os.path.isfile(os.path.join(d, "bin", NAME)):
            return d
    raise BuildError("gpumemtrace: the meson install holds no gpumemtrace package with bin/")


# --- PEP 517 ---------------------------------------------------------------------------------

@_one_line
def get_requires_for_build_wheel(config_settings=None):
    return []


@_one_line
def get_requires_for_build_sdist(config_settings=None):
    return []


EDITABLE = ("gpumemtrace: pip install -e (editable) is not supported: the CLI and the tracer are "
            "compiled, and an editable install would keep running the old ones; use `pip install "
            ".` again after a change, or a meson build (./scripts/setup, build/tools/gpumemtrace)")


@_one_line
def get_requires_for_build_editable(config_settings=None):
    """PEP 660, refused here, where pip asks first (before it would build anything)."""
    raise BuildError(EDITABLE)


@_one_line
def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    raise BuildError(EDITABLE)


def _setting(config_settings, key):
    """The last value of a --config-settings KEY (pip passes several as a list), or None."""
    v = (config_settings or {}).get(key)
    return v[-1] if isinstance(v, list) and v else (v or None)


@_one_line
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    root = _root()
    distinfo = "%s-%s.dist-info" % (NAME, _version(root))
    d = os.path.join(metadata_directory, distinfo)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(root))
    with open(os.path.join(d, "entry_points.txt"), "w", encoding="utf-8") as f:
        f.write(_entry_points(root))
    return distinfo


@_one_line
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    root = _root()
    meson = _meson()
    work = tempfile.mkdtemp(prefix="gmt-wheel-build-")
    log_path = os.path.join(work, "build.log")
    kept = _setting(config_settings, "build-dir")
    try:
        with open(log_path, "w", encoding="utf-8") as log:
            build = os.path.abspath(kept) if kept else os.path.join(work, "build")
            staging = os.path.join(work, "staging")
            setup = ["-Dwheel=true", "--buildtype=release", "-Db_ndebug=if-release"] + \
                _setup_args(config_settings)
            if os.path.isfile(os.path.join(build, "build.ninja")):  # a kept one: used again
                setup = ["--reconfigure"] + setup
            _run(meson + ["setup", build, root] + setup, log)
            _run(meson + ["compile", "-C", build], log)
            _run(meson + ["install", "-C", build, "--destdir", staging, "--no-rebuild"], log)
            pkg = _installed_package(staging)
            bundled = _bundle(pkg)
            log.write("bundled: %s\n" % ", ".join(bundled))
            os.makedirs(wheel_directory, exist_ok=True)
            return _write_wheel(wheel_directory, root, pkg)
    except BuildError as e:
        sys.stderr.write("%s\n(the whole build log: %s)\n" % (e, log_path))
        raise SystemExit(1)
    finally:
        if not os.environ.get("GMT_BUILD_KEEP") and os.path.exists(log_path) and \
                not sys.exc_info()[0]:
            shutil.rmtree(work, ignore_errors=True)


@_one_line
def build_sdist(sdist_directory, config_settings=None):
    """The tracked files of the source tree (git ls-files), as name-version.tar.gz."""
    import tarfile
    root = _root()
    version = _version(root)
    base = "%s-%s" % (NAME, version)
    p = subprocess.run(["git", "-C", root, "ls-files", "-z"], stdout=subprocess.PIPE)
    if p.returncode != 0:
        raise SystemExit("gpumemtrace: an sdist is made from a git checkout (git ls-files)")
    files = [f for f in p.stdout.decode().split("\0") if f]
    os.makedirs(sdist_directory, exist_ok=True)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for f in files:
            full = os.path.join(root, f)
            if os.path.isfile(full):
                tf.add(full, arcname=base + "/" + f)
        pkg_info = _metadata(root).encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        import io
        tf.addfile(ti, io.BytesIO(pkg_info))
    return name
