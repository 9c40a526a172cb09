"""PyPTO's ops under tracing: each call checks its operands at the kernel's line and records the
op of the program's op table (kernels/ops/op_table.cpp) it is, or refuses."""
import math
import os

from . import _trace as T
from ._tensor import Tensor
from ._trace import refuse

_FP32 = T.DTYPES["DT_FP32"]


def _scalar(x, call="a scalar operand"):
    """A Python number or pypto.Element as a float, else None. A scalar a program cannot hold
    (nan, inf, an int beyond a double: JSON has no such number) is refused at the kernel line."""
    if isinstance(x, Element):
        x = x.value
    elif isinstance(x, Tensor) and x._const is not None:
        x = x._const
    elif not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    try:
        value = float(x)
    except (OverflowError, TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        refuse(call, f"the scalar {x!r}: a program's scalars are finite numbers (JSON has no "
               "nan or inf)", "a finite stand-in (the timing does not depend on the value)")
    return value


class Element:
    """pypto.Element(dtype, value): a scalar operand."""

    def __init__(self, dtype, value):
        self.dtype, self.value = T.dtype_of(dtype, "pypto.Element"), value


def _tensor(x, call, what="operand", shaped_ok=False):
    if not isinstance(x, Tensor):
        refuse(call, f"{what} {x!r} is not a tensor")
    x._traced(call, shaped_ok)
    return x


def _broadcast(a, b, call):
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            refuse(call, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y))
    return out[::-1]


def _merge_cuts(tensors, rank):
    cut = {}
    for t in tensors:
        shift = rank - t.dim
        for d, f in t._cut.items():
            cut[d + shift] = f
    return cut


def _result(trace, name, inputs, shape, full, value_dtype, cut, call, **keys):
    out = T.Value(full, value_dtype, trace.fresh(name))
    out.cut = dict(cut)  # the loops whose chunks its dims are (a tail split follows them)
    trace.op(name, [t._value for t in inputs], out, call, cuts=[t._cut for t in inputs], **keys)
    return Tensor._of(out, shape, cut)


def _piecewise(x, op):
    """op (elementwise, one operand) of a concat: the concat of op on each piece (a cast of
    concat([o1, o2], d) is concat([cast(o1), cast(o2)], d), each piece's own op)."""
    pieces, d = x._pieces
    return concat([op(p) for p in pieces], d)


def unary(name, x, call=None, **keys):
    call = call or f"pypto.{name}"
    trace = T.active(call)
    if getattr(x, "_half", None) and name == "neg":
        return half_op(name, x, None, call)
    if getattr(x, "_pieces", None) is not None and name != "rotate_half":
        return _piecewise(x, lambda p: unary(name, p, call, **keys))
    x = _tensor(x, call)
    return _result(trace, name, [x], x.shape, x._value.shape, x.dtype, x._cut, call, **keys)


