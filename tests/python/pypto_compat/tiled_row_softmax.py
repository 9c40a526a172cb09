"""A row softmax over a long row in the style of attention ports: the wrapper pads the row to
whole tiles (torch.full + torch.cat) and picks the tile count; the kernel walks each row's
tiles in a Python loop three times, keeping its running max and sum in tensors it makes itself
(pypto.tensor) and updates with t[:] = ... (the first tile sets them, the others fold in)."""
import torch

import pypto

TILE = 512


@pypto.frontend.jit
def row_softmax_kernel(s: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP16),
                       p: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP16),
                       tiles: int):
    for r in pypto.loop(s.shape[0], name="ROWS"):
        peak = pypto.tensor([1], pypto.DT_FP32, "peak")
        pypto.set_vec_tile_shapes(1, TILE)
        for t in range(tiles):
            part = pypto.cast(pypto.view(s, [1, TILE], [r, t * TILE]), pypto.DT_FP32)
            top = pypto.amax(part, dim=-1, keepdim=True)
            peak[:] = top if t == 0 else pypto.maximum(peak, top)
        total = pypto.tensor([1], pypto.DT_FP32, "total")
        for t in range(tiles):
            part = pypto.cast(pypto.view(s, [1, TILE], [r, t * TILE]), pypto.DT_FP32)
            e = pypto.sum(pypto.exp(part - peak), dim=-1, keepdim=True)
            if t == 0:
                total.move(e)
            else:
                total[:] = total + e
        for t in range(tiles):
            part = pypto.cast(pypto.view(s, [1, TILE], [r, t * TILE]), pypto.DT_FP32)
            out = pypto.cast(pypto.exp(part - peak) / total, pypto.DT_FP16)
            pypto.assemble(out, [r, t * TILE], p)


def row_softmax(scores):
    rows, cols = scores.shape
    tiles = (cols + TILE - 1) // TILE
    if tiles * TILE > cols:
        pad = torch.full((rows, tiles * TILE - cols), -6e4, dtype=scores.dtype)
        scores = torch.cat([scores, pad], dim=1)
    p = torch.empty(rows, tiles * TILE, dtype=scores.dtype)
    row_softmax_kernel(scores, p, tiles)
    return p[:, :cols]
