"""triton.language under tilesim: ``import triton.language as tl`` in a kernel file traced by
tilesim.triton gets this module. Each call records what the kernel does (_trace.py); a call
outside what is traced raises tilesim's refusal (file:line, the call, what is supported)."""
import builtins as _builtins
import math as _math
import sys as _sys
import types as _types

from . import _trace as _T
from ._values import BlockPointer, Data, Index, Mask, Pointer, refuse


class constexpr:  # noqa: N801 - Triton's name
    """tl.constexpr: as an annotation it marks a meta-parameter; as a call it is the value."""

    def __init__(self, value=None):
        self.value = value

    def __class_getitem__(cls, item):
        return cls

    def __repr__(self):
        return f"constexpr[{self.value!r}]"


class dtype:  # noqa: N801
    """A Triton dtype: tl.float32 ..., its program dtype (None where programs have none)."""

    def __init__(self, name, program):
        self.name, self.program = name, program

    def __repr__(self):
        return f"triton.language.{self.name}"

    def __eq__(self, other):
        return isinstance(other, dtype) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "int8",
           "int32": "int32", "int1": None, "int16": None, "int64": None, "uint8": None,
           "uint32": None, "float64": None, "float8e4nv": None, "float8e5": None}
for _n, _p in _DTYPES.items():
    globals()[_n] = dtype(_n, _p)
float32, float16, bfloat16 = (globals()[_n] for _n in ("float32", "float16", "bfloat16"))
fp32, fp16, bf16 = float32, float16, bfloat16


def _program_dtype(d, call):
    if isinstance(d, str) and d in _T.PROGRAM_DTYPES.values():
        return d  # a traced block's own dtype (x.to(y.dtype))
    if isinstance(d, dtype):
        if d.program is None:
            refuse(call, f"dtype {d.name}", "tilesim programs model float32, float16, "
                   "bfloat16, int8 and int32")
        return d.program
    return _T.program_dtype(d, call)


# ---- program ids and aranges --------------------------------------------------------------


def program_id(axis=0):
    t = _T.active("tl.program_id")
    if axis not in (0, 1, 2):
        refuse("tl.program_id", f"axis {axis!r}", "axes are 0, 1 and 2")
    if t.grid[axis] == 1:
        return Index((), 0)
    return Index((), _T.Expr.var(t.pids[axis]))


def num_programs(axis=0):
    t = _T.active("tl.num_programs")
    if axis not in (0, 1, 2):
        refuse("tl.num_programs", f"axis {axis!r}", "axes are 0, 1 and 2")
    return t.grid[axis]


def arange(start, end):
    _T.active("tl.arange")
    start, end = _int(start, "tl.arange"), _int(end, "tl.arange")
    if end <= start:
        refuse("tl.arange", f"({start}, {end}) is empty")
    return Index((end - start,), start, (1,))


def _int(v, call):
    v = getattr(v, "value", v) if isinstance(v, constexpr) else v
    try:
        return int(v.__index__())
    except Exception:  # noqa: BLE001 - a refusal names what came instead
        refuse(call, f"{v!r} is not an integer known when the kernel is traced",
               "give constexprs or integer arguments")


