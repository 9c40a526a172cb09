"""Qwen-style RMSNorm then RoPE over [1, 11, 16, 128] bf16 (batch, tokens, heads, head dim), as
a PyPTO kernel: the hand-written program configs/programs/rmsnorm_rope_1x11x16x128.json
restated in PyPTO's API.

    python3 examples/pypto/rmsnorm_rope_1x11x16x128.py

Three tiles, as PyPTO fuses it: the row statistics, the [..., 1] rsqrt, the apply-and-rotate.
Which heads-per-tile should the apply stage take?
"""
import tilesim.pypto as pypto

B, S, H, D = 1, 11, 16, 128
EPS = 1e-6


def rotate_half(x):
    """concat(-x[..., D/2:], x[..., :D/2]), as the DeepSeek PyPTO kernels write it."""
    half = list(x.shape)
    half[-1] //= 2
    x1 = pypto.view(x, half, [0] * len(half))
    x2 = pypto.view(x, half, [0] * (len(half) - 1) + [half[-1]])
    return pypto.concat([x2 * (-1.0), x1 + 0.0], -1)


@pypto.jit
def rmsnorm_rope(x: pypto.Tensor((B, S, H, D), pypto.DT_BF16),
                 w: pypto.Tensor((D,), pypto.DT_FP32),
                 cos: pypto.Tensor((B, S, 1, D), pypto.DT_FP32),
                 sin: pypto.Tensor((B, S, 1, D), pypto.DT_FP32),
                 y: pypto.Tensor((B, S, H, D), pypto.DT_BF16)):
    for b in pypto.loop(B, name="batch"):
        xb = pypto.view(x, [1, S, H, D], [b, 0, 0, 0])
        pypto.set_vec_tile_shapes(1, 1, 16, 128)
        xf = pypto.cast(xb, pypto.DT_FP32)
        ssq = pypto.sum(xf * xf, dim=-1, keepdim=True)
        pypto.set_vec_tile_shapes(1, 11, 16, 1)
        r = pypto.rsqrt(ssq / D + EPS)
        pypto.set_vec_tile_shapes(1, 1, 16, 128)
        xw = xf * r * pypto.view(w, [D], [0])
        cb = pypto.view(cos, [1, S, 1, D], [b, 0, 0, 0])
        sb = pypto.view(sin, [1, S, 1, D], [b, 0, 0, 0])
        q = xw * cb + rotate_half(xw) * sb
        pypto.assemble(pypto.cast(q, pypto.DT_BF16), [b, 0, 0, 0], y)


if __name__ == "__main__":
    rmsnorm_rope(pypto.tensor((B, S, H, D), pypto.DT_BF16, "x"),
                 pypto.tensor((D,), pypto.DT_FP32, "w"),
                 pypto.tensor((B, S, 1, D), pypto.DT_FP32, "cos"),
                 pypto.tensor((B, S, 1, D), pypto.DT_FP32, "sin"),
                 pypto.tensor((B, S, H, D), pypto.DT_BF16, "y"))
    kernel = rmsnorm_rope.traced
    res = kernel.sweep(tile=kernel.tiles[2]["name"],
                       tiles=[[1, 1, h, 128] for h in (1, 2, 4, 8, 16)]
                       + [[1, s, 16, 128] for s in (2, 4)])
    print(res.table(top=7))
    print(res.recommendation)
