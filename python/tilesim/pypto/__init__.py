"""PyPTO's Python surface for tilesim: ``import tilesim.pypto as pypto`` in place of
``import pypto`` and a kernel file runs unchanged, its kernels traced into tile programs instead
of compiled (hicann/pypto python/pypto: jit, Tensor, set_vec_tile_shapes, loop, view, assemble,
the ops).

    @pypto.jit
    def softmax(x: pypto.Tensor((16, 16384), pypto.DT_FP32),
                y: pypto.Tensor((16, 16384), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8192)
        ...
    softmax(x, y)                  # traces; softmax.traced is the TracedKernel
    res = softmax.traced.sweep()   # or .run(), .write("program.json")
    print(res.recommendation)      # the PyPTO lines to paste

A call outside what tilesim traces raises UnsupportedError naming the call, the kernel's file
and line, and what tilesim supports instead; nothing is approximated silently. ``python3 -m
tilesim.pypto kernel.py --json program.json`` (``tilesim trace-pypto``) writes a kernel file's
traced program.
"""
import functools as _functools
import os as _os

from .._jobs import dim_error as _dim_error
from . import _ops, _options, _tensor
from . import _trace as _T
from ._kernel import JitKernel, PyptoSweep, TracedKernel, function, jit
from ._ops import (Element, cast, concat, cumsum, full, layer_norm, matmul, rms_norm, sigmoid,
                   softmax, transpose, where)
from ._tensor import (Dynamic, Tensor, assemble, expand_clone, loop, loop_unroll, reshape,
                      squeeze, unsqueeze, view)
from ._trace import TraceFailure, UnsupportedError, refuse

globals().update(_T.DTYPES)
tensor = Tensor
element = Element
# Dims the argument fixes: DYNAMIC ones change from call to call on a board, STATIC ones are
# compiled in; a trace takes both from the tensors the kernel (or its wrapper) is called with.
DYNAMIC = DYN = Dynamic("DYNAMIC")
STATIC = Dynamic("STATIC")
gelu, silu, tanh = (_ops.activation(n) for n in ("gelu", "silu", "tanh"))


def zeros(shape, dtype=None, **kwargs):
    return full(shape, 0.0, dtype)


def ones(shape, dtype=None, **kwargs):
    return full(shape, 1.0, dtype)


def from_torch(tensor, name="", *, dynamic_axis=None, **kwargs):
    """pypto.from_torch: a kernel argument of the torch tensor's shape and dtype (tilesim's
    torch stand-in, a real torch tensor or a numpy array); dynamic_axis is what a board
    recompiles for, and the trace takes the shape as it is."""
    if not hasattr(tensor, "shape") or not hasattr(tensor, "dtype"):
        refuse("pypto.from_torch", f"{type(tensor).__name__} is not a tensor")
    return Tensor(list(tensor.shape), tensor.dtype, name)


def trace_file(path=None, kernel=None, *, call=None, main=False, module=None):
    """The TracedKernel of a kernel file (or of module `module` on sys.path), run as
    ``tilesim trace-pypto`` runs it: ``import pypto`` is tilesim.pypto, ``import torch`` the
    torch stand-in, ``call`` an expression evaluated after the file (the wrapper call that
    fixes dynamic shapes), ``main`` runs it as __main__. Raises TraceFailure (a ValueError)
    with the one line the CLI prints."""
    from .__main__ import trace_file as run
    return run(path, kernel, main, call, module)[1]


class _Namespace:
    """A pypto sub-namespace (pypto.runtime, ...): names it does not define are refused."""

    _name, _what, _instead = "", "", ""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(f"pypto.{self._name}.{name}", self._what, self._instead)


class _Runtime(_Namespace):
    """pypto.runtime: device calls (synchronize, run once, fini) do nothing under tracing."""

    _name, _what = "runtime", "not a device call tilesim.pypto knows"
    _instead = "it accepts pypto.runtime._device_* calls (synchronize, run, fini) as no-ops"

    def __getattr__(self, name):
        if name.lstrip("_").startswith("device"):
            return lambda *args, **kwargs: None
        return super().__getattr__(name)