def cdiv(a, b):
    if isinstance(a, Index) or isinstance(b, Index):
        return (a + b - 1) // b
    return -(-a // b)


# ---- loops ------------------------------------------------------------------------------


class _Loop:
    """for i in range(...): the body runs once, with i the loop's symbolic index."""

    def __init__(self, call, args):
        if not 1 <= len(args) <= 3:
            refuse(call, f"{len(args)} arguments", "range(stop), range(start, stop[, step])")
        if len(args) == 1:
            args = (0, args[0], 1)
        elif len(args) == 2:
            args = (args[0], args[1], 1)
        self.bounds = []
        for a in args:
            a = a.value if isinstance(a, constexpr) else a
            i = Index.of(a, call)
            if i is None or i.shape:
                refuse(call, f"bound {a!r}", "loop bounds are integers, program ids, loop "
                       "indices and constexprs")
            self.bounds.append(i.base)
        self.call, self.frame, self.done = call, None, False

    def __iter__(self):
        return self

    def __next__(self):
        t = _T.active(self.call)
        if self.frame is None:
            step = self.bounds[2]
            if step.concrete and step.value() <= 0:
                refuse(self.call, f"step {step.value()}", "loops step forward (step > 0)")
            self.frame = t.push(*self.bounds)
            self.before = _pointers(_sys._getframe(1))
            return Index((), _T.Expr.var(self.frame.var))
        if not self.done:
            self.done = True
            t.carried(self.frame, self.before, _pointers(_sys._getframe(1)))
            t.pop(self.frame)
        raise StopIteration


def _pointers(frame):
    """{name: pointer} of a kernel frame's locals that are pointers or block pointers."""
    return {k: v for k, v in frame.f_locals.items() if isinstance(v, (Pointer, BlockPointer))}


def range(*args, num_stages=None, loop_unroll_factor=None,  # noqa: A001 - tl.range
          disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, **kw):
    return _Loop("tl.range", args)


def static_range(*args, **kw):
    return _Loop("tl.static_range", args)


def builtin_range(*args):
    """Python's range inside a traced kernel: a traced loop."""
    return _Loop("range", args)


# ---- memory -------------------------------------------------------------------------------


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="",
         cache_modifier="", eviction_policy="", volatile=False, care_padding=True):
    call = "tl.load"
    t = _T.active(call)
    p, m = _pointer_and_mask(pointer, mask, boundary_check, call)
    shape = p.shape if m is None else _bc(p.shape, m.shape, call)
    a = t.access("load", p, m, shape, *_bp(pointer, boundary_check))
    t.args.setdefault(p.arg.name, p.arg)
    d = t.data(shape, _T.program_dtype(p.arg.dtype, call), "load", (a,))
    a.data = d
    return d


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="",
          eviction_policy=""):
    call = "tl.store"
    t = _T.active(call)
    p, m = _pointer_and_mask(pointer, mask, boundary_check, call)
    shape = p.shape if m is None else _bc(p.shape, m.shape, call)
    if isinstance(value, Data):
        shape = _bc(shape, value.shape, call)
        value.uses.append((tuple(t.frames), _T.caller()))
    a = t.access("store", p, m, shape, *_bp(pointer, boundary_check))
    t.args.setdefault(p.arg.name, p.arg)
    a.data = value
    return None


def _bc(a, b, call):
    from ._values import broadcast
    return broadcast(a, b, call)


# ---- data ---------------------------------------------------------------------------------


def full(shape, value, dtype):  # noqa: A002
    call = "tl.full"
    t = _T.active(call)
    shape = [_int(s, call) for s in (shape if isinstance(shape, (list, tuple)) else [shape])]
    return t.data(shape, _program_dtype(dtype, call), "const", (float(value),))


def zeros(shape, dtype):  # noqa: A002
    return full(shape, 0.0, dtype)


def zeros_like(x):
    return full(x.shape, 0.0, _by_program(x.dtype))


def full_like(x, value):
    return full(x.shape, value, _by_program(x.dtype))


def _by_program(p):
    return next(d for d in globals().values() if isinstance(d, dtype) and d.program == p)


_FLOATS = ("fp32", "fp16", "bf16")
# Binary ops the op table also takes on int32 (the vector unit's int32 Add, Sub, Mul, Max, Min).
_INT32_OPS = ("add", "sub", "mul", "maximum", "minimum")


def _promote(a, b, call):
    """Triton's promotion of two data blocks: the narrower float is cast to the wider."""
    if a.dtype == b.dtype:
        return a, b
    if a.dtype in _FLOATS and b.dtype in _FLOATS:
        if a.dtype == "fp32":
            return a, _cast(b, "fp32")
        if b.dtype == "fp32":
            return _cast(a, "fp32"), b
    refuse(call, f"operands of {a.dtype} and {b.dtype}", "cast one with .to(...) first")


