"""A matmul with tl.dot as Triton-Ascend users write it: the grid is the cube-core count, each
program takes C tiles range(pid, tiles, num_programs), walks K in BLOCK_K steps accumulating
tl.dot in float32, and writes C in float16.

    tilesim trace-triton examples/triton/matmul.py --call "main()" \
        --hardware ascend910b4 --json matmul.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_n
    for tile in range(pid, num_tiles, tl.num_programs(0)):
        rm = (tile // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = (tile % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            rk = k + tl.arange(0, BLOCK_K)
            a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, block_m=128, block_n=128, block_k=64):
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), dtype=torch.float16, device=a.device)
    cores = triton.runtime.driver.active.utils.get_device_properties("npu")["num_aicore"]
    matmul_kernel[(cores,)](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)
    return c


def main():
    a = torch.randn(2048, 1024, dtype=torch.float16, device="npu")
    b = torch.randn(1024, 2048, dtype=torch.float16, device="npu")
    return matmul(a, b)


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
