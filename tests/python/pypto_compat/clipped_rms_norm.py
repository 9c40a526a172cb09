"""An RMSNorm over a dynamic token count as model ports write it for a fixed hidden size: an
unrolled row loop (unroll_list) whose body reshapes and casts the 1-D weight before its first
view, a valid_shape tail, a clipped input, labels on the ops and a scope option."""
import torch

import pypto

HIDDEN = 2048
ROWS = 8


@pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 2}})
def clipped_rms_norm_kernel(x: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16),
                            weight: pypto.Tensor([HIDDEN], pypto.DT_FP16),
                            y: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16)):
    tokens = x.shape[0]
    pypto.set_vec_tile_shapes(1, HIDDEN)  # replaced before any op uses it
    pypto.set_vec_tile_shapes(ROWS, HIDDEN)
    for r in pypto.loop(pypto.ceildiv(tokens, ROWS), name="rows", unroll_list=[4, 1]):
        pypto.set_semantic_label("weight")
        w = pypto.cast(pypto.reshape(weight, [1, HIDDEN]), pypto.DT_FP32)
        start = r * ROWS
        rows = pypto.view(x, [ROWS, HIDDEN], [start, 0],
                          valid_shape=[(tokens - start).min(ROWS), HIDDEN])
        pypto.set_semantic_label("norm")
        xf = pypto.clip(pypto.cast(rows, pypto.DT_FP32), -60000.0, 60000.0)
        ms = pypto.sum(xf * xf, -1, keepdim=True) / HIDDEN
        normed = xf * pypto.rsqrt(ms + 1e-6)
        pypto.assemble(pypto.cast(normed * w, pypto.DT_FP16), [start, 0], y)


def rms_norm(hidden_states, weight):
    flat = hidden_states.reshape(-1, HIDDEN)
    out = torch.empty_like(flat)
    clipped_rms_norm_kernel(flat, weight, out)
    return out.reshape(hidden_states.shape)
