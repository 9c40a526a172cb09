"""Rule 2's GroupNorm as a PyPTO kernel: (16, 64, 256, 256) fp32, 8 groups, no affine.

    python3 examples/pypto/groupnorm_16x64x256x256.py

The host passes x as (samples * groups, channels per group * H * W) = (128, 524288), a free
view of the contiguous tensor. The kernel loops over the 128 (sample, group) rows in LOOPS
chunks; each chunk's rows get their mean and variance (one pass for sum x and sum x^2), then
are normalised. Which loop count: the too-fragmented or the too-coarse end, or the middle?
"""
import tilesim.pypto as pypto

N, C, H, W, GROUPS = 16, 64, 256, 256, 8
ROWS, COLS = N * GROUPS, C // GROUPS * H * W
LOOPS = 128
EPS = 1e-5


@pypto.jit
def groupnorm(x: pypto.Tensor((ROWS, COLS), pypto.DT_FP32),
              y: pypto.Tensor((ROWS, COLS), pypto.DT_FP32)):
    chunk = ROWS // LOOPS
    for i in pypto.loop(LOOPS, name="rows"):
        xv = pypto.view(x, [chunk, COLS], [i * chunk, 0])
        pypto.set_vec_tile_shapes(1, 16384)
        mean = pypto.sum(xv, dim=-1, keepdim=True) / COLS
        mean_sq = pypto.sum(xv * xv, dim=-1, keepdim=True) / COLS
        r = pypto.rsqrt(mean_sq - mean * mean + EPS)
        pypto.assemble((xv - mean) * r, [i * chunk, 0], y)


if __name__ == "__main__":
    groupnorm(pypto.tensor((ROWS, COLS), pypto.DT_FP32, "x"),
              pypto.tensor((ROWS, COLS), pypto.DT_FP32, "y"))
    res = groupnorm.traced.sweep(tiles=None, loop_counts=[1, 2, 4, 8, 16, 32, 64, 128])
    print(res.table(top=8))
    print(res.recommendation)
