"""A linear layer as a PyPTO kernel: relu(a @ b + bias) with a [2048, 4096] x [4096, 2048] fp16
matmul accumulated in fp32, the bias add and relu a vector epilogue, cast back to fp16.

    python3 examples/pypto/matmul_bias_relu_2048x4096x2048.py

Which cube tile: the C tile each task owns and the k step it stages in L1?
"""
import tilesim.pypto as pypto

M, K, N = 2048, 4096, 2048


@pypto.jit
def linear_relu(a: pypto.Tensor((M, K), pypto.DT_FP16),
                b: pypto.Tensor((K, N), pypto.DT_FP16),
                bias: pypto.Tensor((N,), pypto.DT_FP32),
                out: pypto.Tensor((M, N), pypto.DT_FP16)):
    pypto.set_cube_tile_shapes([128, 128], [128, 128], [256, 256])
    c = pypto.matmul(a, b, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(64, 256)
    out[:] = pypto.cast(pypto.relu(c + bias), pypto.DT_FP16)


if __name__ == "__main__":
    linear_relu(pypto.tensor((M, K), pypto.DT_FP16, "a"), pypto.tensor((K, N), pypto.DT_FP16, "b"),
                pypto.tensor((N,), pypto.DT_FP32, "bias"), pypto.tensor((M, N), pypto.DT_FP16, "out"))
    kernel = linear_relu.traced
    res = kernel.sweep(tile=kernel.tiles[0]["name"],
                       tiles=[[128, 64, 128], [128, 128, 128], [128, 128, 256], [256, 64, 128],
                              [256, 64, 256], [128, 256, 128]])
    print(res.table(top=6))
    print(res.recommendation)
