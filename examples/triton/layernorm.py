"""LayerNorm over long rows as the Triton tutorials write it: one program per row, each row
walked in BLOCK_N column blocks three times: the mean, the variance, then the normalised
output (x is read three times).

    tilesim trace-triton examples/triton/layernorm.py --call "main()" --json layernorm.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd(X, Y, W, B, stride, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def layer_norm(x, weight, bias, eps=1e-5, block_n=1024):
    m, n = x.shape
    y = torch.empty_like(x)
    layer_norm_fwd[(m,)](x, y, weight, bias, x.stride(0), n, eps, BLOCK_N=block_n)
    return y


def main():
    x = torch.randn(1151, 8192, device="npu")
    return layer_norm(x, torch.ones(8192, device="npu"), torch.zeros(8192, device="npu"))


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
