"""Triton(-Ascend)'s Python surface for tilesim: a kernel file that does ``import triton`` and
``import triton.language as tl`` runs unchanged, and each ``kernel[grid](...)`` launch is traced
into an SPMD launch (``"source": "triton"``) of a tile program instead of compiled.

    import tilesim.triton          # `import triton` now gives this module (when no triton is
    import my_kernels              # imported already); torch is yours or tilesim's stand-in
    my_kernels.softmax(x)          # the wrapper launches: the launch is traced
    launch = tilesim.triton.LAUNCHES[-1]
    print(launch.run())            # or .sweep().recommendation, .write("launch.json")

``tilesim trace-triton FILE --call EXPR --json OUT`` (``python3 -m tilesim.triton``) runs a file
with tilesim's torch stand-in and writes a launch's run config. What is traced and what is
refused is in docs/triton.md; a refusal names the kernel's file:line, the construct and what is
supported instead.
"""
import ast
import collections
import contextlib
import inspect
import json
import math
import os
import sys
import textwrap
import types

from .. import _jobs
from .._refusal import Refusal, caller
from . import _trace as _T
from . import language
from ._trace import TensorArg
from ._values import Index, Pointer, refuse

__version__ = "3.2.0+tilesim.standin"
# Every launch traced since the module was imported (or since trace_file began), in order.
LAUNCHES = []
_HARDWARE = [None]
# Launch options of Triton(-Ascend) that change nothing tilesim models (no warps on Ascend).
IGNORED_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_warp_specialization",
                   "enable_fp_fusion", "debug", "multibuffer", "enable_linearize",
                   "enable_auto_bind_sub_block", "stream", "warmup",
                   "limit_auto_multi_buffer_only_for_local_buffer", "inject_barrier_all",
                   "enable_nd2nz_on_vector", "sync_solver")
language_module = language
tl = language


def set_hardware(name):
    """The hardware launches are traced for (core counts) and run on: a shipped name or a
    hardware file; None for tilesim's default."""
    _HARDWARE[0] = name


_HW_CACHE = {}
_CALL = []  # (the decorated kernel, grid, args, kwargs, where) of the launch being traced


def _hardware():
    """(name, parameters) of the hardware in force, as tilesim resolves it."""
    key = _HARDWARE[0]
    if key not in _HW_CACHE:
        probe = {"op": "add", "shape": [1, 8], "dtype": "fp32", "candidates": {"tiles": [[1, 8]]}}
        hw = json.loads(_jobs.sweep_job(probe, hardware=key).doc)["hardware"]
        _HW_CACHE[key] = (hw["name"], {k: v["value"] for k, v in hw["parameters"].items()})
    return _HW_CACHE[key]


def hardware_name():
    return _HARDWARE[0] if _HARDWARE[0] is not None else _hardware()[0]


def cdiv(a, b):
    return language.cdiv(a, b)


def next_power_of_2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


class Config:
    """triton.Config: meta-parameter values, plus launch options that do nothing on Ascend."""

    def __init__(self, kwargs, num_warps=None, num_stages=None, num_ctas=None, maxnreg=None,
                 pre_hook=None, **options):
        self.kwargs = dict(kwargs)
        self.options = {k: v for k, v in dict(options, num_warps=num_warps,
                                               num_stages=num_stages).items() if v is not None}
        self.pre_hook = pre_hook

    def all_kwargs(self):
        return dict(self.kwargs, **self.options)

    def __repr__(self):
        return f"triton.Config({self.kwargs})"


class _Kernel:
    """What a decorator stack of jit / heuristics / autotune / libentry launches."""

    def __getitem__(self, grid):
        where = caller()
        return lambda *args, **kwargs: self.launch(grid, args, kwargs, {}, where)

    def run(self, *args, grid=None, **kwargs):
        return self.launch(grid, args, kwargs, {}, caller())

    def launch(self, grid, args, kwargs, meta, where):
        """The launch as the user called it (kept to trace it again with other meta values)."""
        _CALL.append((self, grid, args, kwargs, where))
        try:
            return self._launch(grid, args, kwargs, meta, where)
        finally:
            _CALL.pop()

    @property
    def __name__(self):
        return self.jit.fn.__name__


