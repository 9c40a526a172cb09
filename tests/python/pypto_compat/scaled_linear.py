"""A linear layer with a bias and an output scale, in the style of model ports: the wrapper
flattens the batch, reads the scale with .item() and passes the bias as a [1, n] row; the
kernel walks A's rows and adds the bias in the cube (extend_params), then scales on the vector
cores."""
import torch

import pypto


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
def scaled_linear_kernel(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP16),
                         w: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16),
                         bias: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                         out: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32),
                         scale: float):
    m, k = x.shape
    n = w.shape[0]
    rows = 64
    pypto.set_vec_tile_shapes(32, 256)
    for i in pypto.loop(0, m // rows, 1, name="ROWS", idx_name="i"):
        xt = pypto.view(x, [rows, k], [i * rows, 0])
        pypto.set_cube_tile_shapes([64, 64], [128, 128], [128, 128])
        y = pypto.matmul(xt, w, pypto.DT_FP32, b_trans=True,
                         extend_params={"bias_tensor": bias})
        pypto.assemble(pypto.mul(y, scale), [i * rows, 0], out)


def scaled_linear(x, weight, bias, scale):
    x2 = x.reshape(-1, x.shape[-1])
    out = torch.empty(x2.shape[0], weight.shape[0], dtype=torch.float32, device=x.device)
    scaled_linear_kernel(x2, weight, bias.unsqueeze(0), out, float(scale.item()))
    return out.view(*x.shape[:-1], weight.shape[0])
