"""A loop whose last chunk is a valid_shape tail, as PyPTO runs it: count - 1 chunks of the full
size, then one of the rest. A program loop cuts its axis into even chunks, so the trace writes
two program loops over the two parts of every tensor the loop cuts: the head (count - 1 chunks,
exactly the kernel's) and the tail (one chunk of the rest). Within each chunk the lowering cuts
the kernel's tiles, the last one partial: its copies and vector work at the valid size, its UB
at the full tile.
"""
from . import _trace as T


def split(trace, frame):
    """The program entries [head loop, tail loop] of `frame`; [] when one loop of even chunks
    is already the kernel's; None when its body is outside what the split handles (nested
    loops, unrolling, a matmul before the body's cube tile): the caller then writes one loop
    of even chunks and a note."""
    chunk, last = frame.tail
    head_extent = (frame.count - 1) * chunk
    if -(-frame.extent // frame.count) == chunk:
        return []  # the program's even chunks are the kernel's: one loop is exact
    first_cube = next((i for i, e in enumerate(frame.body) if "set_cube_tile_shapes" in e), None)
    if (frame.count < 2 or frame.unroll != 1 or any("loop" in e for e in frame.body)
            or (first_cube is not None and any(e.get("op") == "matmul"
                                               for e in frame.body[:first_cube]))):
        return None
    cut = _cut_values(trace, frame)
    written = {id(v): gm for gm in trace.written for v in [getattr(gm, "alias", None)]}
    if any(v.kind not in ("temp", "param", "gm") and key not in written
           for key, (v, _) in cut.items()):
        return None  # a value the kernel returns: it keeps one loop
    head, tail = {}, {}
    for key, (v, d) in cut.items():
        head[key] = _part(trace, v, d, 0, head_extent, "head", written.get(key))
        tail[key] = _part(trace, v, d, head_extent, last, "tail", written.get(key))
    for key in cut:
        if key in written:  # the output is written as its two parts
            del trace.written[written[key]]
    head_body = [_copy(trace, e, head, False) for e in frame.body]
    # the tail sets the tiles its ops run under again, under names of their own (a sweep of
    # the kernel's tile varies the head's)
    start = frame.tile_at_start
    tail_body = [] if start is None or (frame.body and "op" not in frame.body[0]) else [
        {"set_vec_tile_shapes": list(start["dims"]), "name": trace.fresh(start["name"] + "_")}]
    tail_body += [_copy(trace, e, tail, True) for e in frame.body]
    frame.program_count, frame.extent = frame.count - 1, head_extent
    trace.notes.append(
        f"loop '{frame.name}': {frame.count - 1} chunks of {chunk} then its valid_shape tail of "
        f"{last}, as PyPTO runs it: the program loops over the head ({head_extent} rows of dim "
        f"{frame.axis}) and, as '{frame.name}_tail', over the tail")
    return [{"loop": frame.name, "axis": frame.axis, "loop_count": frame.count - 1,
             "body": head_body},
            {"loop": trace.claim(f"{frame.name}_tail", "pypto.loop"), "axis": frame.axis,
             "loop_count": 1, "body": tail_body}]


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
    """The value standing for rows [start, start + size) of dim d of `v` in the head or tail:
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


def _copy(trace, entry, mapping, tail):
    """A copy of a body entry with the head's or tail's values (a tile entry as it is); the
    tail's stage names are its own."""
    if "op" not in entry:
        return dict(entry, name=trace.fresh(entry["name"] + "_tail_")) if tail else entry
    copy = dict(entry, inputs=[mapping.get(id(v), v) for v in entry["inputs"]],
                out=mapping.get(id(entry["out"]), entry["out"]))
    if tail and "psg" in copy:
        copy["psg"] = trace.fresh(copy["psg"] + "_tail_")
    trace._reads[id(copy)] = trace._reads[id(entry)]
    return copy
