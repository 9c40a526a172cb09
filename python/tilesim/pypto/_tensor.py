"""pypto.Tensor under tracing: annotations and arguments (shape, dtype), traced values, views,
assemble and loops."""
from .._jobs import dim_error
from . import _trace as T
from ._trace import refuse


class Dynamic:
    """A dynamic dim (pypto.frontend.dynamic("N"), pypto.DYNAMIC): bound by the argument the
    kernel is called with."""

    def __init__(self, name="dynamic"):
        self.name = name

    def __repr__(self):
        return f"<dynamic dim {self.name}>"


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
        if format is not None and getattr(format, "name", str(format)) != "TILEOP_ND":
            refuse(call, f"format {format}: tilesim programs hold ND tensors",
                   "leave the format out (ND)")
        if data_ptr is not None or ori_shape is not None:
            refuse(call, "data_ptr / ori_shape describe device memory, not traced here",
                   "give shape and dtype")
        self._value = None  # the program tensor, once traced
        self._shape = None  # the shape the kernel sees (a loop chunk inside a loop)
        self._cut = {}  # dim -> the loop frame whose chunk this tensor is
        self._half = None  # (base Tensor, "lo" | "hi", sign): a half of the last dim

        if _active_trace() is not None and shape is not None:
            # pypto.tensor(...) inside a kernel: a GM buffer the kernel assembles into.
            trace = _active_trace()
            if any(not isinstance(d, int) for d in self._spec_shape) or self._dtype is None:
                refuse("pypto.tensor", "a tensor made inside a kernel needs a static shape "
                       "and a dtype")
            name = trace.claim(self._name, call) if self._name else trace.fresh("buf")
            self._bind(T.Value(self._spec_shape, self._dtype, name, "gm"))

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
    def _of(cls, value, shape=None, cut=None):
        t = cls.__new__(cls)
        t._spec_shape, t._dtype, t._name = None, value.dtype, value.name or ""
        t._half = None
        return t._bind(value, shape, cut)

    def _traced(self, call):
        if self._value is None:
            if self._half is not None:
                refuse(call, "a half of the last dim (a view of part of it) feeds only "
                       "concat([-x2, x1], -1), the rotate_half idiom",
                       "tilesim programs have no slice op; rotate_half is their op for this")
            refuse(call, "this tensor is not part of the traced kernel",
                   "pass it to the kernel as an argument or compute it inside")
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
        assemble(other, [0] * self.dim, self)

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


