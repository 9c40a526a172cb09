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
from .._jobs import dim_error as _dim_error
from . import _ops, _tensor
from . import _trace as _T
from ._kernel import JitKernel, PyptoSweep, TracedKernel, function, jit
from ._ops import Element, cast, concat, cumsum, matmul, sigmoid, softmax, transpose, where
from ._tensor import Dynamic, Tensor, assemble, loop, view
from ._trace import UnsupportedError, refuse

globals().update(_T.DTYPES)
tensor = Tensor
element = Element
DYNAMIC = DYN = Dynamic("DYNAMIC")
STATIC = None


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
    if enable_split_k:
        refuse(call, "enable_split_k=True: split-K is not modelled in programs",
               "leave it out")
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


def _no_options(name):
    def refuse_options(*args, **kwargs):
        refuse(f"pypto.{name}", "compiler and pass options are not modelled",
               "tilesim's run config has buffer_count (double buffering) and runtime_options "
               "stitch_function_max_num / launch_sched_aicpu_num")
    refuse_options.__name__ = name
    return refuse_options


set_pass_options = _no_options("set_pass_options")
set_options = _no_options("set_options")
set_codegen_options = _no_options("set_codegen_options")
set_matrix_size = _no_options("set_matrix_size")


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
     "Element", "set_vec_tile_shapes", "set_cube_tile_shapes", "loop", "view", "assemble",
     "cast", "matmul", "where", "transpose", "concat (rotate_half idiom)", "softmax", "sigmoid",
     "cumsum", "add", "sub", "pow (** 2)", "min", "max", "ceildiv"]
    + _ops.UNARY + ["mul", "div", "maximum", "minimum"] + _ops.REDUCTIONS)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    refuse(f"pypto.{name}", "not in the PyPTO surface tilesim.pypto traces",
           f"it traces {', '.join(SUPPORTED)}")


def _install_tensor_methods():
    for n in _ops.UNARY:
        setattr(Tensor, n, globals()[n])
    for n in _ops.REDUCTIONS:
        setattr(Tensor, n, globals()[n])
    Tensor.cumsum = cumsum
    Tensor.matmul = matmul
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
