"""Per-head RoPE in the style of decoder ports that build one kernel per head count with a
factory (queries and keys get their own kernel, both named `kernel` inside it): the token loop
takes a tail with valid_shape, views the rotated halves of a computed chunk with the same tail,
concatenates them along the head dim's last axis, and casts the concat back with a rounding
mode."""
import pypto

DIM, HALF, TOKENS = 64, 32, 4


def _make(heads):
    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 32})
    def kernel(x: pypto.Tensor([pypto.DYNAMIC, heads, DIM], pypto.DT_BF16),
               cos: pypto.Tensor([pypto.DYNAMIC, 1, HALF], pypto.DT_FP32),
               sin: pypto.Tensor([pypto.DYNAMIC, 1, HALF], pypto.DT_FP32),
               out: pypto.Tensor([pypto.DYNAMIC, heads, DIM], pypto.DT_BF16)):
        t = x.shape[0]
        for b in pypto.loop((t + TOKENS - 1) // TOKENS, name="TOK", idx_name="b"):
            rows = (t - b * TOKENS).min(TOKENS)
            xv = pypto.view(x, [TOKENS, heads, DIM], [b * TOKENS, 0, 0],
                            valid_shape=[rows, heads, DIM])
            c = pypto.view(cos, [TOKENS, 1, HALF], [b * TOKENS, 0, 0], valid_shape=[rows, 1, HALF])
            s = pypto.view(sin, [TOKENS, 1, HALF], [b * TOKENS, 0, 0], valid_shape=[rows, 1, HALF])
            pypto.set_vec_tile_shapes(TOKENS, heads, DIM)
            xf = pypto.cast(xv, pypto.DT_FP32) * 1.0
            pypto.set_vec_tile_shapes(TOKENS, heads, HALF)
            lo = pypto.view(xf, [TOKENS, heads, HALF], [0, 0, 0], valid_shape=[rows, heads, HALF])
            hi = pypto.view(xf, [TOKENS, heads, HALF], [0, 0, HALF], valid_shape=[rows, heads, HALF])
            turned = pypto.concat([lo * c - hi * s, hi * c + lo * s], 2)
            pypto.assemble(pypto.cast(turned, pypto.DT_BF16, pypto.CastMode.CAST_RINT),
                           [b * TOKENS, 0, 0], out)
    return kernel


rope_q = _make(8)
rope_k = _make(2)
