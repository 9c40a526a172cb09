"""pypto.Tensor under tracing: annotations and arguments (shape, dtype), traced values, views,
assemble and loops."""
import os

from .._jobs import dim_error
from . import _tail
from . import _trace as T
from ._trace import refuse


class Dynamic:
    """A dynamic dim (pypto.frontend.dynamic("N"), pypto.DYNAMIC): bound by the argument the
    kernel is called with."""

    def __init__(self, name="dynamic"):
        self.name = name

    def __repr__(self):
        return f"pypto.{self.name}" if self.name in ("DYNAMIC", "STATIC") else self.name


def _dims(shape, call):
    if shape is None:
        return None
    if not isinstance(shape, (list, tuple)):
        refuse(call, f"shape {shape!r}: a list of dims (integers >= 1, or dynamic)")
    dims = list(shape)
    if dim_error([d for d in dims if d is not Ellipsis and not isinstance(d, Dynamic)], 1):
        refuse(call, f"shape {dims}: dims are integers >= 1 (or dynamic)")
    return dims


class Tensor:
    """pypto.Tensor: an annotation (``x: pypto.Tensor((16, 16384), pypto.DT_FP32)``), a tensor
    to call a kernel with (``pypto.tensor(shape, dtype, "x")``), or, inside a traced kernel,
    a value of the program."""

    def __init__(self, shape=None, dtype=None, name="", format=None, data_ptr=None, device=None,
                 ori_shape=None):
        call = "pypto.Tensor"
        self._spec_shape = _dims(shape, call)
        self._dtype = T.dtype_of(dtype, call) if dtype is not None else None
        self._name = name or ""
        # Refused when a kernel is traced with it (an annotation is made at import).
        self._refusal = None
        if format is not None and getattr(format, "name", str(format)) != "TILEOP_ND":
            self._refusal = (call, f"format {format}: tilesim programs hold ND tensors",
                             "leave the format out (ND)", T.caller())
        if data_ptr is not None or ori_shape is not None:
            self._refusal = (call, "data_ptr / ori_shape describe device memory, not traced "
                             "here", "give shape and dtype", T.caller())
        if self._refusal is not None and _active_trace() is not None:
            refuse(*self._refusal)
        self._value = None  # the program tensor, once traced
        self._shape = None  # the shape the kernel sees (a loop chunk inside a loop)
        self._cut = {}  # dim -> the loop frame whose chunk this tensor is
        self._half = None  # (base Tensor, "lo" | "hi", sign): a half of the last dim
        self._shaped = False  # a shape-only view (unsqueeze / expand_clone) of its value
        self._const = None  # pypto.full's value: a scalar operand of the shape
        self._pieces = None  # concat's (pieces, dim): only an assemble takes it

        if _active_trace() is not None and shape is not None:
            # pypto.tensor(...) inside a kernel: a GM buffer the kernel assembles into.
            trace = _active_trace()
            if any(not isinstance(d, int) for d in self._spec_shape) or self._dtype is None:
                refuse("pypto.tensor", "a tensor made inside a kernel needs a static shape "
                       "and a dtype")
            name = trace.claim(self._name, call) if self._name else trace.fresh("buf")
            self._bind(T.Value(self._spec_shape, self._dtype, name, "gm"))
            self._local = tuple(trace.frames)  # the loops it is a variable of (Tensor.move)

    def __class_getitem__(cls, item):
        shape, dtype = item if isinstance(item, tuple) else (item, T.DTYPES["DT_FP32"])
        return cls(shape, dtype)

    # -- traced values
    def _bind(self, value, shape=None, cut=None):
        self._value = value
        self._shape = list(value.shape if shape is None else shape)
        self._cut = dict(cut or {})
        return self

    @classmethod
    def _blank(cls, shape, dtype):
        """A tensor of the kernel that is no program value (yet): a half, a constant, a
        concat."""
        t = cls.__new__(cls)
        t._spec_shape, t._dtype, t._name = list(shape), dtype, ""
        t._value, t._shape, t._cut = None, list(shape), {}
        t._half = t._const = t._pieces = t._refusal = None
        t._shaped = False
        return t

    @classmethod
    def _of(cls, value, shape=None, cut=None):
        t = cls._blank(value.shape, value.dtype)
        t._name = value.name or ""
        return t._bind(value, shape, cut)

    def _traced(self, call, shaped_ok=False):
        if self._value is None and self._half is not None:
            base, side, sign = self._half
            if sign == 1 and base._value is not None:
                # a half used as a tensor: a view at a static offset (of a kernel tensor, or
                # the program's view op of a computed one, whose loop chunks it takes whole)
                offsets = [0] * (base.dim - 1) + [0 if side == "lo" else self.shape[-1]]
                v = _view(base, self.shape, offsets, None, None, False)  # in base's chunks
                self._half = None
                self._bind(v._value, v._shape, v._cut)
        if self._value is None:
            if self._half is not None:
                refuse(call, "a half of the last dim of a computed value feeds only "
                       "concat([-x2, x1], -1), the rotate_half idiom",
                       "tilesim programs have no slice op; rotate_half is their op for this")
            if self._const is not None:
                refuse(call, f"pypto.full(..., {self._const}) feeds elementwise ops as a "
                       "scalar operand only", "tilesim programs have no fill op")
            if self._pieces is not None:
                refuse(call, "a concat feeds only an assemble into a kernel tensor, a cast "
                       "or a one-operand elementwise op (each piece's own)",
                       "tilesim programs have no concat op: assemble the concat, or compute "
                       "on its pieces")
            refuse(call, "this tensor is not part of the traced kernel",
                   "pass it to the kernel as an argument or compute it inside")
        if self._shaped and not shaped_ok:
            refuse(call, f"a shape-only view ({self.shape} of '{self._value.name}' "
                   f"{self._value.shape}: unsqueeze / expand_clone / reshape of a computed "
                   "value) feeds elementwise ops, which broadcast it",
                   "tilesim programs have no reshape or broadcast-copy op")
        return self._value

    @property
    def shape(self):
        if self._shape is not None:
            return list(self._shape)
        return list(self._spec_shape) if self._spec_shape is not None else []

    @property
    def dtype(self):
        return self._dtype

    @property
    def dim(self):
        return len(self.shape)

    @property
    def name(self):
        return self._value.name if self._value is not None else self._name

    @property
    def valid_shape(self):
        return self.shape

    def __repr__(self):
        return f"<tilesim.pypto.Tensor {self.name or '?'} {self.shape} {self._dtype!r}>"

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        refuse(f"Tensor.{name}", "not a Tensor method tilesim.pypto traces",
               f"it traces {', '.join(_TENSOR_METHODS)} and the arithmetic operators")

    # -- views and assembly
    def view(self, shape, offsets, *, valid_shape=None, dtype=None):
        return view(self, shape, offsets, valid_shape=valid_shape, dtype=dtype)

    def assemble(self, src, offsets):
        assemble(src, offsets, self)

    def move(self, other):
        if not self._rebind(other):
            assemble(other, [0] * self.dim, self)

    def _rebind(self, other):
        """t[:] = v (t.move(v)) of a tensor the kernel made (pypto.tensor), written whole at the
        loop level it was made at: t is v from here on, as PyPTO's move makes it (a local
        running max or sum updated across a Python loop: gmax[:] = maximum(gmax, m)). False
        where that does not hold (the write is then an assemble into the buffer)."""
        trace, mine = _active_trace(), self._value
        if (trace is None or mine is None or not isinstance(other, Tensor)
                or getattr(self, "_local", None) != tuple(trace.frames)
                or mine in trace.written or other._value is None or other._value.kind != "temp"
                or other._shaped or other._half is not None or other._const is not None
                or other._pieces is not None or other.dtype is not self.dtype
                or _strip(other.shape) != _strip(self.shape)):
            return False
        self._bind(other._value, other._shape, other._cut)
        return True

    def __getitem__(self, key):
        shape, offsets = _slices(self, key, "Tensor[...]")
        if None in shape:
            refuse("Tensor[...]", "a slice start:None from a loop index reads to the end",
                   "give the stop (x[i * c:(i + 1) * c])")
        return view(self, shape, offsets)

    def __setitem__(self, key, value):
        if isinstance(key, slice) and key == slice(None):
            return self.move(value)
        _, offsets = _slices(self, key, "Tensor[...] = ")
        assemble(value, offsets, self)


