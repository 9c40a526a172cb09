"""A loop whose root functions PyPTO runs over chunks of different sizes (a valid_shape tail:
count - 1 chunks of the full size, then the rest; unroll_list: runs of each unroll count's
chunks), as PyPTO runs it. A program loop cuts its axis into even chunks, so the trace writes
one program loop per run of equal chunks, each over its part of every tensor the loop cuts.
Within each chunk the lowering cuts the kernel's tiles, the last one partial: its copies and
vector work at the valid size, its UB at the full tile.
"""
from . import _trace as T


def split(trace, frame):
    """The program loop entries of `frame`, one per run of equal chunks; [] when one loop of
    even chunks already is the kernel's; None when its body is outside what the split takes
    (nested loops, a matmul before the body's cube tile, a value the kernel returns): the
    caller then writes one loop of even chunks and a note."""
    runs = frame.runs()
    if T.counted(runs) == T.counted(frame.even(sum(n for _, n in runs))):
        return []  # the program's even chunks are the kernel's: one loop is exact
    first_cube = next((i for i, e in enumerate(frame.body) if "set_cube_tile_shapes" in e), None)
    if (any("loop" in e for e in frame.body)
            or (first_cube is not None and any(e.get("op") == "matmul"
                                               for e in frame.body[:first_cube]))):
        return None
    cut = _cut_values(trace, frame)
    written = {id(v): gm for gm in trace.written for v in [getattr(gm, "alias", None)]}
    if any(v.kind not in ("temp", "param", "gm") and key not in written
           for key, (v, _) in cut.items()):
        return None
    loops, start = [], 0
    for i, (size, n) in enumerate(runs):
        parts = {key: _part(trace, v, d, start, size * n, f"run{i}", written.get(key))
                 for key, (v, d) in cut.items()}
        body = [_copy(trace, e, parts, i > 0) for e in frame.body]
        if i > 0 and frame.tile_at_start is not None and frame.body and "op" in frame.body[0]:
            # its first ops run under the tile in force where the loop began, set again
            tile = frame.tile_at_start
            body.insert(0, {"set_vec_tile_shapes": list(tile["dims"]),
                            "name": trace.fresh(tile["name"] + "_")})
        name = frame.name if i == 0 else trace.claim(
            f"{frame.name}_tail" if i == len(runs) - 1 and frame.tail else
            f"{frame.name}_by{size}", "pypto.loop")
        loops.append({"loop": name, "axis": frame.axis, "loop_count": n, "body": body})
        start += size * n
    for key in cut:
        if key in written:  # the output is written as its parts
            del trace.written[written[key]]
    frame.program_count, frame.extent = runs[0][1], runs[0][0] * runs[0][1]
    shown = ", ".join(f"{n} x {size}" for size, n in runs)
    trace.notes.append(
        f"loop '{frame.name}': its root functions take chunks of {shown} rows of dim "
        f"{frame.axis}, as PyPTO runs them: program loops {', '.join(repr(lp['loop']) for lp in loops)}"
        " over those parts")
    return loops


def _cut_values(trace, frame):
    """{id: (Value, dim)} of the values of the loop body that the loop cuts: the kernel tensors
    its views read and its assembles write, and the values computed from them."""
    cut = {}
    for e in T.walk_ops(frame.body):
        _, cuts, _, _ = trace._reads[id(e)]
        for v, c in zip(e["inputs"], cuts):
            for d, f in c.items():
                if f is frame:
                    cut[id(v)] = (v, d)
        for d, f in getattr(e["out"], "cut", {}).items():
            if f is frame:
                cut[id(e["out"])] = (e["out"], d)
    return cut


def _part(trace, v, d, start, size, which, written):
    """The value standing for rows [start, start + size) of dim d of `v` in one run:
    a program tensor of that part for a kernel tensor (read, or `written`: the output an
    assemble wrote v into), a computed value of that size otherwise."""
    shape = list(v.shape)
    shape[d] = size
    if v.kind == "temp":
        return T.Value(shape, v.dtype, trace.fresh(f"{v.name}_{which}_"))
    base = written if written is not None else v
    name = trace.claim(f"{base.name}_{'part' if written is not None else 'view'}_d{d}_"
                       f"{start}_{start + size}", "pypto.loop")
    part = T.Value(shape, v.dtype, name, "param")
    part.part_of = getattr(base, "part_of", None) or base
    trace.extra_params.append(part)
    if written is None:
        part.read = True
        return part
    # an output: the value its assemble wrote, under the part's name
    value = T.Value(shape, v.dtype, name, "output")
    part.alias = value
    trace.written[part] = trace.written[written]
    return value


def _copy(trace, entry, mapping, again):
    """A copy of a body entry with one run's values; in a run after the first (`again`) its
    tiles and stage names are set again under names of their own (a sweep of the kernel's tile
    varies the first run's)."""
    if "op" not in entry:
        return dict(entry, name=trace.fresh(entry["name"] + "_again_")) if again else entry
    copy = dict(entry, inputs=[mapping.get(id(v), v) for v in entry["inputs"]],
                out=mapping.get(id(entry["out"]), entry["out"]))
    if again and "psg" in copy:
        copy["psg"] = trace.fresh(copy["psg"] + "_again_")
    if copy["op"] in T.ALIASES:  # a view or reshape names its run's part of the value
        copy["shape"] = list(copy["out"].shape)
    trace._reads[id(copy)] = trace._reads[id(entry)]
    if id(entry) in trace.matmul_tiles:
        trace.matmul_tiles[id(copy)] = trace.matmul_tiles[id(entry)]
    return copy
