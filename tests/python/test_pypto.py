"""tilesim.pypto: each traced construct becomes the program op it is, each call outside the traced
surface is refused naming itself, this file and the line, and the examples time as the programs
and built-in ops they restate."""
import json
import runpy

import pytest

import tilesim
import tilesim.pypto as pypto
from tilesim.pypto._kernel import tile_call
from conftest import source

FP32, FP16, BF16 = pypto.DT_FP32, pypto.DT_FP16, pypto.DT_BF16
THIS = __file__


def line_of(tag):
    """The line of this file that ends with the comment `# at:<tag>`."""
    with open(THIS) as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# at:{tag}"):
                return n
    raise AssertionError(tag)


def body_ops(program):
    out = []

    def walk(entries):
        for e in entries:
            if "loop" in e:
                walk(e["body"])
            elif "op" in e:
                out.append(e)

    walk(program["body"])
    return out


def refused(kernel, tag, *words, args=()):
    with pytest.raises(pypto.UnsupportedError) as e:
        kernel.trace(*args)
    msg = str(e.value)
    assert e.value.file == THIS and e.value.line == line_of(tag), msg
    assert msg.startswith(f"{THIS}:{line_of(tag)}: "), msg
    for w in words:
        assert w in msg, msg
    return msg


# ---- constructs -----------------------------------------------------------------------------


def test_elementwise_scalars_and_operators():
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        a = 2.0 - x          # neg, then add 2
        b = 1.0 / a          # reciprocal
        c = 3.0 / b          # reciprocal, mul 3
        d = pypto.add(c, x, alpha=0.5)
        e = pypto.maximum(d ** 2, 0.0)
        y[:] = pypto.sqrt(-e + x * x)

    p = k.trace().program
    ops = [(o["op"], o.get("scalar")) for o in body_ops(p)]
    assert ops == [("neg", None), ("add", 2.0), ("reciprocal", None), ("reciprocal", None),
                   ("mul", 3.0), ("mul", 0.5), ("add", None), ("mul", None),
                   ("maximum", 0.0), ("neg", None), ("mul", None), ("add", None),
                   ("sqrt", None)]
    assert p["outputs"] == [{"name": "y", "shape": [4, 256], "dtype": "fp32"}]
    assert body_ops(p)[-1]["out"] == "y"
    assert tilesim.run(k.trace().config()).gen_time_us > 0


def test_reductions_cast_where_transpose_cumsum():
    @pypto.jit
    def k(x: pypto.Tensor((8, 64, 128), FP16), c: pypto.Tensor((8, 64, 128), FP32),
          s: pypto.Tensor((8, 64), FP32), i: pypto.Tensor((8, 128), pypto.DT_INT32),
          t: pypto.Tensor((8, 128, 64), FP32), w: pypto.Tensor((8, 64, 128), FP32)):
        pypto.set_vec_tile_shapes(1, 16, 128)
        xf = pypto.cast(x, FP32)
        s[:] = pypto.sum(xf, -1)
        i[:] = pypto.argmax(xf, dim=1)
        c[:] = pypto.cumsum(xf, 2)
        t[:] = pypto.transpose(xf, 1, 2)
        w[:] = pypto.where(xf, xf, xf.exp())

    p = k.trace().program
    by_op = {o["op"]: o for o in body_ops(p)}
    assert by_op["cast"]["dtype"] == "fp32"
    assert by_op["sum"] == {"op": "sum", "inputs": [by_op["cast"]["out"]], "out": "s", "dim": 2,
                            "keepdim": False, "merge": "auto"}
    assert by_op["argmax"]["dim"] == 1 and by_op["argmax"]["out"] == "i"
    assert by_op["cumsum"]["dim"] == 2
    assert by_op["where"]["inputs"][0] == by_op["cast"]["out"]
    assert [o["name"] for o in p["outputs"]] == ["c", "s", "i", "t", "w"]
    assert tilesim.run(k.trace().config()).gen_time_us > 0