def _cast(x, to):
    if x.dtype == to:
        return x
    t = _T.active("Tensor.to")
    return t.data(x.shape, to, "op", ("cast", [x], {"dtype": to}), uses=[x])


def _value(v, call):
    if isinstance(v, Data):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, constexpr):
            return _value(v.value, call)
        if isinstance(v, Index) and not v.shape:
            refuse(call, "an operation between data and a program id or loop index (a value "
                   "that differs between programs or iterations)", "data combines with data "
                   "and with numbers (constexprs, integer arguments)")
        if isinstance(v, (Index, Mask, Pointer)):
            refuse(call, f"an operation between data and {type(v).__name__.lower()} blocks",
                   "data combines with data and with numbers")
        refuse(call, f"an operand {v!r}", "data combines with data and with numbers")
    return float(v)


def _binary(name, a, b, call=None):
    call = call or f"tl {name}"
    t = _T.active(call)
    a, b = _value(a, call), _value(b, call)
    if isinstance(a, Data) and isinstance(b, Data):
        a, b = _promote(a, b, call)
        shape = _bc(a.shape, b.shape, call)
        dt = a.dtype
    else:
        x = a if isinstance(a, Data) else b
        shape, dt = x.shape, x.dtype
    if dt not in _FLOATS and not (dt == "int32" and name in _INT32_OPS):
        refuse(call, f"{name} on {dt} data", "tilesim programs compute in float dtypes, and "
               f"{', '.join(_INT32_OPS)} in int32 too")
    return t.data(shape, dt, "op", (name, [a, b], {}), uses=[a, b])


def _unary(name, x, call=None):
    call = call or f"tl.{name}"
    t = _T.active(call)
    x = _value(x, call)
    if not isinstance(x, Data):
        return getattr(_math, {"rsqrt": "sqrt"}.get(name, name))(x) if name != "rsqrt" \
            else 1 / _math.sqrt(x)
    return t.data(x.shape, x.dtype, "op", (name, [x], {}), uses=[x])


def exp(x):
    return _unary("exp", x)


def log(x):
    return _unary("log", x)


def sqrt(x):
    return _unary("sqrt", x)


def rsqrt(x):
    return _unary("rsqrt", x)


def abs(x):  # noqa: A001
    return _unary("abs", x)


def sigmoid(x):
    return _unary("sigmoid", x)


def tanh(x):
    return _unary("tanh", x)


def exp2(x):
    """2^x: exp(x * ln 2), as the compiler lowers it (a Muls and an Exp)."""
    t = _T.active("tl.exp2")
    t.note("tl.exp2(x) is exp(x * ln 2): a scalar multiply and an Exp")
    return _unary("exp", _binary("mul", x, _math.log(2.0), "tl.exp2"), "tl.exp2")


def maximum(a, b, propagate_nan=None):
    if not isinstance(a, Data) and not isinstance(b, Data) and \
            (isinstance(a, Index) or isinstance(b, Index)):
        return _builtin_extreme(_builtins.max, "tl.maximum", None, (a, b), {})
    return _binary("maximum", a, b, "tl.maximum")


def minimum(a, b, propagate_nan=None):
    if not isinstance(a, Data) and not isinstance(b, Data) and \
            (isinstance(a, Index) or isinstance(b, Index)):
        return _builtin_extreme(_builtins.min, "tl.minimum", None, (a, b), {})
    return _binary("minimum", a, b, "tl.minimum")


def fma(a, b, c):
    return _binary("add", _binary("mul", a, b, "tl.fma"), c, "tl.fma")


def div_rn(a, b):
    return _binary("div", a, b, "tl.div_rn")


fdiv = div_rn


