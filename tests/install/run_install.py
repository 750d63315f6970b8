#!/usr/bin/env python3
"""install suite: what `meson install` puts in a prefix, and whether it works from there.

    run_install.py --build BUILD --source SRC tree|docs

tree: installs the build into a temporary directory (`meson install --destdir`), moves the
prefix somewhere else (nothing may depend on where it was installed or built), and checks the
file set (CLI, versioned tracer and its links, header, pkg-config file, Python package, man
pages, completions), that no installed file names the build or source tree, and then runs the
installed CLI on a C victim built through the installed gpumemtrace.pc and on a Python victim
(the installed `gpumemtrace` module, its start-up hook, a child process), on tests/simcuda.

docs: the man pages (no groff warnings; each names every option its command's --help lists, and
the version) and the bash and zsh completions (each offers every command and option --help lists,
and the values of --format, --stack, --weight).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
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


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def clean_env(build):
    """The environment of a user who has only the installed tree: no tracer, no PYTHONPATH,
    no tracer option; the simulated CUDA runtime on the loader path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUMEMTRACE_") and k not in
           ("LD_PRELOAD", "PYTHONPATH", "CUDA_INJECTION64_PATH", "PKG_CONFIG_PATH")}
    env.update({"LD_LIBRARY_PATH": os.path.join(build, "tests", "simcuda"),
                "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_DEVICES": "1"})
    return env


def build_options(build):
    with open(os.path.join(build, "meson-info", "intro-buildoptions.json")) as f:
        return {o["name"]: o["value"] for o in json.load(f)}


def version(build):
    with open(os.path.join(build, "meson-info", "intro-projectinfo.json")) as f:
        return json.load(f)["version"]


def run(cmd, env, cwd=None, timeout=120):
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p


# --- tree ------------------------------------------------------------------------------------

def install_moved(build, top):
    """`meson install` into TOP/destdir, then the prefix moved to TOP/moved/prefix: returns it."""
    meson = shutil.which("meson")
    if not meson:
        skip("meson is not on PATH")
    dest = os.path.join(top, "destdir")
    p = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--quiet",
                        "--destdir", dest], capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, "meson install --destdir succeeds (%s)" % p.stderr.strip()):
        sys.exit(finish())
    prefix = build_options(build)["prefix"]
    moved = os.path.join(top, "moved", "prefix")
    os.makedirs(os.path.dirname(moved))
    os.rename(dest + prefix, moved)
    return moved


def elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def readelf_dynamic(path):
    return subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout


def check_files(build, src, root):
    opts = build_options(build)
    libdir = os.path.join(root, opts["libdir"])
    ver = version(build)
    lib = os.path.join(libdir, "libgpumemtrace.so")
    real = os.path.join(libdir, "libgpumemtrace.so." + ver)
    check(os.access(os.path.join(root, opts["bindir"], "gpumemtrace"), os.X_OK),
          "bin/gpumemtrace is installed, executable")
    check(os.path.isfile(real) and not os.path.islink(real),
          "the tracer is installed as libgpumemtrace.so.%s" % ver)
    check(os.path.islink(lib + ".0") and os.readlink(lib + ".0") == "libgpumemtrace.so." + ver,
          "libgpumemtrace.so.0 links to it")
    check(os.path.islink(lib) and os.path.realpath(lib) == os.path.realpath(real),
          "libgpumemtrace.so (what LD_PRELOAD names) links to it")
    if shutil.which("readelf") and os.path.isfile(real):
        dyn = readelf_dynamic(real)
        check("Library soname: [libgpumemtrace.so.0]" in dyn,
              "its soname is libgpumemtrace.so.0")
    hdr = os.path.join(root, opts["includedir"], "gpumemtrace.h")
    check(os.path.isfile(hdr) and open(hdr).read() == open(os.path.join(src, "include",
                                                                          "gpumemtrace.h")).read(),
          "include/gpumemtrace.h is the public header")
    check(os.path.isfile(os.path.join(libdir, "pkgconfig", "gpumemtrace.pc")),
          "LIBDIR/pkgconfig/gpumemtrace.pc is installed")

    # the Python package: every file of python/gpumemtrace, byte for byte, and no byte code, with
    # the format's block vocabulary beside the bridge's source (meson.build)
    pysrc = os.path.join(src, "python", "gpumemtrace")
    pydst = os.path.join(root, opts["datadir"], "gpumemtrace", "python", "gpumemtrace")
    want = set()
    for d, dirs, files in os.walk(pysrc):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        want |= {os.path.relpath(os.path.join(d, f), pysrc) for f in files
                 if not f.endswith(".pyc")}
    got = set()
    for d, _, files in os.walk(pydst):
        got |= {os.path.relpath(os.path.join(d, f), pydst) for f in files}
    check(os.path.isfile(os.path.join(pydst, "torch_entry.h")) and
          open(os.path.join(pydst, "torch_entry.h"), "rb").read()
          == open(os.path.join(src, "src", "format", "torch_entry.h"), "rb").read(),
          "src/format/torch_entry.h is installed beside the bridge's source")
    got.discard("torch_entry.h")
    check(want and got == want, "share/gpumemtrace/python/gpumemtrace holds the package's files "
          "and nothing else (missing %s, extra %s)" % (sorted(want - got), sorted(got - want)))
    same = [f for f in want & got if open(os.path.join(pysrc, f), "rb").read()
            == open(os.path.join(pydst, f), "rb").read()]
    check(len(same) == len(want & got), "each installed package file is the source's")
    for f in ("__init__.py", "_site/sitecustomize.py"):
        check(f in got, "the package has %s" % f)

    man1 = os.path.join(root, opts["mandir"], "man1")
    for page in ("gpumemtrace", "gpumemtrace-run", "gpumemtrace-report", "gpumemtrace-check",
                 "gpumemtrace-diff", "gpumemtrace-summarize", "gpumemtrace-live"):
        check(os.path.isfile(os.path.join(man1, page + ".1")), "man page %s(1)" % page)
    data = os.path.join(root, opts["datadir"])
    check(os.path.isfile(os.path.join(data, "bash-completion", "completions", "gpumemtrace")),
          "bash completion in share/bash-completion/completions/gpumemtrace")
    check(os.path.isfile(os.path.join(data, "zsh", "site-functions", "_gpumemtrace")),
          "zsh completion in share/zsh/site-functions/_gpumemtrace")


def check_no_build_paths(build, src, root):
    """No installed file names the build or the source tree: no RPATH/RUNPATH there, and no such
    string outside an ELF file's debug information (which names the sources, as it should)."""
    needles = {os.path.realpath(build).encode(), os.path.realpath(src).encode()}
    have_strip = shutil.which("objcopy") is not None
    bad = []
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            if os.path.islink(path):
                target = os.readlink(path)
                if os.path.isabs(target):
                    bad.append(path + " (absolute link)")
                continue
            data = open(path, "rb").read()
            if elf(path):
                dyn = readelf_dynamic(path)
                if "RPATH" in dyn or "RUNPATH" in dyn:
                    bad.append(path + " (RPATH/RUNPATH)")
                if not have_strip:
                    continue
                stripped = os.path.join(os.path.dirname(root), "stripped")
                subprocess.run(["objcopy", "--strip-debug", path, stripped], check=True)
                data = open(stripped, "rb").read()
                os.unlink(stripped)
            if any(n in data for n in needles):
                bad.append(path)
    check(not bad, "no installed file names the build or source tree, or has an RPATH: %s"
          % bad)