def _active_trace():
    return T._current[-1] if T._current else None


def _slices(t, key, call):
    """(shape, offsets) of a basic slice of t: starts may be loop expressions, lengths are
    constants."""
    key = key if isinstance(key, tuple) else (key,)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (t.dim - len(key) + 1) + key[i + 1:]
    key = key + (slice(None),) * (t.dim - len(key))
    if len(key) != t.dim:
        refuse(call, f"{len(key)} indices for a rank-{t.dim} tensor")
    shape, offsets = [], []
    for d, k in enumerate(key):
        if not isinstance(k, slice) or k.step not in (None, 1):
            refuse(call, f"index {k!r} on dim {d}: tilesim traces slices start:stop with step 1",
                   "integer indices drop a dim (a reshape), which programs do not have")
        start = 0 if k.start is None else k.start
        if isinstance(start, T.Sym) and k.stop is None:
            # dst[off:, ...] = v: an assemble at off; the extent is the source's.
            shape.append(None)
            offsets.append(start)
            continue
        stop = t.shape[d] if k.stop is None else k.stop
        length = stop - start
        if isinstance(length, T.Sym):
            values = {length.eval({})} | {length.eval({f: f.value(f.count - 1)})
                                          for f in length.frames}
            if len(values) != 1:
                refuse(call, f"the slice on dim {d} changes length with the loop index",
                       "a slice's length is a constant")
            length = values.pop()
        shape.append(length)
        offsets.append(start)
    return shape, offsets


