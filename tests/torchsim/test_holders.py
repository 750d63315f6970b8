"""What keeps the live tensors at the end of a run (python/gpumemtrace/_torch.py holders()): the
answer of the layer's walk, which asks C which objects refer to a tensor, against a walk in Python
of every object the collector knows (walk_every_object() below, the layer's walk before it was
made fast, kept here as the reference), on holders a program makes: module globals, lists,
tuples and dicts kept in them, instance attributes (inline and in a __dict__ that exists),
containers kept as attributes, autograd graphs, parameters (left out), a tensor reachable by
several names; then on random object graphs of the same pieces. Each case also states the answer
a user reads, not only that both walks agree. Runs with the standard library alone (a stand-in
`torch` module: the walk needs torch.Tensor, torch.nn.Parameter and a tensor's block).

    test_holders.py            the cases (exit 1 on a difference)
    test_holders.py --bench    both walks timed on a program with many modules and objects
"""
import gc
import os
import random
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

torch = types.ModuleType("torch")


class _Device:
    index = 0


class _Storage:
    def __init__(self, ptr):
        self._ptr = ptr

    def data_ptr(self):
        return self._ptr


class Tensor:
    is_cuda = True
    device = _Device()
    grad_fn = None
    _next = [0x7f0000000000]

    def __init__(self, grad_fn=None):
        Tensor._next[0] += 0x1000
        self._ptr = Tensor._next[0]
        if grad_fn is not None:
            self.grad_fn = grad_fn

    def untyped_storage(self):
        return _Storage(self._ptr)


class Parameter(Tensor):
    pass


class Node:
    """An autograd node: a tensor saved for backward (`_saved_self`), the (node, input) pairs
    it leads to (`next_functions`)."""

    def __init__(self, saved, next_functions=()):
        self._saved_self = saved
        self.next_functions = next_functions


torch.Tensor = Tensor
torch.nn = types.SimpleNamespace(Parameter=Parameter)
sys.modules["torch"] = torch

from gpumemtrace import _torch  # noqa: E402


def walk_every_object(torch, budget_s=60.0):
    """The reference: every object the collector knows looked at in Python, by the rules the
    layer documents (what a tensor is, which instances have attributes of their own, the
    names' order: lists and tuples, then modules' globals, then instances' attributes, then
    other dicts; each kind in gc.get_objects() order), then named by the layer's own
    _named_holders(): what is compared is the search for the objects that hold tensors. The
    named cases below check the names themselves."""
    objs = gc.get_objects()
    tensors, params = _torch._tensors_and_params(
        torch, [o for o in objs if issubclass(type(o), torch.Tensor)])
    if not tensors:
        return []
    modules = _torch._module_names()
    skip = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    seqs, dicts, owner_of_dict = [], [], {}
    for i, o in enumerate(objs):
        if type(o) in (list, tuple):
            seqs.append(o)
        elif type(o) is dict:
            dicts.append((i, o))
        elif (not issubclass(type(o), skip) and not issubclass(type(o), torch.Tensor)
              and _torch._dictoffset(type(o))):
            try:
                d = getattr(o, "__dict__", None)
            except Exception:  # noqa: BLE001
                continue
            if isinstance(d, dict) and id(d) not in owner_of_dict:
                owner_of_dict[id(d)] = o
                dicts.append((i, d))
    rank = {}
    for i, d in dicts:
        r = (0 if id(d) in modules else 1 if id(d) in owner_of_dict else 2, i)
        if id(d) not in rank or (r[0] == 1 and owner_of_dict[id(d)] is objs[i]):
            rank[id(d)] = (r, d)
    ordered = [d for _, d in sorted(rank.values(), key=lambda rd: rd[0])]
    # every list, tuple and dict, not only those that hold a tensor: the naming is the layer's
    return _torch._named_holders(torch, tensors, params, modules, seqs, ordered, owner_of_dict,
                                 time.monotonic() + budget_s)


FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def both(label):
    """The layer's walk and the reference, in both orders (the reference makes every
    instance's __dict__ exist, the layer's only those it reads)."""
    gc.collect()
    gc.disable()  # a collection between the walks would reorder gc.get_objects()
    try:
        fast = _torch.holders(torch)
        slow = walk_every_object(torch)
        again = _torch.holders(torch)
    finally:
        gc.enable()
    bad = next((w for w in (fast, again) if w != slow), None)
    check(bad is None, f"{label}: the layer's walk gives the reference's answer ({len(slow)} "
          "holders)" + ("" if bad is None else f"\n  layer:     {bad}\n  reference: {slow}"))
    return {h["holder"]: h for h in slow}


class Trainer:
    def __init__(self):
        self.cache = []
        self.last = None


class Slotted:
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


class Materialised:
    def __init__(self, t):
        self.kept = t


def scenarios():
    main = types.ModuleType("victim_main")
    sys.modules["victim_main"] = main
    main.params = [Parameter() for _ in range(3)]          # the model's: left out
    main.losses = []
    for _ in range(4):                                       # losses.append(loss)
        act = Tensor()
        main.loss = Tensor(grad_fn=Node(act, ((Node(Tensor()), 0),)))
        main.losses.append(main.loss)
    main.acts = {i: Tensor() for i in range(3)}              # a dict kept in a module
    main.pair = (Tensor(), Tensor())                         # a tuple
    main.alone = Tensor()                                    # a global
    tr = Trainer()
    tr.cache.extend(Tensor() for _ in range(2))              # a list kept as an attribute
    tr.last = Tensor()                                       # an attribute (inline)
    main.trainer = tr
    m = Materialised(Tensor())
    vars(m)                                                  # its __dict__ exists already
    main.m = m
    main.slotted = Slotted(Tensor())                         # __slots__: no name for it
    main.param_in_list = [main.params[0]]                    # a parameter: left out
    held = both("scenarios")
    g = held.get("losses (a list in victim_main)")
    check(g is not None and g["kind"] == "graph" and g["roots"] == 4 and len(g["blocks"]) == 12,
          f"the kept graphs: 4 losses (the last also a global) and 8 saved tensors ({g})")
    check(held.get("acts (a dict in victim_main)", {}).get("roots") == 3, "a dict kept in a module")
    check(held.get("pair (a tuple in victim_main)", {}).get("roots") == 2, "a tuple")
    check("alone in victim_main" in held, "a module's global")
    check(held.get(".cache (a list of a Trainer)", {}).get("roots") == 2,
          "a list kept as an attribute")
    check("attribute last of a Trainer" in held, "an instance attribute")
    check("attribute kept of a Materialised" in held, "an attribute in an existing __dict__")
    check(not any("param" in h for h in held), "parameters are left out")
    del sys.modules["victim_main"]