def where(condition, x, y):
    call = "tl.where"
    t = _T.active(call)
    if isinstance(condition, Mask):
        v = x if isinstance(x, Data) else y
        pad = y if v is x else x
        if not isinstance(v, Data):
            refuse(call, "a where between two constants")
        if isinstance(pad, Data) or any(op in ("==", "!=") for _, op in condition.terms):
            refuse(call, "a select by position (an offsets mask other than a block's bounds, "
                   "or between two blocks: a scatter into a block)", "tl.where on a bounds "
                   "mask (cols < n) with a number, the padding of a partial block")
        if condition.vector_cmp:
            return _unary("where_index_fp32", v, call)
        t.note(f"tl.where on an integer offsets mask at {_T._at(_T.caller())}: the vector "
               "unit's Cmp takes no int32 / int64, so the compare and select run on the scalar "
               "unit element by element (triton-ascend's profiling guide); compare the offsets "
               "cast to fp32 (cols.to(tl.float32) < N) for the vector Cmp, or leave the padding "
               "to tl.load's mask and other")
        return _unary("where_index", v, call)
    if isinstance(condition, bool):
        return x if condition else y
    if isinstance(condition, _DataCompare):
        c = condition
        zero = isinstance(y, (int, float)) and not isinstance(y, bool) and y == 0
        if c.x is x and c.op in (">", ">=") and isinstance(c.value, (int, float)) and \
                c.value == 0 and zero:
            return _unary("relu", x, call)
        c.refuse()
    refuse(call, f"a condition that is {type(condition).__name__}",
           "tl.where takes an offsets mask (cols < n), the padding of a partial block")


def erf(x):
    return _unary("erf", x)


# ---- reductions ---------------------------------------------------------------------------


def _reduce(kind, x, axis, keep_dims, call):
    t = _T.active(call)
    if not isinstance(x, Data):
        refuse(call, f"a reduction of {type(x).__name__}", "reduce loaded data")
    if axis is None:
        if len(x.shape) > 1 and kind in ("argmax", "argmin"):
            refuse(call, "axis=None over a block of more than one axis (a flat index)",
                   "reduce one axis at a time (axis=0 / axis=1)")
        for _ in _builtins.range(len(x.shape) - 1):  # every axis, the last first
            x = _reduce(kind, x, len(x.shape) - 1, False, call)
        axis = 0
    axis = _int(axis, call)
    if not -len(x.shape) <= axis < len(x.shape):
        refuse(call, f"axis {axis} of a {len(x.shape)}-axis block")
    axis %= len(x.shape)
    shape = [n for i, n in enumerate(x.shape) if i != axis]
    dt = "int32" if kind in ("argmax", "argmin") else x.dtype
    d = t.data(shape, dt, "reduce", (kind, x, axis), uses=[x])
    if keep_dims:
        return d[tuple(None if i == axis else slice(None) for i in _builtins.range(len(x.shape)))]
    return d


def sum(input, axis=None, keep_dims=False, dtype=None):  # noqa: A001 A002
    return _reduce("sum", input, axis, keep_dims, "tl.sum")


def max(input, axis=None, return_indices=False,  # noqa: A001 A002 - tl.max
        return_indices_tie_break_left=True, keep_dims=False):
    if return_indices:
        refuse("tl.max", "return_indices=True", "call tl.argmax for the index")
    return _reduce("amax", input, axis, keep_dims, "tl.max")


def min(input, axis=None, return_indices=False,  # noqa: A001 A002 - tl.min
        return_indices_tie_break_left=True, keep_dims=False):
    if return_indices:
        refuse("tl.min", "return_indices=True", "call tl.argmin for the index")
    return _reduce("amin", input, axis, keep_dims, "tl.min")


def argmax(input, axis, tie_break_left=True, keep_dims=False):  # noqa: A002
    return _reduce("argmax", input, axis, keep_dims, "tl.argmax")


def argmin(input, axis, tie_break_left=True, keep_dims=False):  # noqa: A002
    return _reduce("argmin", input, axis, keep_dims, "tl.argmin")