def test_loops_views_assemble_and_slicing_sugar():
    @pypto.jit
    def k(x: pypto.Tensor((16, 8, 256), FP32), y: pypto.Tensor((16, 8, 256), FP32)):
        for b in pypto.loop(0, 16, 4, name="outer"):      # 4 iterations of 4 rows
            for h in pypto.loop(2):                        # 2 chunks of 4 along dim 1
                xv = x[b:b + 4, h * 4:(h + 1) * 4, :]
                pypto.set_vec_tile_shapes(1, 4, 256)
                y[b:, h * 4:, ...] = pypto.exp(xv)

    tk = k.trace()
    outer = tk.program["body"][0]
    assert (outer["loop"], outer["axis"], outer["loop_count"]) == ("outer", 0, 4)
    inner = outer["body"][0]
    assert (inner["axis"], inner["loop_count"]) == (1, 2)
    assert inner["loop"].startswith("loop_L")
    assert [lp["chunk"] for lp in tk.loops] == [4, 4]
    r = tk.run(loop="outer", loop_count=2)
    assert r.to_dict()["root_functions"] == 4  # 2 outer x 2 inner chunks


def test_matmul_cube_tile_b_trans_and_at_operator():
    @pypto.jit
    def k(a: pypto.Tensor((256, 512), FP16), b: pypto.Tensor((128, 512), FP16),
          c: pypto.Tensor((256, 512), FP16), o: pypto.Tensor((256, 128), FP32),
          o2: pypto.Tensor((256, 256), FP16)):
        pypto.set_cube_tile_shapes([128, 128], [64, 64], [128, 128])
        o[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True)
        pypto.set_vec_tile_shapes(64, 128)
        o2[:] = a @ pypto.transpose(c, 0, 1)

    tk = k.trace()
    mm = [o for o in body_ops(tk.program) if o["op"] == "matmul"]
    assert mm[0] == {"op": "matmul", "inputs": ["a", "b"], "out": "o", "out_dtype": "fp32",
                     "transpose_b": True}
    assert mm[1]["out_dtype"] == "fp16"  # a @ b: B's dtype, as PyPTO
    assert tk.tiles[0]["cube"] and tk.tiles[0]["dims"] == [128, 64, 128]


def test_two_level_cube_tile_as_the_matmul_guide_sets_it():
    @pypto.jit
    def k(a: pypto.Tensor((512, 1024), FP16), b: pypto.Tensor((1024, 512), FP16),
          o: pypto.Tensor((512, 512), FP16)):
        pypto.set_cube_tile_shapes([128, 128], [64, 256], [256, 256])
        o[:] = pypto.matmul(a, b, pypto.DT_FP16)

    tk = k.trace()
    assert tk.tiles[0]["dims"] == [128, 256, 256] and tk.tiles[0]["l0"] == [128, 64, 256]
    sets = [e for e in tk.program["body"] if "set_cube_tile_shapes" in e]
    assert sets[0]["set_cube_tile_shapes"] == [[128, 128], [64, 256], [256, 256]]
    assert tile_call(tk.tiles[0], [128, 512, 256]) == \
        "pypto.set_cube_tile_shapes([128, 128], [64, 512], [256, 256])"
    assert tk.run().to_dict()["tasks"] == 8  # 4 x 2 C tiles of 128 x 256


def test_composites_as_pypto_builds_them():
    @pypto.jit
    def k(x: pypto.Tensor((16, 1024), BF16), y: pypto.Tensor((16, 1024), BF16),
          z: pypto.Tensor((16, 1024), BF16)):
        pypto.set_vec_tile_shapes(1, 1024)
        y[:] = pypto.softmax(x, -1)
        z[:] = pypto.sigmoid(x)

    names = [o["op"] for o in body_ops(k.trace().program)]
    assert names == ["cast", "amax", "sub", "exp", "sum", "div", "cast",
                     "cast", "sigmoid", "cast"]