def pkg_config(root, opts, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(root, opts["libdir"], "pkgconfig"))
    p = subprocess.run(["pkg-config"] + list(args) + ["gpumemtrace"], env=env,
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def trace_report(cli, outdir, env):
    p = run([cli, "report", "--format", "json", outdir], env)
    if not check(p.returncode == 0, "the installed CLI reports on %s (%s)" % (outdir, p.stderr)):
        return None
    return json.loads(p.stdout)


def leak_sites(rep):
    """{(file basename, bytes)} of the report's leak sites"""
    out = set()
    for s in rep["leak_sites"]:
        site = s.get("site") or {}
        out.add((os.path.basename(site.get("file") or ""), s["bytes"]))
    return out


def no_tracer_complaints(stderr, what):
    bad = [l for l in stderr.splitlines()
           if "CUDA_INJECTION64_PATH is already set" in l or "cannot" in l
           or "another copy of the tracer" in l]
    check(not bad, "%s: no complaint from the tracer or the CLI: %s" % (what, bad))


def c_victim(build, src, root, top, cli):
    opts = build_options(build)
    cflags = pkg_config(root, opts, "--cflags")
    if not check(cflags is not None, "pkg-config finds gpumemtrace in the moved tree"):
        return
    incdir = os.path.join(root, opts["includedir"])
    check(any(os.path.realpath(f[2:]) == os.path.realpath(incdir) for f in cflags.split()
              if f.startswith("-I")),
          "its --cflags name the moved tree's include directory (%s)" % cflags)
    tracer = pkg_config(root, opts, "--variable=tracer")
    check(tracer and os.path.realpath(tracer) == os.path.realpath(
        os.path.join(root, opts["libdir"], "libgpumemtrace.so")),
        "its tracer variable is the moved tree's libgpumemtrace.so (%s)" % tracer)
    pydir = pkg_config(root, opts, "--variable=pythondir")
    check(pydir and os.path.isfile(os.path.join(pydir, "gpumemtrace", "__init__.py")),
          "its pythondir variable holds the gpumemtrace package (%s)" % pydir)

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        check(False, "a C compiler (cc) to build the C victim")
        return
    exe = os.path.join(top, "victim")
    p = subprocess.run([cc] + cflags.split() + [os.path.join(src, "tests", "install", "victim.c"),
                        "-g", "-o", exe, "-L", os.path.join(build, "tests", "simcuda"),
                        "-lcudart"],
                       capture_output=True, text=True)
    if not check(p.returncode == 0, "the C victim builds with the installed header via "
                 "pkg-config (%s)" % p.stderr.strip()):
        return
    env = clean_env(build)
    out = os.path.join(top, "out-c")
    p = run([cli, "run", "-o", out, "--", exe], env, cwd=top)
    check(p.returncode == 0, "the installed CLI runs the C victim (%d: %s)" % (p.returncode,
                                                                          p.stderr))
    check("tracer: present" in p.stdout, "the header's weak symbols resolve under the installed "
          "tracer")
    preload = re.search(r"^preload: (.*)$", p.stdout, re.M)
    lib = os.path.join(root, opts["libdir"], "libgpumemtrace.so")
    check(preload and preload.group(1).split(":")[0] == os.path.realpath(
        os.path.dirname(lib)) + "/libgpumemtrace.so",
        "LD_PRELOAD names the moved tree's libgpumemtrace.so (%s)" % (preload and
                                                                     preload.group(1)))
    no_tracer_complaints(p.stderr, "C victim")
    rep = trace_report(cli, out, env)
    if rep:
        check(("victim.c", 1 << 20) in leak_sites(rep),
              "the report names victim.c for the 1 MiB leak (%s)" % leak_sites(rep))
        labels = [m["label"] for m in rep["processes"][0]["markers"]] if rep["processes"] else []
        check(labels == ["c start", "c end"], "the C markers are in the trace (%s)" % labels)


def py_victim(build, src, root, top, cli):
    opts = build_options(build)
    env = clean_env(build)
    script = os.path.join(src, "tests", "install", "victim.py")
    pydir = os.path.realpath(os.path.join(root, opts["datadir"], "gpumemtrace", "python"))
    out = os.path.join(top, "out-py")
    p = run([cli, "run", "-o", out, "--", sys.executable, script], env, cwd=top)
    check(p.returncode == 0, "the installed CLI runs the Python victim (%d: %s)" % (p.returncode,
                                                                               p.stderr))
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    check(len(lines) == 2, "the victim and its child both ran (%d lines)" % len(lines))
    for info in lines:
        who = "child" if info["child"] else "victim"
        check(info["enabled"], "%s: gpumemtrace.enabled()" % who)
        check(os.path.realpath(info["module"]).startswith(pydir + "/"),
              "%s: `import gpumemtrace` is the installed package (%s)" % (who, info["module"]))
        check(info["sitecustomize"] and os.path.realpath(info["sitecustomize"]) == os.path.join(
            pydir, "gpumemtrace", "_site", "sitecustomize.py"),
            "%s: the installed start-up hook ran (%s)" % (who, info["sitecustomize"]))
    no_tracer_complaints(p.stderr, "Python victim and its child")
    rep = trace_report(cli, out, env)
    if rep:
        check(len(rep["processes"]) == 2, "two traces: the victim and its child")
        check(("victim.py", 3 << 20) in leak_sites(rep),
              "the report names victim.py for the 3 MiB leak (%s)" % leak_sites(rep))

    # python -m gpumemtrace with the installed package on PYTHONPATH: the installed CLI
    p = run([sys.executable, "-m", "gpumemtrace", "--version"], dict(env, PYTHONPATH=pydir),
            cwd=top)
    check(p.returncode == 0 and p.stdout.strip() == "gpumemtrace " + version(build),
          "python -m gpumemtrace runs the installed CLI (%s)" % (p.stdout + p.stderr).strip())

    # LD_PRELOAD of the installed library alone: it finds its package relative to itself
    out = os.path.join(top, "out-preload")
    os.mkdir(out)
    e = dict(env, LD_PRELOAD=os.path.join(root, opts["libdir"], "libgpumemtrace.so"),
             GPUMEMTRACE_OUTPUT_DIR=out)
    p = run([sys.executable, script, "--child"], e, cwd=top)
    info = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    check(p.returncode == 0 and info and info[0]["enabled"] and
          os.path.realpath(info[0]["module"]).startswith(pydir + "/"),
          "LD_PRELOAD=LIBDIR/libgpumemtrace.so alone: `import gpumemtrace` finds the installed "
          "package (%s %s)" % (info, p.stderr))
    check(len(glob.glob(os.path.join(out, "*.jsonl.zst"))) == 1,
          "... and the trace is written (compressed, the default)")


def tree(build, src):
    top = tempfile.mkdtemp(prefix="gmt-install-")
    try:
        root = install_moved(build, top)
        opts = build_options(build)
        cli = os.path.join(root, opts["bindir"], "gpumemtrace")
        check_files(build, src, root)
        check_no_build_paths(build, src, root)
        p = run([cli, "--version"], clean_env(build))
        check(p.stdout.strip() == "gpumemtrace " + version(build),
              "the installed CLI runs (%s)" % p.stdout.strip())
        c_victim(build, src, root, top, cli)
        py_victim(build, src, root, top, cli)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return finish()


# --- docs ------------------------------------------------------------------------------------

def cli_help(build, *cmd):
    return subprocess.run([os.path.join(build, "tools", "gpumemtrace")] + list(cmd) + ["--help"],
                          capture_output=True, text=True).stdout


def help_options(text):
    """Options a --help lists: the -x and --long tokens at the start of its option lines."""
    opts = set()
    for line in text.splitlines():
        m = re.match(r"\s+(-[-\w, =\[\]]*)", line)
        if m:
            opts |= set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", m.group(1)))
    return opts


def help_values(text, opt):
    """The values a usage line gives for OPT: `--format text|json` -> {text, json}."""
    m = re.search(re.escape(opt) + r" ([a-z]+(?:\|[a-z]+)+)", text)
    return set(m.group(1).split("|")) if m else set()


def commands(build):
    top = cli_help(build)
    body = top.split("Commands:", 1)[1].split("\n\n", 1)[0]
    return {m for m in re.findall(r"^  ([a-z]+) ", body, re.M)}


def man_text(path):
    """A page's text with roff's escapes undone enough to find option names in it."""
    s = open(path).read()
    s = s.replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", s)


def check_man(build, src):
    mandir = os.path.join(src, "docs", "man")
    ver = version(build)
    groff = shutil.which("groff")
    for cmd in [None] + sorted(commands(build)):
        page = os.path.join(mandir, "gpumemtrace%s.1" % ("-" + cmd if cmd else ""))
        name = os.path.basename(page)
        if not check(os.path.isfile(page), "%s exists" % name):
            continue
        text = man_text(page)
        check(re.search(r'^\.TH \S+ 1 \S+ "gpumemtrace %s"' % re.escape(ver), text, re.M),
              "%s: its .TH line says version %s" % (name, ver))
        helptext = cli_help(build, *([cmd] if cmd else []))
        opts = help_options(helptext)
        missing = sorted(o for o in opts if not re.search(r"(?<![\w-])%s(?![\w-])"
                                                          % re.escape(o), text))
        check(opts and not missing, "%s names every option of --help (%d; missing %s)"
              % (name, len(opts), missing))
        if groff:
            p = subprocess.run([groff, "-man", "-ww", "-z", page], capture_output=True,
                               text=True)
            check(p.returncode == 0 and not p.stderr.strip(),
                  "%s: groff -ww has no warning (%s)" % (name, p.stderr.strip()))
    # the tracer's environment: every option the library lists is in gpumemtrace(1)
    lib = os.path.join(build, "src", "libgpumemtrace.so")
    p = subprocess.run(["/bin/true"], env=dict(os.environ, GPUMEMTRACE_HELP="1", LD_PRELOAD=lib),
                       capture_output=True, text=True)
    names = set(re.findall(r"^\s+(GPUMEMTRACE_[A-Z_]+)", p.stderr, re.M))
    text = man_text(os.path.join(mandir, "gpumemtrace.1"))
    env_section = text.split(".SH ENVIRONMENT", 1)[-1].split(".SH ", 1)[0]
    missing = sorted(n for n in names if ".B " + n + "\n" not in env_section)
    check(names and not missing, "gpumemtrace(1)'s ENVIRONMENT has every tracer option (%d; "
          "missing %s)" % (len(names), missing))


def bash_complete(script, lines):
    """The candidates bash completion offers for each command line (a trailing space: a new
    word), through the script's own function."""
    prog = ["source %s || exit 3" % shlex_quote(script)]
    for line in lines:
        words = line.split()
        if line.endswith(" "):
            words.append("")
        arr = " ".join(shlex_quote(w) for w in words)
        prog.append("COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=(); _gpumemtrace; "
                    "printf '%%s\\n' \"${COMPREPLY[@]}\"; echo '@@'" % (arr, len(words) - 1))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(prog)],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None
    out = p.stdout.split("@@\n")
    return [set(x for x in o.splitlines() if x) for o in out[:len(lines)]]