class JITFunction(_Kernel):
    """@triton.jit: a kernel (launched as kernel[grid](...)) or a helper called by one."""

    def __init__(self, fn, where):
        self.fn, self.where = fn, where
        self.jit = self
        self.signature = inspect.signature(fn)
        self.__doc__ = fn.__doc__
        self.arg_names = list(self.signature.parameters)
        self.constexprs = [n for n, p in self.signature.parameters.items()
                           if _is_constexpr(p.annotation)]

    def __call__(self, *args, **kwargs):
        if not _T._current:
            refuse(f"{self.fn.__name__}(...)", "a @triton.jit function called directly",
                   "launch a kernel as kernel[grid](...); helpers are called inside kernels")
        return _traced_function(self.fn)(*args, **kwargs)

    def _launch(self, grid, args, kwargs, meta, where, space=None):
        return _launch(self, grid, args, kwargs, meta, where, space)


def _is_constexpr(ann):
    return ann is language.constexpr or getattr(ann, "__name__", "") == "constexpr" or \
        (isinstance(ann, str) and "constexpr" in ann)


def jit(fn=None, *, do_not_specialize=None, debug=None, noinline=None, **kw):
    where = caller()

    def wrap(f):
        return JITFunction(f, where)
    return wrap(fn) if fn is not None else wrap


class Heuristics(_Kernel):
    def __init__(self, inner, values):
        self.inner, self.values, self.jit = inner, dict(values), inner.jit

    def _launch(self, grid, args, kwargs, meta, where, space=None):
        args, meta = _positional(self.jit, args, meta)
        bound = _bind(self.jit, args, dict(kwargs, **meta), where, partial=True)
        meta = dict(meta)
        for name, fn in self.values.items():
            meta[name] = fn(dict(bound))
            bound[name] = meta[name]
        return self.inner._launch(grid, args, kwargs, meta, where, space)


def heuristics(values):
    return lambda inner: Heuristics(inner, values)


class Autotuner(_Kernel):
    """@triton.autotune: launched with its first config; its configs are the sweep space."""

    def __init__(self, inner, configs, key, where):
        self.inner, self.configs, self.key, self.jit = inner, list(configs), key, inner.jit
        self.where = where

    def _launch(self, grid, args, kwargs, meta, where, space=None):
        if not self.configs:
            refuse("triton.autotune", "no configs", "give at least one triton.Config",
                   self.where)
        first = self.configs[0]
        space = {"configs": [c.kwargs for c in self.configs], "where": self.where}
        return self.inner._launch(grid, args, kwargs, dict(first.kwargs, **meta), where, space)


def autotune(configs, key=(), prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, **kw):
    where = caller()
    return lambda inner: Autotuner(inner, configs, key, where)


def _traced_function(fn):
    """fn with Python's range as a traced loop, its min / max and its `and` / `or` / `not` as
    Triton compiles them (its globals copied once per trace)."""
    g = dict(fn.__globals__)
    g["range"] = language.builtin_range
    g["min"], g["max"] = language.builtin_min, language.builtin_max
    g.update(_LOGICAL)
    code = _BOOL_OPS.get(fn.__code__) or _bool_ops_as_triton(fn)
    # fn's own cells, in the order the code names them (the same names: it is fn's source)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[v] for v in code.co_freevars) or None
    f = types.FunctionType(code, g, fn.__name__, fn.__defaults__, closure)
    f.__kwdefaults__ = fn.__kwdefaults__
    return f


# A kernel's `a and b`, `a or b`, `not a` as Triton's code generator compiles them
# (triton/compiler/code_generator.py visit_BoolOp / visit_UnaryOp: logical_and, logical_or,
# __not__ of the operands): on blocks (masks) elementwise, `and` the same as `&`; on scalars
# (constexprs, a uniform condition) Python's own, short-circuit.
_LOGICAL = {"__tilesim_and": language.logical_and_of, "__tilesim_or": language.logical_or_of,
            "__tilesim_not": language.logical_not_of}
_BOOL_OPS = {}  # a kernel's code -> its code with the logical ops, once per process


class _AsLogicalCalls(ast.NodeTransformer):
    """`a and b` -> __tilesim_and(a, lambda: b); `not a` -> __tilesim_not(a)."""

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "__tilesim_and" if isinstance(node.op, ast.And) else "__tilesim_or"
        out = node.values[0]
        for v in node.values[1:]:
            rhs = ast.Lambda(ast.arguments([], [], None, [], [], None, []), v)
            out = ast.copy_location(ast.Call(ast.Name(name, ast.Load()), [out, rhs], []), node)
        return out

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(
            ast.Call(ast.Name("__tilesim_not", ast.Load()), [node.operand], []), node)