class _Experimental(_Namespace):
    """pypto.experimental: its operation options are notes; its ops are refused."""

    _name, _what = "experimental", "not in the PyPTO surface tilesim.pypto traces"
    _instead = "of pypto.experimental it takes set_operation_options (a note)"

    @staticmethod
    def set_operation_options(**options):
        _options_in_force().note(
            f"pypto.experimental.set_operation_options {sorted(options)}: how PyPTO emits the "
            "ops' instructions; tilesim's op table prices them as its records say")


class _Platform(_Namespace):
    """pypto.platform, answered from tilesim's default hardware file (the one a traced kernel's
    run uses unless given another). hicann/pypto's python/pypto/platform.py defines one query
    there, npuarch, a property over pypto_impl.GetNPUArch / SetNPUArch whose values are
    NPUArch names ("DAV_2201" for Atlas A2/A3, "DAV_3510" for the 950, "DAV_1001" for the 910);
    kernels compare it (`if pypto.platform.npuarch == 'DAV_3510':`) to pick a variant. Core
    counts and buffer sizes are not in pypto.platform (PyPTO's passes read them in C++), so
    other names are refused, not invented: a kernel that reads one fails on PyPTO too."""

    _name, _what = "platform", "not a query of PyPTO's pypto.platform"
    _instead = ("pypto.platform has npuarch only (hicann/pypto python/pypto/platform.py): "
                "tilesim answers it from the hardware file")

    @property
    def npuarch(self):
        return _hardware_arch()

    @npuarch.setter
    def npuarch(self, value):
        # PyPTO's setter picks the platform its compiler targets; tilesim's target is its
        # hardware file, so setting the arch that file is stays a no-op and another is refused.
        arch = _hardware_arch()
        if value != arch:
            refuse(f"pypto.platform.npuarch = {value!r}",
                   f"tilesim's hardware files are {arch} ({', '.join(_HARDWARE_FILES)})",
                   f"leave npuarch as it is ({arch!r})")


runtime, experimental, platform = _Runtime(), _Experimental(), _Platform()

# The NPUArch of each shipped hardware file (configs/hardware/*.json): all are Atlas A2 910B
# chips or the A3's die, DAV_2201 (hicann/pypto's runtime platform helper maps DAV_2201 to the
# 910B / 910C, and the scheduler cap the files cite is MAX_DAV_2201_SCHEDULE_AICPU_NUM, for A2/A3).
_HARDWARE_FILES = {name: "DAV_2201" for name in
                   ("ascend910_93", "ascend910b1", "ascend910b2", "ascend910b3", "ascend910b4")}


def _hardware_arch():
    """pypto.platform.npuarch of the default hardware file."""
    hw = _options.hardware_file()
    arch = _HARDWARE_FILES.get(hw["name"])
    if arch is None:
        refuse("pypto.platform.npuarch", f"hardware '{hw['name']}' has no NPUArch tilesim knows",
               f"the shipped files are {', '.join(_HARDWARE_FILES)} (DAV_2201)")
    return arch


class _Enum:
    def __init__(self, kind, *names):
        for n in names:
            setattr(self, n, _Member(kind, n))


class _Member:
    def __init__(self, kind, name):
        self.kind, self.name = kind, name

    def __repr__(self):
        return f"pypto.{self.kind}.{self.name}"


RunMode = _Enum("RunMode", "NPU", "SIM")
PrecisionType = _Enum("PrecisionType", "HIGH_PRECISION", "INTRINSIC")
CastMode = _Enum("CastMode", "CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL",
                 "CAST_TRUNC", "CAST_ODD")
TileOpFormat = _Enum("TileOpFormat", "TILEOP_ND", "TILEOP_NZ")


class _DataTypes:
    def __init__(self):
        self.__dict__.update(_T.DTYPES)


DataType = _DataTypes()


