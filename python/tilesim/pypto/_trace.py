"""The recorder behind tilesim.pypto: a PyPTO kernel's calls, traced once, become a tile program
(tools/formats/program_file.hpp's JSON) instead of compiled code.

Tensors carry the shape the kernel sees (inside a loop, the chunk its view took); the program
names whole tensors, so a view that takes a loop's chunk aliases the whole tensor and the loop
records which axis it cuts. Ops hold their operands as Values and are named when the program is
written, so `assemble(v, offsets, out)` can rename v's producer to the output it fills.
"""
import os

from .. import _refusal
from .._refusal import Refusal, caller  # noqa: F401 - caller is tilesim.pypto's too

_PACKAGE = _refusal.PACKAGE  # .../tilesim


class UnsupportedError(Refusal):
    """A PyPTO call outside what tilesim.pypto traces: names the call, the kernel file and line,
    and what tilesim supports instead (the front ends' one refusal format, tilesim/_refusal.py).
    ``.call``, ``.file``, ``.line``."""


class TraceFailure(ValueError):
    """A kernel file (or module) that cannot be traced: the one line ``tilesim trace-pypto``
    prints, naming it."""


def refuse(call, what, instead=None, where=None):
    raise UnsupportedError(call, what, instead, where)


# ---- dtypes --------------------------------------------------------------------------------


class DataType:
    """A PyPTO dtype (pypto.DT_FP16 ...). ``program`` is tilesim's name for it, or None where
    tilesim programs have no such dtype."""

    def __init__(self, name, program, size):
        self.name, self.program, self.size = name, program, size

    def __repr__(self):
        return f"pypto.{self.name}"


# PyPTO's dtype names (python/pypto/enum.py); the program dtypes are model/dtype.cpp's.
_DTYPES = [("DT_FP32", "fp32", 4), ("DT_FP16", "fp16", 2), ("DT_BF16", "bf16", 2),
           ("DT_INT8", "int8", 1), ("DT_INT32", "int32", 4), ("DT_INT4", None, 1),
           ("DT_INT16", None, 2), ("DT_INT64", None, 8), ("DT_UINT8", None, 1),
           ("DT_UINT16", None, 2), ("DT_UINT32", None, 4), ("DT_UINT64", None, 8),
           ("DT_BOOL", None, 1), ("DT_DOUBLE", None, 8), ("DT_FP8", None, 1),
           ("DT_FP8E4M3", None, 1), ("DT_FP8E5M2", None, 1), ("DT_FP8E8M0", None, 1),
           ("DT_HF4", None, 1), ("DT_HF8", None, 1), ("DT_BOTTOM", None, 0)]
DTYPES = {name: DataType(name, prog, size) for name, prog, size in _DTYPES}
PROGRAM_DTYPES = ", ".join(f"pypto.{d.name}" for d in DTYPES.values() if d.program)

# numpy / torch dtype spellings of the arguments a kernel is called with.
_FOREIGN = {"float32": "DT_FP32", "float16": "DT_FP16", "bfloat16": "DT_BF16", "int8": "DT_INT8",
            "int32": "DT_INT32", "int16": "DT_INT16", "int64": "DT_INT64", "uint8": "DT_UINT8",
            "bool": "DT_BOOL", "float64": "DT_DOUBLE", "half": "DT_FP16", "float": "DT_FP32"}


def dtype_of(value, call):
    if isinstance(value, DataType):
        return value
    name = str(value).removeprefix("torch.")
    if name in _FOREIGN:
        return DTYPES[_FOREIGN[name]]
    refuse(call, f"unknown dtype {value!r}", f"give one of {PROGRAM_DTYPES}")


def program_dtype(dt, call):
    if dt.program is None:
        refuse(call, f"{dt!r} is not a dtype tilesim programs model", f"they have {PROGRAM_DTYPES}")
    return dt.program


# ---- symbolic loop indices -----------------------------------------------------------------


def _paired(text):
    """Whether the first "(" of text closes at its last character."""
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return i == len(text) - 1
    return False


