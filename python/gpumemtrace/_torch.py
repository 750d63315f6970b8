"""The PyTorch layer: c10's caching allocator's own events (every tensor's block, its segment,
free requested vs completed, OOM) in the trace, beside the CUDA-level events, with our stacks.

How it gets into a program with no change to it: under the tracer, PYTHONPATH holds
gpumemtrace/_site, whose sitecustomize calls install() at start-up. install() watches for
`import torch`; when torch is imported it starts building the bridge (torch_bridge.cpp, against the
headers of this very torch: TraceEntry's layout changed over versions) in the background, and asks
torch to call attach() at CUDA's lazy initialisation (torch.cuda._lazy_call): before it the
allocator has no devices and a tracker would be attached to none. attach() loads the bridge,
attaches the tracker, backfills what already exists from one snapshot, and writes a "torch" line
with the layer's status.

Where the layer cannot be had, the trace keeps its CUDA-level events and says why in that line,
with one warning on stderr: another allocator backend (cudaMallocAsync: every tensor is then a
cudaMallocAsync the tracer records anyway; a pluggable allocator), a torch version this code does
not know (GPUMEMTRACE_TORCH=any tries anyway), no C++ compiler or no headers, a failed build.

GPUMEMTRACE_TORCH: on (default), off, any (also torch versions not known to work).
Built bridges are cached in $GPUMEMTRACE_CACHE_DIR, else $XDG_CACHE_HOME/gpumemtrace, else
~/.cache/gpumemtrace; `python -m gpumemtrace.torch_bridge` builds one ahead of time. In a
secure-execution process (setuid, setgid, file capabilities) the environment's paths are not
used: the cache is the effective user's ~/.cache/gpumemtrace from the password database.

The bridge is code run in the traced process, so a cached one is loaded only where no other user
can have put or changed it (as ssh treats its keys): the file and every directory above it owned
by this user or root, none writable by group or others unless sticky (then only its owner can
replace the entry below it). A cache that fails that is not used: the bridge is built into a
private directory for this run, with one warning naming what was wrong.
"""
import ctypes
import hashlib
import importlib.machinery
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "torch_bridge.cpp")
# the block vocabulary the bridge hands over: the trace format's (src/format/torch_entry.h),
# installed beside the bridge (meson.build); in a source tree, where the format keeps it
HEADER = next((h for h in (os.path.join(HERE, "torch_entry.h"),
                           os.path.join(HERE, "..", "..", "src", "format", "torch_entry.h"))
               if os.path.isfile(h)), os.path.join(HERE, "torch_entry.h"))
ABI = 1  # GMT_TORCH_ABI of torch_entry.h

# (major, minor) of the torch versions whose allocator interface this layer was checked against
# (headers read, the bridge built against them and run on the torch double that plays them;
# docs/torch-versions.md): others are refused unless GPUMEMTRACE_TORCH=any.
KNOWN = {(2, 6), (2, 8), (2, 11), (2, 14)}
# from this version on torch's C++ headers need C++20 (c10's intrusive_ptr declares operator<=>
# in 2.14); the bridge is built as C++17 before it
CXX20_FROM = (2, 14)
BUILD_TIMEOUT_S = 300

_state = {"installed": False, "build": None, "attached": False}


def _warn(msg):
    # paths come from the environment and the file system: no control character reaches a terminal
    msg = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in msg)
    sys.stderr.write(f"gpumemtrace: {msg}\n")
    sys.stderr.flush()


def _mode():
    v = os.environ.get("GPUMEMTRACE_TORCH", "on").strip().lower()
    return {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}.get(v, v)


def install():
    """Watch for `import torch` (called once, at start-up, by gpumemtrace/_site)."""
    if _state["installed"] or _mode() == "off":
        return
    _state["installed"] = True
    if "torch" in sys.modules:
        _on_torch(sys.modules["torch"])
        return
    sys.meta_path.insert(0, _TorchWatcher())


