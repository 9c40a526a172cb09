"""A fused multiply-sum, y[r] = sum_c x[r, c] * w[c], as a Triton-Ascend kernel ran it on a
910B4: a grid of 40 programs, each owning BLOCK_M = 25 rows of a [1000, 8192] fp32 x and walking
them in (25, 512) sub-tiles, the products' sums accumulated across the row's sub-tiles.

    tilesim trace-triton examples/triton/mul_sum.py --call "main()" \
        --hardware ascend910b4 --json mul_sum.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl


@triton.jit
def mul_sum_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, BLOCK_M: tl.constexpr,
                   SUB_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < M
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for off in range(0, N, SUB_N):
        cols = off + tl.arange(0, SUB_N)
        col_mask = cols < N
        x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :],
                    mask=row_mask[:, None] & col_mask[None, :], other=0.0)
        w = tl.load(w_ptr + cols, mask=col_mask, other=0.0)
        acc += tl.sum(x * w[None, :], axis=1)
    tl.store(y_ptr + rows, acc, mask=row_mask)


def mul_sum(x, w, block_m=16, sub_n=512):
    m, n = x.shape
    y = torch.empty(m, dtype=x.dtype, device=x.device)
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]),)  # noqa: E731
    mul_sum_kernel[grid](x, w, y, m, n, x.stride(0), BLOCK_M=block_m, SUB_N=sub_n)
    return y


def main():
    return mul_sum(torch.randn(1000, 8192, device="npu"), torch.randn(8192, device="npu"))


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
