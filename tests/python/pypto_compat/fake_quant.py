"""Per-channel fake quantisation for quantisation-aware training, in the style of training ports:
bf16 weights cast to fp32, divided by a protected per-row scale, rounded, clipped to the int4
range and scaled back, over an unrolled row loop (loop_unroll)."""
import torch

import pypto

QMIN, QMAX = -8.0, 7.0


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 32})
def fake_quant_kernel(w: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16),
                      scale: pypto.Tensor([pypto.DYNAMIC, 1], pypto.DT_BF16),
                      out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_BF16), eps):
    rows, cols = w.shape
    pypto.set_vec_tile_shapes(16, 512)
    for r, n in pypto.loop_unroll(0, rows, 1, name="channels", idx_name="r",
                                  unroll_list=[64, 16]):
        wf = pypto.cast(pypto.view(w, [n, cols], [r, 0]), pypto.DT_FP32)
        s = pypto.maximum(pypto.cast(pypto.view(scale, [n, 1], [r, 0]), pypto.DT_FP32), eps)
        q = pypto.clip(pypto.round(wf / s), QMIN, QMAX)
        pypto.assemble(pypto.cast(q * s, pypto.DT_BF16), [r, 0], out)


def fake_quant(weight, scale, eps=1e-5):
    out = torch.empty_like(weight)
    fake_quant_kernel(weight, scale, out, eps)
    return out
