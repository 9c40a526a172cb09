"""Row softmax whose row fits one block, as in triton-ascend's softmax tutorial: one program per
row, BLOCK_SIZE the next power of two above the row length, the mask padding with -inf.

    tilesim trace-triton examples/triton/softmax.py --call "main()" --json softmax.json
"""
import tilesim.triton.standins  # noqa: F401 - tilesim's triton and torch; delete on a board
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    block_size = triton.next_power_of_2(n_cols)
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=block_size)
    return y


def main():
    return softmax(torch.randn(1823, 781, device="npu"))


if __name__ == "__main__":
    import tilesim.triton
    tilesim.triton.set_hardware("ascend910b4")
    main()
    print(tilesim.triton.LAUNCHES[-1].sweep().recommendation)