def binary(name, a, b, call=None, swapped=False):
    """a <name> b; a scalar operand is the program op's "scalar" (a - s, a / s); s - a and
    s / a are composed from exact ops (neg, reciprocal)."""
    call = call or f"pypto.{name}"
    trace = T.active(call)
    sa, sb = _scalar(a, call), _scalar(b, call)
    for const, other in ((a, b), (b, a)):
        if getattr(const, "_const", None) is not None and isinstance(other, Tensor) and \
                _broadcast(const.shape, other.shape, call) != other.shape:
            refuse(call, f"pypto.full of {const.shape} against a {other.shape} operand",
                   "a full tensor is traced as a scalar operand: it must broadcast into the "
                   "other operand's shape")
    if getattr(a, "_half", None) and sb is not None:
        return half_op(name, a, sb, call)
    if getattr(b, "_half", None) and sa is not None and name in ("add", "mul"):
        return half_op(name, b, sa, call)
    if sa is not None and sb is not None:
        refuse(call, "both operands are scalars", "compute the constant in Python")
    if sa is not None:  # s <op> t
        if name in ("add", "mul", "maximum", "minimum"):
            return binary(name, b, a, call)
        t = _tensor(b, call)
        if name == "sub":  # s - t = (-t) + s
            return binary("add", unary("neg", t, call), sa, call)
        if name == "div":  # s / t = (1 / t) * s
            r = unary("reciprocal", t, call)
            return r if sa == 1.0 else binary("mul", r, sa, call)
        refuse(call, f"a scalar first operand of {name}")
    a = _tensor(a, call, shaped_ok=sb is None)
    if sb is not None:
        return _result(trace, name, [a], a.shape, a._value.shape, a.dtype, a._cut, call,
                       scalar=sb)
    b = _tensor(b, call, shaped_ok=True)
    if a.dtype is not b.dtype:
        refuse(call, f"operands are {a.dtype!r} and {b.dtype!r}",
               "cast one first (pypto.cast): program ops take one dtype")
    shape = _broadcast(a.shape, b.shape, call)
    full = _broadcast(a._value.shape, b._value.shape, call)
    return _result(trace, name, [a, b], shape, full, a.dtype, _merge_cuts([a, b], len(shape)),
                   call)


def _dim(x, dim, call):
    if isinstance(dim, (list, tuple)):
        if len(dim) != 1:
            refuse(call, f"dim {list(dim)}: PyPTO reductions take one dim",
                   "reduce one dim (merge adjacent dims with a reshape of the input first)")
        dim = dim[0]
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.dim <= dim < x.dim:
        refuse(call, f"dim {dim!r} for a rank-{x.dim} tensor")
    dim %= x.dim
    if dim in x._cut:
        refuse(call, f"reduces dim {dim}, which loop '{x._cut[dim].name}' cuts into chunks",
               "reduce a dim the loop does not cut (tilesim merges no partials across loop "
               "chunks)")
    return dim


def reduction(name, x, dim, keepdim, call=None):
    call = call or f"pypto.{name}"
    trace = T.active(call)
    x = _tensor(x, call)
    d = _dim(x, dim, call)
    shape, full = x.shape, x._value.shape
    if keepdim:
        shape, full = shape[:d] + [1] + shape[d + 1:], full[:d] + [1] + full[d + 1:]
    else:
        shape, full = shape[:d] + shape[d + 1:], full[:d] + full[d + 1:]
    cut = {(k if keepdim or k < d else k - 1): f for k, f in x._cut.items()}
    dtype = T.DTYPES["DT_INT32"] if name in ("argmax", "argmin") else x.dtype
    # A tile that splits the reduced dim merges its partials as PyPTO's reductions do (the
    # reduce families' pypto merge: the program's "auto").
    return _result(trace, name, [x], shape, full, dtype, cut, call, dim=d, keepdim=bool(keepdim),
                   merge="auto")


def cast(input, dtype, mode=None):
    call = "pypto.cast"
    trace = T.active(call)
    dt = T.dtype_of(dtype, call)
    T.program_dtype(dt, call)
    if getattr(input, "_pieces", None) is not None:
        return _piecewise(input, lambda p: cast(p, dtype, mode))
    x = _tensor(input, call)
    if mode is not None and getattr(mode, "name", str(mode)) != "CAST_NONE":
        note = (f"pypto.cast mode {getattr(mode, 'name', mode)}: the rounding mode changes the "
                "values, not the Cast instruction's work; the op table's cast runs")
        if note not in trace.notes:
            trace.notes.append(note)
    return _result(trace, "cast", [x], x.shape, x._value.shape, dt, x._cut, call,
                   dtype=dt.program)