class frontend:  # noqa: N801 - pypto.frontend is a module in PyPTO
    """pypto.frontend: jit, function, dynamic."""

    jit = staticmethod(jit)
    function = staticmethod(function)

    @staticmethod
    def dynamic(name):
        return Dynamic(name)


def set_vec_tile_shapes(*shapes):
    """The vector tile in force for the ops that follow (up to 4 dims, as PyPTO)."""
    call = "pypto.set_vec_tile_shapes"
    trace = _T.active(call)
    if not 1 <= len(shapes) <= 4 or _dim_error(shapes, 1):
        refuse(call, f"{list(shapes)}: 1 to 4 integers >= 1")
    trace.add_tile(shapes, False, _T.caller())


def set_cube_tile_shapes(m, k, n, enable_split_k=False):
    """The cube tile of the matmuls that follow: [L0, L1] per dim (or one value for both). The
    L1 tile is the C tile and the L1 k step; each L1 extent holds whole L0 tiles, one mmad's."""
    call = "pypto.set_cube_tile_shapes"
    trace = _T.active(call)
    l0, l1 = [], []
    for axis, pair in zip("mkn", (m, k, n)):
        pair = list(pair) if isinstance(pair, (list, tuple)) else [pair]
        if not 1 <= len(pair) <= 2 or _dim_error(pair, 1):
            refuse(call, f"{axis} = {pair}: [L0, L1] integers >= 1")
        if pair[-1] % pair[0]:
            refuse(call, f"{axis} L1 {pair[-1]} is not a multiple of its L0 {pair[0]} (each L1 "
                   "extent holds whole L0 tiles)")
        l0.append(pair[0])
        l1.append(pair[-1])
    trace.add_tile(l1, True, _T.caller(), l0=l0 if l0 != l1 else None)
    # enable_split_k: PyPTO's GM accumulation (cube_operation_impl.cpp
    # ConstructGmAccumulationTensorGraph), applied by each matmul that follows
    trace.cube_tile["split_k"] = bool(enable_split_k)


def get_vec_tile_shapes():
    t = _T.active("pypto.get_vec_tile_shapes").vec_tile
    return list(t["dims"]) if t else []


def _min(a, b):
    return _T.sym_min(a, b)


def _max(a, b):
    return _T.sym_max(a, b)