def test_rotate_half_idiom_and_style_b_return():
    @pypto.jit
    def k(x: pypto.Tensor((4, 128), FP32)):
        pypto.set_vec_tile_shapes(4, 128)
        x1 = pypto.view(x, [4, 64], [0, 0])
        x2 = x[:, 64:]
        out = pypto.tensor([4, 128], FP32, "rot")
        pypto.assemble(pypto.concat([-x2, x1 + 0.0], -1) * x, [0, 0], out)
        return out

    p = k.trace().program
    assert [o["op"] for o in body_ops(p)] == ["rotate_half", "mul"]
    assert p["outputs"][0]["name"] == "rot"


def test_arguments_numpy_pypto_tensors_and_runtime_options():
    np = pytest.importorskip("numpy")

    @pypto.jit(runtime_options={"stitch_function_max_num": 4, "run_mode": pypto.RunMode.SIM})
    def k(x: pypto.Tensor(), y: pypto.Tensor([pypto.DYNAMIC, 256], FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = x + x

    k(np.zeros((8, 256), np.float32), pypto.tensor([8, 256], FP32, "y"))
    tk = k.traced
    assert tk.program["inputs"] == [{"name": "x", "shape": [8, 256], "dtype": "fp32"}]
    assert tk.config()["runtime"] == {"stitch_function_max_num": 4}
    assert any("run_mode" in n for n in tk.notes)


def test_sweep_recommends_the_lines_to_paste():
    @pypto.jit
    def k(x: pypto.Tensor((16, 16384), FP32), y: pypto.Tensor((16, 16384), FP32)):
        pypto.set_vec_tile_shapes(4, 4096)  # at:tile
        y[:] = x / pypto.sum(x, -1, True)

    res = k.trace().sweep(tiles=[[4, 4096], [1, 16384]])
    assert res.recommended["tile"] == [1, 16384]
    assert res.paste == [(THIS, line_of("tile"), "pypto.set_vec_tile_shapes(1, 16384)")]
    assert f"test_pypto.py:{line_of('tile')}: pypto.set_vec_tile_shapes(1, 16384)" in \
        res.recommendation
    assert "\n  bound by " in res.recommendation
    assert len(res.to_dataframe()) == 2 and "<svg" in res.to_svg()
    # The sweep config is a plain config: the CLI's sweep and tilesim.sweep take it.
    assert tilesim.sweep(k.trace().sweep_config(tiles=[[1, 16384]])).recommended["tile"] == \
        [1, 16384]


# ---- refusals: one line naming the call, this file and the line ---------------------------


def test_refuses_names_outside_the_surface():
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.sin(x)  # at:sin

    msg = refused(k, "sin", "pypto.sin", "it traces")
    assert "exp" in msg and "set_vec_tile_shapes" in msg


@pytest.mark.parametrize("case", [
    "reshape", "uneven_chunk", "reduce_loop_axis", "whole_read", "twice",
    "mixed", "no_tile", "a_trans", "extend", "cube_levels", "compare", "method",
    "copy", "no_index_view", "pass_options", "runtime_key", "break"])
def test_refusals(case):
    def k_reshape(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.reshape(pypto.exp(x), [2, 512])  # at:reshape

    def k_uneven_chunk(x: pypto.Tensor((10, 256), FP32), y: pypto.Tensor((10, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(3):
            xv = pypto.view(x, [3, 256], [i * 3, 0])  # at:uneven_chunk
            pypto.assemble(pypto.exp(xv), [i * 3, 0], y)

    def k_reduce_loop_axis(x: pypto.Tensor((8, 256), FP32), y: pypto.Tensor((1, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(4):
            xv = pypto.view(x, [2, 256], [i * 2, 0])
            y[:] = pypto.sum(xv, 0, True)  # at:reduce_loop_axis

    def k_whole_read(x: pypto.Tensor((8, 256), FP32), y: pypto.Tensor((8, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(4):
            xv = pypto.view(x, [2, 256], [i * 2, 0])
            e = pypto.exp(xv) * pypto.amax(x, 0, True)  # at:whole_read
            pypto.assemble(e, [i * 2, 0], y)

    def k_twice(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.exp(x)
        y[:] = pypto.exp(x)  # at:twice

    def k_mixed(x: pypto.Tensor((4, 256), FP32), z: pypto.Tensor((4, 256), FP16),
                y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = x + z  # at:mixed

    def k_no_tile(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        y[:] = pypto.exp(x)  # at:no_tile

    def k_a_trans(a: pypto.Tensor((64, 64), FP16), y: pypto.Tensor((64, 64), FP32)):
        pypto.set_cube_tile_shapes([64, 64], [64, 64], [64, 64])
        y[:] = pypto.matmul(a, a, FP32, a_trans=True)  # at:a_trans

    def k_extend(a: pypto.Tensor((64, 64), FP16), y: pypto.Tensor((64, 64), FP32)):
        pypto.set_cube_tile_shapes([64, 64], [64, 64], [64, 64])
        y[:] = pypto.matmul(a, a, FP32, extend_params={"bias_tensor": a})  # at:extend

    def k_cube_levels(a: pypto.Tensor((64, 64), FP16), y: pypto.Tensor((64, 64), FP32)):
        pypto.set_cube_tile_shapes([64, 64], [48, 64], [64, 64])  # at:cube_levels
        y[:] = pypto.matmul(a, a, FP32)

    def k_compare(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.where(x > 0.0, x, x)  # at:compare

    def k_method(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = x.permute([1, 0])  # at:method

    def k_copy(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = x  # at:copy

    def k_no_index_view(x: pypto.Tensor((8, 256), FP32), y: pypto.Tensor((8, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(4):  # at:no_index_view
            y[:] = pypto.exp(x)

    def k_break(x: pypto.Tensor((8, 256), FP32), y: pypto.Tensor((8, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(4):  # at:break
            xv = pypto.view(x, [2, 256], [i * 2, 0])
            pypto.assemble(pypto.exp(xv), [i * 2, 0], y)
            break

    words = {"reshape": ["pypto.assemble", "is a reshape of", "assembled into 'y'"],
             "uneven_chunk": ["3 chunks of 3", "extent 10"],
             "reduce_loop_axis": ["pypto.sum", "reduces dim 0"],
             "whole_read": ["pypto.amax", "reads the whole of 'x'"],
             "twice": ["already written"], "mixed": ["pypto.add", "DT_FP32", "DT_FP16"],
             "no_tile": ["no vector tile shape"], "a_trans": ["a_trans=True"],
             "extend": ["bias_tensor [64, 64]", "row [1, n]"], "cube_levels": ["k L1 64 is not a multiple",
                                                               "of its L0 48"],
             "compare": ["comparison"],
             "method": ["Tensor.permute"], "copy": ["copied unchanged"],
             "no_index_view": ["no view in loop"], "break": ["left early"]}
    if case in ("pass_options", "runtime_key"):
        # refused when the kernel is traced (never at import), at the jit's line
        k = pypto.jit(pass_options={"cube_l1_reuse": 2})(k_copy)  # at:pass_options
        if case == "runtime_key":
            k = pypto.jit(runtime_options={"device_mode": 1})(k_copy)  # at:runtime_key
        with pytest.raises(pypto.UnsupportedError) as e:
            k.trace()
        assert e.value.line == line_of(case)
        assert ("cube_l1_reuse_setting" if case == "pass_options" else
                "stitch_function_max_num") in str(e.value)
        return
    kernel = pypto.jit(locals()[f"k_{case}"])
    refused(kernel, case, *words[case])


def test_refuses_outside_a_kernel_and_dynamic_without_arguments():
    with pytest.raises(pypto.UnsupportedError, match="outside a kernel"):
        pypto.set_vec_tile_shapes(1, 256)

    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 256], FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        y[:] = pypto.exp(x)

    with pytest.raises(pypto.UnsupportedError, match="dynamic dims"):
        k.trace()


def test_tile_shapes_and_loop_counts_are_checked_as_tilesim_run_checks_them():
    # issue 50: TracedKernel.run(tile_shape=[True, ...]) and its sweep's tiles / loop counts are
    # refused as tilesim.run refuses tile=[True, ...] (one checker, tilesim._jobs.dim_error).
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(2):
            pypto.assemble(pypto.exp(pypto.view(x, [2, 256], [i * 2, 0])), [i * 2, 0], y)

    tk = k.trace()
    for kwargs, text in [
            ({"tile_shape": [True, 256]}, "tile_shape: True is not an integer dim"),
            ({"tile_shape": (1, 256.0)}, "tile_shape: 256.0 is not an integer dim"),
            ({"tile_shape": 256}, "tile_shape: 256 is not a list of integer dims"),
            ({"loop_count": True}, "loop_count: "), ({"loop_count": 1.0}, "loop_count: "),
            ({"tile": True}, "tile: True is not a name or a line number"),
            ({"loop": 1.5}, "loop: 1.5 is not a name or a line number"),
            ({"loop": "nope"}, "loop: no loop 'nope' in kernel k")]:
        with pytest.raises(tilesim.ConfigError) as e:
            tk.run(**kwargs)
        assert str(e.value).startswith(text) and "\n" not in str(e.value), (kwargs, e.value)
        assert e.value.key == text.split(":")[0]
    for kwargs, text in [({"tiles": [[1, 256], [False, 256]]}, "tiles[1]: False is not an "),
                         ({"tiles": "1, 256"}, "tiles: '1, 256' is not a list of tiles"),
                         ({"tiles": [[1, "256"]]}, "tiles[0]: '256' is not an integer dim"),
                         ({"loop_counts": [1, True]}, "loop_counts[1]: "),
                         ({"loop_counts": 2}, "loop_counts: 2 is not a list of loop counts"),
                         ({"loop_counts": "all"}, "loop_counts: 'all': give")]:
        with pytest.raises(tilesim.ConfigError) as e:
            tk.sweep(**kwargs)
        assert str(e.value).startswith(text), (kwargs, e.value)
    assert tk.run(tile_shape=(2, 256), loop_count=1).gen_time_us > 0


@pytest.mark.parametrize("call", ["vec", "cube", "tensor", "view", "offsets", "loop"])
def test_bools_are_not_dims_in_kernels(call):
    # The same checker refuses a bool (or a float) as a dim, an offset or a loop bound inside a
    # kernel: UnsupportedError naming the call and the kernel line, never a tile of 1.
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        if call == "vec":
            pypto.set_vec_tile_shapes(True, 256)  # at:vec
        elif call == "cube":
            pypto.set_cube_tile_shapes(True, 16, 16)  # at:cube
        elif call == "tensor":
            pypto.tensor([True, 256], FP32)  # at:tensor
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(True if call == "loop" else 2):  # at:loop
            if call == "view":
                xv = pypto.view(x, [2, 256.0], [i * 2, 0])  # at:view
            elif call == "offsets":
                xv = pypto.view(x, [2, 256], [i * 2, False])  # at:offsets
            else:
                xv = pypto.view(x, [2, 256], [i * 2, 0])
            pypto.assemble(pypto.exp(xv), [i * 2, 0], y)

    refused(k, call, {"vec": "set_vec_tile_shapes", "cube": "set_cube_tile_shapes",
                      "tensor": "pypto.Tensor", "view": "pypto.view", "offsets": "pypto.view",
                      "loop": "pypto.loop"}[call])


@pytest.mark.parametrize("case", ["nan", "inf", "huge", "loop"])
def test_scalars_and_trip_counts_a_program_cannot_hold_are_refused(case):
    # The Hypothesis suite's finds: a nan / inf / 10**400 scalar traced into a program that no
    # config could carry (json's ValueError, or OverflowError), and pypto.loop(2**70) raised
    # OverflowError from len(range(...)).
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 256)
        if case == "loop":
            for _ in pypto.loop(2**70):  # at:trips
                pass
        y[:] = pypto.maximum(x, {"nan": float("nan"), "inf": -float("inf"),  # at:scalar
                                 "huge": 10**400, "loop": 0.0}[case])

    refused(k, "trips" if case == "loop" else "scalar",
            *(["pypto.loop", "iterations"] if case == "loop" else
              ["pypto.maximum", "finite numbers"]))


def test_a_program_error_names_the_kernel_line():
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        pypto.set_vec_tile_shapes(1, 1, 256)
        y[:] = pypto.exp(x)  # at:rank

    with pytest.raises(tilesim.ConfigError) as e:
        k.trace().run()
    assert f"[traced from {THIS}:{line_of('rank')}]" in str(e.value)


# ---- the examples restate programs and ops: same timing within 1% ---------------------------


def traced_example(name, kernel):
    return runpy.run_path(source(f"examples/pypto/{name}.py"), run_name="test")[kernel].trace()


def close(a, b):
    assert abs(a / b - 1) <= 0.01, (a, b)


def program_time(path, **keys):
    return tilesim.run({"program": source(path), **keys}).gen_time_us


def test_softmax_example_is_the_softmax_program():
    k = traced_example("softmax_16x16384", "softmax_kernel")
    for tile in ([1, 8192], [2, 4096], [1, 16384]):
        close(k.run(tile_shape=tile).gen_time_us,
              program_time("configs/programs/softmax_16x16384.json", tile=tile))


def test_amax_example_is_the_built_in_amax():
    k = traced_example("amax_16x256x256", "amax_kernel")
    for tile in ([1, 16, 256], [1, 32, 256], [1, 64, 256], [1, 256, 64]):
        close(k.run(tile_shape=tile).gen_time_us,
              tilesim.run({"op": "amax", "shape": [16, 256, 256], "dtype": "fp32", "dim": 1,
                           "tile": tile}).gen_time_us)


def test_groupnorm_example_is_the_groupnorm_program():
    k = traced_example("groupnorm_16x64x256x256", "groupnorm")
    for loop in (1, 8, 16, 128):
        close(k.run(loop_count=loop).gen_time_us,
              program_time("configs/programs/groupnorm_128x524288.json", loop_count=loop))


def test_rmsnorm_rope_example_is_the_rmsnorm_rope_program():
    k = traced_example("rmsnorm_rope_1x11x16x128", "rmsnorm_rope")
    apply = k.tiles[2]["name"]
    for tile in ([1, 1, 16, 128], [1, 1, 4, 128], [1, 2, 16, 128]):
        close(k.run(tile=apply, tile_shape=tile).gen_time_us,
              program_time("configs/programs/rmsnorm_rope_1x11x16x128.json",
                           program_tile="apply", tile=tile))


def test_matmul_example_is_the_linear_relu_program():
    k = traced_example("matmul_bias_relu_2048x4096x2048", "linear_relu")
    mm = k.tiles[0]["name"]
    for tile in ([128, 128, 256], [128, 64, 128], [256, 64, 128]):
        close(k.run(tile=mm, tile_shape=tile).gen_time_us,
              program_time("configs/programs/linear_relu_2048x4096x2048.json",
                           program_tile="mm", tile=tile))


def test_traced_program_is_a_valid_program_file(tmp_path):
    k = traced_example("softmax_16x16384", "softmax_kernel")
    path = tmp_path / "p.json"
    k.write(path)
    assert json.loads(path.read_text()) == k.program
    assert tilesim.run({"program": str(path)}).gen_time_us == k.run().gen_time_us