def matmul(input, mat2, out_dtype=None, *, a_trans=False, b_trans=False, c_matrix_nz=False,
           extend_params=None, call="pypto.matmul"):
    trace = T.active(call)
    a, b = _tensor(input, call, "input"), _tensor(mat2, call, "mat2")
    if a_trans:
        refuse(call, "a_trans=True: tilesim's program matmul reads A as [..., m, k]",
               "store A as [m, k] (b_trans=True is modelled)")
    if c_matrix_nz:
        refuse(call, "c_matrix_nz=True: C is written ND in tilesim programs", "leave it out")
    bias = _bias(extend_params, call)
    if trace.cube_tile is None:
        refuse(call, "no cube tile shape is set before this matmul",
               "call pypto.set_cube_tile_shapes([m, m], [k, k], [n, n]) first, as PyPTO "
               "requires")
    if a.dim < 2 or b.dim < 2:
        refuse(call, f"operands of rank {a.dim} and {b.dim}", "matmul takes [..., m, k] and "
               "[..., k, n]")
    if a.dtype is not b.dtype:
        refuse(call, f"A is {a.dtype!r} and B {b.dtype!r}", "cast one first")
    k_a = a.shape[-1]
    k_b, n = (b.shape[-1], b.shape[-2]) if b_trans else (b.shape[-2], b.shape[-1])
    if k_a != k_b:
        refuse(call, f"A {a.shape} and B {b.shape}{' (b_trans)' if b_trans else ''}: k is "
               f"{k_a} and {k_b}")
    for t, free in ((a, a.dim - 2), (b, None)):
        if any(d >= t.dim - 2 and d != free for d in t._cut):
            refuse(call, "a loop cuts k or n of a matrix", "loop over a batch dim or A's rows "
                   "(m)")
    dt = T.dtype_of(out_dtype, call) if out_dtype is not None else b.dtype
    T.program_dtype(dt, call)
    batch = _broadcast(a.shape[:-2], b.shape[:-2], call)
    full_batch = _broadcast(a._value.shape[:-2], b._value.shape[:-2], call)
    n_full = b._value.shape[-2] if b_trans else b._value.shape[-1]
    keys = {"out_dtype": dt.program}
    if b_trans:
        keys["transpose_b"] = True
    if trace.cube_tile.get("split_k"):
        keys.update(_split_k(trace, k_a, dt, call))
    hint = getattr(trace, "matrix_size", None)
    if hint is not None:
        size, (file, line) = hint
        traced = [a.shape[-2], k_a, n]
        if size != traced:
            refuse(call, f"set_matrix_size({size}) at {os.path.basename(file)}:{line} is not "
                   f"this matmul's traced [m, k, n] {traced}: PyPTO's copies would take the "
                   "hint's extents", "give the traced sizes, or leave the hint out")
        note = (f"set_matrix_size({size}) at {os.path.basename(file)}:{line}: the static "
                "[m, k, n] PyPTO's cube copies take their extents from; the traced matmul's "
                "shapes are the same")
        if note not in trace.notes:
            trace.notes.append(note)
    if bias is not None:
        _check_bias(bias, a, n, keys, call)
        trace.notes.append(f"the matmul at {T.caller()[0]}:{T.caller()[1]} adds its bias "
                           f"'{bias.name}' in the cube, as PyPTO's LinkBias does (each C tile's "
                           "bias row GM -> L1 -> bias table, which its first mmad starts "
                           "from); the L1 -> bias table move is priced at the L1 -> L0B rate "
                           "(the hardware files have no rate of its own)")
    result = _result(trace, "matmul", [a, b] + ([bias] if bias is not None else []),
                     batch + [a.shape[-2], n],
                     full_batch + [a._value.shape[-2], n_full], dt,
                     _merge_cuts([a, b], len(batch) + 2), call, **keys)
    # the C tile in force and the C one root function computes (cube_l1_reuse_setting's auto
    # count and side read how many C tiles and m tiles there are)
    trace.matmul_tiles[id(result._value.op)] = (list(trace.cube_tile["dims"]),
                                                list(result.shape), T.caller())
    return result


# extend_params keys PyPTO's matmul takes (python/pypto/op/matmul.py) that add fixpipe work
# tilesim does not model: dequantisation and ReLU on the way out of L0C.
_FIXPIPE_KEYS = ("scale_tensor", "scale", "relu_type")


