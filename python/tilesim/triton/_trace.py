"""The recorder behind tilesim.triton: one launch of a @triton.jit kernel, run once in Python
with every program id and loop index symbolic, is a graph of loads, ops, reductions and stores;
written out (``Trace.launch``) it is an SPMD launch (``"source": "triton"``) of a tile program.

How the kernel's blocks become the program's tiles: every tensor argument is a program tensor
of its own shape (or, for a kernel that walks a contiguous tensor as a flat array, of its
element count); a load's block is a tile of it, each block axis the tensor dim whose stride the
axis's arange steps by. Evaluating the offsets for every program and every loop iteration gives
the tiles each program touches: they must cover the tensor once per pass (a kernel reading its
input three times reads it in three passes), each program must own as many rows (or tiles) as
the spmd partition gives a block, and a mask must cut a tile only at the tensor's edge (a
partial tile). Loops disappear into the tiles: a loop walking a row in column blocks is a tile
narrower than the row, and an accumulator (tl.zeros, then acc += ..., or acc += tl.sum(...))
summed over the loop is a reduction over the dims the loop walks.
"""
import itertools
import math
import os

from .._refusal import Refusal, caller
from . import _values
from ._values import BlockPointer, Data, Expr, Index, Mask, Pointer, TensorArg, Var, refuse

# Triton dtypes as tilesim program dtypes (model/dtype.cpp); the others are refused.
PROGRAM_DTYPES = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16", "int8": "int8",
                  "int32": "int32"}
_TORCH_TO_PROGRAM = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "int8",
                     "int32": "int32"}
_WIDTH = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "int32": 4}
MAX_POINTS = 4_000_000  # (program, iteration) points evaluated per access


def program_dtype(torch_dtype, call, where=None):
    name = getattr(torch_dtype, "name", str(torch_dtype)).removeprefix("torch.")
    if name in _TORCH_TO_PROGRAM:
        return _TORCH_TO_PROGRAM[name]
    refuse(call, f"a tensor of {name}", "tilesim programs model fp32, fp16, bf16, int8 and "
           "int32 tensors", where)


class Frame:
    """One traced for loop: range(start, stop, step) of Exprs, its index a Var."""

    def __init__(self, start, stop, step, where, number):
        self.start, self.stop, self.step, self.where = start, stop, step, where
        self.var = Var("loop", f"i{number}", self)

    def values(self, env):
        return range(self.start(env), self.stop(env), self.step(env))


class Access:
    """A tl.load or tl.store: the pointer block, its mask, the loop frames around it."""

    def __init__(self, kind, ptr, mask, shape, frames, where, bp=None, check=()):
        self.kind, self.ptr, self.mask, self.shape = kind, ptr, mask, tuple(shape)
        self.frames, self.where = tuple(frames), where
        self.bp, self.check = bp, check  # a block pointer's, and its boundary_check
        self.combine = None  # an atomic's: the reduction it combines with ("sum", "amax", "amin")
        self.slots = False  # a store that is an accumulator kept in GM (Writer._gm_accumulators)

    def bp_moved(self, moved, old):
        """The block pointer `old` this access went through is `moved` in the loop."""
        bp = self.bp
        chain = []
        while bp is not None and bp is not old:
            chain.append(bp)
            bp = bp.parent
        new = moved
        for b in reversed(chain):  # advances after `old` inside the body, replayed
            new = new.advanced([x - y for x, y in zip(b.offsets, b.parent.offsets)])
        self.bp = new
        self.ptr, self.mask = new.block(self.check)
        self.axes = None  # per block axis, the program dim
        self.tiles = None  # [(pid, start per dim, end per dim)]
        self.data = None


_current = []
_values.UNIFORM[0] = lambda fn, names: _current[-1].uniform(fn, names) if _current else None


def active(call):
    if not _current:
        refuse(call, "called outside a @triton.jit kernel being launched",
               "call it inside a kernel, and launch the kernel as kernel[grid](...)")
    return _current[-1]