def _bool_ops_as_triton(fn):
    """The code of fn with its logical ops as _LOGICAL's calls, compiled from its source at its
    own file and lines; fn's own when it has none or its source cannot be read."""
    plain = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return _BOOL_OPS.setdefault(fn.__code__, plain)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    fdef = tree.body[0] if tree.body and isinstance(tree.body[0], ast.FunctionDef) else None
    if fdef is None or not any(isinstance(n, ast.BoolOp) or (isinstance(n, ast.UnaryOp) and
                                                             isinstance(n.op, ast.Not))
                               for n in ast.walk(fdef)):
        return _BOOL_OPS.setdefault(fn.__code__, plain)
    fdef.decorator_list = []
    fdef = _AsLogicalCalls().visit(fdef)
    # A kernel defined in a function keeps its free variables: defined in a function of them.
    free = fn.__code__.co_freevars
    outer = ast.FunctionDef(name="__tilesim_outer",
                            args=ast.arguments([], [ast.arg(v) for v in free], None, [], [], None,
                                               []),
                            body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))],
                            decorator_list=[])
    module = ast.fix_missing_locations(ast.Module([outer], []))
    ast.increment_lineno(module, first - 1)
    ns = {}
    exec(compile(module, fn.__code__.co_filename, "exec"), fn.__globals__, ns)
    made = ns["__tilesim_outer"](*[None] * len(free))  # its code; the cells are fn's
    return _BOOL_OPS.setdefault(fn.__code__, made.__code__)


def _bind(jitf, args, kwargs, where, partial=False):
    sig = jitf.signature
    params = {k: v for k, v in kwargs.items() if k in sig.parameters}
    try:
        b = sig.bind_partial(*args, **params) if partial else sig.bind(*args, **params)
    except TypeError as e:
        refuse(f"{jitf.fn.__name__}[grid](...)", f"its arguments do not match the kernel: {e}",
               None, where)
    b.apply_defaults()
    return dict(b.arguments)


def _positional(jitf, args, meta):
    """args with the meta values of parameters the call gave by position (a sweep's candidate
    for a BLOCK_SIZE passed positionally), and the rest of meta."""
    names = list(jitf.signature.parameters)
    args, rest = list(args), {}
    for k, v in meta.items():
        if k in names and names.index(k) < len(args):
            args[names.index(k)] = v
        else:
            rest[k] = v
    return tuple(args), rest


def _launch(jitf, grid, args, kwargs, meta, where, space):
    name = jitf.fn.__name__
    call = f"{name}[grid](...)"
    args, meta = _positional(jitf, args, meta)
    kwargs = dict(kwargs, **meta)
    options = {k: v for k, v in kwargs.items() if k not in jitf.signature.parameters}
    unknown = [k for k in options if k not in IGNORED_OPTIONS]
    if unknown:
        refuse(call, f"keyword {unknown[0]!r} is neither a kernel parameter nor a launch option",
               f"the kernel's parameters are {', '.join(jitf.arg_names)}", where)
    bound = _bind(jitf, args, kwargs, where)
    missing = [k for k, v in bound.items() if v is inspect.Parameter.empty]
    if missing:
        refuse(call, f"no value for {missing}", None, where)
    g = grid(dict(bound)) if callable(grid) else grid
    g = (g,) if not isinstance(g, (tuple, list)) else tuple(g)
    if not 1 <= len(g) <= 3 or any(not isinstance(x, int) or isinstance(x, bool) or x < 1
                                   for x in g):
        refuse(call, f"grid {g!r}", "a grid is one to three integers >= 1", where)
    trace = _T.Trace(name, where, tuple(g) + (1,) * (3 - len(g)), hardware_name())
    values = {}
    for k, v in bound.items():
        if hasattr(v, "shape") and hasattr(v, "stride") and hasattr(v, "dtype"):
            values[k] = Pointer(TensorArg(k, v), Index((), 0))
        elif isinstance(v, language.constexpr):
            values[k] = v.value
        else:
            values[k] = v
    _T._current.append(trace)
    try:
        _traced_function(jitf.fn)(**values)
    finally:
        _T._current.pop()
    if trace.frames:
        refuse(call, f"the loop at {_T._at(trace.frames[-1].where)} did not run to its end (a "
               "break or a return inside it)", "loops of a traced kernel run to their end",
               where)
    w = _T.Writer(trace)
    w.write()
    ignored = sorted(k for k in options)
    if ignored:
        trace.note(f"launch options {ignored} change nothing on Ascend (no warps); ignored")
    meta_values = {k: bound[k] for k in jitf.constexprs}
    launch = TracedLaunch(_CALL[-1] if _CALL else (jitf, grid, args, kwargs, where), trace, w,
                          meta_values, space)
    LAUNCHES.append(launch)
    return None


