"""A decoder layer's post-attention norm as a Qwen3 / Llama port to PyPTO writes it, unchanged:
torch at the top, a dynamic token count, the residual add written back for the next layer, the
RMSNorm composite, a valid_shape tail on the last block of tokens, pass options, and a torch
custom op as the entry point the model calls. tilesim traces it through that entry point
(examples/pypto/trace_a_port.py, or `tilesim trace-pypto` on this file)."""
import torch
import torch_npu  # noqa: F401 - the NPU device for torch

import pypto

HIDDEN_SIZE = 4096
BLOCK = 48  # tokens per root function
RMS_EPS = 1e-6


@pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {-1: 2}, "pg_upper_bound": 8192},
                    runtime_options={"stitch_function_max_num": 64, "device_sched_mode": 0})
def post_attention_norm(hidden: pypto.Tensor([pypto.DYNAMIC, HIDDEN_SIZE], pypto.DT_BF16),
                        residual: pypto.Tensor([pypto.DYNAMIC, HIDDEN_SIZE], pypto.DT_BF16),
                        weight: pypto.Tensor([HIDDEN_SIZE], pypto.DT_BF16),
                        normed: pypto.Tensor([pypto.DYNAMIC, HIDDEN_SIZE], pypto.DT_BF16),
                        new_residual: pypto.Tensor([pypto.DYNAMIC, HIDDEN_SIZE], pypto.DT_BF16)):
    num_tokens = hidden.shape[0]
    for blk in pypto.loop(pypto.ceildiv(num_tokens, BLOCK), name="token_blocks", idx_name="blk"):
        start = blk * BLOCK
        rows = [(num_tokens - start).min(BLOCK), HIDDEN_SIZE]
        h = pypto.view(hidden, [BLOCK, HIDDEN_SIZE], [start, 0], valid_shape=rows)
        r = pypto.view(residual, [BLOCK, HIDDEN_SIZE], [start, 0], valid_shape=rows)
        pypto.set_vec_tile_shapes(4, HIDDEN_SIZE)
        summed = pypto.add(h, r)
        pypto.assemble(summed, [start, 0], new_residual)
        pypto.assemble(pypto.rms_norm(summed, weight, RMS_EPS), [start, 0], normed)


@torch.library.custom_op("decoder::post_attention_norm", mutates_args=())
def post_attention_norm_op(hidden: torch.Tensor, residual: torch.Tensor,
                           weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    normed, new_residual = torch.empty_like(hidden), torch.empty_like(residual)
    post_attention_norm(hidden, residual, weight, normed, new_residual)
    return normed, new_residual


@post_attention_norm_op.register_fake
def _(hidden, residual, weight):
    return torch.empty_like(hidden), torch.empty_like(residual)


def decode_step(num_tokens=200):
    """What the model does: one call of the op on this step's tokens."""
    hidden = torch.randn(num_tokens, HIDDEN_SIZE, dtype=torch.bfloat16, device="npu")
    residual = torch.randn_like(hidden)
    weight = torch.ones(HIDDEN_SIZE, dtype=torch.bfloat16, device="npu")
    return torch.ops.decoder.post_attention_norm(hidden, residual, weight)


if __name__ == "__main__":
    decode_step()
