"""@pypto.jit under tilesim: calling the kernel traces it into a program (TracedKernel), which
runs and sweeps through tilesim.run / tilesim.sweep and answers in the PyPTO lines to paste."""
import inspect
import json
import os
import re

from .. import _jobs, api
from .._jobs import write_text
from ..results import SweepResult
from . import _options
from . import _trace as T
from ._tensor import Dynamic, Tensor
from ._trace import UnsupportedError, refuse

# The jit kernels made while a kernel file runs under the tracer (__main__.py), in order.
CREATED = []
# True while the tracer runs a kernel file: a refused kernel call is kept on the kernel
# (JitKernel.error) and the file runs on, so its other kernels are still traced.
KEEP_GOING = [False]


def jit(func=None, *, host_options=None, codegen_options=None, pass_options=None,
        runtime_options=None, verify_options=None, debug_options=None, new_ir=False,
        create_new_logical_tensor=False, **unknown):
    """pypto.jit / pypto.frontend.jit: the kernel, traced when it is called. Its options are
    read when it is traced (a refused option refuses that kernel, never the import)."""
    where = T.caller()
    groups = {"host_options": host_options, "codegen_options": codegen_options,
              "verify_options": verify_options, "debug_options": debug_options}

    def options():
        call = "pypto.jit"
        if unknown:
            refuse(call, f"keyword {sorted(unknown)} is not a pypto.jit option",
                   "it takes host_options, codegen_options, pass_options, runtime_options, "
                   "verify_options, debug_options", where)
        o = _options.GLOBAL[0].copy()
        for name, value in groups.items():
            o.group(name, value)
        o.pass_options(pass_options or {}, call, where)
        o.runtime_options(runtime_options or {}, call, where)
        return o

    def wrap(f):
        return JitKernel(f, options, where)

    return wrap(func) if func is not None else wrap


def function(func):
    """pypto.frontend.function: a helper inlined into the kernel (traced as a plain call)."""
    return func


def _rank_differs(spec, shape):
    """Whether a call's rank breaks its annotation as PyPTO checks it
    (python/pypto/frontend/parser/entry.py): a shape of pypto.DYNAMIC / STATIC marks (a status
    shape) takes a tensor of at least its rank, any other the same rank."""
    if any(isinstance(d, Dynamic) and d.name in ("DYNAMIC", "STATIC") for d in spec):
        return len(shape) < len(spec)
    return len(spec) != len(shape)


def _arg_spec(param, arg, ann, call):
    """(shape, dtype) of a tensor parameter from its argument and its annotation."""
    shape = dtype = None
    for t in (arg, ann):
        if isinstance(t, Tensor) and t._refusal is not None:
            refuse(*t._refusal)
    if arg is not None:
        if not hasattr(arg, "shape") or not hasattr(arg, "dtype"):
            refuse(call, f"argument '{param}' is a {type(arg).__name__}, not a tensor",
                   "pass a pypto.tensor(shape, dtype), a numpy array or a torch tensor")
        shape = list(arg.shape) if not isinstance(arg, Tensor) else arg.shape
        dtype = arg.dtype if isinstance(arg, Tensor) else T.dtype_of(arg.dtype, call)
    if isinstance(ann, Tensor):
        spec = ann._spec_shape
        if spec is not None and spec:
            if shape is None:
                if any(not isinstance(d, int) for d in spec):
                    refuse(call, f"'{param}' has dynamic dims {spec} and no argument",
                           "call the kernel (or its wrapper: trace-pypto --call) with tensors "
                           "of concrete shapes")
                shape = list(spec)
            elif Ellipsis not in spec and (_rank_differs(spec, shape) or any(
                    isinstance(s, int) and s != d for s, d in zip(spec, shape))):
                refuse(call, f"'{param}' is annotated {spec}, called with {shape}")
        if ann._dtype is not None:
            if dtype is not None and dtype is not ann._dtype:
                refuse(call, f"'{param}' is annotated {ann._dtype!r}, called with {dtype!r}")
            dtype = ann._dtype
    if shape is None or dtype is None:
        refuse(call, f"tensor '{param}' has no shape or dtype",
               "annotate it pypto.Tensor(shape, dtype) or call the kernel with tensors")
    return shape, dtype