def _bias(extend_params, call):
    """The bias_tensor of a matmul's extend_params (None without one); the fixpipe's scale
    and ReLU epilogues are refused."""
    if not extend_params:
        return None
    if not isinstance(extend_params, dict):
        refuse(call, f"extend_params {extend_params!r} is not a dict",
               "extend_params={'bias_tensor': bias}")
    def unset(v):  # PyPTO's defaults: no tensor, scale 0.0, NO_RELU
        return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0) \
            or (not isinstance(v, Tensor) and getattr(v, "name", None) == "NO_RELU")

    other = [k for k, v in extend_params.items() if k != "bias_tensor" and not unset(v)]
    if other:
        refuse(call, f"extend_params {sorted(other)}: the fixpipe's dequantisation and ReLU "
               "epilogues are not modelled in programs", "extend_params={'bias_tensor': bias} "
               "is (the cube's bias path); write the rest as vector ops on the result")
    bias = extend_params.get("bias_tensor")
    if bias is None:
        return None
    return _tensor(bias, call, "bias_tensor")


def _check_bias(bias, a, n, keys, call):
    """PyPTO's CheckBiasParam: a row [1, n] (rank 2), fp32 (fp16 also for fp16 inputs, int32
    for int8), never with GM accumulation."""
    if bias.shape != [1, n] or bias._cut:
        refuse(call, f"bias_tensor {bias.shape}: PyPTO's bias is a row [1, n] = [1, {n}] of "
               "the whole n", "reshape the bias argument to [1, n]")
    want = {"int8": ("int32",), "fp16": ("fp32", "fp16")}.get(a.dtype.program, ("fp32",))
    if bias.dtype.program not in want:
        refuse(call, f"a {bias.dtype!r} bias for {a.dtype!r} operands",
               f"PyPTO's CheckBiasParam takes {' or '.join(want)}")
    if keys.get("split_k", 1) > 1:
        refuse(call, "a bias with enable_split_k", "PyPTO refuses a bias with GM accumulation "
               "(CheckGmAccumulationParam); leave one out")