ZSH_CAPTURE = r"""
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; PROMPT=''; RPROMPT=''"
zpty -w z "compadd () { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd \"\$@\"; return \$?; fi; typeset -a __h; builtin compadd -A __h \"\$@\"; (( \$#__h )) && print -l -- \$__h >> \$GMT_OUT; builtin compadd \"\$@\"; }"
zpty -w z "zstyle ':completion:*' menu no; zstyle ':completion:*' list-prompt ''"
shift
wait_for() { for i in {1..$2}; do [[ -e $1 ]] && return 0; sleep 0.1; done; return 1 }
n=0
for line in "$@"; do
	(( ++n ))
	# the shell has run this line (GMT_OUT is set) before the query is typed; zle may drop
	# what was typed ahead while it completed, so the line is sent again until it ran
	for try in {1..10}; do
		zpty -w -n z $'\C-u'
		zpty -w z "GMT_OUT=$GMT_DIR/$n; : > $GMT_DIR/ready.$n"
		wait_for $GMT_DIR/ready.$n 20 && break
	done
	[[ -e $GMT_DIR/ready.$n ]] || exit 4
	zpty -w -n z "$line"$'\t'
	wait_for $GMT_DIR/$n 50
	sleep 0.3
done
zpty -d z
"""


def zsh_complete(fpath_dir, lines):
    """The candidates zsh's completion system offers for each line (typed into an interactive
    zsh in a pseudo-terminal, compadd recorded): None when zsh cannot be driven here."""
    zsh = shutil.which("zsh")
    if not zsh:
        return None
    top = tempfile.mkdtemp(prefix="gmt-zsh-")
    try:
        script = os.path.join(top, "capture.zsh")
        with open(script, "w") as f:
            f.write(ZSH_CAPTURE)
        p = subprocess.run([zsh, "-f", script, fpath_dir] + lines, capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, GMT_DIR=top))
        if p.returncode != 0:
            return None
        out = []
        for i in range(1, len(lines) + 1):
            path = os.path.join(top, str(i))
            out.append(set(open(path).read().split("\n")) - {""} if os.path.exists(path)
                       else set())
        return out
    finally:
        shutil.rmtree(top, ignore_errors=True)