def _tiles_in_use(body):
    """The names of the vector tiles in force at some vector op of a program body."""
    used = set()

    def walk(entries, current):
        for e in entries:
            if "set_vec_tile_shapes" in e:
                current = e["name"]
            elif "loop" in e:
                current = walk(e["body"], current)
            elif "op" in e and e["op"] != "matmul" and current is not None:
                used.add(current)
        return current

    walk(body, None)
    return used


class JitKernel:
    """A @pypto.jit kernel. Calling it traces it (as a PyPTO call compiles and runs it) and
    keeps the result in ``.traced``; ``trace(...)`` returns it."""

    def __init__(self, func, options, where):
        self.func, self.options, self.where = func, options, where
        self.traced = None
        self.error = None  # the refusal of its call, while the tracer runs a kernel file
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        CREATED.append(self)

    def __call__(self, *args, **kwargs):
        if not (KEEP_GOING[0] and (self.traced is not None or self.error is not None)):
            # (a board runs the compiled kernel again: its trace is the first call's)
            try:
                self.traced = self.trace(*args, **kwargs)
            except UnsupportedError as e:
                if not KEEP_GOING[0]:
                    raise
                self.error = e
        return _results(self.traced)

    def trace(self, *args, **kwargs):
        """The kernel as a tile program. Tensor arguments give shapes and dtypes (pypto.tensor,
        numpy arrays, torch tensors); without them the annotations must."""
        if T._current:
            refuse("a jit kernel called inside another", "kernels do not nest in a trace")
        call = f"{self.func.__name__}(...)"
        sig = inspect.signature(self.func)
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as e:
            refuse(call, str(e))
        trace = T.Trace(self.func.__name__, self.where)
        trace.options = self.options()
        params, values = [], {}
        for name, p in sig.parameters.items():
            arg = bound.arguments.get(name)
            ann = p.annotation
            tensor_like = isinstance(ann, Tensor) or ann is Tensor or (
                arg is not None and hasattr(arg, "shape") and hasattr(arg, "dtype"))
            if not tensor_like:
                if name not in bound.arguments and p.default is inspect.Parameter.empty:
                    refuse(call, f"argument '{name}' (not a tensor) is missing")
                continue
            shape, dtype = _arg_spec(name, arg, ann if isinstance(ann, Tensor) else None, call)
            if any(isinstance(d, Dynamic) for d in shape):
                refuse(call, f"'{name}' has dynamic dims {shape} and no argument fixes them",
                       "call the kernel (or its wrapper: trace-pypto --call) with tensors")
            T.program_dtype(dtype, call)
            v = T.Value(shape, dtype, trace.claim(name, call), "param")
            params.append(v)
            values[name] = Tensor._of(v)
        call_args = dict(bound.arguments)
        call_args.update(values)
        T._current.append(trace)
        try:
            returned = self.func(**call_args)
        finally:
            T._current.pop()
        if trace.broken_loop is not None:
            refuse("pypto.loop", f"loop '{trace.broken_loop.name}' was left early (break)",
                   "a traced loop body runs once, as every iteration does", trace.broken_loop.where)
        return TracedKernel(self, trace, params, returned)


def _bodies(entries):
    """The top level and each loop's body, each a root function's list of entries in PyPTO
    (a loop body is a root function; its hash orders count from 0)."""
    yield entries
    for e in entries:
        if "loop" in e:
            yield from _bodies(e["body"])


def _aic_cores():
    return _options.hardware_file()["parameters"]["cores.aic"]["value"]


def _results(traced):
    """What the call returns to its caller (pypto.frontend.jit kernels return their outputs):
    torch stand-in tensors of the returned shapes and dtypes, or None."""
    if traced is None or not traced.returned:
        return None
    from ..torch_standin import Tensor as TorchTensor, dtype_named
    outs = [TorchTensor(shape, dtype_named(dt.program), "npu") for shape, dt in traced.returned]
    return outs[0] if traced.returns_one else tuple(outs)


