"""Per-head gating in the style of hyper-connection ports: the wrapper passes [T, H, D] hidden
states, the kernel reads them flat and per head (one argument in two shapes), sums each head,
gates it, splits the gates in halves (slices of a computed value), broadcasts them back over the
heads with a trailing unit dim (a reshape of a computed chunk) and writes a reshaped result."""
import torch

import pypto

HEADS, DIM, ROWS = 16, 128, 8


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 64})
def gated_heads_kernel(x: pypto.Tensor([pypto.DYNAMIC, HEADS, DIM], pypto.DT_FP32),
                       y: pypto.Tensor([pypto.DYNAMIC, HEADS, DIM], pypto.DT_FP32),
                       mixed: pypto.Tensor([pypto.DYNAMIC, 2, HEADS // 4], pypto.DT_FP32),
                       norm: pypto.Tensor([pypto.DYNAMIC, 1], pypto.DT_FP32)):
    t = x.shape[0]
    x_flat = pypto.reshape(x, [t, HEADS * DIM], inplace=True)
    for i in pypto.loop(0, t // ROWS, 1, name="TOKENS", idx_name="i"):
        rows_flat = x_flat[i * ROWS:(i + 1) * ROWS, :]
        rows = x[i * ROWS:(i + 1) * ROWS, :, :]
        pypto.set_vec_tile_shapes(ROWS, HEADS * DIM)
        pypto.assemble(pypto.sum(rows_flat * rows_flat, -1, keepdim=True), [i * ROWS, 0], norm)
        pypto.set_vec_tile_shapes(ROWS, HEADS, DIM)
        head = pypto.sum(rows, -1)
        pypto.set_vec_tile_shapes(ROWS, HEADS)
        gate = pypto.sigmoid(head)
        half = gate[:, 0:HEADS // 2] + gate[:, HEADS // 2:HEADS]
        pypto.set_vec_tile_shapes(ROWS, HEADS // 2)
        pypto.assemble(pypto.reshape(half * 0.5, [ROWS, 2, HEADS // 4]), [i * ROWS, 0, 0], mixed)
        pypto.set_vec_tile_shapes(ROWS, HEADS, DIM)
        pypto.assemble(pypto.reshape(gate, [ROWS, HEADS, 1]) * rows, [i * ROWS, 0, 0], y)


def gated_heads(hidden):
    y = torch.empty_like(hidden)
    mixed = torch.empty(hidden.shape[0], 2, HEADS // 4, dtype=hidden.dtype)
    norm = torch.empty(hidden.shape[0], 1, dtype=hidden.dtype)
    gated_heads_kernel(hidden, y, mixed, norm)
    return y, mixed, norm