class Sym:
    """An integer expression of loop indices (a loop's index, idx * 64 + 8, pypto.min(...)).
    Evaluated at an assignment {loop frame: iteration value}."""

    def __init__(self, fn, frames, text):
        self._fn, self.frames, self.text = fn, frames, text

    def __repr__(self):
        t = self.text
        if t.startswith("(") and t.endswith(")") and _paired(t):
            return t[1:-1]
        return t

    __str__ = __repr__

    def eval(self, env):
        return self._fn(env)

    def _op(self, other, f, name, swapped=False):
        a, b = (other, self) if swapped else (self, other)
        text = f"{name}({a}, {b})" if name in ("min", "max") else f"({a} {name} {b})"
        if isinstance(other, Sym):
            return Sym(lambda e: f(self.eval(e), other.eval(e)), self.frames | other.frames, text)
        if isinstance(other, int) and not isinstance(other, bool):
            return Sym(lambda e: f(self.eval(e), other), self.frames, text)
        refuse(f"loop index {name} {type(other).__name__}",
               "a loop index combines with integers and other loop indices only")

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b, "+")

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b, "-")

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a, "-", swapped=True)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b, "*")

    def __rmul__(self, o):
        return self._op(o, lambda a, b: a * b, "*", swapped=True)

    def __radd__(self, o):
        return self._op(o, lambda a, b: a + b, "+", swapped=True)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b, "//")

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b, "%")

    def __neg__(self):
        return Sym(lambda e: -self.eval(e), self.frames, f"-{self}")

    def min(self, o):
        return self._op(o, min, "min")

    def max(self, o):
        return self._op(o, max, "max")

    def __index__(self):
        refuse("int(loop index)", "a loop index is symbolic while the kernel is traced",
               "use it in view / assemble offsets (idx * chunk)")

    __int__ = __index__

    def __bool__(self):
        refuse("a condition on a loop index",
               "the trace takes one pass through the loop body, so it cannot branch on the index",
               "pypto.cond / is_loop_begin are not modelled either")

    __lt__ = __le__ = __gt__ = __ge__ = lambda self, other: self.__bool__()


def _sym_pick(f, name):
    """pypto.min / pypto.max: on integers, or on loop index expressions (valid_shape bounds)."""
    def pick(a, b):
        if isinstance(a, Sym):
            return getattr(a, name)(b)
        if isinstance(b, Sym):
            return getattr(b, name)(a)
        return f(a, b)
    return pick


sym_min, sym_max = _sym_pick(min, "min"), _sym_pick(max, "max")


def counted(runs):
    """{size: roots} of [(size, roots)] runs."""
    counts = {}
    for size, n in runs:
        if n:
            counts[size] = counts.get(size, 0) + n
    return counts


