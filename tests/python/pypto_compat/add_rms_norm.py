"""Add + RMSNorm (the residual add of a decoder layer, then its norm) as ports write it: the
sum is written out as the next residual and normed, two kernels share the file (the second uses
a construct outside tilesim's model, the first traces regardless), set_pass_options inside the
kernel with a merge scope, and an unrolled token loop."""
import torch

import pypto

HIDDEN = 4096
ROWS = 4
EPS = 1e-6


@pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 2},
                                  "pg_upper_bound": 4096})
def add_rms_norm_kernel(x: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16),
                        residual: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16),
                        gamma: pypto.Tensor([HIDDEN], pypto.DT_FP16),
                        y: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16),
                        residual_out: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16)):
    tokens = x.shape[0]
    pypto.set_pass_options(sg_set_scope=1)
    for i in pypto.loop(tokens // ROWS, name="rows", unroll_list=[4, 2, 1]):
        xv = pypto.view(x, [ROWS, HIDDEN], [i * ROWS, 0])
        rv = pypto.view(residual, [ROWS, HIDDEN], [i * ROWS, 0])
        pypto.set_vec_tile_shapes(ROWS, HIDDEN)
        s = xv + rv
        pypto.assemble(s, [i * ROWS, 0], residual_out)
        pypto.assemble(pypto.rms_norm(s, gamma, EPS), [i * ROWS, 0], y)
    pypto.set_pass_options(sg_set_scope=-1)


@pypto.frontend.jit
def top_k_kernel(x: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_FP16),
                 idx: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(1, HIDDEN)
    pypto.assemble(pypto.topk(x, 8, -1)[1], [0, 0], idx)


def add_rms_norm(x, residual, gamma):
    y, res = torch.empty_like(x), torch.empty_like(x)
    add_rms_norm_kernel(x, residual, gamma, y, res)
    return y, res


def top_k(x):
    idx = torch.empty(x.shape[0], 8, dtype=torch.int32, device=x.device)
    top_k_kernel(x, idx)
    return idx


if __name__ == "__main__":
    x = torch.randn(44, HIDDEN, dtype=torch.float16, device="npu")
    top_k(x)
    add_rms_norm(x, torch.randn_like(x), torch.ones(HIDDEN, dtype=torch.float16, device="npu"))
