"""Attention-score softmax over [batch, heads, q, kv] as decode ports write it: the batch is
dynamic, the kernel is called through torch.library's Library / impl registration for the NPU,
and the (batch, head) rows run in one loop over batch * heads with loop_unroll."""
import torch

import pypto

HEADS, Q, KV = 8, 16, 1024

lib = torch.library.Library("attn", "DEF")
lib.define("softmax(Tensor scores) -> Tensor")


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 32, "device_sched_mode": 1})
def softmax_kernel(scores: pypto.Tensor([pypto.DYNAMIC, HEADS, Q, KV], pypto.DT_FP16),
                   probs: pypto.Tensor([pypto.DYNAMIC, HEADS, Q, KV], pypto.DT_FP16)):
    batch = scores.shape[0]
    for b, n in pypto.loop_unroll(batch, name="batch", idx_name="b", unroll_list=[2, 1]):
        sv = pypto.view(scores, [n, HEADS, Q, KV], [b, 0, 0, 0])
        pypto.set_vec_tile_shapes(1, 1, 8, KV)
        pypto.assemble(pypto.softmax(sv, -1), [b, 0, 0, 0], probs)


def softmax_npu(scores):
    probs = torch.empty(scores.shape, dtype=scores.dtype, device=scores.device)
    softmax_kernel(scores, probs)
    return probs


lib.impl("softmax", softmax_npu, "PrivateUse1")


if __name__ == "__main__":
    s = torch.randn(4, HEADS, Q, KV, dtype=torch.float16).npu()
    p = torch.ops.attn.softmax(s)
    print(p.sum(-1).shape)