def ceildiv(a, b):
    return -(-a // b)


def symbolic_scalar(v):
    return v


def _options_in_force():
    """The options a setter changes: the kernel's being traced, else the file's defaults."""
    return _T._current[-1].options if _T._current else _options.GLOBAL[0]


def set_pass_options(**options):
    """Pass options from here on: inside a kernel, for the ops traced after (sg_set_scope) and
    the kernel's run config; outside, the defaults of the kernels traced after."""
    _options_in_force().pass_options(options, "pypto.set_pass_options", _T.caller())


def set_runtime_options(**options):
    _options_in_force().runtime_options(options, "pypto.set_runtime_options", _T.caller())


def _option_group(name, group):
    def set_group(*args, **options):
        _options_in_force().group(group, options or {"(positional)": args})
    set_group.__name__ = name
    return set_group


def _option_reader(name):
    def get_options():
        """PyPTO's getter: tilesim keeps no compiler state to read back, so no options are set
        (a kernel asking for soc_version takes PyPTO's default path)."""
        return {}
    get_options.__name__ = name
    return get_options


get_codegen_options, get_host_options, get_pass_options, get_runtime_options = (
    _option_reader(f"get_{g}_options") for g in ("codegen", "host", "pass", "runtime"))
set_codegen_options = _option_group("set_codegen_options", "codegen_options")
set_host_options = _option_group("set_host_options", "host_options")
set_verify_options = _option_group("set_verify_options", "verify_options")
set_debug_options = _option_group("set_debug_options", "debug_options")


class _Scope:
    """pypto.options(...): PyPTO's config scope (python/pypto/config.py _Options), a decorator
    or a ``with`` block. Its options apply from entry to exit as the setters' do: outside a
    kernel to the kernels traced inside it (the defaults are restored at exit), inside a kernel
    to that kernel. Read at entry, never when the file is imported."""

    def __init__(self, name="", codegen_options=None, host_options=None, pass_options=None,
                 runtime_options=None, verify_options=None, operation_options=None,
                 debug_options=None, vec_tile_shapes=None, cube_tile_shapes=None,
                 conv_tile_shapes=None, matrix_size=None):
        self._where = _T.caller()
        self._groups = {"codegen_options": codegen_options, "host_options": host_options,
                        "verify_options": verify_options, "debug_options": debug_options}
        self._pass, self._runtime = pass_options or {}, runtime_options or {}
        self._operation = operation_options or {}
        self._vec, self._cube = vec_tile_shapes, cube_tile_shapes
        self._unmodelled = {k: v for k, v in (("conv_tile_shapes", conv_tile_shapes),
                                              ("matrix_size", matrix_size)) if v is not None}
        self._saved = []

    def __enter__(self):
        call = "pypto.options"
        inside = bool(_T._current)
        if self._unmodelled:
            refuse(call, f"{sorted(self._unmodelled)}: not modelled (no convolution op; the "
                   "matmul's size hint)", "leave them out: the traced shapes give the sizes",
                   self._where)
        self._saved.append(None if inside else _options.GLOBAL[0].copy())
        o = _options_in_force()
        for name, value in self._groups.items():
            o.group(name, value)
        o.pass_options(self._pass, call, self._where)
        o.runtime_options(self._runtime, call, self._where)
        if self._operation:
            o.note(f"pypto.options operation_options {sorted(self._operation)}: how PyPTO "
                   "emits ops (a note)")
        if self._vec is not None:
            if not inside:
                refuse(call, "vec_tile_shapes outside a kernel", "set the tile inside the "
                       "kernel (pypto.set_vec_tile_shapes)", self._where)
            set_vec_tile_shapes(*self._vec)
        if self._cube is not None:
            if not inside:
                refuse(call, "cube_tile_shapes outside a kernel", "set the tile inside the "
                       "kernel (pypto.set_cube_tile_shapes)", self._where)
            cube = list(self._cube)
            set_cube_tile_shapes(*cube[:3], enable_split_k=bool(cube[3:4] and cube[3]))
        return self

    def __exit__(self, *exc):
        saved = self._saved.pop()
        if saved is not None:
            _options.GLOBAL[0] = saved
        return False

    def __call__(self, func):
        @_functools.wraps(func)
        def scoped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return scoped


def options(*args, **kwargs):
    return _Scope(*args, **kwargs)


def set_semantic_label(label):
    """PyPTO's label for the ops that follow (python/pypto/config.py): a name in its IR and
    dumps, which cube_l1_reuse_setting may key on; it changes no NPU work (a note)."""
    _options_in_force().note(f"pypto.set_semantic_label {label!r}: a label on the ops in "
                             "PyPTO's IR, not the NPU's work (ignored; a cube_l1_reuse_setting "
                             "key naming it names nothing tilesim traces)")


def set_options(*args, **kwargs):
    refuse("pypto.set_options", "a generic option setter whose keys tilesim cannot sort",
           "use set_pass_options / set_runtime_options (read as the model's run config) or "
           "the codegen / host / verify / debug setters (notes)")


def set_matrix_size(size):
    """pypto.set_matrix_size([m, k, n]): the static sizes the next matmuls' L1 copy-ins and L0C
    copy-out take their outer / inner extents from (PyPTO cube_operation_impl.cpp SetMatmulAttr
    -> A_MUL_B_ACT_M/K/N, cube_process.cpp AddL1CopyInAttr). A trace has static shapes: each
    matmul under it checks the hint against its traced [m, k, n]."""
    call = "pypto.set_matrix_size"
    trace = _T.active(call)
    if not isinstance(size, (list, tuple)) or len(size) != 3 or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in size):
        refuse(call, f"size {size!r}: [m, k, n], integers")
    trace.matrix_size = (list(size), _T.caller())