def reduce(input, axis, combine_fn, keep_dims=False):  # noqa: A002
    """tl.reduce with a combine function tilesim recognises (a + b, a * b, maximum, minimum)."""
    call = "tl.reduce"
    fn = getattr(combine_fn, "fn", combine_fn)
    kinds = {"add": "sum", "mul": "prod", "maximum": "amax", "minimum": "amin"}
    probe = _Probe()
    try:
        r = fn(probe, _Probe())
    except Exception:  # noqa: BLE001 - what the combine does is all we ask of it
        r = None
    if not isinstance(r, _Probe) or r.op not in kinds:
        refuse(call, f"combine_fn {getattr(fn, '__name__', fn)!r}",
               "tl.reduce is traced with a combine of a + b, a * b, tl.maximum(a, b) or "
               "tl.minimum(a, b)")
    return _reduce(kinds[r.op], input, axis, keep_dims, call)


class _Probe:
    def __init__(self, op=None):
        self.op = op

    def __add__(self, o):
        return _Probe("add")

    __radd__ = __add__

    def __mul__(self, o):
        return _Probe("mul")

    __rmul__ = __mul__


def _probe_binary(name, orig):
    def f(a, b, *args, **kw):
        if isinstance(a, _Probe) and isinstance(b, _Probe):
            return _Probe(name)
        return orig(a, b, *args, **kw)
    return f


maximum = _probe_binary("maximum", maximum)
minimum = _probe_binary("minimum", minimum)


def _builtin_extreme(py, name, elementwise, args, kw):
    """Python's min / max inside a traced kernel, as Triton compiles them: of data, the
    elementwise tl.minimum / tl.maximum; of scalars of the program ids and loop indices (a
    grouped ordering's min(num_pid_m - first_pid_m, GROUP_SIZE_M)), that integer for each
    program; of numbers, Python's own."""
    if kw or len(args) != 2 or not any(isinstance(a, (Data, Index)) for a in args):
        return py(*args, **kw)
    a, b = args
    if isinstance(a, Data) or isinstance(b, Data):
        return elementwise(a, b)
    ia, ib = Index.of(a, name), Index.of(b, name)
    if ia is None or ib is None or ia.shape or ib.shape:
        refuse(f"{name}(...) in a kernel", f"a {name} of {a!r} and {b!r}", f"{name} of data "
               "blocks (tl.minimum / tl.maximum) or of scalar program ids, loop indices and "
               "integers")
    return Index((), ia.base.combine(ib.base, py, name))


def builtin_min(*args, **kw):
    return _builtin_extreme(_builtins.min, "min", minimum, args, kw)


def builtin_max(*args, **kw):
    return _builtin_extreme(_builtins.max, "max", maximum, args, kw)


# ---- shape helpers ------------------------------------------------------------------------


def broadcast_to(x, shape):
    """tl.broadcast_to to the block's own shape is the block (what kernels write to make an
    accumulator's shape explicit); a broadcast to a larger shape is refused."""
    shape = tuple(_int(s, "tl.broadcast_to") for s in shape)
    if isinstance(x, (Data, Index, Mask)) and tuple(x.shape) == shape:
        return x
    refuse("tl.broadcast_to", f"a broadcast of a {list(getattr(x, 'shape', []))} block to "
           f"{list(shape)}", "let the operation broadcast ([:, None] / [None, :])")


def reshape(x, *shape, can_reorder=False):
    """tl.reshape (and x.reshape, tl.view) that only adds axes of size 1 ((BLOCK,) to
    (BLOCK, 1): a row statistic made a column) is x[:, None]; any other reshape is refused."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(_int(n, "tl.reshape") for n in shape)
    old = tuple(getattr(x, "shape", ()))
    key, d = [], 0
    for n in shape:
        if d < len(old) and n == old[d]:
            key.append(slice(None))
            d += 1
        elif n == 1:
            key.append(None)
        else:
            break
    if d != len(old) or len(key) != len(shape) or not isinstance(x, (Data, Index, Mask)):
        refuse("tl.reshape", f"a reshape of a {list(old)} block to {list(shape)}",
               "a reshape that adds axes of size 1 (x.reshape(BLOCK, 1)), or [:, None] / "
               "[None, :]")
    return x[tuple(key)] if key else x


view = reshape


def expand_dims(x, axis):
    """tl.expand_dims(x, axis): x with a new axis of size 1 (x[:, None] for axis 1)."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = list(getattr(x, "shape", ()))
    for a in sorted(_int(a, "tl.expand_dims") % (len(shape) + len(axes)) for a in axes):
        shape.insert(a, 1)
    return reshape(x, tuple(shape))


