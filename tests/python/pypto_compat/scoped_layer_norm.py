"""A LayerNorm written as the vendor's example files write theirs: a test function under
@pypto.options(pass_options=...) builds the torch tensors and calls the kernel, the wrapper
skips fake tensors (torch._subclasses) and is registered with torch.library.impl's older
spelling (the library first), and the kernel sets its tiles inside an options scope."""
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor

import pypto


@dataclass
class NormSettings:
    eps: float = 1e-5
    rows_per_tile: int = 16


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def layer_norm_kernel(x: pypto.Tensor(), gamma: pypto.Tensor(), beta: pypto.Tensor(),
                      out: pypto.Tensor(), settings: NormSettings):
    hidden = x.shape[1]
    with pypto.options(name="norm", vec_tile_shapes=[settings.rows_per_tile, hidden]):
        xf = pypto.cast(x, pypto.DT_FP32)
        mean = pypto.sum(xf, dim=-1, keepdim=True) / hidden
        centred = xf - mean
        var = pypto.sum(centred * centred, dim=-1, keepdim=True) / hidden
        normed = centred / pypto.sqrt(var + settings.eps)
        g = pypto.cast(gamma, pypto.DT_FP32)
        b = pypto.cast(beta, pypto.DT_FP32)
        pypto.assemble(pypto.cast(normed * g + b, x.dtype), [0, 0], out)


def layer_norm(x, gamma, beta):
    if isinstance(x, FakeTensor):
        return torch.empty_like(x)
    out = torch.empty_like(x)
    layer_norm_kernel(x, gamma, beta, out, NormSettings())
    return out


normlib = torch.library.Library("demo_norms", "FRAGMENT")
normlib.define("layer_norm(Tensor x, Tensor gamma, Tensor beta) -> Tensor")


@torch.library.impl(normlib, "layer_norm", "Meta")
def layer_norm_meta(x, gamma, beta):
    return torch.empty_like(x)


@torch.library.impl(normlib, "layer_norm", "NPU")
def layer_norm_npu(x, gamma, beta):
    return layer_norm(x, gamma, beta)


@pypto.options(pass_options={"enable_slice": True})
def test_layer_norm(tokens=128, hidden=1024):
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="npu:0")
    gamma = torch.ones(1, hidden, dtype=torch.bfloat16, device="npu:0")
    beta = torch.zeros(1, hidden, dtype=torch.bfloat16, device="npu:0")
    return torch.ops.demo_norms.layer_norm(x, gamma, beta)


if __name__ == "__main__":
    test_layer_norm()
