"""BatchNorm's statistics pass as training ports write it: an NCHW activation reshaped to
[N, C, H * W] (a contiguous reshape), per-channel sums over the spatial dim, then over the
batch, for the mean and the mean of squares."""
import torch

import pypto

N, C, H, W = 8, 64, 28, 28


@pypto.jit
def bn_stats_kernel(x: pypto.Tensor([N, C, H, W], pypto.DT_FP32),
                    mean: pypto.Tensor([1, C], pypto.DT_FP32),
                    mean_sq: pypto.Tensor([1, C], pypto.DT_FP32)):
    x3 = pypto.reshape(x, [N, C, H * W])
    pypto.set_vec_tile_shapes(1, 16, H * W)
    s = pypto.sum(x3, -1)
    sq = pypto.sum(x3 * x3, -1)
    pypto.set_vec_tile_shapes(N, 64)
    count = 1.0 / (N * H * W)
    pypto.assemble(pypto.sum(s, 0, keepdim=True) * count, [0, 0], mean)
    pypto.assemble(pypto.sum(sq, 0, keepdim=True) * count, [0, 0], mean_sq)


def batch_norm_stats(x):
    mean = torch.empty(1, x.shape[1], dtype=x.dtype, device=x.device)
    mean_sq = torch.empty_like(mean)
    bn_stats_kernel(x, mean, mean_sq)
    return mean, mean_sq