def static_assert(cond, msg=""):
    return None


def static_print(*args, **kw):
    return None


def device_print(*args, **kw):
    return None


def multiple_of(x, values):
    return x


def max_contiguous(x, values):
    return x


def debug_barrier():
    return None


def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=None):
    """tl.dot of an A block [BM, BK] and a B block [BK, BN]: a cube stage (the program's
    matmul, its cube tile [BM, BK, BN]); accumulated over a K loop it is the whole product."""
    call = "tl.dot"
    t = _T.active(call)
    if not isinstance(a, Data) or not isinstance(b, Data) or len(a.shape) != 2 or \
            len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        refuse(call, f"operands of shapes {list(getattr(a, 'shape', []))} and "
               f"{list(getattr(b, 'shape', []))}", "tl.dot of two 2-D blocks [BM, BK] @ [BK, BN]")
    if out_dtype is not None and _program_dtype(out_dtype, call) != "fp32":
        refuse(call, f"out_dtype {out_dtype!r}", "the cube accumulates in float32; cast after")
    d = t.data([a.shape[0], b.shape[1]], "fp32", "dot", (a, b), uses=[a, b])
    return d if acc is None else acc + d


def make_block_ptr(base, shape, strides, offsets, block_shape, order=None):
    call = "tl.make_block_ptr"
    _T.active(call)
    p = _T.pointer_of(base, call)
    if p.shape:
        refuse(call, "a base that is a block of pointers", "give the tensor's base pointer")
    n = len(block_shape)
    if not len(shape) == len(strides) == len(offsets) == n:
        refuse(call, f"shape, strides, offsets and block_shape of {len(shape)}, {len(strides)}, "
               f"{len(offsets)} and {n} dims", "give each one entry per dim")
    offs = []
    for o in offsets:
        i = Index.of(o.value if isinstance(o, constexpr) else o, call)
        if i is None or i.shape:
            refuse(call, f"offset {o!r}", "offsets are integers of the program ids and loop "
                   "indices")
        offs.append(i)
    return BlockPointer(p, [_int(x, call) for x in shape], [_int(x, call) for x in strides],
                        offs, [_int(x, call) for x in block_shape], order)


def advance(base, offsets):
    call = "tl.advance"
    _T.active(call)
    if not isinstance(base, BlockPointer):
        refuse(call, f"a {type(base).__name__}", "tl.advance moves a tl.make_block_ptr")
    deltas = []
    for o in offsets:
        i = Index.of(o.value if isinstance(o, constexpr) else o, call)
        if i is None or i.shape:
            refuse(call, f"offset {o!r}", "offsets are integers")
        deltas.append(i)
    return base.advanced(deltas)


def _pointer_and_mask(pointer, mask, boundary_check, call):
    """(Pointer, Mask or None) of a load or store: a pointer block with its mask, or a block
    pointer with its boundary_check."""
    if isinstance(pointer, BlockPointer):
        if mask is not None:
            refuse(call, "a mask with a block pointer", "give boundary_check=(dims)")
        return _block_access(pointer, boundary_check, call)
    p = _T.pointer_of(pointer, call)
    if boundary_check:
        refuse(call, "boundary_check on a pointer block", "mask=offs < n")
    return p, _T.mask_of(mask, p.shape, call)


def _bp(pointer, boundary_check):
    if isinstance(pointer, BlockPointer):
        return pointer, [int(d) for d in (boundary_check or ())]
    return None, ()


