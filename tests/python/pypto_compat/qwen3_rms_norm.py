"""Qwen3-style RMSNorm as model ports write it: a dynamic token count, a torch custom op around
the kernel, vec_nbuffer_setting, and a valid_shape tail on the last chunk of tokens."""
import torch
import torch_npu  # noqa: F401 - the port imports it for the NPU device

import pypto

HIDDEN = 2048
TOKENS_PER_ROOT = 32
EPS = 1e-6


@pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 4}},
                    runtime_options={"run_mode": pypto.RunMode.NPU})
def rms_norm_kernel(x: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_BF16),
                    gamma: pypto.Tensor([HIDDEN], pypto.DT_BF16),
                    y: pypto.Tensor([pypto.DYNAMIC, HIDDEN], pypto.DT_BF16)):
    tokens = x.shape[0]
    for i in pypto.loop(pypto.ceildiv(tokens, TOKENS_PER_ROOT), name="tokens", idx_name="t"):
        offset = i * TOKENS_PER_ROOT
        valid = pypto.min(TOKENS_PER_ROOT, tokens - offset)
        xv = pypto.view(x, [TOKENS_PER_ROOT, HIDDEN], [offset, 0], valid_shape=[valid, HIDDEN])
        pypto.set_vec_tile_shapes(8, HIDDEN)
        out = pypto.rms_norm(xv, gamma, EPS)
        pypto.assemble(out, [offset, 0], y)


@torch.library.custom_op("qwen3::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    rms_norm_kernel(pypto.from_torch(x, "x", dynamic_axis=[0]), pypto.from_torch(gamma, "gamma"),
                    pypto.from_torch(y, "y", dynamic_axis=[0]))
    return y


@rms_norm.register_fake
def _(x, gamma):
    return torch.empty_like(x)


if __name__ == "__main__":
    torch.npu.set_device(0)
    x = torch.randn(100, HIDDEN, dtype=torch.bfloat16).npu()
    gamma = torch.ones(HIDDEN, dtype=torch.bfloat16).npu()
    y = torch.ops.qwen3.rms_norm(x, gamma)
    torch.npu.synchronize()
    ref = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()
    assert torch.allclose(y.float(), ref, atol=1e-2)