def _reduction(name):
    def op(input, dim=-1 if name in ("argmax", "argmin") else None, keepdim=False):
        if dim is None:
            refuse(f"pypto.{name}", "no dim: PyPTO reductions take one dim")
        return _ops.reduction(name, input, dim, keepdim)
    op.__name__ = name
    return op


def _unary(name):
    def op(input, precision_type=None):
        return _ops.unary(name, input)
    op.__name__ = name
    return op


def _binary(name):
    def op(input, other, precision_type=None):
        return _ops.binary(name, input, other)
    op.__name__ = name
    return op


for _n in _ops.UNARY:
    globals()[_n] = _unary(_n)
for _n in ("mul", "div", "maximum", "minimum"):
    globals()[_n] = _binary(_n)
for _n in _ops.REDUCTIONS:
    globals()[_n] = _reduction(_n)


def add(input, other, *, alpha=1):
    if alpha != 1:
        other = _ops.binary("mul", other, float(alpha), "pypto.add")
    return _ops.binary("add", input, other, "pypto.add")


def sub(input, other, *, alpha=1):
    if alpha != 1:
        other = _ops.binary("mul", other, float(alpha), "pypto.sub")
    return _ops.binary("sub", input, other, "pypto.sub")


def clip(input, min=None, max=None):  # noqa: A002 - PyPTO's names
    """pypto.clip as PyPTO builds it (framework/src/interface/operation/vector/math.cpp Clip):
    maximum with `min`, then minimum with `max`, each only when given."""
    out = input
    if min is not None:
        out = _ops.binary("maximum", out, min, "pypto.clip")
    if max is not None:
        out = _ops.binary("minimum", out, max, "pypto.clip")
    return out


def round(input, decimals=0):  # noqa: A001 - PyPTO's name
    """pypto.round of an fp32 tensor to integers: the program's round op, hicann/pypto's TRound
    (Muls, Cast CAST_RINT, Divs). Other decimals and dtypes are refused."""
    call = "pypto.round"
    if isinstance(decimals, bool) or decimals != 0:
        refuse(call, f"decimals={decimals!r}: the program's round op rounds to integers",
               "scale by 10 ** decimals around pypto.round(x)")
    if getattr(input, "dtype", None) is not _T.DTYPES["DT_FP32"]:
        refuse(call, f"a {getattr(input, 'dtype', input)!r} input: PyPTO rounds fp16 / bf16 "
               "through fp32 casts, which the round op does not model",
               "cast to DT_FP32 first (pypto.cast)")
    return _ops.unary("round", input, call)


def _pow(base, exponent):
    if _ops._scalar(exponent, "pypto.pow") == 2.0:
        return _ops.binary("mul", base, base, "x ** 2")
    refuse("pypto.pow", f"exponent {exponent!r}", "x ** 2 is traced (as x * x); other powers "
           "are not in tilesim's op table")


pow = _pow  # noqa: A001 - PyPTO's name
min = _min  # noqa: A001
max = _max  # noqa: A001

# What tilesim.pypto traces, for the refusal of any other name.
SUPPORTED = sorted(
    ["jit", "frontend.jit", "frontend.function", "frontend.dynamic", "Tensor", "tensor",
     "Element", "from_torch", "set_vec_tile_shapes", "set_cube_tile_shapes", "set_pass_options",
     "set_runtime_options", "set_semantic_label", "options", "clip", "round", "loop", "loop_unroll",
     "view", "assemble", "reshape", "unsqueeze", "squeeze", "expand_clone", "full", "zeros",
     "ones", "cast", "matmul", "where", "transpose",
     "concat", "softmax", "sigmoid", "rms_norm", "layer_norm", "gelu", "silu", "tanh", "cumsum",
     "add", "sub", "pow (** 2)", "min", "max", "ceildiv", "runtime._device_*",
     "platform.npuarch", "experimental.set_operation_options", "get_*_options"]
    + _ops.UNARY + ["mul", "div", "maximum", "minimum"] + _ops.REDUCTIONS)