def _block_access(pointer, boundary_check, call):
    """A block pointer's (Pointer, Mask) for tl.load / tl.store."""
    dims = [_int(d, call) for d in (boundary_check or ())]
    if any(not 0 <= d < len(pointer.block_shape) for d in dims):
        refuse(call, f"boundary_check {list(dims)}", "dims of the block pointer")
    return pointer.block(dims)


def _atomic(kind, name):
    """tl.atomic_add / atomic_max / atomic_min(pointer, value): every program combines its value
    into the same place; traced where the value is the program's reduction of its block
    (tl.min(x) then tl.atomic_min): the launch reduces the whole tensor, its blocks' partials
    merged across programs."""
    call = f"tl.{name}"

    def f(pointer, val, mask=None, sem=None, scope=None):
        t = _T.active(call)
        if isinstance(pointer, BlockPointer):
            refuse(call, "a block pointer", "an atomic on a tensor pointer (out_ptr + offs)")
        p, m = _pointer_and_mask(pointer, mask, (), call)
        shape = p.shape if m is None else _bc(p.shape, m.shape, call)
        if isinstance(val, Data):
            shape = _bc(shape, val.shape, call)
            val.uses.append((tuple(t.frames), _T.caller()))
        a = t.access("store", p, m, shape, None, ())
        t.args.setdefault(p.arg.name, p.arg)
        a.data = val
        a.combine = kind
        return None
    return f


atomic_add = _atomic("sum", "atomic_add")
atomic_max = _atomic("amax", "atomic_max")
atomic_min = _atomic("amin", "atomic_min")


# Data's operators: the graph's ops.
def _op(name, swapped=False):
    def f(a, b):
        return _binary(name, b, a) if swapped else _binary(name, a, b)
    return f


for _name, _op_name in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div")):
    setattr(Data, f"__{_name}__", _op(_op_name))
    setattr(Data, f"__r{_name}__", _op(_op_name, True))
Data.__neg__ = lambda self: _binary("mul", self, -1.0, "-x")


class _DataCompare:
    """x > 0 on data: only tl.where(x > 0, x, 0) (a ReLU, the program's relu) is traced; any
    other use is refused where it is used."""

    def __init__(self, x, op, value, where):
        self.x, self.op, self.value, self.where = x, op, value, where

    def refuse(self, where=None):
        refuse("a comparison of data", "comparisons of loaded values (x > 0) make a mask of "
               "data, which tilesim programs do not have", "tl.where(x > 0, x, 0) is a ReLU; "
               "use tl.maximum / tl.minimum for clamps", where)

    def __bool__(self):
        self.refuse()

    __and__ = __or__ = __invert__ = __rand__ = __ror__ = lambda self, *a: self.refuse()


def _data_compare(op):
    def compare(self, other):
        return _DataCompare(self, op, other, _T.caller())
    return compare


for _name, _sym in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="),
                    ("ne", "!=")):
    setattr(Data, f"__{_name}__", _data_compare(_sym))
Data.__hash__ = object.__hash__


def _data_getitem(self, key):
    t = _T.active("block[...]")
    from ._values import reshaped
    shape, _ = reshaped(self.shape, (0,) * len(self.shape), key, "a data block")
    return t.data(shape, self.dtype, "view", (self, key), uses=[self])


def _data_to(self, dtype, fp_downcast_rounding=None, bitcast=False):  # noqa: A002
    if bitcast:
        refuse("Tensor.to(bitcast=True)", "a bitcast", None)
    return _cast(self, _program_dtype(dtype, "Tensor.to"))


def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):  # noqa: A002
    """tl.cast(x, dtype) and x.cast(dtype): x.to(dtype)."""
    if not isinstance(input, Data):
        refuse("tl.cast", f"a cast of {input!r}", "cast loaded or computed data")
    return _data_to(input, dtype, fp_downcast_rounding, bitcast)


