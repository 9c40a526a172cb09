"""A row sum whose grid is the vector-core count: each program takes rows
range(pid, M, num_programs) and walks each row in BLOCK_N column blocks, accumulating the
block sums (the row-reduction pattern of Triton-Ascend operator libraries).

    tilesim trace-triton examples/triton/row_sum.py --call "main()" \
        --hardware ascend910b4 --json row_sum.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, M, N, stride_m, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    for row in tl.range(pid, M, tl.num_programs(0)):
        acc = 0.0
        for off in range(0, N, BLOCK_N):
            cols = off + tl.arange(0, BLOCK_N)
            x = tl.load(x_ptr + row * stride_m + cols, mask=cols < N, other=0.0)
            acc += tl.sum(x, axis=0)
        tl.store(out_ptr + row, acc)


def row_sum(x, block_n=2048):
    m, n = x.shape
    out = torch.empty(m, dtype=x.dtype, device=x.device)
    props = triton.runtime.driver.active.utils.get_device_properties("npu")
    grid = (props["num_vectorcore"],)
    row_sum_kernel[grid](x, out, m, n, x.stride(0), BLOCK_N=block_n)
    return out


def main():
    return row_sum(torch.randn(1000, 8192, device="npu"))


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