class _TorchWatcher:
    """A meta path finder that finds nothing itself: it wraps the loader of `torch` so that
    _on_torch() runs once torch's __init__ has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterLoader(spec.loader)
        return spec

    def invalidate_caches(self):
        pass


class _AfterLoader:
    def __init__(self, real):
        self._real = real

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        try:
            _on_torch(module)
        except Exception as e:  # noqa: BLE001
            _warn(f"the PyTorch layer is off: {type(e).__name__}: {e}")

    def __getattr__(self, name):
        return getattr(self._real, name)


def _version(torch):
    base = torch.__version__.split("+")[0]
    parts = base.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def _steps(torch):
    """Automatic step marks with no change to the program: torch's global optimizer step hook
    (register_optimizer_step_post_hook, torch >= 2.0) puts a marker flagged "auto" in the trace
    after each step of the first optimizer that steps (a second optimizer stepping in the same
    loop would cut each step in two). A program with no optimizer (inference, evaluation, a
    hand-written update) gets one at the end of each forward() of its outermost module
    (_forward_steps); its first optimizer step ends those. The analysis samples growth at these
    when the program put no marks of its own (docs/markers.md). One ctypes call per step; never
    raises into torch."""
    lib = _tracer()
    fn = getattr(lib, "gmt_step_mark", None) if lib is not None else None
    if fn is None or os.environ.get("GPUMEMTRACE_AUTO_STEPS", "1").strip().lower() in (
            "0", "off", "false", "no"):
        return
    try:
        import torch.optim.optimizer as optimizer
        register = optimizer.register_optimizer_step_post_hook
    except (ImportError, AttributeError):
        return
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    state = {"owner": None, "n": 0}

    forward = _forward_steps(torch, fn, state)

    def hook(opt, args, kwargs):
        try:
            if state["owner"] is None:
                state["owner"] = id(opt)
                forward()  # the optimizer's steps are the steps from now on
            if id(opt) != state["owner"]:
                return
            state["n"] += 1
            fn(b"optimizer step %d" % state["n"])
        except Exception:  # noqa: BLE001 (a step mark must never break the step)
            pass

    _state["step_hook"] = register(hook)


def _forward_steps(torch, fn, state):
    """Steps from forward(): global module hooks find the outermost module (the first whose
    forward ends at depth 0: the model), then only that module's own forward pre-hook stays (two
    global hook calls per module call until then, one call per step after): a step ends where
    the model's next forward() starts ("forward N": N forwards done). Marked at the start of the
    next one, not at the end of this one, so that a training loop's first optimizer step, which
    ends these, comes before any of them. Returns what stops it (that first optimizer step)."""
    import weakref
    try:
        from torch.nn.modules import module as nnmod
    except ImportError:
        return lambda: None
    fwd = {"depth": 0, "top": None, "n": 0, "handles": [], "off": False}

    def stop():
        fwd["off"] = True
        for h in fwd["handles"]:
            try:
                h.remove()
            except Exception:  # noqa: BLE001
                pass
        fwd["handles"] = []

    def top_start(module, args):
        try:
            if fwd["off"] or state["n"]:
                return
            fwd["n"] += 1
            fn(b"forward %d" % fwd["n"])
        except Exception:  # noqa: BLE001 (a step mark must never break forward())
            pass

    def pre(module, args):
        fwd["depth"] += 1

    def post(module, args, out):
        try:
            fwd["depth"] = max(0, fwd["depth"] - 1)
            if fwd["depth"] or fwd["top"] is not None or fwd["off"]:
                return
            fwd["top"] = weakref.ref(module)
            for h in fwd["handles"]:
                h.remove()
            fwd["handles"] = [module.register_forward_pre_hook(top_start)]
        except Exception:  # noqa: BLE001
            pass

    try:
        fwd["handles"].append(nnmod.register_module_forward_pre_hook(pre))
        try:  # always_call (torch >= 2.1): the depth comes back down when forward raises
            fwd["handles"].append(nnmod.register_module_forward_hook(post, always_call=True))
        except TypeError:
            fwd["handles"].append(nnmod.register_module_forward_hook(post))
    except AttributeError:
        stop()
    return stop


def _watch_gc(lib):
    """Tell the tracer while Python's cyclic collector runs (gc.callbacks): the tensors it frees
    then were kept alive only by reference cycles, and their block frees say so ("gc"). Two
    ctypes calls per collection."""
    import gc
    fn = getattr(lib, "gmt_torch_gc", None)
    if fn is None:
        return
    fn.argtypes = [ctypes.c_int]
    fn.restype = None

    def collecting(phase, info):
        fn(1 if phase == "start" else 0)

    gc.callbacks.append(collecting)


# --- what keeps the live tensors, at the end ----------------------------------------------------

HOLDERS_MAX = 64  # the holders written, largest first
WALK_BUDGET_S = 10.0  # the end-of-run walk stops after this long (and says so)
_walk = {"stopped": False}  # the last walk ran out of its budget


def _block_of(x):
    """(device, address of the caching allocator's block) of tensor @p x, or None."""
    try:
        if not x.is_cuda:
            return None
        return (x.device.index or 0, x.untyped_storage().data_ptr())
    except Exception:  # noqa: BLE001 (a tensor without storage, a fake, a freed one)
        return None


def _saved_blocks(torch, root, seen, out, params):
    """The blocks of the tensors saved in @p root's autograd graph (its grad_fn and the nodes it
    reaches through next_functions), each node once over all roots (@p seen); a parameter's
    block (@p params: a Linear's saved weight) is the model's, not the graph's."""
    stack = [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                v = getattr(node, name)
            except Exception:  # noqa: BLE001 (the graph's buffers were freed: backward ran)
                continue
            for x in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(x, torch.Tensor):
                    b = _block_of(x)
                    if b and b not in params:
                        out.add(b)
        for nxt in getattr(node, "next_functions", ()) or ():
            if nxt and nxt[0] is not None:
                stack.append(nxt[0])


def holders(torch, budget_s=WALK_BUDGET_S):
    """What keeps the program's live CUDA tensors: [{holder, kind, roots, blocks}], largest
    first. A tensor with an autograd graph (grad_fn) keeps the tensors its graph saved for
    backward ("graph": the kept-graph leak, `losses.append(loss)`); one without keeps itself
    ("kept"). The holder is named by where the program keeps it: a module's global, an item of
    a list, tuple or dict that is one, an object's attribute. Parameters are left out.

    The walk looks at every object of the program: objects that warn when looked at (torch's
    deprecated `torch.distributed.reduce_op` warns on isinstance()) must not print into the
    program's stderr on our behalf, so warnings are off while it runs."""
    import time
    import warnings
    _walk["stopped"] = False
    end = time.monotonic() + budget_s
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _holders(torch, end)
    _walk["stopped"] = time.monotonic() > end
    return out


def _referring(objs, targets, end, chunk=1024):
    """The objects of @p objs (in their order) that refer to an object whose id() is in
    @p targets: gc.get_referents() of a chunk at a time, in C, and of the halves of a chunk
    that does, down to single objects. Stops at time.monotonic() @p end (what it found so
    far)."""
    import gc
    import time
    out = []

    def look(part):
        if targets.isdisjoint(map(id, gc.get_referents(*part))):
            return
        if len(part) <= 4:
            out.extend(o for o in part if not targets.isdisjoint(map(id, gc.get_referents(o))))
            return
        half = len(part) // 2
        look(part[:half])
        look(part[half:])

    for i in range(0, len(objs), chunk):
        if time.monotonic() > end:
            break
        look(objs[i:i + chunk])
    return out


def _dictoffset(t):
    """Whether instances of type @p t have a __dict__ of their own (the type's slot, not a
    class attribute of that name)."""
    try:
        return type.__dict__["__dictoffset__"].__get__(t) != 0
    except Exception:  # noqa: BLE001
        return False


def _tensors_and_params(torch, objs):
    """Of @p objs (tensors): {id: tensor} of those that are not parameters, and the set of the
    parameters' blocks."""
    param = getattr(getattr(torch, "nn", None), "Parameter", None)
    tensors, params = {}, set()
    for o in objs:
        if param and isinstance(o, param):
            b = _block_of(o)
            if b:
                params.add(b)
        else:
            tensors[id(o)] = o
    return tensors, params


def _module_names():
    """{id(a module's __dict__): the module's name}. One module under two names
    (multiprocessing puts the script under "__mp_main__" as well): the name the program knows
    it by, its own __name__, wins."""
    modules = {}
    for name, mod in list(sys.modules.items()):
        d = getattr(mod, "__dict__", None)
        if isinstance(d, dict) and (id(d) not in modules or name == d.get("__name__")):
            modules[id(d)] = name
    return modules


def _holders(torch, end):
    """holders() without the warnings filter. Most of a program's objects hold no tensor, and
    a walk in Python over each of them (a process with torch and a model library has hundreds
    of thousands) cost about a microsecond apiece at the end of every run. The objects are
    sorted by their types (each type asked once), and which of them refer to a tensor (or to a
    list, tuple or dict that holds one) is asked of many at a time in C (gc.get_referents());
    Python looks closer only at those that do. tests/torchsim/test_holders.py compares the
    answer with a walk of every object. What counts: a tensor is an object whose type is
    torch.Tensor or a subclass, not a parameter; it is held by a module's global, an item of a
    list, tuple or dict, or an attribute in an instance's __dict__ (its type gives it one);
    a list, tuple or dict is named by a global or an attribute that holds it. Where a tensor
    is reachable by several names, lists and tuples come first (the loop's
    `losses.append(loss)` names the last loss too), then modules' globals, then instances'
    attributes, then other dicts; each kind in the order of gc.get_objects()."""
    import gc
    import time
    import types
    objs = gc.get_objects()
    tensor_t = torch.Tensor
    seq_dict_t = {list, tuple, dict}
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    tensor_types, attr_types = set(), set()
    for t in set(map(type, objs)):
        try:
            if issubclass(t, tensor_t):
                tensor_types.add(t)
            elif t not in seq_dict_t and not issubclass(t, skip) and _dictoffset(t):
                attr_types.add(t)
        except Exception:  # noqa: BLE001 (a type whose subclass check raises)
            continue
    tensors, params = _tensors_and_params(torch, [o for o in objs if type(o) in tensor_types])
    if not tensors:
        return []
    modules = _module_names()
    tids = set(tensors)
    # the lists and tuples that hold a tensor; the dicts whose values do (a module's, an
    # instance's __dict__ where it exists, a plain one)
    seq_dicts = [o for o in objs if type(o) in seq_dict_t]
    hits = _referring(seq_dicts, tids, end)
    seqs = [o for o in hits if type(o) is not dict]
    held = [d for d in hits if type(d) is dict and not tids.isdisjoint(map(id, d.values()))]
    # what may be a container (a list, tuple or dict that holds a tensor), and the dicts that
    # hold one of those (where the program keeps the container)
    maybe = {id(o) for o in seqs} | {id(d) for d in held if id(d) not in modules}
    all_dicts = [o for o in seq_dicts if type(o) is dict]
    holding = [d for d in _referring(all_dicts, maybe, end)
               if not maybe.isdisjoint(map(id, d.values()))]
    # instances whose attributes hold a tensor or a container: in a __dict__ of their own (one
    # that exists already is among the dicts above) or inline in the instance, where only its
    # referents show them
    targets = tids | maybe | {id(d) for d in holding if id(d) not in modules}
    owner_of_dict, attrs = {}, []
    for o in _referring([o for o in objs if type(o) in attr_types], targets, end):
        try:
            d = o.__dict__
        except Exception:  # noqa: BLE001 (a proxy whose attribute lookup raises)
            continue
        if isinstance(d, dict) and id(d) not in owner_of_dict:
            owner_of_dict[id(d)] = o
            attrs.append(d)
    # the dicts to read: modules' globals, then instances' attributes, then the rest
    found = {id(d) for d in held} | {id(d) for d in holding}
    found = [d for d in all_dicts if id(d) in found]
    dicts = [d for d in found if id(d) in modules] + attrs
    dicts += [d for d in found if id(d) not in modules and id(d) not in owner_of_dict]
    return _named_holders(torch, tensors, params, modules, seqs, dicts, owner_of_dict, end)


def _named_holders(torch, tensors, params, modules, seqs, dicts, owner_of_dict, end):
    """The holders of @p tensors ({id: tensor}, not parameters; @p params: the parameters'
    blocks) from the lists and tuples that hold one (@p seqs) and the dicts to read (@p dicts:
    modules' globals, instances' attributes, other dicts, in the order names are preferred);
    @p modules: {id(a module's __dict__): its name}; @p owner_of_dict: {id(an instance's
    __dict__): the instance}. Names each tensor's holder, groups them, follows graphs."""
    import time
    refs = {}
    for o in seqs:
        for x in o:
            if id(x) in tensors:
                refs.setdefault(id(x), []).append((o, None))
    for d in dicts:
        for k, x in list(d.items()):
            if id(x) in tensors:
                refs.setdefault(id(x), []).append((d, k))
    containers = set()
    for lst in refs.values():
        for c, _ in lst:
            if id(c) not in modules and id(c) not in owner_of_dict:
                containers.add(id(c))
    named = {}  # id(container) -> (dict, key) where the program keeps it
    for d in dicts:
        for k, x in list(d.items()):
            if id(x) in containers and id(x) not in named:
                named[id(x)] = (d, k)

    def place(d, k, what=None):
        """'losses (a list in __main__)', 'self.cache (a dict of a Trainer)', 'x in __main__'"""
        if not isinstance(k, str):
            return None
        if id(d) in modules:
            return f"{k} (a {what} in {modules[id(d)]})" if what else f"{k} in {modules[id(d)]}"
        o = owner_of_dict.get(id(d))
        if o is not None:
            cls = type(o).__name__
            return f".{k} (a {what} of a {cls})" if what else f"attribute {k} of a {cls}"
        return None

    def name(x):
        for c, k in refs.get(id(x), ()):
            where = place(c, k) if type(c) is dict else None
            if not where and id(c) in named:
                where = place(*named[id(c)], what=type(c).__name__)
            if where:
                return where
        return None

    groups, seen_nodes, taken = {}, set(), set()
    for x in tensors.values():
        if time.monotonic() > end:
            break
        where = name(x)
        if not where:
            continue
        graph = getattr(x, "grad_fn", None) is not None
        g = groups.setdefault((where, graph), {"roots": 0, "blocks": set()})
        g["roots"] += 1
        b = _block_of(x)
        if b:
            g["blocks"].add(b)
        if graph:
            _saved_blocks(torch, x, seen_nodes, g["blocks"], params)
    out = []
    # graphs first: a tensor a graph saved is the graph's, however else it is reachable
    for (where, graph), g in sorted(groups.items(), key=lambda kv: not kv[0][1]):
        blocks = sorted(b for b in g["blocks"] if b not in taken)
        taken.update(blocks)
        if blocks:
            out.append({"holder": where, "kind": "graph" if graph else "kept",
                        "roots": g["roots"], "blocks": [[d, hex(p)] for d, p in blocks]})
    # largest first; ties by name, so that the same program gives the same line whatever order
    # the collector keeps its objects in
    out.sort(key=lambda h: (-len(h["blocks"]), h["holder"], h["kind"]))
    return out[:HOLDERS_MAX]


def _holders_at_exit(torch, lib):
    """At the end of the run (atexit): the holders into the trace (a "holders" line)."""
    import json
    try:
        found = holders(torch)
        if _walk["stopped"]:
            _warn(f"what keeps the live tensors: the walk of the program's objects stopped after "
                  f"{WALK_BUDGET_S:g} s; the holders it found by then are in the trace")
        fn = lib.gmt_torch_holders
        fn.argtypes = [ctypes.c_char_p]
        fn.restype = None
        fn(json.dumps(found, ensure_ascii=True, separators=(",", ":")).encode())
    except Exception as e:  # noqa: BLE001 (the program has ended: say it, change nothing)
        _warn(f"what keeps the live tensors was not found: {type(e).__name__}: {e}")


def _on_torch(torch):
    try:
        _steps(torch)
    except Exception as e:  # noqa: BLE001
        _warn(f"no automatic step marks: {type(e).__name__}: {e}")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not hasattr(cuda, "_lazy_call"):
        return
    ver = _version(torch)
    if ver not in KNOWN and _mode() != "any":
        _refuse(torch, f"torch {torch.__version__} is not a version this layer knows "
                       f"(known: {', '.join('%d.%d' % k for k in sorted(KNOWN))}); "
                       "GPUMEMTRACE_TORCH=any tries it")
        return
    _state["build"] = _Build(torch)
    _state["build"].start()
    cuda._lazy_call(lambda: _attach(torch))


def _tracer():
    """The tracer library (the same lookup as the marker functions), or None untraced."""
    import gpumemtrace
    return gpumemtrace._tracer_lib()


def _layer(torch, status, detail):
    lib = _tracer()
    if lib is None or getattr(lib, "gmt_torch_layer", None) is None:
        return
    fn = lib.gmt_torch_layer
    fn.argtypes = [ctypes.c_char_p] * 5
    fn.restype = None
    try:
        backend = torch.cuda.get_allocator_backend()
    except Exception:  # noqa: BLE001
        backend = None
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF") or ""
    enc = (lambda s: None if s is None else str(s).encode("utf-8", "replace"))
    fn(enc(torch.__version__), enc(backend), enc(conf), enc(status), enc(detail))


def _refuse(torch, why):
    _warn(f"PyTorch layer unavailable: {why}; the trace has CUDA-level events only")
    try:
        _layer(torch, "segments only", why)
    except Exception:  # noqa: BLE001
        pass


def _attach(torch):
    """At CUDA's lazy initialisation (torch.cuda._lazy_call): never raises."""
    try:
        if _state["attached"]:
            return
        _state["attached"] = True
        lib = _tracer()
        if lib is None or getattr(lib, "gmt_torch_record", None) is None:
            return  # untraced, or a tracer without the layer: nothing to do
        backend = torch.cuda.get_allocator_backend()
        if backend != "native":
            _refuse(torch, f"allocator backend {backend!r}: no block events"
                           + (" (every tensor is a cudaMallocAsync, recorded as such)"
                              if backend == "cudaMallocAsync" else ""))
            return
        build = _state["build"]
        path, why = build.result()
        if not path:
            build.done()
            _refuse(torch, why)
            return
        try:
            bridge = ctypes.CDLL(path)
        finally:
            build.done()
        if bridge.gmt_bridge_abi() != ABI:
            _refuse(torch, f"{path} speaks interface {bridge.gmt_bridge_abi()}, not {ABI}")
            return
        err = ctypes.create_string_buffer(512)
        bridge.gmt_bridge_attach.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        record = ctypes.cast(lib.gmt_torch_record, ctypes.c_void_p)
        if bridge.gmt_bridge_attach(record, err, len(err)) != 0:
            _refuse(torch, "attachAllocatorTraceTracker: " + err.value.decode("utf-8", "replace"))
            return
        bridge.gmt_bridge_backfill.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        bridge.gmt_bridge_backfill.restype = ctypes.c_long
        n = bridge.gmt_bridge_backfill(err, len(err))
        detail = f"bridge {path}; backfill: {n} segments and blocks" if n >= 0 else \
            "backfill failed: " + err.value.decode("utf-8", "replace")
        _state["bridge"] = bridge  # keep it loaded
        _watch_gc(lib)
        if getattr(lib, "gmt_torch_holders", None) is not None:
            import atexit
            atexit.register(_holders_at_exit, torch, lib)
        _layer(torch, "blocks", detail)
    except Exception as e:  # noqa: BLE001
        _refuse(torch, f"{type(e).__name__}: {e}")


# --- building the bridge -------------------------------------------------------------------------

def _secure():
    """True in a secure-execution process: AT_SECURE in the auxiliary vector (what the C side's
    gmt_options_secure() reads), else real and effective ids that differ."""
    try:
        with open("/proc/self/auxv", "rb") as f:
            data = f.read()
        word = struct.calcsize("@L")
        for i in range(0, len(data) - 2 * word + 1, 2 * word):
            key, val = struct.unpack_from("@LL", data, i)
            if key == 23:  # AT_SECURE
                return val != 0
            if key == 0:  # AT_NULL
                break
    except (OSError, struct.error):
        pass
    return os.getuid() != os.geteuid() or os.getgid() != os.getegid()


def cache_dir():
    if _secure():
        import pwd
        try:
            home = pwd.getpwuid(os.geteuid()).pw_dir
        except KeyError:
            return None
        return os.path.join(home, ".cache", "gpumemtrace")
    d = os.environ.get("GPUMEMTRACE_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "gpumemtrace")
    return d


def untrusted(path):
    """Why @path (its real path) could have been put or changed by another user, or None: it and
    every directory above it must be owned by this user or root and not writable by group or
    others, except a sticky directory (the entry below it is then checked for its owner)."""
    me = os.geteuid()
    p = os.path.realpath(path)
    while True:
        try:
            st = os.lstat(p)
        except OSError as e:
            return f"{p}: {e.strerror}"
        if st.st_uid not in (me, 0):
            return f"{p} is owned by uid {st.st_uid}, not by this user (uid {me}) or root"
        if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            who = "group and others" if st.st_mode & 0o022 == 0o022 else \
                "others" if st.st_mode & 0o002 else "its group"
            return f"{p} is writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def _cache_problem(out):
    """None when the cached bridge @out may be used, or built into its directory; else why not."""
    d = os.path.dirname(out)
    if not os.path.isdir(d):
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        except OSError as e:
            return f"the cache {d} cannot be made: {e.strerror}"
    why = untrusted(d)
    if why:
        return f"the cache {d} is not safe: {why}"
    if os.path.lexists(out):
        why = untrusted(out)
        if why is None and not stat.S_ISREG(os.lstat(out).st_mode):
            why = f"{out} is not a regular file"
        return f"the cached bridge is not safe: {why}" if why else None
    if not os.access(d, os.W_OK | os.X_OK):
        return f"the cache {d} is not writable"
    return None


def _cuda_include(torch):
    """A directory with cuda_runtime_api.h: CUDA_HOME, the usual toolkit places, the NVIDIA
    runtime wheels beside torch."""
    cands = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands += [os.path.join(os.environ[var], "include"),
                      os.path.join(os.environ[var], "targets", "x86_64-linux", "include")]
    cands += ["/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include",
              "/usr/include"]
    site = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    for sub in ("nvidia/cu13/include", "nvidia/cuda_runtime/include", "nvidia/cu12/include"):
        cands.append(os.path.join(site, sub))
    for d in cands:
        if os.path.isfile(os.path.join(d, "cuda_runtime_api.h")):
            return d
    return None


def plan(torch):
    """(path of the cached bridge, compile command) for this torch, or (None, why)."""
    tdir = os.path.dirname(os.path.abspath(torch.__file__))
    inc, libdir = os.path.join(tdir, "include"), os.path.join(tdir, "lib")
    if not os.path.isfile(os.path.join(inc, "c10", "cuda", "CUDACachingAllocator.h")):
        return None, f"torch's C++ headers are not installed ({inc} has no c10/cuda)"
    cuda_inc = _cuda_include(torch)
    if not cuda_inc:
        return None, "no CUDA headers (cuda_runtime_api.h) found: set CUDA_HOME"
    if os.environ.get("CXX"):
        cxx = shutil.which(os.environ["CXX"])
        if not cxx:
            return None, f"no C++ compiler: CXX={os.environ['CXX']} is not a program here"
    else:
        cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        return None, "no C++ compiler (c++, g++ or clang++ on PATH; or set CXX)"
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    h = hashlib.sha256()
    for f in (SOURCE, HEADER):
        with open(f, "rb") as fp:
            h.update(fp.read())
    key = "|".join([torch.__version__, str(abi), tdir, cuda_inc, cxx])
    h.update(key.encode())
    name = f"torch_bridge-{torch.__version__.replace('+', '_')}-abi{abi}-{h.hexdigest()[:16]}.so"
    cache = cache_dir()
    if cache is None:
        return None, f"no cache directory: uid {os.geteuid()} has no home"
    out = os.path.join(cache, name)
    ver = _version(torch)
    std = "c++20" if ver is not None and ver >= CXX20_FROM else "c++17"
    cmd = [cxx, "-O2", "-std=" + std, "-shared", "-fPIC", "-fvisibility=hidden",
           f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-I", os.path.dirname(HEADER), "-I", inc, "-isystem", cuda_inc,
           SOURCE, "-o", None, "-L", libdir, "-lc10_cuda", "-lc10", "-Wl,-rpath," + libdir]
    return out, cmd


class _Build:
    """The bridge for this torch: the cached one, or a build in a background thread started at
    `import torch` (it runs while the program goes on; attach() waits for it)."""

    def __init__(self, torch):
        self.torch = torch
        self.path, self.cmd = None, None
        self.why = None
        self.thread = None
        self.private = None  # the directory of a bridge built for this run only

    def start(self):
        out, cmd = plan(self.torch)
        if out is None:
            self.why = cmd
            return
        self.path, self.cmd = out, cmd
        why = _cache_problem(out)
        if why is None and os.path.lexists(out):
            return
        if why is not None:
            try:
                self.private = tempfile.mkdtemp(prefix="gpumemtrace-bridge-")
            except OSError as e:
                self.why = f"{why}; no private directory to build it in: {e.strerror}"
                return
            self.path = os.path.join(self.private, os.path.basename(out))
            import atexit
            atexit.register(self.done)  # also when the layer never attaches (no CUDA use)
            _warn(f"PyTorch layer: {why}: building the bridge for this run only in "
                  f"{self.private}")
        self.thread = threading.Thread(target=self._run, name="gpumemtrace-bridge-build", daemon=True)
        self.thread.start()

    def _run(self):
        out = self.path
        try:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=os.path.dirname(out))
            os.close(fd)
            cmd = [tmp if c is None else c for c in self.cmd]
            # the tracer traces no compiler: it never touches a GPU
            env = dict(os.environ, GPUMEMTRACE_ENABLE="0")
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env)
            if p.returncode != 0:
                os.unlink(tmp)
                lines = [l for l in (p.stderr or p.stdout).splitlines() if l.strip()]
                self.why = (f"building the bridge failed ({os.path.basename(cmd[0])} exit "
                            f"{p.returncode}): {' / '.join(lines[:3])[:400]}")
                return
            os.chmod(tmp, 0o755)  # readable by those who share the cache; written by us only
            os.replace(tmp, out)  # atomic: ranks building at once each install a whole file
        except (OSError, subprocess.SubprocessError) as e:
            self.why = f"building the bridge failed: {e}"

    def result(self):
        """(real path of the bridge to load, None) or (None, why): checked again here, just
        before it is loaded."""
        if self.thread is not None:
            self.thread.join(BUILD_TIMEOUT_S + 10)
        if self.why:
            return None, self.why
        if not self.path or not os.path.isfile(self.path):
            return None, "the bridge was not built"
        why = untrusted(self.path)
        if why:
            return None, f"the bridge is not safe to load: {why}"
        return os.path.realpath(self.path), None

    def done(self):
        """After the bridge is loaded (or given up): a private build's directory goes (the
        library stays mapped)."""
        if self.private:
            shutil.rmtree(self.private, ignore_errors=True)
            self.private = None