def budget():
    """A walk past its budget stops, and the end-of-run handler says so on stderr (the trace
    gets what was found by then)."""
    import contextlib
    import io
    main = types.ModuleType("victim_budget")
    sys.modules["victim_budget"] = main
    main.kept = [Tensor() for _ in range(3)]
    full = _torch.holders(torch)
    check(not _torch._walk["stopped"] and any(h["holder"] == "kept (a list in victim_budget)"
                                             for h in full), "a walk in its budget finds the list")
    check(_torch.holders(torch, budget_s=0) == [] and _torch._walk["stopped"],
          "a walk with no time left stops and says it stopped")

    got, err = [], io.StringIO()
    lib = types.SimpleNamespace(gmt_torch_holders=lambda js: got.append(js))  # the tracer's
    saved = _torch.holders.__defaults__
    _torch.holders.__defaults__ = (0.0,)
    try:
        with contextlib.redirect_stderr(err):
            _torch._holders_at_exit(torch, lib)
    finally:
        _torch.holders.__defaults__ = saved
    check(len(got) == 1 and "stopped after" in err.getvalue(),
          f"the end-of-run handler writes the line and says the walk stopped ({err.getvalue()!r})")
    del sys.modules["victim_budget"]


def random_graphs(seed, rounds):
    rng = random.Random(seed)
    for r in range(rounds):
        mod = types.ModuleType(f"victim_rand{r}")
        sys.modules[mod.__name__] = mod
        pool = [Tensor(grad_fn=Node(Tensor()) if rng.random() < 0.2 else None)
                for _ in range(rng.randint(1, 30))]
        pool += [Parameter() for _ in range(rng.randint(0, 3))]
        things = []
        for i in range(rng.randint(5, 40)):
            kind = rng.choice(["list", "tuple", "dict", "obj", "objdict", "slots", "tensor"])
            items = [rng.choice(pool + things) if things and rng.random() < 0.3
                     else rng.choice(pool) for _ in range(rng.randint(0, 4))]
            if kind == "list":
                t = list(items)
            elif kind == "tuple":
                t = tuple(items)
            elif kind == "dict":
                t = {rng.choice([f"k{j}", j]): x for j, x in enumerate(items)}
            elif kind in ("obj", "objdict"):
                t = Trainer()
                for j, x in enumerate(items):
                    setattr(t, f"a{j}", x)
                if kind == "objdict":
                    vars(t)
            elif kind == "slots":
                t = Slotted(items[0] if items else None)
            else:
                t = rng.choice(pool)
            things.append(t)
            if rng.random() < 0.6:
                setattr(mod, f"g{i}", t)
        both(f"random graph {seed}/{r} ({len(pool)} tensors, {len(things)} objects)")
        del sys.modules[mod.__name__]
        del mod, pool, things


class _Layer:
    """A model's layer as nn.Module keeps it: parameters and buffers in dicts of its own."""

    def __init__(self):
        self._parameters = {"weight": Parameter(), "bias": Parameter()}
        self._buffers = {"running_mean": Tensor(), "running_var": Tensor(), "steps": Tensor()}
        self._modules = {}
        self.scratch = [{"a": i, "b": [i]} for i in range(300)]


def bench():
    """Both walks on a program with many modules (what this machine has of a list of large
    packages) and a model's objects spread among the others: 200 layers of 3 buffers, an
    optimizer's 300 states made between other objects, 3 kept graphs."""
    import importlib
    for m in ("sympy", "email.mime.multipart", "http.server", "xml.etree.ElementTree", "unittest",
              "asyncio", "json", "decimal", "pydoc", "multiprocessing", "concurrent.futures",
              "tkinter", "setuptools", "jinja2", "yaml", "requests"):
        try:
            importlib.import_module(m)
        except Exception:  # noqa: BLE001 (what this machine has)
            pass
    main = types.ModuleType("bench_main")
    sys.modules["bench_main"] = main
    main.model = [_Layer() for _ in range(200)]
    main.state = {}
    for i in range(300):
        main.state[i] = {"momentum_buffer": Tensor()}
        main.scratch = [[j] for j in range(100)]
    main.losses = [Tensor(grad_fn=Node(Tensor())) for _ in range(3)]
    print(f"{len(gc.get_objects())} objects")
    for r in range(3):
        for label, fn in (("layer", _torch.holders), ("every object", walk_every_object)):
            t0 = time.monotonic()
            h = fn(torch)
            print(f"round {r}: {label:12s} {time.monotonic() - t0:.3f} s, "
                  f"{[(x['holder'], x['roots']) for x in h]}")


if __name__ == "__main__":
    if "--bench" in sys.argv:
        bench()
        sys.exit(0)
    scenarios()
    budget()
    random_graphs(1, 40)
    random_graphs(2, 40)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    sys.exit(1 if FAILS else 0)