def _split_k(trace, k, dt, call):
    """set_cube_tile_shapes(..., enable_split_k=True) as PyPTO builds the matmul
    (framework/src/interface/operation/cube_operation_impl.cpp ConstructGmAccumulationTensorGraph):
    K cut into ceil(K / kL1) slices, each a matmul of its own into a partial C; int32 partials
    added atomically in GM, fp32 ones summed by vector tasks (its deterministic accumulation).
    The program matmul's split_k / split_k_merge."""
    if dt.program not in ("fp32", "int32"):
        refuse(call, f"enable_split_k with a {dt!r} output", "PyPTO's GM accumulation writes "
               "fp32 or int32 (CheckGmAccumulationParam): give out_dtype DT_FP32")
    slices = -(-k // trace.cube_tile["dims"][1])
    if slices <= 1:
        return {}
    merge = "atomic" if dt.program == "int32" else "vector"
    trace.notes.append(f"enable_split_k: the matmul at {T.caller()[0]}:{T.caller()[1]} cuts K "
                       f"{k} into {slices} slices of the k L1 tile "
                       f"{trace.cube_tile['dims'][1]}, as PyPTO's GM accumulation does "
                       f"(split_k {slices}, split_k_merge \"{merge}\")")
    return {"split_k": slices, "split_k_merge": merge}


def where(condition, input, other):
    call = "pypto.where"
    trace = T.active(call)
    ts = [_tensor(t, call, shaped_ok=True) for t in (condition, input, other)]
    if ts[1].dtype is not ts[2].dtype:
        refuse(call, f"input is {ts[1].dtype!r} and other {ts[2].dtype!r}", "cast one first")
    shape, full = ts[0].shape, ts[0]._value.shape
    for t in ts[1:]:
        shape, full = _broadcast(shape, t.shape, call), _broadcast(full, t._value.shape, call)
    return _result(trace, "where", ts, shape, full, ts[1].dtype, _merge_cuts(ts, len(shape)),
                   call)


def transpose(input, dim0, dim1):
    call = "pypto.transpose"
    trace = T.active(call)
    x = _tensor(input, call)
    dims = sorted(d % x.dim for d in (dim0, dim1))
    if dims != [x.dim - 2, x.dim - 1]:
        refuse(call, f"swaps dims {dim0} and {dim1}", "tilesim's transpose swaps the last two "
               "dims")
    swap = lambda s: s[:-2] + [s[-1], s[-2]]  # noqa: E731
    return _result(trace, "transpose", [x], swap(x.shape), swap(x._value.shape), x.dtype,
                   x._cut, call)


def concat(tensors, dim=0):
    """The rotate_half idiom, concat([-x[..., d/2:], x[..., :d/2]], -1), is the program's
    rotate_half; any other concat (along any dim) is its pieces, which an assemble writes
    each at its offset."""
    call = "pypto.concat"
    T.active(call)
    tensors = list(tensors)
    halves = [getattr(t, "_half", None) for t in tensors]
    if (len(tensors) == 2 and all(halves) and halves[0][0] is halves[1][0]
            and dim % tensors[0].dim == tensors[0].dim - 1
            and (halves[0][1], halves[0][2], halves[1][1], halves[1][2]) == ("hi", -1, "lo", 1)):
        return unary("rotate_half", halves[0][0], call)
    if not tensors or any(not isinstance(t, Tensor) for t in tensors):
        refuse(call, "concat takes a list of tensors")
    rank = tensors[0].dim
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        refuse(call, f"dim {dim!r} for rank-{rank} tensors")
    d = dim % rank
    shape = list(tensors[0].shape)
    for t in tensors[1:]:
        if t.dim != rank or any(a != b for i, (a, b) in enumerate(zip(t.shape, shape)) if i != d):
            refuse(call, f"shapes {[t.shape for t in tensors]} differ outside dim {d}")
        if t.dtype is not tensors[0].dtype:
            refuse(call, f"dtypes {tensors[0].dtype!r} and {t.dtype!r}", "cast one first")
    shape[d] = sum(t.shape[d] for t in tensors)
    out = Tensor._blank(shape, tensors[0].dtype)
    out._pieces = (tensors, d)
    return out


def half_op(name, t, scalar, call):
    """neg / mul by -1 / add 0 on a half of the last dim (the rotate_half idiom's operands)."""
    base, side, sign = t._half
    if name == "neg" or (name == "mul" and scalar == -1.0):
        sign = -sign
    elif not ((name == "add" and scalar == 0.0) or (name == "mul" and scalar == 1.0)):
        t._traced(call)
    h = Tensor._blank(t._shape, t._dtype)
    h._half = (base, side, sign)
    return h


def softmax(input, dim):
    """PyPTO's composite (python/pypto/operator.py, softmax_fp32_cast): in fp32, amax, sub,
    exp, sum, div, cast back."""
    call = "pypto.softmax"
    x = _tensor(input, call)
    dtype = x.dtype
    if dtype is not _FP32:
        x = cast(x, _FP32)
    m = reduction("amax", x, dim, True, call)
    e = unary("exp", binary("sub", x, m, call), call)
    y = binary("div", e, reduction("sum", e, dim, True, call), call)
    return cast(y, dtype) if dtype is not _FP32 else y


def sigmoid(input):
    """PyPTO's composite casts to fp32 and back (operator.py, sigmoid_fp32_cast); the sigmoid
    itself is the op table's (exp, add, div)."""
    call = "pypto.sigmoid"
    x = _tensor(input, call)
    if x.dtype is _FP32:
        return unary("sigmoid", x, call)
    return cast(unary("sigmoid", cast(x, _FP32), call), x.dtype)


UNARY = ["exp", "log", "sqrt", "rsqrt", "reciprocal", "abs", "neg", "relu"]
BINARY = ["add", "sub", "mul", "div", "maximum", "minimum"]
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "argmax", "argmin"]


