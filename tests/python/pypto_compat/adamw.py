"""AdamW's update over a flat parameter as optimizer ports write it: four fp32 tensors in, three
out, the step's constants as scalars and pypto.full, a dynamic length with a valid_shape tail,
and runtime options."""
import torch

import pypto

CHUNK = 8192
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.01


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 64, "max_workspace_kb": 65536})
def adamw_kernel(param: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 grad: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 exp_avg: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 exp_avg_sq: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 param_out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 avg_out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 avg_sq_out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
    n = param.shape[0]
    pypto.set_vec_tile_shapes(4096)
    for i in pypto.loop(pypto.ceildiv(n, CHUNK), name="chunks"):
        off = i * CHUNK
        valid = [(n - off).min(CHUNK)]
        p = pypto.view(param, [CHUNK], [off], valid_shape=valid)
        g = pypto.view(grad, [CHUNK], [off], valid_shape=valid)
        m = pypto.view(exp_avg, [CHUNK], [off], valid_shape=valid)
        v = pypto.view(exp_avg_sq, [CHUNK], [off], valid_shape=valid)
        m_new = m * BETA1 + g * (1.0 - BETA1)
        v_new = v * BETA2 + g * g * (1.0 - BETA2)
        denom = pypto.sqrt(v_new) + pypto.full([CHUNK], EPS, pypto.DT_FP32)
        p_new = p * (1.0 - LR * WD) - m_new / denom * LR
        pypto.assemble(p_new, [off], param_out)
        pypto.assemble(m_new, [off], avg_out)
        pypto.assemble(v_new, [off], avg_sq_out)


def adamw_step(param, grad, exp_avg, exp_avg_sq):
    outs = [torch.empty_like(param) for _ in range(3)]
    adamw_kernel(param, grad, exp_avg, exp_avg_sq, *outs)
    return outs


if __name__ == "__main__":
    n = 1_000_000
    tensors = [torch.zeros(n, dtype=torch.float32, device="npu:0") for _ in range(4)]
    adamw_step(*tensors)