def _samples(frame):
    """Four iterations of `frame`, whatever its trip count (never a set of every index: 2^24 of
    them cost a GB)."""
    return sorted({j for j in (0, 1, frame.count // 2, frame.count - 1) if 0 <= j < frame.count})


def _chunk_of(frame, d, size, offset, extent, call, tail=False, rank=None):
    """Checks that `offset` walks dim d of extent `extent` (of a rank-`rank` tensor) in loop
    `frame`'s chunks of `size`; `tail`: the view's valid_shape makes the last chunk the rest of
    the dim."""
    for j in _samples(frame):
        at = offset.eval({frame: frame.value(j)})
        if at != j * size:
            refuse(call, f"on dim {d}, iteration {j} of loop '{frame.name}' starts at {at} "
                   f"(offset {offset}), not {j * size}", f"tilesim's loop cuts an axis into equal chunks: "
                   f"offset = index * {size} (chunk i starts at i * {size})")
    if size * frame.count != extent:
        last = extent - (frame.count - 1) * size
        tail = tail or getattr(frame, "body_unrolled", False)  # remainder paths run the rest
        if not 0 < last < size or not (tail or frame.tail == (size, last)):
            refuse(call, f"loop '{frame.name}' runs {frame.count} chunks of {size} over dim {d} "
                   f"of extent {extent}", "the chunks must cover the dim: a loop count that "
                   "divides it, or ceil(extent / chunk) chunks whose views give the last one "
                   "its valid_shape (min(chunk, extent - offset))")
        frame.tail = (size, last)
    if frame.axis is None:
        frame.axis, frame.chunk, frame.extent, frame.rank = d, size, extent, rank
    elif frame.axis != d:
        refuse(call, f"loop '{frame.name}' already cuts dim {frame.axis}; this cuts dim {d}",
               "a loop cuts one axis (nest loops to cut several)")


def _cuts(shape, offsets, call, extents, tails=()):
    """The loop frames the offsets of a view or assemble cut, by dim, and the dims a static
    offset takes part of ({dim: (offset, size)}); whole dims otherwise."""
    if len(shape) != len(extents) or len(offsets) != len(extents):
        refuse(call, f"shape {list(shape)} and offsets {list(offsets)} for a rank-"
               f"{len(extents)} tensor")
    trace = T._current[-1]
    cut, parts = {}, {}
    for d, (size, off, extent) in enumerate(zip(shape, offsets, extents)):
        if isinstance(off, T.Sym):
            if len(off.frames) != 1:
                refuse(call, f"the offset on dim {d} ({off}) mixes several loops' indices",
                       "each dim follows one loop")
            frame = next(iter(off.frames))
            if frame not in trace.frames:
                refuse(call, f"the offset on dim {d} ({off}) uses the index of loop "
                       f"'{frame.name}', which has ended")
            shift = off.eval({frame: frame.value(0)})
            if shift:
                # chunks from a static offset on: the loop walks a part of the dim
                if shift < 0 or shift >= extent:
                    refuse(call, f"on dim {d}, the first chunk starts at {shift} ({off}), "
                           f"outside the extent {extent}")
                span = extent - shift if d in tails else min(extent - shift, frame.count * size)
                parts[d] = (shift, span)
                off, extent = off - shift, span
            _chunk_of(frame, d, size, off, extent, call, d in tails, len(extents))
            cut[d] = frame
        elif off != 0 or size != extent:
            if off + size > extent:
                refuse(call, f"on dim {d}, offset {off} + size {size} passes the extent {extent}",
                       "give the part past the end as valid_shape")
            parts[d] = (off, size)
    return cut, parts


def _view_shape(shape, call):
    message = dim_error(shape, 1)
    if message:
        refuse(call, f"shape {shape!r}: {message}")
    return shape


def _offsets(offsets, call):
    """Offsets are ints >= 0 or loop-index expressions (a bool is not offset 0 or 1)."""
    if not isinstance(offsets, (list, tuple)) or any(
            not isinstance(o, T.Sym) and dim_error([o], 0) for o in offsets):
        refuse(call, f"offsets {offsets!r}: integers >= 0 or loop-index expressions")
    return offsets


def _part_name(value, parts, what):
    spans = "_".join(f"d{d}_{o}_{o + n}" for d, (o, n) in sorted(parts.items()))
    return f"{value.name}_{what}_{spans}"


def _region(value, parts):
    """The whole-tensor region of a part: its extent on every dim."""
    return [parts.get(d, (0, n)) for d, n in enumerate(value.shape)]


def _static_part(value, parts, call):
    """The program input standing for a view of part of `value` at static offsets (a program
    tensor of the part's shape: the same rows of the same bytes, read once)."""
    trace = T._current[-1]
    if value in trace.written or value.kind != "param":
        refuse(call, f"a view of part of '{value.name}', which the kernel writes",
               "views of parts are read from the kernel's input arguments")
    key = (value, tuple(sorted(parts.items())))
    if key not in trace.part_inputs:
        shape = [n for _, n in _region(value, parts)]
        part = T.Value(shape, value.dtype, trace.claim(_part_name(value, parts, "view"), call),
                       "param")
        part.read, part.part_of = True, value
        trace.part_inputs[key] = part
        trace.extra_params.append(part)
    return trace.part_inputs[key]


def _valid_tails(valid, shape, offsets, extents, call):
    """The dims whose valid_shape is a loop tail (min(size, extent - offset)); shape with static
    valid sizes applied (a view whose valid part is smaller is a view of that part)."""
    trace = T._current[-1]
    if len(valid) != len(shape):
        refuse(call, f"valid_shape {list(valid)} for a rank-{len(shape)} view")
    tails, shape = set(), list(shape)
    for d, (v, s, off, extent) in enumerate(zip(valid, shape, offsets, extents)):
        if isinstance(v, T.Sym):
            if not isinstance(off, T.Sym) or v.frames != off.frames:
                refuse(call, f"valid_shape on dim {d} ({v}) follows another loop than the offset "
                       f"({off})", "a tail's valid size is min(chunk, extent - offset)")
            frame = next(iter(v.frames))
            if frame not in trace.frames:
                refuse(call, f"valid_shape on dim {d} ({v}) uses an ended loop's index")
            for j in _samples(frame):
                env = {frame: frame.value(j)}
                want = min(s, extent - off.eval(env))
                if v.eval(env) != want:
                    refuse(call, f"valid_shape on dim {d} ({v}) is {v.eval(env)} at iteration "
                           f"{j}, not {want} (the rest of the dim)",
                           "a valid_shape is the tail of a loop's chunks: min(chunk, extent - "
                           "offset)")
            tails.add(d)
        elif isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= s:
            refuse(call, f"valid_shape {list(valid)}: dim {d} is {v!r}, not 1..{s}")
        elif v != s:
            shape[d] = v
    return tails, shape


def view(input, shape=None, offsets=None, *, valid_shape=None, dtype=None):
    return _view(input, shape, offsets, valid_shape, dtype, True)


def _view(input, shape, offsets, valid_shape, dtype, halves):
    call = "pypto.view"
    T.active(call)
    if dtype is not None:
        refuse(call, "dtype= reinterprets bits; tilesim does not trace it", "use pypto.cast")
    if input._shaped and input._value is not None and shape is not None and offsets is not None \
            and valid_shape is None and not input._cut \
            and len(input._value.shape) == input.dim == len(shape):
        return _view_of_broadcast(input, list(shape), list(offsets), call)
    value = input._traced(call)
    shape = list(input.shape if shape is None else _view_shape(shape, call))
    offsets = list([0] * len(shape) if offsets is None else _offsets(offsets, call))
    local = input.shape
    if (halves and valid_shape is None and len(shape) == len(local)
            and all(isinstance(o, int) for o in offsets)
            and shape[-1] * 2 == local[-1] and offsets[-1] in (0, shape[-1])
            and shape[:-1] == local[:-1] and not any(offsets[:-1]) and input._half is None):
        # A half of the last dim: concat([-x2, x1], -1) makes it rotate_half; used otherwise
        # (a kernel tensor's half), it becomes a view at a static offset (Tensor._traced).
        half = Tensor._blank(shape, value.dtype)
        half._half = (input, "lo" if offsets[-1] == 0 else "hi", 1)
        return half
    if value.kind not in ("param", "gm"):
        if valid_shape is not None:
            _computed_view_tails(input, shape, offsets, valid_shape, call)
        return _computed_view(input, value, shape, offsets, call)
    reshaped = getattr(value, "reshaped_at", None)
    if reshaped and input.shape != value.shape and not input._cut:
        old, (file, line) = reshaped
        if (valid_shape is None and len(shape) == len(old) and old[0] == value.shape[0]
                and shape[1:] == old[1:] and not any(offsets[1:])):
            # rows of the argument in its old shape: those rows in its declared shape, then
            # the program's reshape op back (the same bytes)
            rows = _view(Tensor._of(value), [shape[0]] + value.shape[1:],
                         [offsets[0]] + [0] * (len(value.shape) - 1), None, None, False)
            return _computed_reshape(rows, rows._value, list(shape), call)
        refuse(call, f"'{value.name}' is read as {old} here and as {value.shape} (the reshape "
               f"at {os.path.basename(file)}:{line}): a program declares a kernel argument in "
               "one shape", "view it in one of the two shapes only")
    for d, f in (input._cut.items() if len(offsets) == input.dim else ()):
        # a view of a kernel argument's loop chunk (x[i:i + c], then a view of that): its
        # offsets are the chunk's; on the dim the loop cuts it takes the chunk whole
        if not (isinstance(offsets[d], int) and offsets[d] == 0 and shape[d] == input.shape[d]):
            refuse(call, f"on dim {d}, which loop '{f.name}' cuts, the view takes {shape[d]} "
                   f"from {offsets[d]} of the chunk of {input.shape[d]} of '{value.name}'",
                   "a view of an argument's loop chunk takes the chunk whole on that dim")
        offsets[d] = (f.index() - f.start) // f.step * f.chunk
    tails = set()
    if valid_shape is not None:
        tails, shape = _valid_tails(valid_shape, shape, offsets, value.shape, call)
    cut, parts = _cuts(shape, offsets, call, value.shape, tails)
    if parts:
        value = _static_part(value, parts, call)
    elif value not in T._current[-1].written:
        value.read = True
    return Tensor._of(value, shape, {**input._cut, **cut})


def _computed_view_tails(input, shape, offsets, valid, call):
    """A valid_shape on a view of a value computed inside a loop: on the dims the loop cuts, the
    tail its chunk already has (the value was computed on the chunk's valid rows), checked as
    on an argument's view; elsewhere the whole view."""
    if len(offsets) != input.dim or not input._cut:
        refuse(call, "a valid_shape on a view of a value computed outside any loop's chunks",
               "tails are taken where the loop views the kernel's arguments")
    absolute, extents = list(offsets), list(shape)
    for d, f in input._cut.items():
        absolute[d] = (f.index() - f.start) // f.step * f.chunk + offsets[d]
        extents[d] = f.extent
    if _valid_tails(valid, shape, absolute, extents, call)[1] != list(shape):
        refuse(call, f"valid_shape {list(valid)} makes part of a view of a value computed "
               "inside the kernel invalid on a dim no loop cuts", "view the valid part")


def _view_of_broadcast(input, shape, offsets, call):
    """A slice of a shape-only view (expand_clone): the same slice of the tensor it broadcasts,
    its broadcast dims taken at [0:1], broadcast again to the slice's shape."""
    value = input._value
    under_shape, under_offsets = [], []
    for d, (n, o) in enumerate(zip(shape, offsets)):
        if value.shape[d] == 1 and input.shape[d] != 1:
            under_shape.append(1)  # a broadcast dim: every part of it is the one row
            under_offsets.append(0)
        else:
            under_shape.append(n)
            under_offsets.append(o)
    base = Tensor._of(value, None, input._cut)
    part = _view(base, under_shape, under_offsets, None, None, False)
    if part.shape == shape:
        return part
    return _shaped_view(part, part._value, shape)


def _computed_view(input, value, shape, offsets, call):
    """A view (or slice) of part of a value computed inside the kernel: the program's view op,
    an alias of the value's bytes (PyPTO's view of a tile moves no data). On a dim a loop cuts,
    it takes the whole chunk; elsewhere a static part."""
    if len(shape) != input.dim or len(offsets) != input.dim:
        refuse(call, f"shape {shape} and offsets {offsets} for a rank-{input.dim} value")
    full_shape, full_offsets = [], []
    for d, (n, o) in enumerate(zip(shape, offsets)):
        if isinstance(o, T.Sym):
            refuse(call, f"the offset on dim {d} ({o}) of '{value.name}', computed inside the "
                   "kernel, follows a loop index", "a view of a computed value is at static "
                   "offsets (its loop chunks are whole)")
        if d in input._cut:
            if o != 0 or n != input.shape[d]:
                refuse(call, f"on dim {d}, which loop '{input._cut[d].name}' cuts, the view "
                       f"takes {n} from {o} of the chunk of {input.shape[d]}",
                       "a view of a computed value takes its loop chunks whole")
            full_shape.append(value.shape[d])
            full_offsets.append(0)
        else:
            if input.shape[d] != value.shape[d]:
                refuse(call, f"'{value.name}' is a part on dim {d}", "view the whole value")
            if o + n > value.shape[d]:
                refuse(call, f"on dim {d}, offset {o} + size {n} passes the extent "
                       f"{value.shape[d]}")
            full_shape.append(n)
            full_offsets.append(o)
    if full_shape == value.shape:
        return input
    return _alias("view", input, value, full_shape, shape, call, offsets=full_offsets,
                  note="views of values computed inside the kernel are the program's view op: "
                  "an alias of the value's bytes, stored once and read at its strides (PyPTO's "
                  "view moves no data); an op on it starts a stage of its own")


def _alias(kind, input, value, full, shape, call, note, **keys):
    """The program's view or reshape op of `value` (its whole `full` shape; the kernel sees
    `shape`, in the loop chunks `input` is in), and its note once."""
    trace = T._current[-1]
    out = T.Value(full, value.dtype, trace.fresh(f"{value.name}_{kind}"))
    out.cut = dict(input._cut)
    trace.op(kind, [value], out, call, cuts=[input._cut], shape=list(full), **keys)
    if note not in trace.notes:
        trace.notes.append(note)
    return Tensor._of(out, shape, input._cut)


def _computed_reshape(input, value, shape, call):
    """A reshape of a value computed inside the kernel, or of a kernel argument's loop chunk:
    the program's reshape op, an alias of the same elements. Dims a loop cuts must lead and
    stay (the chunk's rows keep their place)."""
    if value.op is not None and value.op["op"] == "view":
        refuse(call, f"a reshape of a view of '{value.op['inputs'][0].name}' ({input.shape} into "
               f"{shape}): its rows are not contiguous", "reshape the value it views")
    keep = 0
    while keep < min(len(shape), input.dim) and shape[keep] == input.shape[keep]:
        keep += 1
    if any(d >= keep for d in input._cut):
        what = "a value computed on a loop chunk" if value.kind == "temp" else \
            "an argument's loop chunk"
        refuse(call, f"a reshape of {what} ('{value.name}' "
               f"{input.shape} into {shape}) that moves the dims the loop cuts "
               f"({sorted(input._cut)})", "keep the loop's dims leading and unchanged")
    if any(input.shape[d] != value.shape[d] for d in range(input.dim) if d not in input._cut):
        refuse(call, f"a reshape of a part of '{value.name}'", "reshape the whole value")
    full = [value.shape[d] if d in input._cut else n for d, n in enumerate(shape)]
    return _alias("reshape", input, value, full, shape, call,
                  note="reshapes of values computed inside the kernel are the program's "
                  "reshape op: the same bytes in another shape, no copy (PyPTO's reshape of a "
                  "contiguous tensor); an op on it starts a stage of its own")


def assemble(src, offsets=None, dst=None, parallel=False):
    call = "pypto.assemble"
    trace = T.active(call)
    if isinstance(src, list):
        refuse(call, "the list form (several sources into one tensor)",
               "assemble one computed tensor into each output")
    if dst is None or not isinstance(dst, Tensor) or dst._value is None:
        refuse(call, "the destination is not one of the kernel's tensors")
    if parallel:
        refuse(call, "parallel=True is not modelled", "leave it out")
    offsets = list([0] * len(src.shape) if offsets is None else _offsets(offsets, call))
    if getattr(src, "_pieces", None) is not None:
        pieces, d = src._pieces
        at = offsets[d]
        for piece in pieces:
            assemble(piece, offsets[:d] + [at] + offsets[d + 1:], dst)
            at = at + piece.shape[d]
        return
    out, value = dst._value, src._traced(call)
    if value.op is not None and value.op["op"] in T.ALIASES:
        return _assemble_alias(src, value, offsets, dst, call)
    if len(src.shape) != len(out.shape) or any(
            a > b for d, (a, b) in enumerate(zip(src.shape, out.shape)) if d not in src._cut):
        refuse(call, f"a {src.shape} value does not fit '{out.name}' {out.shape}")
    if out.kind not in ("param", "gm") or getattr(out, "read", False):
        refuse(call, f"'{out.name}' is an input the kernel reads",
               "assemble into an output argument (one the kernel only writes)")
    cut, parts = _cuts(src.shape, offsets, call, out.shape, set(src._cut))
    if parts:
        out = _output_part(trace, out, parts, call)
    if out in trace.written:
        f, line = trace.written[out]
        refuse(call, f"'{out.name}' is already written at {f}:{line}",
               "tilesim programs write each tensor once (one assemble per output)")
    if cut != src._cut:
        refuse(call, f"'{out.name}' is assembled at chunks {_show(cut)} but the value holds "
               f"chunks {_show(src._cut)}", "assemble at the offsets the value's views took")
    if value.dtype is not out.dtype:
        refuse(call, f"a {value.dtype!r} value into '{out.name}' ({out.dtype!r})",
               "cast it first (pypto.cast)")
    if value.op is None:
        refuse(call, f"'{value.name}' is copied unchanged into '{out.name}'",
               "tilesim programs have no copy op: compute the output")
    if value.kind != "temp":
        refuse(call, f"'{value.name}' already is the kernel's tensor '{value.name}'",
               "one value fills one output")
    if value.frames != tuple(trace.frames):
        refuse(call, "the value was computed in another loop than the one assembling it")
    value.name, value.kind = out.name, "output"
    trace.names.add(out.name)
    trace.written[out] = T.caller()
    out.alias = value


def _assemble_alias(src, value, offsets, dst, call):
    """An assemble of a reshape of a computed value into a whole output argument: the output is
    declared in the computed value's shape (the same bytes, as a reshaped argument is) and the
    value written into it. A view, or a part of the output, is refused: programs write an op's
    result, not an alias of one."""
    trace = T._current[-1]
    out, parent = dst._value, value.op["inputs"][0]
    whole = value.shape == out.shape and all(
        (o == 0) if d not in src._cut else True for d, o in enumerate(offsets))
    if (value.op["op"] != "reshape" or not whole or out.kind != "param"
            or getattr(out, "read", False) or out in trace.written
            or getattr(out, "reshaped_at", None) or out in trace.output_parts):
        refuse(call, f"'{value.name}' is a {value.op['op']} of '{parent.name}' (no op computes "
               f"it) assembled into '{out.name}'", "assemble the computed value; an output "
               "takes a reshape of one only whole")
    trace.notes.append(f"'{out.name}' {out.shape} is written as {parent.shape} (the reshape of "
                       f"'{parent.name}' assembled into it: the same bytes)")
    out.reshaped_at = (list(out.shape), T.caller())
    out.shape = list(parent.shape)
    # the alias names nothing now
    _drop(trace.body, value.op) or any(_drop(f.body, value.op) for f in trace.frames)
    chunk = [src.shape[d] if d in src._cut else n for d, n in enumerate(parent.shape)]
    whole_src = Tensor._of(parent, chunk, src._cut)
    assemble(whole_src, [offsets[d] if d in src._cut else 0 for d in range(len(parent.shape))],
             dst)


def _drop(entries, entry):
    """Removes op `entry` from a program body (loop bodies included)."""
    for i, e in enumerate(entries):
        if e is entry:
            del entries[i]
            return True
        if "loop" in e and _drop(e["body"], entry):
            return True
    return False


def _output_part(trace, out, parts, call):
    """The program output standing for the part of `out` at static offsets (its own tensor of
    the part's shape)."""
    region = _region(out, parts)
    for other, where in trace.output_parts.get(out, []):
        if all(a < c + m and c < a + n for (a, n), (c, m) in zip(region, other)):
            refuse(call, f"writes {region} of '{out.name}', which overlaps the part {other} "
                   f"written at {where[0]}:{where[1]}", "each part of an output is written once")
    part = T.Value([n for _, n in region], out.dtype,
                   trace.claim(_part_name(out, parts, "part"), call), "param")
    part.part_of = out
    trace.output_parts.setdefault(out, []).append((region, T.caller()))
    trace.extra_params.append(part)
    return part


def _strip(shape):
    shape = list(shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    return shape


def reshape(input, shape, *, valid_shape=None, inplace=False, call="pypto.reshape"):
    """pypto.reshape of a contiguous tensor: a kernel argument not yet used whole is declared in
    the new shape (the same bytes); a computed value may only gain or lose leading 1s (a
    shape-only view that elementwise ops broadcast)."""
    trace = T.active(call)
    if not isinstance(input, Tensor):
        refuse(call, f"{input!r} is not a tensor")
    value = input._traced(call, shaped_ok=True)
    shape = [int(d) for d in _view_shape(list(shape), call)]
    n = 1
    for d in input.shape:
        n *= d
    if -1 in shape:
        known = 1
        for d in shape:
            known *= d if d != -1 else 1
        shape[shape.index(-1)] = n // known
    total = 1
    for d in shape:
        total *= d
    if total != n and valid_shape is not None and all(
            isinstance(d, int) and not isinstance(d, bool) for d in valid_shape):
        valid = 1
        for d in valid_shape:
            valid *= d
        if valid == n:  # a padded shape whose valid part holds the input's elements
            shape, total = list(valid_shape), n
    if total != n:
        refuse(call, f"{input.shape} ({n} elements) into {shape} ({total})")
    if shape == input.shape:
        return input
    whole = not input._cut and input.shape == value.shape and not input._shaped
    if whole and value.kind in ("param", "gm"):
        if getattr(value, "read", False) or value in trace.written or value.op is not None:
            refuse(call, f"'{value.name}' is used as {value.shape} before this reshape",
                   "reshape the argument before its first use (the program declares it once)")
        trace.notes.append(f"'{value.name}' {value.shape} is read as {shape} (a reshape of a "
                           "contiguous tensor: the same bytes)")
        value.reshaped_at = (list(value.shape), T.caller())
        value.shape = list(shape)
        return Tensor._of(value)
    if _strip(shape) == _strip(input.shape) and not (input._cut and not whole):
        return _shaped_view(input, value, shape)  # leading 1s: elementwise ops broadcast it
    if not input._shaped and (value.kind == "temp" or (input._cut and not whole)):
        # a computed value, or an argument's loop chunk: the program's reshape op
        return _computed_reshape(input, value, shape, call)
    if input._cut and not whole:
        refuse(call, f"a reshape of a loop chunk of '{value.name}' ({input.shape} into "
               f"{shape})", "reshape the whole argument before the loop views it")
    refuse(call, f"a computed value {input.shape} into {shape}: tilesim programs reshape "
           "computed values, not a shape-only view of one", "reshape the value itself")


def _shaped_view(input, value, shape):
    t = Tensor._of(value, shape, {d + len(shape) - input.dim: f for d, f in input._cut.items()})
    t._shaped = True
    return t


def unsqueeze(input, dim):
    call = "pypto.unsqueeze"
    T.active(call)
    rank = input.dim + 1
    if isinstance(dim, bool) or not isinstance(dim, int) or not -rank <= dim < rank:
        refuse(call, f"dim {dim!r} for a rank-{rank} result")
    d = dim % rank
    return reshape(input, input.shape[:d] + [1] + input.shape[d:], call=call)


def squeeze(input, dim=None):
    shape = input.shape
    dims = [d % input.dim for d in (dim if isinstance(dim, (list, tuple)) else [dim])] \
        if dim is not None else [d for d, n in enumerate(shape) if n == 1]
    return reshape(input, [n for d, n in enumerate(shape) if d not in dims or n != 1],
                   call="pypto.squeeze")


def expand_clone(input, shape, *, valid_shape=None):
    """pypto.expand_clone: the input broadcast to `shape`. As an operand of an elementwise op it
    is that op's broadcast (the program's ops broadcast their operands); nothing else takes it."""
    call = "pypto.expand_clone"
    T.active(call)
    value = input._traced(call, shaped_ok=True)
    shape = list(_view_shape(list(shape), call))
    src = [1] * (len(shape) - input.dim) + input.shape
    if len(src) != len(shape) or any(a not in (1, b) for a, b in zip(src, shape)):
        refuse(call, f"{input.shape} does not expand to {shape}")
    if len(shape) - len(value.shape) < 0 or any(
            a not in (1, b) for a, b in zip(value.shape[::-1], shape[::-1])):
        refuse(call, f"'{value.name}' {value.shape} seen as {input.shape} does not broadcast to "
               f"{shape} from the right", "unsqueeze the kernel's argument (a reshape) first")
    return _shaped_view(input, value, shape)


def _show(cut):
    return "{" + ", ".join(f"dim {d}: loop '{f.name}'" for d, f in sorted(cut.items())) + "}"


class _Loop:
    def __init__(self, frame, pairs):
        self.frame, self.pairs = frame, pairs

    def __iter__(self):
        trace = T.active("pypto.loop")
        frame = self.frame
        frame.tile_at_start = frame.tile_at_entry = trace.vec_tile
        trace.frames.append(frame)
        trace.loops.append(frame)
        try:
            yield (frame.index(), frame.unroll) if self.pairs else frame.index()
        except GeneratorExit:
            trace.broken_loop = frame
            raise
        finally:
            trace.frames.remove(frame)
        if frame.axis is None:
            refuse("pypto.loop", f"no view in loop '{frame.name}' takes a chunk by its index",
                   "tilesim's loop cuts one axis: view(x, [chunk, ...], [idx * chunk, ...])",
                   where=frame.where)
        trace.hoist_prefix(frame)
        trace.check_whole_reads(frame)
        split = _tail.split(trace, frame)
        if split:  # [] and None: one loop
            for entry in split:
                trace.emit(entry)
            return
        frame.close(trace)
        trace.emit({"loop": frame.name, "axis": frame.axis, "loop_count": frame.program_count,
                    "body": frame.body})


# The most iterations a program loop takes (tools/formats/program_file.cpp: loop_count).
MAX_LOOP_COUNT = 1 << 24


def _unroll(unroll_list, call):
    """The largest unroll count of a loop's unroll_list (PyPTO runs the loop in steps of it and
    the remainder in the smaller ones)."""
    if unroll_list is None:
        return 1, []
    counts = list(unroll_list) if isinstance(unroll_list, (list, tuple, set)) else [unroll_list]
    if not counts or dim_error(counts, 1):
        refuse(call, f"unroll_list {unroll_list!r}: unroll counts, integers >= 1")
    return max(counts), sorted(set(counts), reverse=True)


def _loop(args, name, idx_name, unroll_list, submit_before_loop, parallel, call, pairs):
    trace = T.active(call)
    if submit_before_loop or parallel:
        refuse(call, "submit_before_loop / parallel are not modelled", "leave them out")
    if not 1 <= len(args) <= 3:
        refuse(call, f"{len(args)} positional arguments", "loop(stop) or loop(start, stop, step)")
    for a in args:
        if isinstance(a, (T.Sym, Dynamic)) or dim_error([a]):
            refuse(call, f"bound {a!r} is not a static integer",
                   "tilesim traces static shapes: call the kernel with concrete tensors")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (list(args) + [1])[:3]
    # The trip count by arithmetic: len(range(...)) overflows past 2^63.
    trips = max(0, -(-(stop - start) // step)) if step >= 1 else 0
    if trips < 1:
        refuse(call, f"loop({start}, {stop}, {step}) runs no iteration")
    if trips > MAX_LOOP_COUNT:
        refuse(call, f"loop({start}, {stop}, {step}) runs {trips} iterations",
               f"a program's loop_count is 1..{MAX_LOOP_COUNT} (2^24)")
    unroll, counts = _unroll(unroll_list, call)
    where = T.caller()
    name = name or f"loop_L{where[1]}"
    if pairs:
        # loop_unroll: each iteration is `unroll` iterations, its body written for them (views
        # of unroll chunks): the loop steps by step * unroll.
        frame = T.LoopFrame(name, start, stop, step * unroll, where, idx_name, unroll)
        frame.body_unrolled = True
    else:
        frame = T.LoopFrame(name, start, stop, step, where, idx_name, unroll)
    frame.counts = counts
    if any(f.name == frame.name for f in trace.loops):
        frame.name = trace.fresh(frame.name + "_")
    return _Loop(frame, pairs)


def loop(*args, name=None, idx_name=None, unroll_list=None, submit_before_loop=False,
         parallel=False):
    """pypto.loop: the body traced once; unroll_list runs that many iterations' bodies in one
    root function."""
    return _loop(args, name, idx_name, unroll_list, submit_before_loop, parallel, "pypto.loop",
                 False)


def loop_unroll(*args, name=None, idx_name=None, unroll_list=None, submit_before_loop=False,
                parallel=False):
    """pypto.loop_unroll: yields (index, unroll count); the body is traced once for the largest
    count (PyPTO's remainder iterations take the smaller counts' paths)."""
    return _loop(args, name, idx_name, unroll_list or [1], submit_before_loop, parallel,
                 "pypto.loop_unroll", True)


_TENSOR_METHODS = ["shape", "dtype", "dim", "view", "assemble", "move", "[...]", "exp", "log",
                   "sqrt", "rsqrt", "abs", "neg", "reciprocal", "relu", "sum", "amax", "amin",
                   "prod", "argmax", "argmin", "cumsum", "matmul", "axpy_"]
