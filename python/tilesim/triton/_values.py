"""What a traced Triton kernel computes with: integer expressions of the program ids and loop
indices (Expr), blocks of integers (Index: offsets, a base plus one stride per axis, the affine
form Triton-Ascend kernels write), masks (Mask: conjunctions of comparisons of Index blocks),
pointers (a tensor argument plus an Index offset) and data blocks (Data: a node of the traced
graph, turned into tile-program ops when the launch is written, _launch.py)."""
import math

from .._refusal import Refusal

SUPPORTED = ("tilesim.triton traces program_id / num_programs, arange, pointer arithmetic affine "
             "in program ids, aranges, loop indices and integers, masks, load / store, for loops "
             "over range / tl.range / tl.static_range, zeros / full, elementwise math, "
             "reductions along an axis, [:, None] broadcasting, constexpr ifs and jit helpers "
             "(docs/triton.md)")


# How a condition on the program ids is decided: a function (fn(env) -> bool, the Vars it reads)
# giving its value when every program of the launch sees the same one, else None (_trace.py).
UNIFORM = [lambda fn, names: None]



def _refuse_varying_condition():
    """A Python branch on a value that differs between programs or loop iterations."""
    refuse("a condition on a program id or loop index",
           "the trace takes one pass through the kernel for every program, so it cannot "
           "branch on a value that differs between programs or iterations",
           "branch on constexprs and on integer arguments only; put a program-dependent "
           "bound in a mask or a loop's range, and compute a tile's row and column from the "
           "program id or loop index with // and % (a tile order chosen by branches, such as "
           "a diagonal swizzle, is not traced)")

def refuse(call, what, instead=None, where=None):
    raise Refusal(call, what, instead or SUPPORTED, where)


# ---- integer expressions -----------------------------------------------------------------


class Var:
    """A program id (kind "pid", axis 0-2) or a loop's index (kind "loop", its Frame)."""

    def __init__(self, kind, name, key):
        self.kind, self.name, self.key = kind, name, key

    def __repr__(self):
        return self.name


class Expr:
    """An integer of the program ids and loop indices: evaluated at an environment
    {Var: int}. ``vars`` are the Vars it reads."""

    def __init__(self, fn, vars_, text):
        self.fn, self.vars, self.text = fn, frozenset(vars_), text

    @staticmethod
    def const(v):
        return Expr(lambda env, v=v: v, (), str(v))

    @staticmethod
    def var(v):
        return Expr(lambda env, v=v: env[v], (v,), v.name)

    def __call__(self, env):
        return self.fn(env)

    @property
    def concrete(self):
        return not self.vars

    def value(self):
        return self.fn({})

    def __repr__(self):
        return self.text

    def combine(self, other, f, name):
        o = other if isinstance(other, Expr) else Expr.const(other)
        if self.concrete and o.concrete:
            return Expr.const(f(self.value(), o.value()))
        return Expr(lambda env: f(self.fn(env), o.fn(env)), self.vars | o.vars,
                    f"({self.text} {name} {o.text})")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# ---- integer blocks ----------------------------------------------------------------------


def broadcast(a, b, call):
    """Triton's (numpy's) broadcast of two block shapes."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            refuse(call, f"block shapes {list(a)} and {list(b)} do not broadcast",
                   "give both operands the same shape, or 1 where one is broadcast")
        out.append(max(x, y))
    return tuple(out)


def _pad(shape, strides, n):
    k = n - len(shape)
    return (1,) * k + tuple(shape), (0,) * k + tuple(strides)


class _Ordered:
    """<, <=, > and >= through the class's _compare(other, op)."""

    def __lt__(self, o):
        return self._compare(o, "<")

    def __le__(self, o):
        return self._compare(o, "<=")

    def __gt__(self, o):
        return self._compare(o, ">")

    def __ge__(self, o):
        return self._compare(o, ">=")


