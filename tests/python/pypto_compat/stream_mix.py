"""Mixing a few residual streams per token, as hyper-connection ports write it: the wrapper
flattens [B, S, N, D] to tokens and picks the fp32 or bf16 kernel by dtype (the file defines
both, the call runs one); the kernel reshapes its per-token weights for broadcasting before an
unrolled token loop, slices each argument by the loop's rows, views one stream of a slice at a
time, and accumulates with axpy_."""
import torch

import pypto

STREAMS = 4


def _mix(x, w, bias, y, dtype):
    t, d = x.shape[0], x.shape[2]
    w_col = pypto.reshape(w, [t, STREAMS, 1], inplace=True)
    for i, n in pypto.loop_unroll(0, t, 1, name="TOKENS", idx_name="i", unroll_list=[8, 4, 1]):
        xs = x[i:i + n, :, :]
        ws = w_col[i:i + n, :, :]
        pypto.set_vec_tile_shapes(1, STREAMS, 1024)
        acc = pypto.cast(bias[i:i + n, :, :], pypto.DT_FP32) * 0.5
        for k in range(STREAMS):
            stream = pypto.cast(pypto.view(xs, [n, 1, d], [0, k, 0]), pypto.DT_FP32)
            weight = pypto.view(ws, [n, 1, 1], [0, k, 0])
            acc.axpy_(stream * weight, alpha=1.0)
        pypto.assemble(pypto.cast(acc, dtype), [i, 0, 0], y)


@pypto.frontend.jit
def stream_mix_fp32(x: pypto.Tensor([pypto.DYNAMIC, STREAMS, pypto.STATIC], pypto.DT_FP32),
                    w: pypto.Tensor([pypto.DYNAMIC, STREAMS], pypto.DT_FP32),
                    bias: pypto.Tensor([pypto.DYNAMIC, 1, pypto.STATIC], pypto.DT_FP32),
                    y: pypto.Tensor([pypto.DYNAMIC, 1, pypto.STATIC], pypto.DT_FP32)):
    _mix(x, w, bias, y, pypto.DT_FP32)


@pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 2}})
def stream_mix_bf16(x: pypto.Tensor([pypto.DYNAMIC, STREAMS, pypto.STATIC], pypto.DT_BF16),
                    w: pypto.Tensor([pypto.DYNAMIC, STREAMS], pypto.DT_FP32),
                    bias: pypto.Tensor([pypto.DYNAMIC, 1, pypto.STATIC], pypto.DT_BF16),
                    y: pypto.Tensor([pypto.DYNAMIC, 1, pypto.STATIC], pypto.DT_BF16)):
    _mix(x, w, bias, y, pypto.DT_BF16)


def stream_mix(x, w, bias):
    b, s, n, d = x.shape
    flat = x.view(b * s, n, d).contiguous()
    y = torch.empty(b * s, 1, d, dtype=x.dtype)
    kernel = stream_mix_bf16 if x.dtype == torch.bfloat16 else stream_mix_fp32
    kernel(flat, w.view(b * s, n), bias.view(b * s, 1, d), y)
    return y.view(b, s, 1, d)
