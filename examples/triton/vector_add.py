"""Vector add as Triton-Ascend users write it: one BLOCK_SIZE block per program, the grid from
the element count, a mask for the last, partial block.

    tilesim trace-triton examples/triton/vector_add.py --call "main()" --json add.json
    python3 examples/triton/vector_add.py        # traces, runs and prints tilesim's answer
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import torch_npu  # noqa: F401 - the NPU device, as on a board
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, block_size=8192):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size)
    return out


def main():
    x = torch.rand(1_000_003, device="npu")
    y = torch.rand(1_000_003, device="npu")
    return add(x, y)


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