def cumsum(input, dim):
    call = "pypto.cumsum"
    x = _tensor(input, call)
    trace = T.active(call)
    d = _dim(x, dim, call)
    return _result(trace, "cumsum", [x], x.shape, x._value.shape, x.dtype, x._cut, call, dim=d)


def full(shape, fill_value, dtype=None, *, valid_shape=None):
    """pypto.full: a tensor of one value. tilesim programs have no fill op: it is a scalar
    operand of the elementwise ops it feeds (x * ones is x * 1.0)."""
    call = "pypto.full"
    T.active(call)
    value = _scalar(fill_value, call)
    if value is None:
        refuse(call, f"fill value {fill_value!r}: a number")
    dt = T.dtype_of(dtype, call) if dtype is not None else _FP32
    t = Tensor._blank(list(shape), dt)
    t._const = value
    return t


def _to_fp32(x, call):
    return x if x.dtype is _FP32 else cast(x, _FP32)


def _back(y, dtype):
    return y if dtype is _FP32 else cast(y, dtype)


def _gamma_row(gamma, rank, call):
    """gamma of shape (C,) as a (1, ..., C) row in fp32, as PyPTO's composites reshape it."""
    from ._tensor import reshape
    g = _tensor(gamma, call, "gamma", shaped_ok=True)
    if g.dim != rank:
        g = reshape(g, [1] * (rank - 1) + [g.shape[-1]])
    return _to_fp32(g, call)


def rms_norm(input, gamma=None, epsilon=1e-6):
    """PyPTO's composite (python/pypto/operator.py, rms_norm_fp32_cast): in fp32,
    sqrt(sum(x * x * (1 / n), -1) + eps), x / that (its x * ones is x * 1.0 here), times gamma,
    cast back."""
    call = "pypto.rms_norm"
    x = _tensor(input, call)
    dtype, n = x.dtype, x.shape[-1]
    x = _to_fp32(x, call)
    sq = binary("mul", binary("mul", x, x, call), 1.0 / n, call)
    y = unary("sqrt", binary("add", reduction("sum", sq, -1, True, call), float(epsilon), call),
              call)
    y = binary("div", binary("mul", x, 1.0, call), y, call)
    if gamma is not None:
        y = binary("mul", y, _gamma_row(gamma, x.dim, call), call)
    return _back(y, dtype)


def layer_norm(input, gamma=None, beta=None, epsilon=1e-5, dim=-1):
    """LayerNorm along the last dim, built as PyPTO builds its norms (fp32, keepdim
    reductions): mean = sum(x) / n, xc = x - mean, var = sum(xc * xc) / n,
    xc / sqrt(var + eps), times gamma, plus beta, cast back."""
    call = "pypto.layer_norm"
    x = _tensor(input, call)
    if dim not in (-1, x.dim - 1):
        refuse(call, f"dim {dim}: tilesim builds layer_norm along the last dim")
    dtype, n = x.dtype, x.shape[-1]
    x = _to_fp32(x, call)
    mean = binary("mul", reduction("sum", x, -1, True, call), 1.0 / n, call)
    xc = binary("sub", x, mean, call)
    var = binary("mul", reduction("sum", binary("mul", xc, xc, call), -1, True, call), 1.0 / n,
                 call)
    y = binary("div", xc, unary("sqrt", binary("add", var, float(epsilon), call), call), call)
    if gamma is not None:
        y = binary("mul", y, _gamma_row(gamma, x.dim, call), call)
    if beta is not None:
        y = binary("add", y, _gamma_row(beta, x.dim, call), call)
    return _back(y, dtype)


def activation(name):
    """gelu / silu / tanh: the op table's records, whose instructions are their decompositions
    (kernels/ops/op_table.cpp)."""
    def op(input, *args, **kwargs):
        return unary(name, input, f"pypto.{name}")
    op.__name__ = name
    return op