class TracedLaunch:
    """One traced launch: its run config (the program inline, the spmd partition, source
    triton, the hardware) and what it takes to trace it again with other meta-parameters."""

    def __init__(self, call, trace, writer, meta, space):
        self._call = call
        self.name, self.where = trace.name, call[4]
        self.grid = math.prod(trace.grid)
        self.notes = list(trace.notes)
        self.meta = meta
        self.space = space
        self.hardware = trace.hardware
        self.program = writer.program()
        shown = list(trace.grid[:max(i + 1 for i, g in enumerate(trace.grid) if g > 1 or i == 0)])
        self.config = {
            "description": f"{trace.name} launched at {_T._at(self.where)} on a grid of {shown}, "
                           "traced by tilesim.triton" + "".join(f"; note: {n}"
                                                               for n in trace.notes),
            "program": self.program,
            "partition": {"style": "spmd", "grid": self.grid, "source": "triton"},
            "hardware": trace.hardware}
        if writer.block is not None:
            self.config["partition"]["block"] = list(writer.block)

    def to_json(self):
        return json.dumps(self.config, indent=2) + "\n"

    def write(self, path):
        _jobs.write_text(path, self.to_json(), "the launch")
        return path

    def run(self, hardware=None):
        from .. import api
        return api.run(self.config, hardware=hardware)

    def retrace(self, **meta):
        """The launch traced again with these meta-parameters (the grid from its lambda)."""
        kernel, grid, args, kwargs, where = self._call
        before = len(LAUNCHES)
        set_hardware(self.hardware)
        if isinstance(kernel, _Kernel):
            kernel.launch(grid, args, kwargs, meta, where)
        return LAUNCHES.pop(before)

    def sweep(self, space=None):
        """Each candidate of `space` ({name: [values]}, default: the autotune configs, else
        powers of two around each BLOCK-like meta-parameter) traced and run; the fastest is
        the recommendation."""
        from ._sweep import sweep
        return sweep(self, space)

    def __repr__(self):
        return f"<traced launch {self.name} grid {self.grid}>"


# ---- triton.runtime, triton.testing --------------------------------------------------------


class _Utils:
    @staticmethod
    def get_device_properties(device=None):
        """The NPU's core counts, from the hardware file in force."""
        params = _hardware()[1]
        return {"num_vectorcore": int(params["cores.aiv"]), "num_aicore": int(params["cores.aic"]),
                "max_shared_mem": int(params.get("ub.bytes", 0)) or None}

    def __getattr__(self, name):
        refuse(f"triton.runtime.driver.active.utils.{name}", "not a device query tilesim answers",
               "it answers get_device_properties(...)['num_vectorcore' / 'num_aicore']")


class _Active:
    utils = _Utils()

    @staticmethod
    def get_active_torch_device():
        import torch
        return torch.device("npu", 0)

    @staticmethod
    def get_current_device():
        return 0

    @staticmethod
    def get_current_stream(device=None):
        return 0

    @staticmethod
    def get_current_target():
        """Triton's GPUTarget of the device: the npu backend, the hardware in force as its
        arch (no warps on Ascend)."""
        return GPUTarget("npu", hardware_name(), 0)

    def __getattr__(self, name):
        refuse(f"triton.runtime.driver.active.{name}", "not a driver call tilesim answers",
               "it answers utils.get_device_properties(...), get_current_target(), "
               "get_current_device() and get_active_torch_device()")


GPUTarget = collections.namedtuple("GPUTarget", "backend arch warp_size")


def libentry(*args, **kwargs):
    """triton.runtime.libentry.libentry(): a launch cache; nothing to do when tracing."""
    if args and callable(args[0]) and not kwargs:
        return args[0]
    return lambda inner: inner