class Index(_Ordered):
    """A block of integers: base + sum over axes of strides[a] * i_a (i_a in range(shape[a])),
    the base an Expr. A scalar (shape ()) is an integer of the program ids and loop indices."""

    def __init__(self, shape, base, strides=None):
        self.shape = tuple(shape)
        self.base = base if isinstance(base, Expr) else Expr.const(base)
        self.strides = tuple(strides) if strides is not None else (0,) * len(self.shape)

    @staticmethod
    def of(v, call):
        if isinstance(v, Index):
            return v
        if _is_int(v):
            return Index((), v)
        return None

    def __repr__(self):
        if not self.shape:
            return self.base.text
        return (f"<index block {list(self.shape)} base {self.base.text} strides "
                f"{list(self.strides)}>")

    @property
    def varies(self):
        return any(s and n > 1 for s, n in zip(self.strides, self.shape))

    def _binary(self, other, call, f, name, linear):
        o = Index.of(other, call)
        if o is None:
            return NotImplemented
        shape = broadcast(self.shape, o.shape, call)
        sa, ta = _pad(self.shape, self.strides, len(shape))
        sb, tb = _pad(o.shape, o.strides, len(shape))
        if linear:
            strides = [f(x if n > 1 else 0, y if m > 1 else 0)
                       for x, n, y, m in zip(ta, sa, tb, sb)]
            return Index(shape, self.base.combine(o.base, f, name), strides)
        if not self.varies and not o.varies:
            return Index(shape, self.base.combine(o.base, f, name))
        return None

    def __add__(self, o):
        return self._binary(o, "+", lambda a, b: a + b, "+", True)

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, "-", lambda a, b: a - b, "-", True)

    def __rsub__(self, o):
        o = Index.of(o, "-")
        return NotImplemented if o is None else o - self

    def __neg__(self):
        return self * -1

    def __mul__(self, o):
        if isinstance(o, (Pointer, Data)):
            return NotImplemented
        i = Index.of(o, "*")
        if i is None:
            return NotImplemented
        for a, b in ((self, i), (i, self)):
            if not b.varies and b.base.concrete:  # times an integer
                k = b.base.value()
                shape = broadcast(a.shape, b.shape, "*")
                sa, ta = _pad(a.shape, a.strides, len(shape))
                return Index(shape, a.base.combine(k, lambda x, y: x * y, "*"),
                             [s * k for s in ta])
        if not self.varies and not i.varies:
            return Index(broadcast(self.shape, i.shape, "*"),
                         self.base.combine(i.base, lambda x, y: x * y, "*"))
        refuse("an index block times a program-dependent index block",
               "the product is not affine in the aranges (offsets are base + stride * arange)",
               "multiply an arange by an integer or a stride argument")

    __rmul__ = __mul__

    def _scalar_only(self, o, f, name, swapped=False):
        i = Index.of(o, name)
        if i is None:
            return NotImplemented
        a, b = (i, self) if swapped else (self, i)
        r = a._binary(b, name, f, name, False)
        if r is None:
            refuse(f"'{name}' on an index block",
                   "an arange divided or taken modulo is not affine, so its tiles are not a "
                   "block of the tensor", "index a 2-D block with two aranges "
                   "(rows[:, None] * stride + cols[None, :])")
        return r

    def __floordiv__(self, o):
        return self._scalar_only(o, lambda a, b: a // b, "//")

    def __rfloordiv__(self, o):
        return self._scalar_only(o, lambda a, b: a // b, "//", True)

    def __mod__(self, o):
        return self._scalar_only(o, lambda a, b: a % b, "%")

    def __rmod__(self, o):
        return self._scalar_only(o, lambda a, b: a % b, "%", True)

    def __truediv__(self, o):
        refuse("'/' on an integer index", "true division of offsets",
               "use // (floor division) of program ids and loop indices")

    def _compare(self, other, op):
        o = Index.of(other, op)
        if o is None:
            if isinstance(other, (float, Data)):
                refuse(f"an index compared ({op}) with data",
                       "a comparison of an arange with data values", None)
            return NotImplemented
        diff = self - o
        if not diff.varies and diff.base.concrete and not diff.shape:
            return _OPS[op](diff.base.value(), 0)
        return Mask(diff.shape, [(diff, op)])

    def __eq__(self, o):  # noqa: D105 - equality of index blocks is a mask
        return self._compare(o, "==")

    def __ne__(self, o):
        return self._compare(o, "!=")

    __hash__ = object.__hash__

    def __getitem__(self, key):
        shape, strides = reshaped(self.shape, self.strides, key, "an index block")
        return Index(shape, self.base, strides)

    def __bool__(self):
        if not self.shape and self.base.concrete:
            return bool(self.base.value())
        same = UNIFORM[0](lambda env: self.base(env) != 0, self.base.vars) if not self.shape \
            else None
        if same is not None:
            return same
        _refuse_varying_condition()

    def __index__(self):
        if not self.shape and self.base.concrete:
            return self.base.value()
        refuse("an integer from a program id or loop index",
               "it differs between programs or iterations, so Python cannot use it as a number "
               "while the kernel is traced", "use it in offsets, masks and loop bounds")

    __int__ = __index__

    def to(self, dtype, *a, **k):
        name = getattr(dtype, "name", dtype)
        if not self.shape or name not in ("float32", "float16", "bfloat16", "fp32", "fp16",
                                          "bf16"):
            return self
        return FloatIndex(self)


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def reshaped(shape, strides, key, what):
    """shape and strides of block[key]: None adds a size-1 axis, ':' keeps one."""
    key = key if isinstance(key, tuple) else (key,)
    out, outs, d = [], [], 0
    for k in key:
        if k is None:
            out.append(1)
            outs.append(0)
        elif isinstance(k, slice) and k == slice(None):
            if d >= len(shape):
                refuse(f"{what}[...]", f"more axes than the block's {len(shape)}")
            out.append(shape[d])
            outs.append(strides[d])
            d += 1
        elif k is Ellipsis:
            rest = len([x for x in key if x is not None and x is not Ellipsis])
            for _ in range(len(shape) - d - (rest - (key.index(Ellipsis)))):
                out.append(shape[d])
                outs.append(strides[d])
                d += 1
        else:
            refuse(f"{what}[{k!r}]", "indexing a block by a value",
                   "blocks take [:, None] / [None, :] (a new axis) only")
    out += shape[d:]
    outs += strides[d:]
    return tuple(out), tuple(outs)


class FloatIndex(_Ordered):
    """An index block cast to a float dtype (`cols.to(tl.float32)`): only compared, so that the
    compare runs on the vector unit (its Cmp takes floats, not int32 / int64)."""

    def __init__(self, index):
        self.index = index
        self.shape = index.shape

    def _compare(self, other, op):
        if isinstance(other, FloatIndex):
            other = other.index
        if isinstance(other, float) and other == int(other):
            other = int(other)
        mask = self.index._compare(other, op)
        if isinstance(mask, Mask):
            mask.vector_cmp = True
        return mask

    def __getitem__(self, key):
        return FloatIndex(self.index[key])

    def __repr__(self):
        return "an index block cast to a float (traced only as a comparison's operand)"

    def __getattr__(self, name):
        refuse(f"'{name}' of an index block cast to a float",
               "an arange cast to a float is traced only as the operand of a comparison (a "
               "mask for tl.where)", "compare it (cols.to(tl.float32) < N)")

    def _refuse_use(self, *a):
        refuse("an index block cast to a float used as data",
               "an arange cast to a float is traced only as the operand of a comparison",
               "data comes from tl.load, tl.zeros and tl.full")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse_use
    __truediv__ = __rtruediv__ = __eq__ = __ne__ = _refuse_use
    __hash__ = object.__hash__


class Mask:
    """A block of booleans: the conjunction of (Index diff, op), each `diff op 0`. vector_cmp:
    every comparison was made on indices cast to a float (the vector unit's Cmp); otherwise an
    int32 / int64 compare, which the vector unit does not take."""

    def __init__(self, shape, terms, vector_cmp=False):
        self.shape, self.terms = tuple(shape), list(terms)
        self.vector_cmp = vector_cmp

    def __and__(self, other):
        if isinstance(other, bool):
            return self if other else Mask(self.shape, [(Index((), 1), "<")], self.vector_cmp)
        if not isinstance(other, Mask):
            refuse("a mask & a non-mask", "masks combine with other masks", None)
        return Mask(broadcast(self.shape, other.shape, "&"), self.terms + other.terms,
                    self.vector_cmp and other.vector_cmp)

    __rand__ = __and__

    def __or__(self, other):
        refuse("mask | mask (or `or`)", "a disjunction of masks is not a box of the tensor",
               "use one mask per dimension joined with &")

    __ror__ = __or__

    def __invert__(self):
        refuse("~mask (or `not`)", "the complement of a mask is not a box of the tensor",
               "write the opposite comparison")

    def __bool__(self):
        if not self.shape:
            names = frozenset().union(*(d.base.vars for d, _ in self.terms))
            same = UNIFORM[0](lambda env: all(_OPS[op](d.base(env), 0) for d, op in self.terms),
                              names)
            if same is not None:
                return same
            _refuse_varying_condition()
        refuse("a condition on a mask", "a kernel cannot branch on a block of booleans (an if or "
               "a while on a mask)", "give the mask to tl.load / tl.store, or select with "
               "tl.where")

    def __getitem__(self, key):
        terms = []
        for diff, op in self.terms:
            s, t = _pad(diff.shape, diff.strides, len(self.shape))
            terms.append((Index(s, diff.base, t)[key], op))
        shape, _ = reshaped(self.shape, (0,) * len(self.shape), key, "a mask")
        return Mask(shape, terms, self.vector_cmp)

    def valid(self, env, shape, where=None):
        """Per axis of `shape`, the [lo, hi) of positions the mask keeps at `env` (None for an
        axis the mask does not cut); or False when it keeps nothing. `where`: the access's
        file and line, for a refusal."""
        box = [[0, n] for n in shape]
        for diff, op in self.terms:
            s, t = _pad(diff.shape, diff.strides, len(shape))
            axes = [a for a in range(len(shape)) if t[a] and s[a] > 1]
            base = diff.base(env)
            if len(axes) > 1:
                refuse("a mask", "one comparison of a 2-D offset block (offs < n over rows and "
                       "columns) is not a box of the tensor",
                       "compare the row and column aranges separately, joined with &", where)
            if not axes:
                if not _OPS[op](base, 0):
                    return False
                continue
            a = axes[0]
            lo, hi = _interval(base, t[a], op, shape[a])
            box[a][0], box[a][1] = max(box[a][0], lo), min(box[a][1], hi)
            if box[a][0] >= box[a][1]:
                return False
        return box


def _interval(base, stride, op, n):
    """[lo, hi) of i in range(n) with base + stride * i op 0 (a monotone condition)."""
    ok = [_OPS[op](base + stride * i, 0) for i in (0, n - 1)]
    if op in ("==", "!="):
        hits = [i for i in range(n) if _OPS[op](base + stride * i, 0)]
        if not hits:
            return 0, 0
        if hits != list(range(hits[0], hits[-1] + 1)):
            refuse("a mask with !=", "it keeps a block with a hole", "use < / >= bounds")
        return hits[0], hits[-1] + 1
    lo, hi = 0, n
    if ok[0] and ok[1]:
        return 0, n
    if not ok[0] and not ok[1]:
        return 0, 0
    # the boundary: binary search for the first change
    a, b = 0, n - 1
    while b - a > 1:
        m = (a + b) // 2
        if _OPS[op](base + stride * m, 0) == ok[0]:
            a = m
        else:
            b = m
    return (lo, b) if ok[0] else (b, hi)


# ---- pointers and data -------------------------------------------------------------------


class TensorArg:
    """A kernel argument that is a tensor: its name in the kernel, the stand-in tensor."""

    def __init__(self, name, tensor):
        self.name, self.tensor = name, tensor
        self.shape = tuple(tensor.shape)
        self.strides = tuple(tensor.stride())
        self.dtype = tensor.dtype


def _derives(p, other):
    while p is not None:
        if p is other:
            return True
        p = p.parent
    return False


class Pointer:
    """A tensor argument plus an Index of element offsets (a scalar or a block of pointers)."""

    def __init__(self, arg, offset, parent=None):
        self.arg, self.offset, self.parent = arg, offset, parent

    def derives_from(self, other):
        """Whether this pointer is `other` or was computed from it (other + offsets, a block
        pointer's block)."""
        return _derives(self, other)

    @property
    def shape(self):
        return self.offset.shape

    @property
    def dtype(self):
        return self.arg.dtype

    def __add__(self, o):
        i = Index.of(o, "+")
        if i is None:
            if isinstance(o, (Pointer, Data, float)):
                refuse("pointer + " + type(o).__name__,
                       "a pointer moves by integer offsets only", None)
            return NotImplemented
        return Pointer(self.arg, self.offset + i, self)

    __radd__ = __add__

    def __sub__(self, o):
        i = Index.of(o, "-")
        if i is None:
            return NotImplemented
        return Pointer(self.arg, self.offset - i, self)

    def __getitem__(self, key):
        return Pointer(self.arg, self.offset[key], self)

    def __bool__(self):
        refuse("a condition on a pointer", "pointers are always set in a traced kernel", None)

    def __repr__(self):
        return f"<pointer to '{self.arg.name}' + {self.offset!r}>"


class BlockPointer:
    """tl.make_block_ptr: a base pointer, the tensor's shape and strides, the block's offsets
    (integers of the program ids and loop indices) and shape; tl.advance moves the offsets."""

    def __init__(self, base, shape, strides, offsets, block_shape, order, parent=None):
        self.base, self.shape_, self.strides = base, list(shape), list(strides)
        self.offsets, self.block_shape, self.order = list(offsets), list(block_shape), order
        self.parent = parent

    def derives_from(self, other):
        return _derives(self, other)

    def advanced(self, deltas):
        return BlockPointer(self.base, self.shape_, self.strides,
                            [o + d for o, d in zip(self.offsets, deltas)], self.block_shape,
                            self.order, self)

    def block(self, boundary_check):
        """(Pointer, Mask or None) of the block: offsets + aranges along each axis, the
        boundary-checked axes masked at the tensor's shape."""
        n = len(self.block_shape)
        off = Index((), 0)
        terms = []
        for d in range(n):
            key = tuple(slice(None) if i == d else None for i in range(n))
            pos = (self.offsets[d] + Index((self.block_shape[d],), 0, (1,)))[key]
            off = off + pos * self.strides[d]
            if d in boundary_check:
                terms += (pos >= 0).terms if isinstance(pos >= 0, Mask) else []
                lt = pos < self.shape_[d]
                terms += lt.terms if isinstance(lt, Mask) else []
        ptr = Pointer(self.base.arg, self.base.offset + off, self)
        return ptr, (Mask(tuple(self.block_shape), terms) if terms else None)


class Data:
    """A block of values: its block shape, program dtype, and the graph node computing it
    (kind, args), with the loop frames open where it was made."""

    def __init__(self, shape, dtype, kind, args, frames, where):
        self.shape, self.dtype, self.kind, self.args = tuple(shape), dtype, kind, args
        self.frames, self.where = tuple(frames), where
        self.axes = None  # after mapping: per block axis, the program dim (or None)
        self.uses = []  # (frames, where) of each use

    def __repr__(self):
        return f"<traced {self.kind} block {list(self.shape)} {self.dtype}>"

    def __bool__(self):
        refuse("a condition on loaded data", "the trace has no tensor values", None)

    def __index__(self):
        refuse("an integer from loaded data", "the trace has no tensor values", None)

    def __float__(self):
        refuse("a float from loaded data", "the trace has no tensor values", None)

    @property
    def numel(self):
        return math.prod(self.shape)
