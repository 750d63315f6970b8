"""`python -m gpumemtrace COMMAND ...`: the gpumemtrace CLI that came with this package.

    python -m gpumemtrace run -- python train.py
    python -m gpumemtrace report gpumemtrace-*/

The same as the `gpumemtrace` command (the wheel's console script calls main() here). The CLI is
found next to the package, in either layout it is installed in (top meson.build):

- a wheel: site-packages/gpumemtrace/bin/gpumemtrace, the tracer in gpumemtrace/lib/. The
  tracer finds its Python package relative to itself only in a prefix layout, so here the
  package's start-up hook (gpumemtrace/_site: the PyTorch layer, then the program's own
  sitecustomize) goes first in PYTHONPATH before the CLI runs, as the tracer would put it there;
- `meson install`: PREFIX/share/gpumemtrace/python/gpumemtrace -> PREFIX/bin/gpumemtrace, which
  sets PYTHONPATH itself.

The CLI replaces this process (exec): its exit status, signals and terminal are the command's.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (the CLI, the tracer) relative to this package, by layout
_WHEEL = (os.path.join(HERE, "bin", "gpumemtrace"),
          os.path.join(HERE, "lib", "libgpumemtrace.so"))
_PREFIX = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))


def is_wheel():
    """True when this package is the wheel's (the CLI and the tracer inside it)."""
    return os.access(_WHEEL[0], os.X_OK)


def cli():
    """The gpumemtrace executable installed with this package, or None (a source tree)."""
    if is_wheel():
        return _WHEEL[0]
    exe = os.path.join(_PREFIX, "bin", "gpumemtrace")
    layout = os.path.join(_PREFIX, "share", "gpumemtrace", "python", "gpumemtrace")
    if os.path.samefile(layout, HERE) if os.path.isdir(layout) else False:
        return exe if os.access(exe, os.X_OK) else None
    return None


def library():
    """The tracer library installed with this package (the path LD_PRELOAD takes), or None."""
    if is_wheel():
        return _WHEEL[1] if os.path.isfile(_WHEEL[1]) else None
    if cli() is None:
        return None
    import sysconfig
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for libdir in ("lib", os.path.join("lib", multiarch) if multiarch else None, "lib64"):
        path = libdir and os.path.join(_PREFIX, libdir, "libgpumemtrace.so")
        if path and os.path.isfile(path):
            return path
    return None


def environ(env=None):
    """A copy of @p env (default os.environ) with what the CLI needs from this package's layout:
    in a wheel, gpumemtrace/_site first in PYTHONPATH (unless GPUMEMTRACE_TORCH is off, as the
    tracer does); in a prefix, nothing (the CLI and the tracer find the package themselves)."""
    env = dict(os.environ if env is None else env)
    if not is_wheel() or env.get("GPUMEMTRACE_TORCH", "on") in ("off", "0"):
        return env
    site = os.path.join(HERE, "_site")
    old = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if site not in old:
        env["PYTHONPATH"] = os.pathsep.join([site] + old)
    return env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    exe = cli()
    if exe is None:
        sys.stderr.write(
            "gpumemtrace: no gpumemtrace executable is installed with this package (%s): install "
            "gpumemtrace (docs/install.md: pip install of the source tree, or meson install), or "
            "run a build's BUILD/tools/gpumemtrace\n" % HERE)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(exe, [exe] + argv, environ())
    except OSError as e:
        sys.stderr.write("gpumemtrace: cannot run %s: %s\n" % (exe, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