class TracedKernel:
    """A traced PyPTO kernel: ``program`` (the tile program dict), ``tiles`` and ``loops`` (with
    the source lines that set them), ``run``, ``sweep``, ``write``."""

    def __init__(self, kernel, trace, params, returned):
        self.name = trace.kernel_name
        self.file, self.line = kernel.where
        options = trace.options
        options.judge_cube([[(e, *trace.matmul_tiles[id(e)]) for e in body
                             if e.get("op") == "matmul" and id(e) in trace.matmul_tiles]
                            for body in _bodies(trace.body)],
                           _aic_cores() if options.cube_keys else 0)
        self.run_keys = options.run_config()
        self.runtime = dict(options.runtime)
        self.what_ifs = dict(options.what_ifs)
        self.notes = list(options.notes) + list(trace.notes)
        parted = {getattr(v, "part_of", None) for v in trace.extra_params}
        params = [v for v in params if v not in parted or v in trace.written or
                  getattr(v, "read", False)] + trace.extra_params
        outputs = [v for v in params if v in trace.written]
        referenced = {id(v) for e in T.walk_ops(trace.body) for v in e["inputs"]}
        inputs = [v for v in params if v not in trace.written and getattr(v, "read", False)
                  and id(v) in referenced]
        unused = [v.name for v in params if v not in trace.written and not getattr(v, "read",
                                                                                  False)]
        if parted - {None}:
            self.notes.append("parts of " + ", ".join(sorted(f"'{v.name}'" for v in parted if v))
                              + " (static-offset views and assembles, a loop's tail) are "
                              "program tensors of their own (the same bytes, read or written "
                              "once)")
        if unused:
            self.notes.append(f"unused tensor arguments: {', '.join(unused)}")
        self.returned = []  # (shape, dtype) of each tensor the kernel returns
        self.returns_one = returned is not None and not isinstance(returned, (list, tuple))
        for i, r in enumerate(returned if isinstance(returned, (list, tuple)) else
                              [returned] if returned is not None else []):
            if not isinstance(r, Tensor):
                refuse(f"return of {self.name}", f"returns a {type(r).__name__}",
                       "return tensors, or write outputs with assemble", kernel.where)
            v = r._traced(f"return of {self.name}")
            if v.kind == "temp":
                v.name, v.kind = trace.claim(f"out{i}", "return"), "output"
            elif v.kind not in ("gm", "output"):
                refuse(f"return of {self.name}", f"returns '{v.name}', which it does not write",
                       where=kernel.where)
            outputs.append(getattr(v, "alias", v))
            self.returned.append((list(r.shape), v.dtype))
        if not outputs:
            refuse(self.name, "the kernel writes no output",
                   "assemble (or out[:] = ...) into an output argument", kernel.where)
        out_values = [getattr(v, "alias", v) for v in outputs]
        self.program = trace.program(inputs, [], f"traced by tilesim.pypto from "
                                     f"{os.path.basename(self.file)}:{self.line}")
        self.program["outputs"] = [{"name": v.name, "shape": list(o.shape),
                                    "dtype": v.dtype.program}
                                   for v, o in zip(out_values, outputs)]
        self.tiles = [dict(t) for t in trace.tiles]
        self.loops = [{"name": f.name, "count": f.program_count, "axis": f.axis,
                       "chunk": -(-f.extent // f.program_count), "extent": f.extent,
                       "file": f.where[0], "line": f.where[1]} for f in trace.loops]
        self._sites = [trace.site_of(e) for e in T.walk_ops(trace.body)]  # program order

    # -- the program and its configs
    def to_json(self):
        return json.dumps(self.program, indent=2) + "\n"

    def write(self, path):
        """Writes the program file (what ``tilesim trace-pypto --json`` writes), as the CLI
        writes it: atomically, never over the kernel file it was traced from (ConfigError)."""
        write_text(path, self.to_json(), "the program", [self.file])

    def _tile(self, tile):
        _jobs.selector("tile", tile)
        if tile is None:
            # the first vector tile some op runs under (a kernel may set one it replaces
            # before any op, e.g. a tile for one row, then the loop's)
            used = _tiles_in_use(self.program["body"])
            vec = [t for t in self.tiles if not t["cube"]]
            vec = [t for t in vec if t["name"] in used] or vec
            return (vec or self.tiles)[0] if self.tiles else None
        for t in self.tiles:
            if tile in (t["name"], t["line"]):
                return t
        known = ", ".join(f"{t['name']} (line {t['line']})" for t in self.tiles)
        _jobs.refuse("tile", f"no tile {tile!r} in kernel {self.name} (its tiles: {known})")

    def _loop(self, loop):
        _jobs.selector("loop", loop)
        if loop is None:
            return self.loops[0] if self.loops else None
        for lp in self.loops:
            if loop in (lp["name"], lp["line"]):
                return lp
        known = ", ".join(f"{lp['name']} (line {lp['line']})" for lp in self.loops) or "none"
        _jobs.refuse("loop", f"no loop {loop!r} in kernel {self.name} (its loops: {known})")

    def config(self, tile=None, loop=None, partition=None, hardware=None):
        """The run config of this kernel (a dict tilesim.run and the CLI take)."""
        cfg = {"program": self.program}
        if hardware is not None:
            cfg["hardware"] = hardware
        t, lp = self._tile(tile), self._loop(loop)
        if t is not None:
            cfg["program_tile"] = t["name"]
        if lp is not None:
            cfg["program_loop"] = lp["name"]
        cfg.update(json.loads(json.dumps(self.run_keys)))
        if partition is not None:
            cfg["partition"] = partition
        return cfg

    def run(self, tile=None, loop=None, partition=None, hardware=None, tile_shape=None,
            loop_count=None):
        """Simulates the kernel as traced (``tilesim run``): a tilesim Result. ``tile`` and
        ``loop`` name which tile / loop ``tile_shape`` / ``loop_count`` set: checked as
        tilesim.run checks ``tile`` and ``loop`` (ConfigError naming the argument)."""
        tile_shape = _jobs.dims("tile_shape", tile_shape) or None
        loop_count = _jobs.integer("loop_count", loop_count, 1)
        cfg = self.config(tile, loop, partition)
        return self._located(lambda: api.run(cfg, tile=tile_shape, loop=loop_count,
                                              hardware=hardware, set=self.what_ifs or None))

    def sweep_config(self, tile=None, loop=None, tiles="auto", loop_counts="auto",
                     partition=None, hardware=None, constraints=None):
        """The sweep config: the tile set at ``tile`` (default: the first vector tile) over
        ``tiles`` ("auto": powers of two per dim up to the shape; a list; None: as traced) and
        the loop ``loop`` (default: the first) over ``loop_counts`` ("auto": 1, 2, 4, ... up to
        its axis; a list; None: as traced). Without a loop, only tiles vary."""
        cfg = self.config(tile, loop, partition, hardware)
        cand = {}
        if isinstance(tiles, str) and tiles == "auto":
            cand["generate_tiles"] = {"last_dim": "pow2"}
        elif tiles is not None:
            cand["tiles"] = _jobs.dim_lists("tiles", tiles)
        lp = self._loop(loop)
        if lp is not None and loop_counts == "auto":
            cand["generate_loop_counts"] = {"from": 1, "to": lp["extent"]}
        elif loop_counts is not None and not isinstance(loop_counts, str):
            if not isinstance(loop_counts, (list, tuple)):
                _jobs.refuse("loop_counts", f"{loop_counts!r} is not a list of loop counts")
            cand["loop_counts"] = [_jobs.integer(f"loop_counts[{i}]", n, 1, none_ok=False)
                                   for i, n in enumerate(loop_counts)]
        elif loop_counts not in (None, "auto"):
            _jobs.refuse("loop_counts", f"{loop_counts!r}: give \"auto\", a list or None")
        cand["constraints"] = dict(constraints or {"prune_over_limits": False})
        cfg["candidates"] = cand
        cfg["description"] = (f"{self.name} traced from {os.path.basename(self.file)}: "
                              f"{self._tile(tile)['name'] if self.tiles else 'no tile'}" +
                              (f" x loop {lp['name']}" if lp else ""))
        return cfg

    def sweep(self, tile=None, loop=None, tiles="auto", loop_counts="auto", partition=None,
              hardware=None, jobs=0, constraints=None, **kwargs):
        """Sweeps the kernel's tile and loop count (``tilesim sweep``): a PyptoSweep, whose
        ``recommendation`` gives the PyPTO lines to paste."""
        cfg = self.sweep_config(tile, loop, tiles, loop_counts, partition, hardware, constraints)
        if self.what_ifs:
            kwargs.setdefault("set", self.what_ifs)
        res = self._located(lambda: api.sweep(cfg, jobs=jobs, **kwargs))
        return PyptoSweep(res, self, self._tile(tile), self._loop(loop))

    def _located(self, fn):
        """Runs fn; a program error naming "op N" gains the kernel line that traced op N."""
        try:
            return fn()
        except ValueError as e:
            m = re.search(r"\bop (\d+) \(", str(e))
            if m and int(m.group(1)) < len(self._sites):
                f, line = self._sites[int(m.group(1))]
                e.args = (f"{e.args[0]} [traced from {f}:{line}]",) + e.args[1:]
            raise

    def __repr__(self):
        return (f"<tilesim.pypto.TracedKernel {self.name}: {len(self._sites)} ops, "
                f"{len(self.tiles)} tiles, {len(self.loops)} loops>")


def tile_call(tile, dims):
    if tile["cube"]:
        l0 = tile.get("l0") or dims
        pairs = ", ".join(f"[{a}, {b}]" for a, b in zip(l0, dims))
        return f"pypto.set_cube_tile_shapes({pairs})"
    return f"pypto.set_vec_tile_shapes({', '.join(str(d) for d in dims)})"


class PyptoSweep(SweepResult):
    """A sweep of a traced kernel: a SweepResult plus the PyPTO lines the winner needs."""

    def __init__(self, res, kernel, tile, loop):
        super().__init__(res._outcome)
        self.kernel, self._tile_site, self._loop_site = kernel, tile, loop

    @property
    def paste(self):
        """[(file, line, text)]: the source lines to change for the recommended candidate."""
        rec = self.recommended
        if rec is None:
            return []
        lines = []
        t = self._tile_site
        if t is not None and list(rec["tile"]) != t["dims"]:
            lines.append((t["file"], t["line"], tile_call(t, rec["tile"])))
        lp = self._loop_site
        if lp is not None and rec.get("loop_count") not in (None, lp["count"]):
            n = rec["loop_count"]
            chunk = -(-lp["extent"] // n)
            lines.append((lp["file"], lp["line"],
                          f"pypto.loop({n}) with views of {chunk} along dim {lp['axis']} "
                          f"(offset = idx * {chunk})"))
        return lines

    @property
    def recommendation(self):
        """What to change, why, and the lines to paste."""
        rec = self.recommended
        if rec is None:
            return f"tilesim: no candidate of {self.kernel.name} ran ({self.counts})"
        head = f"tilesim recommends for {self.kernel.name}: {self.why}"
        paste = self.paste
        if not paste:
            body = ["  the kernel as written is the recommended candidate: change nothing"]
        else:
            body = [f"  {os.path.basename(f)}:{line}: {text}" for f, line, text in paste]
        bound = self._dict().get("recommended", {}).get("binding") or []
        if bound:
            b = bound[0]
            head += (f"\n  bound by {b['resource']}: {b['used']:.1f} of {b['capacity']:.1f} "
                     f"{b['unit']} ({b['share']:.0%})")
        notes = [f"  note: {n}" for n in self.kernel.notes]
        return "\n".join([head, *body, *notes])
