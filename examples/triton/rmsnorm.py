"""RMSNorm with a weight, in the style of Triton-Ascend operator libraries: the grid is the
vector-core count (asked of the driver), each program loops over its rows
(range(pid, n_rows, num_programs)) and reads each row once, as one block.

    tilesim trace-triton examples/triton/rmsnorm.py --call "main()" \
        --hardware ascend910b4 --json rmsnorm.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl
import triton.runtime.driver as driver


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_rows, n_cols, x_stride, y_stride, eps,
                    BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    for row in range(pid, n_rows, num_programs):
        x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean_sq = tl.sum(x * x, axis=0) / n_cols
        rstd = tl.rsqrt(mean_sq + eps)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = x * rstd * w
        tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x, weight, eps=1e-6):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    cores = driver.active.utils.get_device_properties(torch.npu.current_device())["num_vectorcore"]
    grid = (min(cores, n_rows),)
    rms_norm_kernel[grid](x, weight, y, n_rows, n_cols, x.stride(0), y.stride(0), eps,
                          BLOCK_N=triton.next_power_of_2(n_cols))
    return y


def main():
    x = torch.randn(4096, 2048, dtype=torch.float16, device="npu")
    return rms_norm(x, torch.ones(2048, dtype=torch.float16, device="npu"))


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
