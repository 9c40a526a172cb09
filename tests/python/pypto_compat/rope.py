"""Rotary position embedding over [tokens, heads, head_dim] as Llama / Qwen ports write it: the
wrapper allocates the output with torch, cos / sin are [tokens, head_dim] and unsqueezed to
broadcast over the heads, rotate_half is a concat of the two halves, the kernel is allowed into
torch.compile graphs, and the token loop is unrolled by 2."""
import torch

import pypto

HEADS, HEAD_DIM = 16, 128
TOKENS_PER_ROOT = 8


def rotate_half(x):
    half = HEAD_DIM // 2
    x1 = pypto.view(x, [x.shape[0], HEADS, half], [0, 0, 0])
    x2 = pypto.view(x, [x.shape[0], HEADS, half], [0, 0, half])
    return pypto.concat([x2 * -1.0, x1 + 0.0], -1)


@pypto.frontend.jit(pass_options={"cube_l1_reuse_setting": {-1: 2}})
def rope_kernel(q: pypto.Tensor([pypto.DYNAMIC, HEADS, HEAD_DIM], pypto.DT_FP16),
                cos: pypto.Tensor([pypto.DYNAMIC, HEAD_DIM], pypto.DT_FP16),
                sin: pypto.Tensor([pypto.DYNAMIC, HEAD_DIM], pypto.DT_FP16),
                out: pypto.Tensor([pypto.DYNAMIC, HEADS, HEAD_DIM], pypto.DT_FP16)):
    tokens = q.shape[0]
    cos3 = pypto.unsqueeze(cos, 1)
    sin3 = pypto.unsqueeze(sin, 1)
    for t in pypto.loop(tokens // TOKENS_PER_ROOT, name="tokens", unroll_list=[2, 1]):
        qv = pypto.view(q, [TOKENS_PER_ROOT, HEADS, HEAD_DIM], [t * TOKENS_PER_ROOT, 0, 0])
        cv = pypto.view(cos3, [TOKENS_PER_ROOT, 1, HEAD_DIM], [t * TOKENS_PER_ROOT, 0, 0])
        sv = pypto.view(sin3, [TOKENS_PER_ROOT, 1, HEAD_DIM], [t * TOKENS_PER_ROOT, 0, 0])
        pypto.set_vec_tile_shapes(TOKENS_PER_ROOT, 4, HEAD_DIM)
        res = qv * cv + rotate_half(qv) * sv
        pypto.assemble(res, [t * TOKENS_PER_ROOT, 0, 0], out)


@torch._dynamo.allow_in_graph
def apply_rope(q, cos, sin):
    out = torch.empty_like(q)
    rope_kernel(q, cos, sin, out)
    return out


def main():
    tokens = 48
    q = torch.randn(tokens, HEADS, HEAD_DIM, dtype=torch.float16, device="npu")
    cos = torch.randn(tokens, HEAD_DIM, dtype=torch.float16, device="npu")
    sin = torch.randn(tokens, HEAD_DIM, dtype=torch.float16, device="npu")
    out = apply_rope(q, cos, sin)
    print(out.shape)


if __name__ == "__main__":
    main()