def _chunk_of(frame, d, size, offset, extent, call):
    """Checks that `offset` walks dim d of extent `extent` in loop `frame`'s chunks of `size`."""
    # Four iterations, whatever the trip count (never a set of every index: 2^24 of them cost a
    # GB).
    for j in sorted({j for j in (0, 1, frame.count // 2, frame.count - 1) if 0 <= j < frame.count}):
        at = offset.eval({frame: frame.value(j)})
        if at != j * size:
            refuse(call, f"on dim {d}, iteration {j} of loop '{frame.name}' starts at {at}, not "
                   f"{j * size}", f"tilesim's loop cuts an axis into equal chunks: offset = "
                   f"index * {size} (chunk i starts at i * {size})")
    if size * frame.count != extent:
        refuse(call, f"loop '{frame.name}' runs {frame.count} chunks of {size} over dim {d} of "
               f"extent {extent}", "the chunks must cover the dim exactly (a partial tail "
               "chunk is not modelled): pick a loop count that divides it")
    if frame.axis is None:
        frame.axis, frame.chunk = d, size
    elif frame.axis != d:
        refuse(call, f"loop '{frame.name}' already cuts dim {frame.axis}; this cuts dim {d}",
               "a loop cuts one axis (nest loops to cut several)")


def _cuts(t, shape, offsets, call, extents):
    """The loop frames the offsets of a view or assemble cut, by dim; whole dims otherwise."""
    if len(shape) != len(extents) or len(offsets) != len(extents):
        refuse(call, f"shape {list(shape)} and offsets {list(offsets)} for a rank-"
               f"{len(extents)} tensor")
    trace = T._current[-1]
    cut = {}
    for d, (size, off, extent) in enumerate(zip(shape, offsets, extents)):
        if isinstance(off, T.Sym):
            if len(off.frames) != 1:
                refuse(call, f"the offset on dim {d} mixes several loops' indices",
                       "each dim follows one loop")
            frame = next(iter(off.frames))
            if frame not in trace.frames:
                refuse(call, f"the offset on dim {d} uses the index of loop '{frame.name}', "
                       "which has ended")
            _chunk_of(frame, d, size, off, extent, call)
            cut[d] = frame
        elif off != 0 or size != extent:
            return None, d
    return cut, None


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


def view(input, shape=None, offsets=None, *, valid_shape=None, dtype=None):
    call = "pypto.view"
    T.active(call)
    if dtype is not None:
        refuse(call, "dtype= reinterprets bits; tilesim does not trace it", "use pypto.cast")
    value = input._traced(call)
    shape = list(input.shape if shape is None else _view_shape(shape, call))
    offsets = list([0] * len(shape) if offsets is None else _offsets(offsets, call))
    local = input.shape
    if (len(shape) == len(local) and all(isinstance(o, int) for o in offsets)
            and shape[-1] * 2 == local[-1] and offsets[-1] in (0, shape[-1])
            and shape[:-1] == local[:-1] and not any(offsets[:-1])):
        # A half of the last dim: only concat([-x2, x1], -1), rotate_half, takes it.
        half = Tensor.__new__(Tensor)
        half._spec_shape, half._dtype, half._name = shape, value.dtype, ""
        half._value, half._shape, half._cut = None, shape, {}
        half._half = (input, "lo" if offsets[-1] == 0 else "hi", 1)
        return half
    if value.kind not in ("param", "gm"):
        refuse(call, "views are taken of the kernel's tensors (arguments, pypto.tensor "
               "buffers); this one is computed inside the kernel",
               "tilesim's loops chunk GM tensors: view the argument instead")
    cut, partial = _cuts(input, shape, offsets, call, value.shape)
    if value not in T._current[-1].written:
        value.read = True
    if cut is None:
        refuse(call, f"a view of part of dim {partial} (shape {shape}, offsets {offsets} of "
               f"{value.shape}) outside a loop's chunk",
               "tilesim programs have no slice op: a view takes a loop's chunk "
               "(offset = index * chunk) and whole other dims")
    if valid_shape is not None:
        _check_valid_shape(valid_shape, shape, call)
    return Tensor._of(value, shape, {**input._cut, **cut})


def _check_valid_shape(valid, shape, call):
    trace = T._current[-1]
    for d, (v, s) in enumerate(zip(valid, shape)):
        if isinstance(v, T.Sym):
            for f in v.frames:
                if f not in trace.frames:
                    refuse(call, f"valid_shape on dim {d} uses an ended loop's index")
                for j in range(f.count) if f.count <= 1 << 16 else ():
                    if v.eval({f: f.value(j)}) != s:
                        refuse(call, f"valid_shape on dim {d} is not {s} at iteration {j}",
                               "a partial tail chunk is not modelled")
        elif v != s:
            refuse(call, f"valid_shape {list(valid)} differs from the view's shape {shape}",
                   "a partial tile is not modelled")


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
    out, value = dst._value, src._traced(call)
    if out.kind not in ("param", "gm") or getattr(out, "read", False):
        refuse(call, f"'{out.name}' is an input the kernel reads",
               "assemble into an output argument (one the kernel only writes)")
    if out in trace.written:
        f, line = trace.written[out]
        refuse(call, f"'{out.name}' is already written at {f}:{line}",
               "tilesim programs write each tensor once (one assemble per output)")
    offsets = list([0] * len(src.shape) if offsets is None else _offsets(offsets, call))
    cut, partial = _cuts(dst, src.shape, offsets, call, out.shape)
    if cut is None:
        refuse(call, f"writes part of dim {partial} of '{out.name}' (shape {src.shape} at "
               f"{offsets} of {out.shape}) outside a loop's chunk",
               "assemble a loop's chunk (offset = index * chunk) or the whole tensor")
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


def _show(cut):
    return "{" + ", ".join(f"dim {d}: loop '{f.name}'" for d, f in sorted(cut.items())) + "}"


class _Loop:
    def __init__(self, frame):
        self.frame = frame

    def __iter__(self):
        trace = T.active("pypto.loop")
        frame = self.frame
        trace.frames.append(frame)
        trace.loops.append(frame)
        try:
            yield frame.index()
        except GeneratorExit:
            trace.broken_loop = frame
            raise
        finally:
            trace.frames.remove(frame)
        if frame.axis is None:
            refuse("pypto.loop", f"no view in loop '{frame.name}' takes a chunk by its index",
                   "tilesim's loop cuts one axis: view(x, [chunk, ...], [idx * chunk, ...])",
                   where=frame.where)
        trace.check_whole_reads(frame)
        trace.emit({"loop": frame.name, "axis": frame.axis, "loop_count": frame.count,
                    "body": frame.body})


# The most iterations a program loop takes (tools/formats/program_file.cpp: loop_count).
MAX_LOOP_COUNT = 1 << 24


def loop(*args, name=None, idx_name=None, unroll_list=None, submit_before_loop=False,
         parallel=False):
    call = "pypto.loop"
    trace = T.active(call)
    if unroll_list is not None:
        refuse(call, "unroll_list (loop_unroll) is not modelled", "leave it out")
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
    where = T.caller()
    frame = T.LoopFrame(name or f"loop_L{where[1]}", start, stop, step, where)
    if any(f.name == frame.name for f in trace.loops):
        frame.name = trace.fresh(frame.name + "_")
    return _Loop(frame)


_TENSOR_METHODS = ["shape", "dtype", "dim", "view", "assemble", "move", "[...]", "exp", "log",
                   "sqrt", "rsqrt", "abs", "neg", "reciprocal", "relu", "sum", "amax", "amin",
                   "prod", "argmax", "argmin", "cumsum", "matmul"]