class pointer_type:  # noqa: N801
    """x_ptr.dtype: a pointer to element_ty."""

    def __init__(self, element_ty):
        self.element_ty = element_ty

    def __repr__(self):
        return f"pointer<{self.element_ty.name}>"


Pointer.dtype = property(lambda self: pointer_type(_by_program(
    _T.program_dtype(self.arg.dtype, "pointer.dtype"))))
Data.__getitem__ = _data_getitem
Data.to = _data_to
Data.cast = cast
Data.reshape = Data.view = reshape
Data.expand_dims = expand_dims
Data.__pow__ = lambda self, o: refuse("x ** y", "a power of data", "write x * x")

# tl.math, tl.extra.*.libdevice: the same functions
math = _types.ModuleType("triton.language.math", "tl.math under tilesim")
for _name in ("exp", "exp2", "log", "sqrt", "rsqrt", "abs", "sigmoid", "tanh", "maximum",
              "minimum", "fma", "div_rn", "fdiv", "erf"):
    setattr(math, _name, globals()[_name])


class _Untraced:
    """A name of a Triton module that tilesim does not trace: refused where a kernel uses it
    (calls it, or casts to it), so that importing it, annotating with it or probing for it
    (hasattr) in a file whose traced kernels do not use it is not a refusal."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        refuse(self.name, "not in what tilesim.triton traces")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Untraced(f"{self.name}.{name}")

    def __repr__(self):
        return f"<{self.name}: not traced by tilesim>"


def _refusing(module):
    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Untraced(f"{module}.{name}")
    return getattr_


math.__getattr__ = _refusing("tl.math")
libdevice = _types.ModuleType("triton.language.extra.libdevice", "libdevice under tilesim")
for _name in ("exp", "exp2", "log", "sqrt", "rsqrt", "abs", "tanh", "fma", "div_rn", "erf"):
    setattr(libdevice, _name, globals()[_name])
libdevice.__getattr__ = _refusing("libdevice")
extra = _types.ModuleType("triton.language.extra", "tl.extra under tilesim")
extra.libdevice = libdevice
extra.ascend = _types.ModuleType("triton.language.extra.ascend")
extra.ascend.libdevice = libdevice
extra.cann = _types.ModuleType("triton.language.extra.cann")
extra.cann.libdevice = libdevice
extra.__getattr__ = _refusing("tl.extra")


def _extension_parallel(*args, **kw):
    refuse("extension.parallel", "a loop split over a core's vector units (bind_sub_block)",
           "a for loop over range / tl.range / tl.static_range")


def _extension_slice(*args, **kw):
    refuse("extension.extract_slice / insert_slice", "a slice of a computed block",
           "load and store the sub-blocks themselves, with offsets from the loop index")


# triton.language.extra.cann.extension (Triton-Ascend's own ops): each refused where it is used.
extension = _types.ModuleType("triton.language.extra.cann.extension",
                              "Triton-Ascend's extension ops under tilesim: refused")
extension.parallel = _extension_parallel
extension.extract_slice = extension.insert_slice = _extension_slice
extension.__getattr__ = _refusing("extension")
extra.cann.extension = extension


__getattr__ = _refusing("tl")


del _n, _p


# A kernel's `and` / `or` / `not` (tilesim.triton rewrites them into these calls, as Triton's
# code generator makes them logical_and / logical_or / __not__): a block (a mask of several
# elements) combines elementwise, `and` as `&`; anything else as Python does.
def _is_block(x):
    return isinstance(x, (Data, Index, Mask)) and len(x.shape) > 0


def logical_and_of(a, b):
    if _is_block(a):
        return a & b()
    if not a:
        return a
    b_value = b()
    return a & b_value if _is_block(b_value) else b_value


def logical_or_of(a, b):
    if _is_block(a):
        return a | b()
    if a:
        return a
    b_value = b()
    return a | b_value if _is_block(b_value) else b_value


def logical_not_of(a):
    return ~a if _is_block(a) else not a
