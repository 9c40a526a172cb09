"""The rulebook's example D as a PyPTO kernel: max over dim 1 of a (16, 256, 256) fp32 tensor.

    python3 examples/pypto/amax_16x256x256.py

(1, 256, 64) keeps the reduction axis whole but moves 256 B runs; (1, 16, 256), (1, 32, 256) and
(1, 64, 256) meet the 1 KB contiguity threshold with 16, 8 and 4 reduction segments.
"""
import tilesim.pypto as pypto

SHAPE = (16, 256, 256)


@pypto.jit
def amax_kernel(x: pypto.Tensor(SHAPE, pypto.DT_FP32),
                y: pypto.Tensor((SHAPE[0], 1, SHAPE[2]), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 16, 256)
    y[:] = pypto.amax(x, dim=1, keepdim=True)


if __name__ == "__main__":
    amax_kernel(pypto.tensor(SHAPE, pypto.DT_FP32, "x"),
                pypto.tensor((SHAPE[0], 1, SHAPE[2]), pypto.DT_FP32, "y"))
    res = amax_kernel.traced.sweep(tiles=[[1, 256, 64], [1, 16, 256], [1, 32, 256],
                                          [1, 64, 256], [1, 128, 128]])
    print(res.table(top=5))
    print(res.recommendation)