class Trace:
    """One launch being traced."""

    def __init__(self, name, where, grid, hardware):
        self.name, self.where, self.grid, self.hardware = name, where, tuple(grid), hardware
        self.pids = [Var("pid", f"pid{a}", a) for a in range(3)]
        self.frames = []
        self.all_frames = []
        self.nodes = []
        self.accesses = []
        self.args = {}  # name -> TensorArg
        self.notes = []

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    # -- recording
    def data(self, shape, dtype, kind, args, uses=()):
        where = caller()
        for u in uses:
            if isinstance(u, Data):
                u.uses.append((tuple(self.frames), where))
        d = Data(shape, dtype, kind, args, self.frames, where)
        self.nodes.append(d)
        return d

    def access(self, kind, ptr, mask, shape, bp=None, check=()):
        a = Access(kind, ptr, mask, shape, self.frames, caller(), bp, check)
        self.accesses.append(a)
        return a

    def push(self, start, stop, step):
        f = Frame(start, stop, step, caller(), len(self.all_frames))
        self.frames.append(f)
        self.all_frames.append(f)
        return f

    def carried(self, frame, before, after):
        """Pointers the loop's body moved (ptrs += BLOCK, bp = tl.advance(bp, ...)): the loads
        and stores through them in the body are at iteration i moved i times."""
        it = Expr.var(frame.var).combine(frame.start, lambda a, b: a - b, "-").combine(
            frame.step, lambda a, b: a // b, "//")
        for name, v0 in before.items():
            v1 = after.get(name)
            if v1 is None or v1 is v0:
                continue
            if not v1.derives_from(v0):
                continue
            if isinstance(v0, BlockPointer):
                deltas = [(b - a) for a, b in zip(v0.offsets, v1.offsets)]
                if any(d.varies or frame.var in d.base.vars for d in deltas):
                    refuse("tl.advance", f"'{name}' moves by a different step each iteration",
                           None, frame.where)
                moved = v0.advanced([Index((), it.combine(d.base, lambda a, b: a * b, "*"))
                                     for d in deltas])
                for a in self.accesses:
                    if frame in a.frames and a.ptr.derives_from(v0) and a.bp is not None:
                        a.bp_moved(moved, v0)
                continue
            delta = v1.offset - v0.offset
            if delta.varies or frame.var in delta.base.vars:
                refuse("a pointer moved in a loop", f"'{name}' moves by a different step each "
                       "iteration", None, frame.where)
            shift = Index((), it.combine(delta.base, lambda a, b: a * b, "*"))
            for a in self.accesses:
                if frame in a.frames and a.ptr.derives_from(v0):
                    if a.mask is not None:
                        refuse(f"tl.{a.kind}", f"a masked access through '{name}', which the "
                               "loop moves (its mask does not move with it)", "compute the "
                               "offsets and the mask from the loop index", a.where)
                    a.ptr = Pointer(a.ptr.arg, a.ptr.offset + shift, a.ptr)

    def pop(self, frame):
        if not self.frames or self.frames[-1] is not frame:
            refuse("a loop", "ended out of order (a break, a return or an exception inside it)",
                   "loops of a traced kernel run to their end")
        self.frames.pop()

    def uniform(self, fn, names):
        """A condition on the program ids that every program of the launch decides the same
        way (if pid >= n: return, on a grid that fits n): its value; None when programs differ
        or it reads a loop index."""
        if any(v.kind != "pid" for v in names):
            return None
        values = {bool(fn(env)) for _, env in self.envs((), "a condition", caller())}
        if len(values) != 1:
            return None
        value = values.pop()
        where = caller()
        self.note(f"the condition at {_at(where)} is {value} for every program of the grid")
        return value

    # -- the environments: every program, every iteration of the frames enclosing an access
    def envs(self, frames, call, where):
        g0, g1, g2 = (list(self.grid) + [1, 1])[:3]
        count = 0
        for pid in range(g0 * g1 * g2):
            env = {self.pids[0]: pid % g0, self.pids[1]: (pid // g0) % g1,
                   self.pids[2]: pid // (g0 * g1)}
            for e in _nest(frames, 0, env):
                count += 1
                if count > MAX_POINTS:
                    refuse(call, f"more than {MAX_POINTS} (program, iteration) points to "
                           "evaluate", "trace a smaller shape with the same blocks", where)
                yield pid, e


def _nest(frames, i, env):
    if i == len(frames):
        yield env
        return
    f = frames[i]
    for v in f.values(env):
        e = dict(env)
        e[f.var] = v
        yield from _nest(frames, i + 1, e)


# ---- views: the program shape of each tensor argument ------------------------------------


def _axes_of(access):
    """[(block axis, stride)] of the axes of an access that walk memory."""
    off = access.ptr.offset
    n = len(access.shape)
    k = n - len(off.shape)
    strides = (0,) * k + off.strides
    shape = (1,) * k + off.shape
    return [(a, strides[a]) for a in range(n) if shape[a] > 1 and strides[a]]


def _natural(arg, accesses):
    """The tensor's own dims, when every walking axis steps by one of its dim strides."""
    dims, strides = list(arg.shape), list(arg.strides)
    for acc in accesses:
        for _, s in _axes_of(acc):
            if not _dims_stepped(s, dims, strides):
                return None
    return dims, strides


def _dims_stepped(step, dims, strides):
    """The dims of stride `step` that a block axis stepping by it walks: those of size 2 or
    more, else one of size 1 (a [1, N] buffer read in row blocks that its mask cuts to one)."""
    return [d for d, (st, n) in enumerate(zip(strides, dims)) if st == step and n > 1] or \
        [d for d, (st, n) in enumerate(zip(strides, dims)) if st == step][:1]


def _coefficients(access):
    """{Var: the stride its unit step moves the block's start by} (the offsets are affine)."""
    base = access.ptr.offset.base
    zero = {v: 0 for v in base.vars}
    at0 = base(zero)
    out = {}
    for v in base.vars:
        one = dict(zero)
        one[v] = 1
        c = abs(base(one) - at0)
        if c:
            out[v] = c
    return out


def _moved(step, dims, strides):
    """The one dim of a tensor that a step of `step` elements moves along (its offset unravelled
    in the tensor's dims), or None."""
    idx, rem = _unravel(step, dims, strides)
    moved = [d for d, i in enumerate(idx) if i]
    return moved[0] if len(moved) == 1 and not rem else None


def _base_steps(access):
    """The strides a block's start moves by with each program id and loop index (its offset's
    coefficients: the offsets are affine in them)."""
    return set(_coefficients(access).values())


def _merged(arg, accesses):
    """The tensor's dims with each dim that no access steps along (its stride none of theirs)
    merged into the dim inside it, where the two are contiguous, and each dim of size 1 merged
    likewise: a [B, H, W] tensor walked by offsets b * H * W + hw is a [B, H * W] one, its
    [B, 1, 1] scale a [B, 1]. None when nothing merges."""
    steps = {s for acc in accesses for _, s in _axes_of(acc)} | \
        {c for acc in accesses for c in _base_steps(acc)}
    dims, strides = list(arg.shape), list(arg.strides)
    out_dims, out_strides = [dims[-1]], [strides[-1]]
    for d in range(len(dims) - 2, -1, -1):
        if dims[d] == 1 or (strides[d] not in steps and
                            strides[d] == out_strides[0] * out_dims[0]):
            out_dims[0] *= dims[d]
        else:
            out_dims.insert(0, dims[d])
            out_strides.insert(0, strides[d])
    return (out_dims, out_strides) if len(out_dims) < len(dims) else None


def _nested_steps(dims, strides, accesses):
    """The steps of loops that move a dim another loop inside them walks too: a channel loop
    stepping by HW around a loop over the channel's HW in blocks (both in a [B, G, C / G * HW]
    tensor's last dim) steps by a dim of a factored view ([B, G, C / G, HW])."""
    steps = set()
    for acc in accesses:
        moved = {}
        for v, c in _coefficients(acc).items():
            d = _moved(c, dims, strides) if v.kind == "loop" else None
            if d is not None:
                moved.setdefault(d, []).append(c)
        for cs in moved.values():
            steps |= set(sorted(cs)[1:])
    return steps


def _split(dims, strides, steps):
    """dims and strides with a dim (n, stride t) split into (n / f, f), strides (t * f, t),
    for each step t * f no dim has (n % f == 0); None when some step is no dim's stride after
    the splits."""
    dims, strides = list(dims), list(strides)
    for s in sorted(steps, reverse=True):
        if _dims_stepped(s, dims, strides):
            continue
        for d, (n, t) in enumerate(zip(dims, strides)):
            f = s // t if t else 0
            if t and s % t == 0 and 1 < f < n and n % f == 0:
                dims[d:d + 1], strides[d:d + 1] = [n // f, f], [s, t]
                break
        else:
            return None
    return dims, strides


def _factored(arg, accesses):
    """The tensor's dims split (_split) wherever an access's block steps by no dim's stride: a
    [B, C, HW] tensor whose channels a kernel walks inside a group (offsets b * C * HW + c * HW
    + hw over [B, G, C / G * HW]) is a [B, G, C / G, HW] one. None when no split does."""
    return _split(arg.shape, arg.strides, {s for acc in accesses for _, s in _axes_of(acc)})


def view_of(arg, accesses):
    nat = _natural(arg, accesses) or _factored(arg, accesses)
    if nat is not None:
        return _split(*nat, _nested_steps(*nat, accesses)) or nat
    t = arg.tensor
    if t.is_contiguous() and all(len(_axes_of(a)) <= 1 and
                                 all(s == 1 for _, s in _axes_of(a)) for a in accesses):
        return [t.numel()], [1]
    a = accesses[0]
    refuse("tl.load / tl.store", f"the offsets into '{arg.name}' ({list(arg.shape)}, strides "
           f"{list(arg.strides)}) step by {[s for _, s in _axes_of(a)]}, which are not its dims' "
           "strides, nor those of a factored view of them (a dim of size n and stride t split "
           "into n / f and f, stride t * f, n % f == 0)", "walk each dim with an arange times "
           "that dim's stride (x.stride(d)), or a factor of a dim; transposed or gathered "
           "access is not modelled", a.where)


def _unravel(flat, dims, strides):
    idx = [0] * len(dims)
    order = sorted(range(len(dims)), key=lambda d: -strides[d])
    rem = flat
    for d in order:
        if dims[d] > 1 or strides[d] > 1:
            idx[d], rem = divmod(rem, strides[d]) if strides[d] else (0, rem)
    return idx, rem


# ---- writing the launch as a program -----------------------------------------------------


class PVal:
    """A tensor of the program: a name (renamed to an output's when stored), shape, dtype."""

    def __init__(self, name, shape, dtype, kind="temp"):
        self.name, self.shape, self.dtype, self.kind = name, list(shape), dtype, kind


class Pending:
    """A reduction not yet written: kind (sum, amax, amin), its source PVal, the dims it
    reduces, and the loops it is still a partial of (which must accumulate it)."""

    def __init__(self, kind, src, dims, partial_of, dtype, keys=None):
        self.kind, self.src, self.dims, self.partial_of = kind, src, set(dims), set(partial_of)
        self.dtype = dtype
        self.keys = keys or {}  # the op's other keys (spmd_rows of a GM accumulation)


class DotPending:
    """tl.dot of two loaded blocks not yet written: A [M, K] and B [K, N] program tensors, the
    cube tile [BM, BK, BN], and the loops it is still a partial of (the K loop accumulates
    it)."""

    def __init__(self, a, b, tile, partial_of, data):
        self.a, self.b, self.tile, self.partial_of, self.data = a, b, tile, set(partial_of), data
        self.dtype = "fp32"


class Scalar:
    def __init__(self, value):
        self.value = value


_COMBINE = {"add": "sum", "mul": "prod", "maximum": "amax", "minimum": "amin"}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}
_IDENTITY_OPERAND = {"add": 0.0, "sub": 0.0, "mul": 1.0, "div": 1.0}


class Writer:
    """Turns a finished Trace into the program and its launch."""

    def __init__(self, trace):
        self.t = trace
        self.body = []
        self.tile = None
        self.memo = {}
        self.counter = 0
        self.views = {}
        self.rank = 1
        self.inputs = {}
        self.outputs = []
        self.stored = {}
        self.reduced_dims = set()
        self.block = None  # the region each program owns, when it is not an even share
        self.cube = None  # the cube tile in force

    def fresh(self, stem="t"):
        self.counter += 1
        return f"{stem}{self.counter}"

    # -- views and tiles
    def map_loads(self):
        """map_accesses("load"), each tensor in its own dims; when those do not hold its blocks
        (a grid-stride loop over x.numel() whose blocks straddle rows) and every tensor read is
        contiguous and walked by 1-D blocks, the tensors read as flat arrays."""
        try:
            self.map_accesses("load")
        except Refusal as own_dims:
            loads = [a for a in self.t.accesses if a.kind == "load"]
            by_arg = {}
            for a in loads:
                by_arg.setdefault(a.ptr.arg.name, []).append(a)
            if any(_merged(self.t.args[n], accs) for n, accs in by_arg.items()):
                self.views = {}
                try:  # a block walking several contiguous dims as one (H * W flattened)
                    self.map_accesses("load", merged=True)
                    return
                except Refusal:
                    self.views = {}
            if not all(a.ptr.arg.tensor.is_contiguous() and len(a.shape) == 1 and
                       all(st == 1 for _, st in _axes_of(a)) for a in loads):
                raise
            self.views = {}
            try:
                self.map_accesses("load", flat=True)
            except Refusal:
                raise own_dims from None

    def map_accesses(self, kind, views=None, flat=False, merged=False):
        """Maps the loads (or the stores) to their tensors' dims and evaluates their tiles.
        `views` {name: dims}: a stored tensor is the shape of the value stored into it; `flat`:
        each tensor loaded as a flat array of its elements; `merged`: a tensor's contiguous dims
        that no access steps along separately as one dim (_merged)."""
        t = self.t
        by_arg = {}
        for a in t.accesses:
            if a.kind == kind:
                by_arg.setdefault(a.ptr.arg.name, []).append(a)
        for name, accs in by_arg.items():
            arg = t.args[name]
            if flat:
                self.views[name] = ([arg.tensor.numel()], [1])
            elif merged and _merged(arg, accs):
                self.views[name] = _merged(arg, accs)
            elif views and name in views and arg.tensor.is_contiguous() and \
                    math.prod(views[name]) == math.prod(arg.shape):
                dims = list(views[name])
                self.views[name] = (dims, [math.prod(dims[i + 1:]) for i in range(len(dims))])
            else:
                self.views[name] = view_of(arg, accs)
        if kind == "load":
            self.rank = max([len(self.views[n][0]) for n in by_arg] or [1])
            for name, accs in by_arg.items():
                placed = self._placed(accs, by_arg)
                if not self._fits(placed or self.views[name]):
                    placed = self._aligned(accs, by_arg) or placed
                if placed is not None:
                    self.views[name] = placed
        for name, accs in by_arg.items():
            dims, strides = self.views[name]
            k = self.rank - len(dims)
            if k < 0:
                refuse(f"tl.{kind}", f"'{name}' has {len(dims)} dims where the program's "
                       f"tensors have {self.rank}", None, accs[0].where)
            used = [0] * len(dims)
            for a in accs:
                a.axes = [None] * len(a.shape)
                for ax, s in _axes_of(a):
                    ds = _dims_stepped(s, dims, strides)
                    if not ds:
                        refuse(f"tl.{kind}", f"an axis of the block of '{name}' steps by {s}, "
                               f"not the stride of one of its dims {dims} (strides {strides})",
                               "walk each dim with an arange times that dim's stride", a.where)
                    a.axes[ax] = max(ds) + k
                self._enumerate(a, dims, strides, k, used)
            self.views[name] = (used, strides)
            for a in accs:
                self._check_clip(a, [1] * k + used)
                if kind == "load":
                    self._check_cover(a, [1] * k + used)

    def _placed(self, accs, by_arg):
        """A tensor of fewer dims than the program's whose offsets move with the program ids
        and loop indices that move another tensor's dims (a per-row statistic, rstd[row] beside
        x[row, :]): its dims at those program dims ([N] as [N, 1]), where padding it in front
        would lay it along the columns. None where nothing says so."""
        dims, strides = self.views[accs[0].ptr.arg.name]
        if len(dims) >= self.rank:
            return None
        moves = {}  # Var -> the program dims it moves in the tensors of the program's rank
        for other in by_arg.values():
            odims, ostrides = self.views[other[0].ptr.arg.name]
            if len(odims) == self.rank:
                for b in other:
                    for v, c in self._moving(b).items():
                        ds = _moved(c, odims, ostrides)
                        if ds is not None:
                            moves.setdefault(v, set()).add(ds)
        place = {}  # own dim -> program dims
        for a in accs:
            for v, c in self._moving(a).items():
                ds = _moved(c, dims, strides)
                if ds is not None and len(moves.get(v, ())) == 1:
                    place.setdefault(ds, set()).update(moves[v])
        walked = [d for d, n in enumerate(dims) if n > 1]
        if sorted(place) != walked or any(len(p) != 1 for p in place.values()):
            return None
        at = [next(iter(place[d])) for d in walked]
        if at != sorted(set(at)) or at == list(range(self.rank - len(walked), self.rank)):
            return None  # leading padding already lays it there
        new_dims, new_strides = [1] * self.rank, [0] * self.rank
        for d, p in zip(walked, at):
            new_dims[p], new_strides[p] = dims[d], strides[d]
        return new_dims, new_strides

    def _fits(self, view):
        """Whether a tensor's view, padded in front to the program's rank, is no larger along
        any dim than the tensors of the program's rank."""
        dims = [1] * (self.rank - len(view[0])) + list(view[0])
        full = [v[0] for v in self.views.values() if len(v[0]) == self.rank]
        return not full or all(n == 1 or any(f[d] == n for f in full)
                               for d, n in enumerate(dims))

    def _aligned(self, accs, by_arg):
        """A tensor of fewer dims laid along the dims of a tensor of the program's rank, read
        from where the kernel's offsets put its blocks: for every program and iteration its
        block's start is sum_d c_d * start_d of that tensor's block (a [B * G] statistic at b * G
        + g beside a [B, G, C / G, HW] tensor is [B, G, 1, 1]; a [C] weight at g * C / G + c is
        [1, G, C / G, 1]), each dim the kernel steps by c_d (or a block axis steps by) one of
        its dims, row-major over its elements. None where no such view exists."""
        refs = [a for n, other in by_arg.items() if len(self.views[n][0]) == self.rank
                for a in other]
        if not refs:
            return None
        rows, rdims = set(), None
        for a in accs:  # beside a block of the tensor in the loops around it
            inside = [r for r in refs if set(a.frames) <= set(r.frames)]
            if not inside:
                return None
            ref = max(inside, key=lambda r: len(_axes_of(r)))
            if rdims not in (None, self.views[ref.ptr.arg.name][0]):
                return None
            rdims, rstrides = self.views[ref.ptr.arg.name]
            for _, env in self.t.envs(a.frames, f"tl.{a.kind}", a.where):
                e = dict(env)
                for f in ref.frames:
                    if f not in a.frames:
                        vals = f.values(e)
                        if not len(vals):
                            break
                        e[f.var] = vals[0]
                else:
                    idx, rem = _unravel(ref.ptr.offset.base(e), rdims, rstrides)
                    if rem:
                        return None
                    rows.add((a.ptr.offset.base(env), tuple(idx)))
        rows = sorted(rows)
        c = [None] * self.rank
        varying = [d for d in range(self.rank) if len({r[1][d] for r in rows}) > 1]
        for d in varying:
            others = {}
            for off, idx in rows:
                key = tuple(idx[:d] + idx[d + 1:])
                if key in others and others[key][1] != idx[d]:
                    o0, i0 = others[key]
                    if (off - o0) % (idx[d] - i0):
                        return None
                    c[d] = (off - o0) // (idx[d] - i0)
                    break
                others.setdefault(key, (off, idx[d]))
            if c[d] is None:
                return None
        if any(off != sum(c[d] * idx[d] for d in varying) for off, idx in rows):
            return None
        # a block axis along a dim no block start moves (the block spans it, or every
        # program's block starts at 0 there): the one free dim that makes the view row-major
        spans = sorted({s for acc in accs for _, s in _axes_of(acc)} - set(c))
        free = [d for d in range(self.rank) if c[d] is None and rdims[d] > 1]
        views = []
        for at in itertools.permutations(free, len(spans)):
            cc = list(c)
            for d, s in zip(at, spans):
                cc[d] = s
            dims = [rdims[d] if cc[d] else 1 for d in range(self.rank)]
            strides = [cc[d] or 0 for d in range(self.rank)]
            placed = [d for d in range(self.rank) if cc[d]]
            if math.prod(dims) == accs[0].ptr.arg.tensor.numel() and placed and \
                    strides[placed[-1]] == 1 and all(strides[a] == strides[b] * dims[b]
                                                     for a, b in zip(placed, placed[1:])):
                views.append((dims, strides))
        return views[0] if len(views) == 1 else None

    def _moving(self, access):
        """_coefficients of the program ids and loop indices that take two values or more (a
        column loop of one iteration moves nothing, whatever its step)."""
        grid = (list(self.t.grid) + [1, 1])[:3]
        return {v: c for v, c in _coefficients(access).items()
                if (v.kind == "pid" and grid[v.key] > 1) or
                (v.kind == "loop" and v.key in access.frames and self._iterates(v.key, access))}

    def _enumerate(self, a, dims, strides, k, used):
        t = self.t
        call = f"tl.{a.kind}"
        ext = [1] * self.rank
        for ax, d in enumerate(a.axes):
            if d is not None:
                ext[d] = a.shape[ax]
        a.extent = ext
        a.tiles = []
        for pid, env in t.envs(a.frames, call, a.where):
            box = a.mask.valid(env, a.shape, a.where) if a.mask is not None else \
                [[0, n] for n in a.shape]
            if box is False:
                continue
            idx, rem = _unravel(a.ptr.offset.base(env), dims, strides)
            if rem:
                refuse(call, f"an offset into '{a.ptr.arg.name}' that is not on its dims' "
                       "strides", None, a.where)
            start = [0] * k + idx
            lo, hi = list(start), [s + 1 for s in start]
            for ax, d in enumerate(a.axes):
                if d is not None:
                    lo[d], hi[d] = start[d] + box[ax][0], start[d] + box[ax][1]
                elif box[ax][1] - box[ax][0] != a.shape[ax] and a.shape[ax] > 1:
                    refuse(call, "a mask cutting a broadcast axis", None, a.where)
            for d in range(len(dims)):
                if hi[d + k] > dims[d]:
                    refuse(call, f"reads or writes past the end of '{a.ptr.arg.name}' "
                           f"({list(a.ptr.arg.shape)}): dim {d} reaches {hi[d + k]} (a block "
                           "at the edge needs a mask)", "mask the offsets past the tensor "
                           "(mask=offs < n)", a.where)
                used[d] = max(used[d], hi[d + k])
            a.tiles.append((pid, env, start, lo, hi))

    def _check_clip(self, a, view):
        """A mask may cut a tile only where the tensor ends (a partial tile), or where the
        region its program owns ends: programs that each own a box of rows (row_start to
        min(row_start + rows_per_block, M)) walked in SUB tiles from the box's start, the last
        one cut by the box's end (offs < row_end). Such an access is `a.boxed`: the launch's
        spmd blocks are those boxes (partition.block), checked against the store's in
        ownership()."""
        a.boxed = False
        if all(self._plain_tile(a, start, lo, hi, view) for _, _, start, lo, hi in a.tiles):
            return
        boxes = _boxes(a.tiles)
        ext = [max(b[1][d] - b[0][d] for b in boxes.values()) for d in range(self.rank)]
        for pid, env, start, lo, hi in a.tiles:
            box_lo, box_hi = boxes[pid]
            for d in range(self.rank):
                if lo[d] != start[d] or (start[d] - box_lo[d]) % a.extent[d] or \
                        hi[d] != min(start[d] + a.extent[d], box_hi[d], view[d]) or \
                        box_lo[d] % ext[d] or box_hi[d] != min(box_lo[d] + ext[d], view[d]):
                    self._plain_tile(a, start, lo, hi, view, refusing=True)
        a.boxed = True

    def _plain_tile(self, a, start, lo, hi, view, refusing=False):
        """Whether a tile is a block of a tiling of the tensor from its origin, cut only where
        the tensor ends; `refusing`: says why not."""
        for d in range(self.rank):
            if lo[d] != start[d] or hi[d] != min(start[d] + a.extent[d], view[d]):
                if not refusing:
                    return False
                refuse(f"tl.{a.kind}", f"the mask keeps [{lo[d]}, {hi[d]}) of dim {d} of "
                       f"'{a.ptr.arg.name}' in a tile starting at {start[d]} of "
                       f"{a.extent[d]}: it cuts inside the tensor, not at its end "
                       f"({view[d]}) nor at the end of the rows its program owns",
                       "mask only what lies past the tensor's end (offs < n) or past the "
                       "program's own rows (offs < row_end), its tiles walking them from "
                       "their start", a.where)
            if start[d] % a.extent[d]:
                if not refusing:
                    return False
                refuse(f"tl.{a.kind}", f"a block of '{a.ptr.arg.name}' starts at {start[d]} "
                       f"on dim {d}, not a multiple of its {a.extent[d]}: blocks must tile "
                       "the tensor, or each program's rows from their start", "start blocks "
                       "at multiples of the BLOCK size", a.where)
        return True

    def _space(self):
        """The program's iteration space: per dim, the largest of the mapped tensors'."""
        tensors = [[1] * (self.rank - len(v[0])) + list(v[0]) for v in self.views.values()]
        return [max([1] + [d[i] for d in tensors]) for i in range(self.rank)]

    def _check_cover(self, a, view):
        """A load reads each block of its tensor once per pass: the program's stage reads a
        tile once. A tensor broadcast along the kernel's rows (a weight [1, N]) is read again
        for each row, as the program's ops read it for each tile; a tl.dot's operands are the
        matmul stage's, which reads its panels for each C tile itself."""
        if any(u.kind == "dot" and any(x is a.data for x in u.args) for u in self.t.nodes):
            return
        if any(v == 1 and n > 1 for v, n in zip(view, self._space())):
            return
        seen = {}
        for pid, env, start, lo, hi in a.tiles:
            key = tuple(start)
            if key in seen:
                refuse("tl.load", f"the block of '{a.ptr.arg.name}' at {list(start)} is read "
                       f"again (programs {seen[key]} and {pid}) in one pass: the program's "
                       "stage reads each tile once", "read each block once per pass (a loop "
                       "whose iterations revisit blocks is not modelled)", a.where)
            seen[key] = pid
        if a.boxed:  # each program's box in tiles from its start
            want = sum(math.prod(-(-(hi[d] - lo[d]) // a.extent[d]) for d in range(self.rank))
                       for lo, hi in _boxes(a.tiles).values())
        else:
            want = math.prod(-(-view[d] // a.extent[d]) for d in range(self.rank))
        if len(seen) != want:
            refuse("tl.load", f"the programs read {len(seen)} of the {want} blocks of "
                   f"'{a.ptr.arg.name}' in one pass (a part of it): the program's stage reads "
                   "them all", "read the whole tensor (or pass the part as a tensor of its "
                   "own)", a.where)

    def loop_dims(self, data, frame):
        """The program dims along which `frame`'s iterations move the loads `data` reads."""
        dims = set()
        for a in self._loads_of(data):
            if frame not in a.frames:
                continue
            env0 = None
            for pid, env in self.t.envs(a.frames, "a loop", a.where):
                vals = frame.values(env)
                if len(vals) >= 2 and env[frame.var] == vals[0]:
                    env0 = env
                    break
            if env0 is None:
                continue
            env1 = dict(env0)
            env1[frame.var] = env0[frame.var] + frame.step(env0)
            base = self.views[a.ptr.arg.name]
            d0, _ = _unravel(a.ptr.offset.base(env0), *base)
            d1, _ = _unravel(a.ptr.offset.base(env1), *base)
            dims |= {i + self.rank - len(base[0]) for i, (x, y) in enumerate(zip(d0, d1))
                     if x != y}
        return dims

    def _repeats(self, data, frame):
        """Whether `frame` runs two or more iterations for some program (of a load `data`
        reads)."""
        for a in self._loads_of(data):
            if frame in a.frames:
                for _, env in self.t.envs(a.frames[:a.frames.index(frame)], "a loop", a.where):
                    if len(frame.values(env)) >= 2:
                        return True
        return False

    def _loads_of(self, data, seen=None):
        seen = seen if seen is not None else set()
        if id(data) in seen or not isinstance(data, Data):
            return []
        seen.add(id(data))
        if data.kind == "load":
            return [data.args[0]]
        out = []
        for x in _operands(data):
            out += self._loads_of(x, seen)
        return out

    # -- program body
    def set_tile(self, data, shape=None):
        """The tile in force for an op on `data`; an op whose result is 1 along a dim (a column
        op on a row's statistic, rstd * rstd) keeps the tile in force there: it runs in the
        stage of the rows' tiles, as the kernel computes it in their loop."""
        tile = list(self.tile) if self.tile else [1] * self.rank
        ext = getattr(data, "extent", None)
        if ext is None:
            return
        for d, n in enumerate(ext):
            if n is not None and not (self.tile and shape is not None and shape[d] == 1):
                tile[d] = n
        if tile != self.tile:
            self.tile = tile
            self.body.append({"set_vec_tile_shapes": list(tile), "name": f"block{len(self.body)}"})

    def emit(self, op, inputs, shape, out_dtype, data=None, **keys):
        if data is not None:
            self.set_tile(data, shape)
        out = PVal(self.fresh(), shape, out_dtype)
        self.body.append({"op": op, "inputs": list(inputs), "out": out, **keys})
        return out

    def materialize(self, r, data, use_where=None):
        if isinstance(r, DotPending):
            return self._matmul(r, use_where or data.where)
        if isinstance(r, Pending):
            if r.partial_of:
                f = next(iter(r.partial_of))
                refuse("a reduction of a block inside the loop that walks its axis",
                       f"it is used inside the loop at {_at(f.where)} before the loop has "
                       "seen the whole axis", "accumulate it (acc += tl.sum(x, axis)) and "
                       "use the accumulator after the loop", use_where or data.where)
            key = ("pending", id(r))
            if key not in self.memo:
                self.set_tile(r.tile_data)
                shape = [1 if d in r.dims else n for d, n in enumerate(r.src.shape)]
                dims = sorted(r.dims)
                self.memo[key] = self.emit(r.kind, [r.src], shape, r.dtype,
                                           dim=dims[0] if len(dims) == 1 else dims,
                                           keepdim=True, **r.keys)
                self.reduced_dims |= r.dims
            return self.memo[key]
        return r

    def resolve(self, d):
        if not isinstance(d, Data):
            return Scalar(d)
        if id(d) in self.memo:
            return self.memo[id(d)]
        r = self._resolve(d)
        self.memo[id(d)] = r
        return r

    def _matmul(self, r, where):
        if r.partial_of:
            f = next(iter(r.partial_of))
            refuse("tl.dot", f"a product of K blocks used inside the K loop at {_at(f.where)} "
                   "before the loop has seen all of K", "accumulate it (acc += tl.dot(a, b)) "
                   "and use the accumulator after the loop", where)
        key = ("dot", id(r))
        if key not in self.memo:
            if self.cube != r.tile:
                self.cube = list(r.tile)
                self.body.append({"set_cube_tile_shapes": list(r.tile),
                                  "name": f"cube{len(self.body)}"})
                self.tile = None  # the next vector op states its tile again
            out = PVal(self.fresh(), [r.a.shape[0], r.b.shape[1]], r.dtype)
            entry = {"op": "matmul", "inputs": [r.a, r.b], "out": out, "out_dtype": r.dtype}
            out.entry = entry
            self.body.append(entry)
            self.memo[key] = out
        return self.memo[key]

    def _dot(self, d):
        a, b = d.args
        ra, rb = (self.materialize(self.resolve(x), x, d.where) for x in (a, b))
        if self.rank != 2 or a.axes != [0, 1] or b.axes != [0, 1]:
            refuse("tl.dot", f"blocks of dims {a.axes} and {b.axes}", "tl.dot of an A block "
                   "[BM, BK] of a [M, K] tensor and a B block [BK, BN] of a [K, N] tensor "
                   "(row-major, not transposed)", d.where)
        if ra.kind != "input" or rb.kind != "input":
            refuse("tl.dot", "an operand computed in the kernel", "tl.dot of loaded blocks "
                   "(a program's matmul reads its operands from GM)", d.where)
        partial = {f for f in d.frames if self.loop_dims(a, f) & {1} or
                   self.loop_dims(b, f) & {0}}
        d.axes, d.extent = [0, 1], [a.shape[0], b.shape[1]]
        return DotPending(ra, rb, [a.shape[0], a.shape[1], b.shape[1]], partial, d)

    def _resolve(self, d):
        kind = d.kind
        if kind == "dot":
            return self._dot(d)
        if kind == "load":
            a = d.args[0]
            d.axes, d.extent = a.axes, a.extent
            name = a.ptr.arg.name
            written = self._written_before(a)
            if written is not None:  # what the program stored there earlier, read back
                return self.materialize(self.resolve(written.data), written.data, written.where)
            if name not in self.inputs:
                view = self.views[name][0]
                self.inputs[name] = PVal(name, [1] * (self.rank - len(view)) + list(view),
                                         d.dtype, "input")
            return self.inputs[name]
        if kind == "const":
            d.axes, d.extent = [None] * len(d.shape), None
            return Scalar(d.args[0])
        if kind == "view":
            x, key = d.args
            r = self.resolve(x)
            axes, _ = _reindex(x.axes, key)
            d.axes, d.extent = axes, getattr(x, "extent", None)
            return r
        if kind == "reduce":
            return self._reduce(d)
        if kind == "op":
            return self._op(d)
        raise AssertionError(kind)

    def _reduce(self, d):
        rkind, x, axis = d.args
        r = self.resolve(x)
        dim = x.axes[axis] if x.axes else None
        d.axes = [a for i, a in enumerate(x.axes) if i != axis]
        d.extent = getattr(x, "extent", None)
        if dim is None:
            if x.shape[axis] == 1:
                return r
            refuse(f"tl.{rkind}", "a reduction over an axis that is not a tensor dim", None,
                   d.where)
        if rkind in ("argmax", "argmin"):
            r = self.materialize(r, x, d.where)
            self.set_tile(x)
            shape = [1 if i == dim else n for i, n in enumerate(r.shape)]
            out = self.emit(rkind, [r], shape, "int32", x, dim=dim, keepdim=True)
            return out
        partial = {f for f in d.frames if dim in self.loop_dims(x, f)}
        if isinstance(r, Pending):
            if r.kind != rkind:
                r = self.materialize(r, x, d.where)
            else:
                p = Pending(rkind, r.src, r.dims | {dim}, r.partial_of | partial, r.dtype)
                p.tile_data = r.tile_data
                return p
        if isinstance(r, Scalar):
            refuse(f"tl.{rkind}", "a reduction of a constant block", None, d.where)
        p = Pending(rkind, r, {dim}, partial, r.dtype)
        p.tile_data = x
        return p

    def _accumulator(self, d, name, ops):
        """acc = acc + x (or maximum / minimum) with acc made before the innermost loop and
        used after it: x summed (maxed, minned) over the loop; over every loop around it that
        acc was made before (a tl.zeros block outside a channel loop and its column loop)."""
        if name not in _COMBINE or not d.frames:
            return None
        consts = [x for x in ops if not isinstance(x, Data) or x.kind == "const"]
        others = [x for x in ops if isinstance(x, Data) and x.kind != "const"]
        if len(consts) != 1 or len(others) != 1:
            return None
        c = consts[0]
        loops = [f for f in d.frames if f not in c.frames] if isinstance(c, Data) else \
            [d.frames[-1]]
        if not loops or loops[-1] is not d.frames[-1] or not d.uses or \
                any(f in frames for frames, _ in d.uses for f in loops):
            return None
        loop, done = loops[0], set(loops)
        kind = _COMBINE[name]
        value = c.args[0] if isinstance(c, Data) else c
        if value != _IDENTITY[kind]:
            refuse(f"an accumulator over the loop at {_at(loop.where)}",
                   f"it starts at {value}, not {_IDENTITY[kind]} (the {kind}'s identity)",
                   "start it at the identity and combine the initial value after the loop",
                   d.where)
        x = others[0]
        r = self.resolve(x)
        if isinstance(r, DotPending):
            if name != "add" or not done & r.partial_of:
                return None
            d.axes, d.extent = x.axes, x.extent
            return DotPending(r.a, r.b, r.tile, r.partial_of - done, d)
        dims = set().union(*(self.loop_dims(x, f) for f in loops))
        if not dims and not any(self._repeats(x, f) for f in loops):  # one iteration
            d.axes, d.extent = x.axes, getattr(x, "extent", None)
            if isinstance(r, Pending) and done & r.partial_of:
                p = Pending(r.kind, r.src, r.dims, r.partial_of - done, r.dtype)
                p.tile_data = r.tile_data
                return p
            return r
        if not dims and not isinstance(r, Pending):
            refuse(f"an accumulator over the loop at {_at(loop.where)}",
                   "its loop does not move the blocks it accumulates", None, d.where)
        d.axes, d.extent = x.axes, getattr(x, "extent", None)
        if isinstance(r, Pending):
            if r.kind != kind:
                refuse(f"an accumulator over the loop at {_at(loop.where)}",
                       f"a {kind} of {r.kind} partials", None, d.where)
            p = Pending(kind, r.src, r.dims | dims, r.partial_of - done, r.dtype)
            p.tile_data = r.tile_data
            return p
        p = Pending(kind, r, dims, set(), r.dtype)
        p.tile_data = x
        return p

    def _op(self, d):
        name, ops, extra = d.args
        acc = self._accumulator(d, name, ops)
        if acc is not None:
            return acc
        rs = [self.materialize(self.resolve(x), d) if isinstance(x, Data) else Scalar(x)
              for x in ops]
        axes = None
        for x in ops:
            if isinstance(x, Data):
                axes = _merge_axes(axes, x.axes, len(d.shape), d.where)
        d.axes = axes or [None] * len(d.shape)
        ext = [None] * self.rank
        for x in ops:
            for i, n in enumerate(getattr(x, "extent", None) or []):
                if n is not None and (ext[i] is None or n > ext[i]):
                    ext[i] = n
        d.extent = ext if any(n is not None for n in ext) else None
        vals = [r for r in rs if isinstance(r, PVal)]
        scalars = [r.value for r in rs if isinstance(r, Scalar)]
        if len(vals) == 1 and len(scalars) == 1 and name in _IDENTITY_OPERAND:
            first = isinstance(rs[0], PVal)
            if scalars[0] == _IDENTITY_OPERAND[name] and (first or name in ("add", "mul")):
                return vals[0]  # x * 1, x + 0, x - 0, x / 1 (a weight or bias left out)
        if not vals:
            refuse(f"tl {name}", "an operation on constants only", None, d.where)
        shape = _bshape([v.shape for v in vals])
        if name == "where":
            if len(vals) != 3:
                refuse("tl.where", "a condition or branch that is a constant",
                       "tilesim programs select between two tensors by a tensor condition",
                       d.where)
            return self.emit("where", vals, shape, vals[1].dtype, d)
        if name == "cast":
            v = vals[0]
            entry = getattr(v, "entry", None)
            if entry is not None and entry["op"] == "matmul" and len(ops[0].uses) == 1:
                entry["out_dtype"] = v.dtype = extra["dtype"]  # the fixpipe writes C cast
                return v
            return self.emit("cast", vals, shape, extra["dtype"], d, dtype=extra["dtype"])
        if scalars:
            s = scalars[0]
            if rs[0].__class__ is Scalar and name in ("sub", "div"):
                v = vals[0]
                if name == "sub":  # s - x
                    n = self.emit("neg", [v], v.shape, v.dtype, d)
                    return self.emit("add", [n], v.shape, v.dtype, d, scalar=s) if s else n
                r = self.emit("reciprocal", [v], v.shape, v.dtype, d)  # s / x
                return r if s == 1 else self.emit("mul", [r], v.shape, v.dtype, d, scalar=s)
            return self.emit(name, vals, shape, vals[0].dtype, d, scalar=s)
        return self.emit(name, vals, shape, vals[0].dtype, d)

    # -- the launch
    def write(self):
        t = self.t
        if not any(a.kind == "store" for a in t.accesses):
            refuse("a kernel", "it stores nothing", "a traced kernel writes its results with "
                   "tl.store", t.where)
        self._gm_accumulators()
        self.check_loops()
        self.map_loads()
        needed, todo = set(), [a.data for a in t.accesses if a.kind == "store"]
        while todo:
            d = todo.pop()
            if isinstance(d, Data) and id(d) not in needed:
                needed.add(id(d))
                todo += _operands(d)
        stores = {id(a.data): a for a in t.accesses if a.kind == "store"}
        for d in t.nodes:  # the program's ops in the kernel's order
            if id(d) in needed and d.kind in ("op", "dot"):
                r = self.resolve(d)
                # an accumulator its loop has finished (sum_m_x += tl.sum(...)) where the loop
                # ends: the ops after the loop (rstd * rstd) come after it, in its pass's stage;
                # stored as it is too (a channel's dw after its column loop), not when its store
                # combines it across programs (an atomic, a part per program)
                store = stores.get(id(d))
                if isinstance(r, Pending) and not r.partial_of and r.src.kind != "input" and \
                        (store is None or not (store.combine or self._is_part(store, r))) and \
                        not any(
                            any(x is d for x in _operands(u)) and
                            (u.kind != "op" or _accumulates(u, d)) for u in t.nodes):
                    self.materialize(r, d)
            elif id(d) in needed and d.kind == "reduce":
                # a statistic where the kernel computes it: the passes after it come after it
                # (not one an accumulator sums over loops around it: acc += tl.sum(x, axis=1))
                r = self.resolve(d)
                if isinstance(r, Pending) and not r.partial_of and not any(
                        u.kind in ("reduce", "view") and u.args[1 if u.kind == "reduce" else 0]
                        is d or (u.kind == "op" and _accumulates(u, d) and
                                 any(x is d for x in _operands(u))) for u in t.nodes):
                    self.materialize(r, d)
        for a in t.accesses:
            if a.kind != "store":
                continue
            name = a.ptr.arg.name
            if name in self.stored:
                refuse("tl.store", f"a second store to '{name}' (the first at "
                       f"{_at(self.stored[name])})", "store each output once per block",
                       a.where)
            reads = [b for b in t.accesses if b.kind == "load" and b.ptr.arg.name == name]
            if name in self.inputs or any(self._written_before(b) is not a for b in reads):
                refuse("tl.store", f"'{name}' is read and written (in place)",
                       "write the result to a tensor of its own, or read it back after the "
                       "store that writes it", a.where)

            self.stored[name] = a.where
            data = a.data
            r = self.materialize(self._atomic(a), data, a.where) if a.combine else \
                self.materialize(self._partial_row(a), data, a.where) \
                if isinstance(data, Data) else None
            if not isinstance(r, PVal):
                refuse("tl.store", "a store of a constant block (a fill)",
                       "tilesim programs store what they load or compute", a.where)
            want = program_dtype(a.ptr.arg.dtype, "tl.store", a.where)
            if r.dtype != want:
                r = self.emit("cast", [r], r.shape, want, data, dtype=want)
            elif r.kind == "input":  # a loaded block stored as it is: through UB
                r = self.emit("copy", [r], r.shape, r.dtype, data)
            if r.kind == "output":
                r = self.emit("mul", [r], r.shape, r.dtype, data, scalar=1.0)
            if math.prod(a.ptr.arg.shape) != math.prod(r.shape) and not a.slots:
                refuse("tl.store", f"'{name}' has {math.prod(a.ptr.arg.shape)} elements where "
                       f"the program computes {math.prod(r.shape)} ({r.shape})", None, a.where)
            r.name, r.kind = name, "output"
            self.outputs.append(r)
        self.map_accesses("store", {r.name: r.shape for r in self.outputs})
        self._check_read_back()
        self.apply_in_task()
        return self.ownership()

    def apply_in_task(self):
        """The first pass's statistics over a split row (a loop over column blocks summing into
        accumulators) and the ops after them run in the block that owns the row, as the
        kernel's program does: "apply_in_task" on that pass's reductions (one launch, each
        block walking its rows again), where each stage would be a launch of its own. Later
        split passes stay stages of their own (docs/triton.md)."""
        tile, group, tainted, dims = None, [], set(), None
        for e in self.body:
            if "set_vec_tile_shapes" in e:
                tile = e["set_vec_tile_shapes"]
                continue
            if "op" not in e:
                continue
            reads = any(id(v) in tainted for v in e["inputs"])
            red = e["op"] in _COMBINE.values() and tile is not None
            rdims = e.get("dim")
            rdims = set(rdims if isinstance(rdims, list) else [rdims]) if red else set()
            split = red and any(tile[d] < e["inputs"][0].shape[d] for d in rdims)
            if split and not reads and (dims is None or rdims == dims):
                group.append(e)
                dims = rdims
                tainted.add(id(e["out"]))
            elif group and reads:
                if split:
                    break
                tainted.add(id(e["out"]))
                for g in group:
                    g["apply_in_task"] = True

    def check_loops(self):
        """A loop whose index no load or store inside it reads redoes the same blocks in every
        iteration (a pointer advanced by += is a loop-carried value the trace does not see)."""
        t = self.t
        for f in t.all_frames:
            inside = [a for a in t.accesses if f in a.frames]
            reads = set()
            for a in inside:
                reads |= a.ptr.offset.base.vars
                for diff, _ in (a.mask.terms if a.mask is not None else []):
                    reads |= diff.base.vars
            if inside and f.var not in reads and self._iterates(f, inside[0]):
                refuse("a loop", f"no load or store inside the loop at {_at(f.where)} reads its "
                       "index, so every iteration would redo the same blocks (a pointer "
                       "advanced with += inside a loop is not traced)", "compute the offsets "
                       "from the loop index: tl.load(x_ptr + off + tl.arange(0, BLOCK))",
                       inside[0].where)
            ops = [d for d in t.nodes if d.kind == "op" and f in d.frames]
            if not inside and ops and self._iterates(f, ops[0]):
                refuse("a loop", f"the loop at {_at(f.where)} loads nothing, and the trace sees "
                       "one of its iterations (a value updated from the one before, ret = ret "
                       "+ x, is a loop-carried value it does not see)", "write the iterations "
                       "out, or accumulate loaded blocks from the identity (acc = tl.zeros(...); "
                       "acc += x)", ops[0].where)

    def _resident(self, name):
        """A tensor every program loads before its loops, one block per program (a weight row
        read once and held across the rows the program walks): the program's resident input."""
        loads = [a for a in self.t.accesses if a.kind == "load" and a.ptr.arg.name == name]
        if not loads or any(a.frames for a in loads) or not self.t.all_frames:
            return False
        starts = {}
        for a in loads:
            for pid, _, start, _, _ in a.tiles:
                starts.setdefault(pid, set()).add(tuple(start))
        return all(len(v) == 1 for v in starts.values())

    def _check_read_back(self):
        """A tensor read back after its store: each program reads the blocks it stored (the
        rows of other programs would need a launch of their own)."""
        for b in self.t.accesses:
            a = self._written_before(b) if b.kind == "load" else None
            if a is not None and {(p, tuple(lo), tuple(hi)) for p, _, _, lo, hi in b.tiles} != \
                    {(p, tuple(lo), tuple(hi)) for p, _, _, lo, hi in a.tiles}:
                refuse("tl.load", f"'{b.ptr.arg.name}' read back in blocks other than the ones "
                       "each program stored", "read back the blocks the program wrote (what "
                       "other programs wrote needs a launch of its own)", b.where)

    def _written_before(self, load):
        """The store to the same tensor that comes before `load` in the kernel, if any."""
        before = None
        for a in self.t.accesses:
            if a is load:
                return before
            if a.kind == "store" and a.ptr.arg.name == load.ptr.arg.name and not a.combine:
                before = a
        return before

    def _atomic(self, a):
        """An atomic combines into one place the program's reduction of its block, of its own
        kind (tl.atomic_min of a tl.min): the launch's reduction of the whole tensor. Inside
        loops that walk the rows of what it adds (tl.atomic_add(dw_ptr + cols, dy * x_hat) per
        row and column block), it is the reduction over those rows with each sub-tile adding
        its partial in GM (spmd_rows "tiles"); a per-program accumulator row read, added to and
        stored back in the loop (_gm_accumulators) is the same reduction kept in a slot per
        block (spmd_rows "slots")."""
        call = "tl.store" if a.slots else {"sum": "tl.atomic_add", "amax": "tl.atomic_max",
                                            "amin": "tl.atomic_min"}[a.combine]
        x = a.data
        r = self.resolve(x) if isinstance(x, Data) else None
        walked = set()
        for f in a.frames:
            walked |= self.loop_dims(x, f)
        walked -= {d for d in (x.axes or []) if d is not None} if r is not None else walked
        if not walked and not a.slots and isinstance(r, Pending) and r.kind == a.combine:
            return r
        if not walked or (isinstance(r, Pending) and r.kind != a.combine) or \
                not isinstance(r, (Pending, PVal)):
            refuse(call, f"a value that is not the program's {a.combine} of its block, nor a "
                   "block of rows its loop walks", f"combine each program's reduction of its "
                   f"block (tl.{a.combine} then {call}), one place for all programs, or add "
                   "the blocks of the rows a loop walks", a.where)
        keys = {"spmd_rows": "slots" if a.slots else "tiles"}
        if isinstance(r, Pending):
            p = Pending(r.kind, r.src, r.dims | walked, r.partial_of - set(a.frames), r.dtype,
                        keys)
            p.tile_data = r.tile_data
        else:
            p = Pending(a.combine, r, walked, set(), r.dtype, keys)
            p.tile_data = x
        return p

    def _is_part(self, a, r):
        """Whether store `a` of `r` writes each program's sum over its rows as its own row of a
        [grid, ...] buffer (_partial_row)."""
        grid = math.prod(self.t.grid)
        shape = a.ptr.arg.shape
        if not isinstance(r, Pending) or r.partial_of or grid < 2 or not shape or \
                shape[0] != grid or r.kind != "sum":
            return False
        kept = math.prod(1 if d in r.dims else n for d, n in enumerate(r.src.shape))
        return math.prod(shape) == grid * kept

    def _partial_row(self, a):
        """The value a store writes; a program's reduction over the rows it walks stored as its
        own row of a [grid, ...] buffer (dw_acc summed over the row loop, then tl.store(dw_ptr +
        pid * stride + cols, dw_acc): the wrapper sums the rows) is the sum over those rows,
        each block's part written once to a slot of its own (spmd_rows "parts")."""
        r = self.resolve(a.data)
        if not self._is_part(a, r):
            return r
        a.slots = True
        self.t.note(f"each program's row of '{a.ptr.arg.name}' stored at {_at(a.where)} is its "
                    "part of the sum over the rows it walks: a slot per program (spmd_rows "
                    "parts), the slots folded by a second launch as the wrapper sums them")
        p = Pending(r.kind, r.src, r.dims, set(), r.dtype, {"spmd_rows": "parts"})
        p.tile_data = r.tile_data
        return p

    def _gm_accumulators(self):
        """A block of a tensor loaded, added to and stored back at the same place in a loop
        (existing = tl.load(dw_ptr + pid * stride + cols); tl.store(dw_ptr + pid * stride +
        cols, existing + v)): an accumulator kept in GM, each program its own block, each
        iteration reading and writing it. The store becomes the accumulation of v (the load
        leaves the program's inputs): a reduction over the rows the loop walks, its partials
        in a slot per program (spmd_rows "slots"), the slots folded by a second launch as the
        wrapper sums them."""
        t = self.t
        for s in t.accesses:
            s.slots = False
        for s in [a for a in t.accesses if a.kind == "store" and not a.combine and a.frames]:
            d = s.data
            if not isinstance(d, Data) or d.kind != "op" or d.args[0] != "add":
                continue
            ops = d.args[1]
            loads = [x for x in ops if isinstance(x, Data) and x.kind == "load" and
                     x.args[0].ptr.arg.name == s.ptr.arg.name]
            if len(loads) != 1 or len(ops) != 2:
                continue
            ld = loads[0].args[0]
            if ld.frames != s.frames or ld.ptr.offset.strides != s.ptr.offset.strides or \
                    ld.ptr.offset.shape != s.ptr.offset.shape:
                continue
            same, owner = True, {}
            for pid, env in t.envs(s.frames, "tl.store", s.where):
                at = s.ptr.offset.base(env)
                same = same and ld.ptr.offset.base(env) == at
                if owner.setdefault(at, pid) != pid:
                    refuse("tl.store", f"a block of '{s.ptr.arg.name}' read, added to and "
                           f"written back by programs {owner[at]} and {pid}: a race",
                           "give each program its own accumulator row (dw_ptr + pid * "
                           "stride), or add with tl.atomic_add", s.where)
            if not same:
                continue
            t.accesses.remove(ld)
            s.combine, s.slots = "sum", True
            s.data = next(x for x in ops if x is not loads[0])
            t.note(f"the block of '{s.ptr.arg.name}' each program reads, adds to and writes "
                   f"back at {_at(s.where)} is an accumulator kept in GM: the sum over the rows "
                   "its loop walks, a slot per program (spmd_rows slots), the slots folded by "
                   "a second launch as the wrapper sums them")

    def _iterates(self, frame, node):
        """Whether `frame` runs two or more iterations for some program (reaching `node`, an
        access or a data op inside it); a loop that runs once for every program is its body
        (range(0, BLOCK, TILE) with TILE == BLOCK)."""
        outer = node.frames[:node.frames.index(frame)]
        return any(len(frame.values(env)) >= 2
                   for _, env in self.t.envs(outer, "a loop", node.where))

    def ownership(self):
        """Each program must own what an spmd block of the partition owns: the same number of
        rows (or tiles), the extra ones on as many programs."""
        t = self.t
        store = next((a for a in t.accesses if a.kind == "store" and not a.combine), None)
        reduced = set()
        if store is not None:  # the dims the stored value was reduced over (a row's statistic)
            view = self.views[store.ptr.arg.name][0]
            view = [1] * (self.rank - len(view)) + list(view)
            reduced = {d for d in self.reduced_dims if view[d] == 1}
        else:  # atomics only: the programs own the blocks their reductions read
            atomic = next(a for a in t.accesses if a.kind == "store")
            store, reduced = self._loads_of(atomic.data)[0], set()
        grid = math.prod(t.grid)
        units = {}
        for pid, env, start, lo, hi in store.tiles:
            key = tuple(0 if d in reduced else s for d, s in enumerate(start))
            units.setdefault(pid, set()).add(key)
        allunits = set().union(*units.values()) if units else set()
        n = len(allunits)
        seen = sum(len(u) for u in units.values())
        if seen != n:
            refuse("a kernel's programs", f"{seen - n} of the {n} blocks of '{store.ptr.arg.name}'"
                   " are written by more than one program", "give each block one owner",
                   store.where)
        if any(getattr(a, "boxed", False) for a in t.accesses):
            if not self._regions(store, units, grid):
                refuse("the launch", f"a mask cuts tiles at the end of each program's rows, "
                       f"but the boxes the {grid} programs write of '{store.ptr.arg.name}' are "
                       "not one equal box each, from multiples of its size (the last cut at the "
                       "tensor's end)", "give each program rows_per_block = cdiv(M, grid) rows "
                       "from pid * rows_per_block, or tile the tensor (docs/triton.md)",
                       store.where)
            return n
        view = [1] * (self.rank - len(self.views[store.ptr.arg.name][0])) + \
            self.views[store.ptr.arg.name][0]
        full = math.prod(1 if d in reduced else -(-view[d] // store.extent[d])
                         for d in range(self.rank))
        if n != full:
            refuse("tl.store", f"the programs write {n} of the {full} blocks of "
                   f"'{store.ptr.arg.name}'", "a traced launch writes its whole output",
                   store.where)
        have = sorted((len(units.get(p, ())) for p in range(grid)), reverse=True)
        if grid >= n:
            want = [1] * n + [0] * (grid - n)
        else:
            want = sorted((n * (b + 1) // grid - n * b // grid for b in range(grid)),
                          reverse=True)
        if have != want and self._regions(store, units, grid):
            return n
        if have != want and _even_rows(units, grid):
            self.t.note("the programs own whole rows, their column blocks walked in a loop (an "
                        "even share of the rows); the program's spmd blocks share the tiles in "
                        "runs of the same length")
            return n
        if have != want:
            refuse("the launch", f"its {grid} programs own {_counts(have)} blocks of "
                   f"'{store.ptr.arg.name}' where an spmd launch of {grid} blocks gives "
                   f"{_counts(want)}", "tilesim's spmd partition gives each block an even "
                   "share (docs/spmd.md)", store.where)
        order = {key: i for i, key in enumerate(sorted(allunits))}
        strided = any(max(order[k] for k in u) - min(order[k] for k in u) + 1 != len(u)
                      for u in units.values() if u)
        matmuls = [e for e in self.body if e.get("op") == "matmul"]
        if strided and matmuls:
            for e in matmuls:  # C tiles b, b + G, ...: the matmul op's strided assignment
                e["assignment"] = "strided"
        elif strided:
            self.t.note("the programs walk their blocks strided (range(pid, n, num_programs));"
                        " the program's spmd blocks own contiguous runs of the same length")
        return n

    def _regions(self, store, units, grid):
        """Programs that own a box of the output each (a BLOCK region walked in SUB tiles):
        the spmd partition's block regions (partition.block), one per program."""
        view = [1] * (self.rank - len(self.views[store.ptr.arg.name][0])) + \
            self.views[store.ptr.arg.name][0]
        boxes = _boxes(store.tiles)
        if not boxes:
            return False
        ext = [max(b[1][d] - b[0][d] for b in boxes.values()) for d in range(self.rank)]
        # A region owns whole rows of what the program reduces: no reduced dim is cut.
        if any(ext[d] < view[d] for d in self.reduced_dims if d < self.rank):
            return False
        regions = math.prod(-(-view[d] // ext[d]) for d in range(self.rank))
        for lo, hi in boxes.values():
            for d in range(self.rank):
                if lo[d] % ext[d] or hi[d] != min(lo[d] + ext[d], view[d]):
                    return False
        if len(boxes) != regions or grid < regions:
            return False
        # The block is a region of the program's iteration space: a reduced dim whole.
        space = self._space()
        self.block = [space[d] if d in self.reduced_dims else ext[d] for d in range(self.rank)]
        return True

    def program(self):
        def named(e):
            if "op" not in e:
                return e
            return dict(e, inputs=[v.name for v in e["inputs"]], out=e["out"].name)

        used = []
        for e in self.body:
            for v in e.get("inputs", []):
                if v.kind == "input" and v not in used:
                    used.append(v)
        return {"program": self.t.name,
                "description": f"traced by tilesim.triton from {_at(self.t.where)}",
                "inputs": [dict({"name": v.name, "shape": v.shape, "dtype": v.dtype},
                                **({"resident": True} if self._resident(v.name) else {}))
                           for v in used],
                "outputs": [v.name for v in self.outputs],
                "body": [named(e) for e in self.body]}


def _boxes(tiles):
    """{pid: [lo, hi]}: the box around each program's tiles."""
    boxes = {}
    for pid, env, start, lo, hi in tiles:
        b = boxes.setdefault(pid, [list(lo), list(hi)])
        b[0] = [min(x, y) for x, y in zip(b[0], lo)]
        b[1] = [max(x, y) for x, y in zip(b[1], hi)]
    return boxes


def _even_rows(units, grid):
    """Whether each program owns whole rows of blocks (every block of the last dim for each row
    it has), and as many rows as an even share gives it."""
    lasts = {k[-1] for u in units.values() for k in u}
    rows = {}
    for pid, u in units.items():
        per = {}
        for k in u:
            per.setdefault(k[:-1], set()).add(k[-1])
        if any(v != lasts for v in per.values()):
            return False
        rows[pid] = len(per)
    n = sum(rows.values())
    have = sorted((rows.get(p, 0) for p in range(grid)), reverse=True)
    want = sorted((n * (b + 1) // grid - n * b // grid for b in range(grid)), reverse=True)
    return len(lasts) > 1 and have == want


def _accumulates(u, d):
    """Whether op u may accumulate d over a loop (acc = acc + d, acc the combine's identity made
    before it, as Writer._accumulator takes it)."""
    name, ops = u.args[0], u.args[1]
    if name not in _COMBINE or not u.frames:
        return False
    others = [x for x in ops if x is not d]
    return len(others) == 1 and (not isinstance(others[0], Data) or others[0].kind == "const") \
        and (others[0].args[0] if isinstance(others[0], Data) else others[0]) == \
        _IDENTITY[_COMBINE[name]]


def _counts(values):
    shown = {}
    for v in values:
        shown[v] = shown.get(v, 0) + 1
    return ", ".join(f"{v} ({k} programs)" for v, k in sorted(shown.items(), reverse=True))


def _at(where):
    return f"{os.path.basename(where[0])}:{where[1]}"


def _operands(d):
    if d.kind == "dot":
        return list(d.args)
    if d.kind == "op":
        return [x for x in d.args[1] if isinstance(x, Data)]
    if d.kind in ("reduce", "view"):
        return [d.args[1] if d.kind == "reduce" else d.args[0]]
    return []


def _merge_axes(a, b, n, where):
    b = [None] * (n - len(b)) + list(b) if b is not None else [None] * n
    if a is None:
        return b
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            refuse("an operation on two blocks", f"their axes are different tensor dims ({x} "
                   f"and {y})", "combine blocks whose axes walk the same dims", where)
        out.append(x if x is not None else y)
    return out


def _reindex(axes, key):
    key = key if isinstance(key, tuple) else (key,)
    out, d = [], 0
    for k in key:
        if k is None:
            out.append(None)
        else:
            out.append(axes[d])
            d += 1
    return out + list(axes[d:]), None


def _bshape(shapes):
    n = max(len(s) for s in shapes)
    out = []
    for i in range(n):
        dims = {s[i - n + len(s)] for s in shapes if i - n + len(s) >= 0} - {1}
        out.append(dims.pop() if dims else 1)
    return out


def pointer_of(value, call):
    if isinstance(value, Pointer):
        return value
    refuse(call, f"a {type(value).__name__} where a pointer is expected",
           "pass a tensor argument plus offsets (x_ptr + offs)")


def mask_of(value, shape, call):
    if value is None or value is True:
        return None
    if isinstance(value, Mask):
        return value
    if hasattr(value, "refuse"):  # a comparison of data
        value.refuse()
    refuse(call, f"mask={type(value).__name__}", "a mask is a comparison of offsets "
           "(offs < n), or several joined with &")


__all__ = ["Trace", "Writer", "Expr", "Index", "Var", "TensorArg", "active", "_current",
           "itertools"]