def shlex_quote(s):
    import shlex
    return shlex.quote(s)


def check_completions(build, src):
    cmds = commands(build)
    top_opts = help_options(cli_help(build))
    queries = [("gpumemtrace ", cmds, "the commands"), ("gpumemtrace -", top_opts, "the options")]
    for cmd in sorted(cmds):
        helptext = cli_help(build, cmd)
        queries.append(("gpumemtrace %s -" % cmd, help_options(helptext), "%s's options" % cmd))
        for opt in ("--format", "--stack", "--weight"):
            vals = help_values(helptext, opt)
            if vals:
                queries.append(("gpumemtrace %s %s " % (cmd, opt), vals,
                                "%s %s's values" % (cmd, opt)))
    bash_file = os.path.join(src, "data", "completions", "gpumemtrace.bash")
    got = bash_complete(bash_file, [q[0] for q in queries]) if shutil.which("bash") else None
    if check(got is not None, "bash runs the completion script"):
        for (line, want, what), have in zip(queries, got):
            # zsh lists the one-letter options with the long ones; bash offers both as well
            check(want <= have, "bash completes %s for `%s` (missing %s)"
                  % (what, line, sorted(want - have)))
    zsh_dir = os.path.join(src, "data", "completions")
    if not shutil.which("zsh"):
        print("note: zsh is not installed: its completion is not checked")
        return
    p = subprocess.run(["zsh", "-n", os.path.join(zsh_dir, "_gpumemtrace")],
                       capture_output=True, text=True)
    check(p.returncode == 0, "_gpumemtrace parses (%s)" % p.stderr.strip())
    got = zsh_complete(zsh_dir, [q[0] for q in queries])
    if check(got is not None, "zsh's completion system can be driven in a pseudo-terminal"):
        for (line, want, what), have in zip(queries, got):
            check(want <= have, "zsh completes %s for `%s` (missing %s)"
                  % (what, line, sorted(want - have)))


def docs(build, src):
    check_man(build, src)
    check_completions(build, src)
    return finish()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("case", choices=["tree", "docs"])
    a = ap.parse_args()
    build, src = os.path.abspath(a.build), os.path.abspath(a.source)
    return {"tree": tree, "docs": docs}[a.case](build, src)


if __name__ == "__main__":
    sys.exit(main())