class LoopFrame:
    """One pypto.loop while its body is traced: its iterations, the axis its views cut, its
    body's program entries."""

    def __init__(self, name, start, stop, step, where, idx_name=None, unroll=1):
        self.name, self.start, self.step = name, start, step
        self.idx_name = idx_name or f"{name}.idx"
        self.count = len(range(start, stop, step))
        # loop_unroll / unroll_list: `unroll` iterations of the body run in one root function
        self.unroll = unroll
        self.tail = None  # (chunk, last chunk) when a valid_shape view ends in a partial chunk
        self.counts = []  # unroll_list, largest first
        self.tile_at_start = None  # the vector tile in force where the loop begins
        self.tile_at_entry = None  # the same, as the loop began (before any hoist)
        self.chunk = self.extent = self.program_count = None
        self.where = where
        self.axis = None
        self.rank = None  # the rank of the tensors whose dim `axis` the loop cuts
        self.body = []

    def spans(self, v):
        """Whether Value `v` lies along the loop's axis (longer than 1 there), its dims aligned
        from the right with the cut tensors' (a 1-D weight of a row loop's rows does not)."""
        d = self.axis - ((self.rank or len(v.shape)) - len(v.shape))
        return 0 <= d < len(v.shape) and v.shape[d] > 1

    def value(self, j):
        return self.start + j * self.step

    def runs(self):
        """[(chunk size, root functions)] of the loop as PyPTO runs it, in order along its axis:
        unroll paths largest first (unroll_list), the last root function the rest of the dim
        (a valid_shape tail)."""
        k = self.unroll
        per_iteration = self.chunk // k if getattr(self, "body_unrolled", False) else self.chunk
        left, pos, runs = -(-self.extent // per_iteration), 0, []  # runs: [size, roots]
        for n in self.counts or [1]:
            if left >= n:
                runs.append([n * per_iteration, left // n])
                pos += (left // n) * n * per_iteration
                left %= n
        if left:
            runs.append([left * per_iteration, 1])
            pos += left * per_iteration
        if pos > self.extent:  # the last root function takes the rest of the dim
            runs[-1][1] -= 1
            runs.append([runs[-1][0] - (pos - self.extent), 1])
        return [(size, n) for size, n in runs if n]

    def even(self, count):
        """The program loop's chunks over the axis for `count`: ceil(extent / count), the last
        one shorter (kernels/tiling/tile_rules.hpp loop_chunks), as [(size, roots)]."""
        even = -(-self.extent // count)
        roots = -(-self.extent // even)
        return [(even, roots - 1), (self.extent - even * (roots - 1), 1)]

    def close(self, trace):
        """The program loop this loop is when it is one (program_count root functions over its
        axis), and a note when PyPTO's chunks are not the program's even ones."""
        k = self.unroll
        runs = self.runs()
        self.program_count = sum(n for _, n in runs)
        balanced = self.even(self.program_count)
        even, roots = balanced[0][0], sum(n for _, n in balanced)
        if counted(runs) != counted(balanced):
            shown = ", ".join(f"{n} x {size}" for size, n in runs)
            same = ("the same root functions and work; the chunk sizes evened" if
                    roots == self.program_count else f"{roots} root functions, not "
                    f"{self.program_count}; the same work")
            trace.notes.append(
                f"loop '{self.name}' ({os.path.basename(self.where[0])}:{self.where[1]}): PyPTO's "
                f"root functions take chunks of {shown} rows of dim {self.axis}; tilesim's "
                f"loop cuts its {self.extent} into chunks of {even} ({same})")
        elif k > 1:
            last = balanced[-1][0]
            rest = f", the last of {last}" if balanced[-1][1] and last != even else ""
            trace.notes.append(
                f"loop '{self.name}': unrolled by {k}, {self.program_count} root functions of "
                f"{even}{rest} along dim {self.axis}")

    def index(self):
        return Sym(lambda env: env.get(self, self.start), frozenset([self]), self.idx_name)


# ---- program values and the trace ----------------------------------------------------------


# The program's alias ops: a view of part of a computed tensor, a reshape of one (no copy).
ALIASES = ("view", "reshape")


class Value:
    """A whole tensor of the program: an input, an output, a GM buffer or an op's result."""

    def __init__(self, shape, dtype, name=None, kind="temp"):
        self.shape, self.dtype, self.name, self.kind = list(shape), dtype, name, kind
        self.op = None  # the op entry writing it
        self.frames = ()  # the loops enclosing its producer, outermost first


class Trace:
    """What one call of a kernel records: values, program body, tiles and loops with their
    source lines."""

    def __init__(self, kernel_name, where):
        self.kernel_name, self.where = kernel_name, where
        self.body = []
        self.frames = []
        self.tiles = []  # dicts: name, dims, cube, file, line
        self.loops = []  # LoopFrame, in order of appearance
        self.vec_tile = None
        self.cube_tile = None
        self.matrix_size = None  # set_matrix_size: ([m, k, n], where)
        self.names = set()
        self.counter = 0
        self.broken_loop = None
        self.written = {}  # GM value -> where it was assembled
        self.extra_params = []  # program tensors for parts of arguments (static-offset views)
        self.part_inputs = {}  # (argument value, its part) -> the program input for it
        self.output_parts = {}  # output value -> [(region, where)] of the parts written
        self.options = None  # the kernel's _options.Options (set_pass_options changes them)
        self.notes = []  # what the answer should say about how the trace read the kernel
        self.scope = None  # (sg_set_scope id, its psg name) of the last op
        self.matmul_tiles = {}  # id(matmul entry) -> (its cube tile [tm, tk, tn], its site)
        self._reads = {}  # id(op entry) -> (entry, its inputs' cuts, the call, its site)

    def fresh(self, stem):
        while True:
            self.counter += 1
            name = f"{stem}{self.counter}"
            if name not in self.names:
                self.names.add(name)
                return name

    def claim(self, name, call):
        if name in self.names:
            refuse(call, f"two tensors are named '{name}'", "give each tensor its own name")
        self.names.add(name)
        return name

    def emit(self, entry):
        (self.frames[-1].body if self.frames else self.body).append(entry)

    def add_tile(self, dims, cube, where, l0=None):
        """A tile shape in force from here on; a cube tile's `l0`: its mmads' L0 tile when
        smaller than `dims` (PyPTO's [[mL0, mL1], [kL0, kL1], [nL0, nL1]])."""
        name = f"{'cube' if cube else 'vec'}_L{where[1]}"
        if any(t["name"] == name for t in self.tiles):
            name = self.fresh(name + "_")
        tile = {"name": name, "dims": list(dims), "cube": cube, "file": where[0],
                "line": where[1], "l0": list(l0) if l0 else None}
        self.tiles.append(tile)
        shapes = [[a, b] for a, b in zip(l0, dims)] if l0 else list(dims)
        self.emit({"set_cube_tile_shapes" if cube else "set_vec_tile_shapes": shapes,
                   "name": name})
        if cube:
            self.cube_tile = tile
        else:
            self.vec_tile = tile

    def op(self, name, inputs, out, call, cuts=(), **keys):
        """Records op `name` on `inputs` (Values, each read in the chunks `cuts` names: dim ->
        loop frame) writing Value `out`; returns out."""
        for v in inputs:
            if v.kind == "param" and v not in self.written:
                v.read = True
        if name != "matmul" and name not in ALIASES and self.vec_tile is None:
            refuse(call, "no vector tile shape is set before this op",
                   "call pypto.set_vec_tile_shapes(...) first, as PyPTO requires")
        entry = {"op": name, "inputs": list(inputs), "out": out, **keys}
        scope = self.options.scope if self.options is not None else None
        if name in ALIASES:
            pass  # a view or reshape makes no stage: it opens none and ends none
        elif scope is not None and scope >= 0:
            if self.scope is None or self.scope[0] != scope:
                self.scope = (scope, self.fresh(f"sg_scope{scope}_"), _dims_of(self.vec_tile))
                entry["psg"] = self.scope[1]
            elif name == "matmul" or _dims_of(self.vec_tile) != self.scope[2]:
                # a cut tilesim's stage plan makes inside the scope: say where (the options'
                # _SCOPE_NOTE says why the model cannot merge across it)
                file, line = caller()
                why = "a matmul" if name == "matmul" else "a changed vector tile"
                note = (f"sg_set_scope {scope}: {why} at {file}:{line} ends tilesim's stage "
                        f"{self.scope[1]} inside the scope; the ops after it are stages of "
                        "their own, where PyPTO keeps the scope one subgraph")
                if note not in self.notes:
                    self.notes.append(note)
        else:
            self.scope = None
        self._reads[id(entry)] = (entry, list(cuts), call, caller())
        out.op = entry
        level = self._level(inputs, cuts) if name != "matmul" else len(self.frames)
        if any(f.axis is None or any(f.spans(v) for v in inputs) for f in self.frames[level:]):
            level = len(self.frames)  # stays in the loop (check_whole_reads judges it)
        out.frames = tuple(self.frames[:level])
        if name in ALIASES:  # no op runs: it sits with its input, under no tile
            (self.frames[level - 1].body if level else self.body).append(entry)
            return out
        if level < len(self.frames):
            self._broadcast_rank(inputs, out)
            self._hoist(entry, level)
        else:
            self.emit(entry)
        return out

    def site_of(self, entry):
        """(file, line) of the kernel call that recorded an op entry."""
        return self._reads[id(entry)][3]

    def _level(self, inputs, cuts):
        """How many of the enclosing loops the op depends on: the innermost one whose chunk an
        input is, or which computed an input."""
        level = 0
        for v, cut in zip(inputs, cuts):
            for f in list(cut.values()) + list(v.frames if v.kind == "temp" else ()):
                if f in self.frames:
                    level = max(level, self.frames.index(f) + 1)
        return level

    def _broadcast_rank(self, inputs, out):
        """A hoisted op of lower rank than the vector tile (a 1-D weight's cast before a row
        loop) runs as its broadcast shape, leading dims of 1: the same data, the tile's rank (a
        vec tile gives one extent per dim of the op's output)."""
        rank = len(self.vec_tile["dims"])
        if len(out.shape) >= rank:
            return
        for v in [*inputs, out]:
            if len(v.shape) < rank and (v is out or v.kind == "param"):
                shown = list(v.shape)
                v.shape = [1] * (rank - len(v.shape)) + v.shape
                if v.kind == "param":
                    note = (f"'{v.name}' {shown} is read as {v.shape}, the rank of the vector "
                            "tile its op runs under before the loop (the same data, broadcast)")
                    if note not in self.notes:
                        self.notes.append(note)

    def _hoist(self, entry, level):
        """An op on operands no loop from `level` in cuts (gamma's cast in a norm): the program
        loop chunks every op of its body, so it runs once before that loop, where PyPTO repeats
        it in each root function (a note says so)."""
        frame = self.frames[level]
        body = self.frames[level - 1].body if level else self.body
        tile = frame.tile_at_start
        if tile is None or tile["dims"] != self.vec_tile["dims"]:
            name = self.fresh(self.vec_tile["name"] + "_before_")
            body.append({"set_vec_tile_shapes": list(self.vec_tile["dims"]), "name": name})
            frame.tile_at_start = dict(self.vec_tile, name=name)
        body.append(entry)
        note = (f"ops on operands loop '{frame.name}' does not cut run once before it, in a root "
                f"function of their own under tile '{frame.tile_at_start['name']}' (PyPTO "
                "repeats them in each root function)")
        if note not in self.notes:
            self.notes.append(note)

    def hoist_prefix(self, frame):
        """The ops that open `frame`'s body before its first view fixed the loop's axis and
        that, the axis now known, depend on no chunk of it (gamma's cast before the view of x):
        they run once before the loop, as _hoist places such an op traced after the view (the
        program loop chunks every op of its body along the axis). A vector tile the body sets
        before them stays in the body and is set again before the loop for them. A loop begun
        with no vector tile in force (its body sets the first) hoists the ops after that set."""
        if frame.tile_at_start is not frame.tile_at_entry:
            return
        start = frame.tile_at_start
        tile = None if start is None else {"dims": list(start["dims"]), "name": start["name"],
                                           "entry": None}
        moved, keep, hoisted = [], [], []  # hoisted: (entry, the tile it ran under)
        for i, entry in enumerate(frame.body):  # the first op that stays keeps the rest in
            if "set_vec_tile_shapes" in entry:
                tile = {"dims": list(entry["set_vec_tile_shapes"]), "name": entry["name"],
                        "entry": entry}
                keep.append(entry)
                continue
            if "op" not in entry or entry["op"] == "matmul" or tile is None:
                break
            _, cuts, _, _ = self._reads[id(entry)]
            if any(frame in c.values() for c in cuts) or any(
                    frame.spans(v) for v in entry["inputs"]):
                break
            moved.append(i)
            hoisted.append((entry, tile))
        if not hoisted:
            return
        frame.body[:] = [e for i, e in enumerate(frame.body) if i not in set(moved)]
        body = self.frames[-1].body if self.frames else self.body
        current, shown, set_before = self.vec_tile, [], None
        for entry, tile in hoisted:
            if tile["entry"] is not None and set_before is not tile["entry"]:
                name = self.fresh(tile["name"] + "_before_")
                body.append({"set_vec_tile_shapes": list(tile["dims"]), "name": name})
                set_before, tile = tile["entry"], dict(tile, name=name)
            self.vec_tile = {"dims": tile["dims"], "name": tile["name"]}
            entry.pop("psg", None)
            entry["out"].frames = tuple(self.frames)
            self._broadcast_rank(entry["inputs"], entry["out"])
            body.append(entry)
            shown.append(tile["name"])
        self.vec_tile = current
        note = (f"ops on operands loop '{frame.name}' does not cut run once before it, under "
                f"tile '{shown[0]}' (PyPTO repeats them in each root function)")
        if note not in self.notes:
            self.notes.append(note)

    def check_whole_reads(self, frame):
        """Every GM tensor an op in `frame`'s body reads must be read in the frame's chunks
        along its axis: the program's loop chunks every tensor of its body, while a kernel that
        reads a whole tensor in each iteration does the loop's count times the work."""
        for e in walk_ops(frame.body):
            entry, cuts, call, site = self._reads[id(e)]
            # a matmul's B holds k and n, which no loop cuts: each root function reads the
            # panels of B its rows need (the lowering's matmul stage does)
            inputs = entry["inputs"][:1] if e["op"] == "matmul" else entry["inputs"]
            for v, cut in zip(inputs, cuts):
                if (v.kind in ("param", "gm", "output") and frame.spans(v)
                        and frame not in cut.values()):
                    refuse(call, f"reads the whole of '{v.name}' inside loop '{frame.name}', "
                           f"which cuts dim {frame.axis}",
                           f"view its chunk: pypto.view({v.name}, [...], [idx * "
                           f"{frame.chunk}, ...]) (each iteration would read all of it)",
                           where=site)

    # The program JSON: Values become their names.
    def program(self, inputs, outputs, description):
        def named(entries):
            result = []
            for e in entries:
                if "op" in e:
                    e = dict(e, inputs=[v.name for v in e["inputs"]], out=e["out"].name)
                elif "loop" in e:
                    e = dict(e, body=named(e["body"]))
                result.append(e)
            return result

        return {"program": self.kernel_name, "description": description,
                "inputs": [{"name": v.name, "shape": v.shape, "dtype": v.dtype.program}
                           for v in inputs],
                "outputs": [v.name for v in outputs], "body": named(self.body)}


def _dims_of(tile):
    return list(tile["dims"]) if tile else None


def walk_ops(entries):
    """The op entries of a program body, loop bodies included, in program order."""
    for e in entries:
        if "loop" in e:
            yield from walk_ops(e["body"])
        elif "op" in e:
            yield e


_current = []  # the trace being recorded (a stack of one: traces do not nest)


def active(call):
    if not _current:
        refuse(call, "called outside a kernel being traced",
               "call it inside a @pypto.jit kernel, then call the kernel")
    return _current[-1]