def _modules():
    runtime = types.ModuleType("triton.runtime", "triton.runtime under tilesim")
    driver = types.ModuleType("triton.runtime.driver")
    driver.active = _Active()
    driver.driver = driver
    runtime.driver = driver
    le = types.ModuleType("triton.runtime.libentry")
    le.libentry = libentry
    runtime.libentry = le
    at = types.ModuleType("triton.runtime.autotuner")
    at.Autotuner, at.Config, at.autotune, at.heuristics = Autotuner, Config, autotune, heuristics
    runtime.autotuner = at
    rj = types.ModuleType("triton.runtime.jit")
    rj.JITFunction, rj.jit = JITFunction, jit
    runtime.jit = rj
    runtime.Autotuner, runtime.Config, runtime.JITFunction = Autotuner, Config, JITFunction
    testing = types.ModuleType("triton.testing")

    def do_bench(fn, *a, **k):
        from ..torch_standin import NeedsValues
        raise NeedsValues("triton.testing.do_bench (a board's timing)")
    testing.do_bench = testing.do_bench_npu = do_bench
    testing.assert_close = lambda *a, **k: None
    backends = types.ModuleType("triton.backends")
    # Modules a kernel library imports for kernels tilesim does not trace (TMA descriptors, the
    # compile cache): importable, each name refused where it is used.
    untraced = {}
    for name in ("triton.tools", "triton.tools.tensor_descriptor", "triton.runtime.cache"):
        untraced[name] = types.ModuleType(name, "not traced by tilesim: each name refused where "
                                          "it is used")
        untraced[name].__getattr__ = language._refusing(name)
    mods = {"triton.runtime": runtime, "triton.runtime.driver": driver,
            "triton.runtime.libentry": le, "triton.runtime.autotuner": at,
            "triton.runtime.jit": rj, "triton.testing": testing, "triton.backends": backends,
            "triton.language": language, "triton.language.math": language.math,
            "triton.language.extra": language.extra,
            "triton.language.extra.libdevice": language.libdevice,
            "triton.language.extra.ascend": language.extra.ascend,
            "triton.language.extra.ascend.libdevice": language.libdevice,
            "triton.language.extra.cann": language.extra.cann,
            "triton.language.extra.cann.libdevice": language.libdevice,
            "triton.language.extra.cann.extension": language.extension, **untraced}
    return mods


_MODULES = _modules()
runtime = _MODULES["triton.runtime"]
testing = _MODULES["triton.testing"]


def _absent(qualname):
    """A name of a triton submodule tilesim does not define (triton.language.standard.zeros_like,
    triton.runtime.jit.JITFunction): tilesim's own where it has one, else refused where used."""
    name = qualname.rsplit(".", 1)[-1]
    for own in (language, sys.modules[__name__]):
        if name in getattr(own, "__dict__", {}):
            return own.__dict__[name]
    return language._Untraced(qualname)


def _install():
    """`import triton` (and its submodules) give tilesim.triton, unless a triton is imported."""
    if "triton" in sys.modules and sys.modules["triton"] is not sys.modules[__name__]:
        return False
    sys.modules["triton"] = sys.modules[__name__]
    sys.modules.update(_MODULES)
    return True


@contextlib.contextmanager
def installed():
    """While the block runs, ``import triton`` / ``triton.language`` / ``torch`` / ``torch_npu``
    give tilesim's stand-ins; what sys.modules held before comes back after."""
    from .. import torch_standin
    names = ["triton", *_MODULES]
    saved = {k: sys.modules.get(k) for k in names}
    sys.modules["triton"] = sys.modules[__name__]
    sys.modules.update(_MODULES)
    try:
        with torch_standin.submodules(_MODULES, ("triton.",), _absent), \
                torch_standin.installed() as torch:
            yield torch
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def trace_file(path=None, kernel=None, *, call=None, module=None, main=False, hardware=None):
    """The launches (TracedLaunch, in order) of a kernel file or module run with tilesim's
    triton and torch stand-ins, ``call`` evaluated after it; ``kernel`` keeps only that
    kernel's. Raises TraceFailure (a ValueError) with the one line the CLI prints."""
    from .__main__ import trace_file as run
    return run(path, kernel, main, call, module, hardware)


_install()
__all__ = ["Config", "JITFunction", "LAUNCHES", "Refusal", "TracedLaunch", "autotune", "cdiv",
           "heuristics", "installed", "jit", "language", "next_power_of_2", "runtime",
           "set_hardware", "trace_file"]
_ = os