# PyPTO ops outside the model, each with why (the rest of the surface names what it traces).
_OUTSIDE = {
    "gathermask": "picks elements of the last dim by a bit pattern (GatherMask: pattern_mode 1 "
                  "the even ones, 2 the odd ones), a strided pick tilesim's op table has no op for",
    "deinterleave": "splits the last dim into its even and odd elements, a strided pick "
                    "tilesim's op table has no op for",
}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name.startswith("set_") and not _T._current:
        # a setting made outside any kernel (at import): noted for the kernels traced after,
        # refused only where a kernel would need it
        return _module_setting(name)
    if name in _OUTSIDE:
        refuse(f"pypto.{name}", _OUTSIDE[name], "lay the halves out contiguously and view them "
               "(x[..., :d // 2], x[..., d // 2:]), which tilesim traces")
    refuse(f"pypto.{name}", "not in the PyPTO surface tilesim.pypto traces",
           f"it traces {', '.join(SUPPORTED)}")


def _module_setting(name):
    def setting(*args, **kwargs):
        if _T._current:
            refuse(f"pypto.{name}", "not in the PyPTO surface tilesim.pypto traces",
                   f"it traces {', '.join(SUPPORTED)}")
        f, line = _T.caller()
        _options.GLOBAL[0].note(f"pypto.{name} at {_os.path.basename(f)}:{line}, outside any "
                                "kernel: not a setting tilesim knows; ignored")
    setting.__name__ = name
    return setting


def _axpy_(self, other, alpha=1.0):
    """Tensor.axpy_(x, alpha): self += alpha * x in place, PyPTO's Axpy. The tensor is the sum
    from here on (a computed value rebound, as a Python name is); with alpha 1 that is one add,
    as the Axpy instruction is one vector op, else alpha * x then the add (one op more than
    the fused instruction). A kernel argument updated in place is refused."""
    call = "Tensor.axpy_"
    if self._value is not None and self._value.kind != "temp":
        refuse(call, f"updates '{self.name}', a tensor of the kernel, in place",
               "accumulate into a computed value (acc = x * a, then acc.axpy_(y))")
    total = add(self, other, alpha=alpha)
    self._bind(total._value, total._shape, total._cut)
    self._shaped = total._shaped
    return self


def _install_tensor_methods():
    Tensor.axpy_ = _axpy_
    for n in _ops.UNARY:
        setattr(Tensor, n, globals()[n])
    for n in _ops.REDUCTIONS:
        setattr(Tensor, n, globals()[n])
    Tensor.cumsum = cumsum
    Tensor.clip = clip
    Tensor.round = round
    Tensor.matmul = matmul
    Tensor.reshape = lambda self, *shape, **kw: reshape(
        self, list(shape[0]) if len(shape) == 1 and isinstance(shape[0], (list, tuple))
        else list(shape), **kw)
    Tensor.unsqueeze = unsqueeze
    Tensor.squeeze = squeeze
    Tensor.expand_clone = expand_clone
    for op, name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div")):
        setattr(Tensor, f"__{op}__", lambda a, b, n=name: _ops.binary(n, a, b))
        setattr(Tensor, f"__r{op}__", lambda a, b, n=name: _ops.binary(n, b, a))
    Tensor.__neg__ = lambda a: _ops.unary("neg", a, "-x")
    Tensor.__pow__ = lambda a, b: _pow(a, b)
    Tensor.__matmul__ = lambda a, b: _ops.matmul(a, b, None, call="a @ b")
    for op in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(Tensor, f"__{op}__", lambda a, b, o=op: refuse(
            f"tensor comparison ({o})", "comparisons are not in tilesim's op table",
            "give where() a condition tensor as an input"))
    Tensor.__hash__ = object.__hash__


_install_tensor_methods()
del _n
