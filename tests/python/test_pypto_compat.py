"""PyPTO kernels as model ports write them (tests/python/pypto_compat/: torch wrappers, dynamic
shapes, pass options, valid_shape tails, unrolled loops), traced through their wrappers and run;
the torch stand-in (tilesim.torch_standin); and one test per refusal class of issue 52."""
import json
import re
import os
import subprocess
import sys
import textwrap
import types

import pytest

import tilesim.pypto as pypto
from tilesim import torch_standin
from tilesim.pypto.__main__ import TraceFailure, trace_file
from tilesim.pypto._trace import walk_ops
from conftest import source

COMPAT = source("tests/python/pypto_compat")
FP32, FP16 = pypto.DT_FP32, pypto.DT_FP16


def compat(name):
    return os.path.join(COMPAT, name)


def ops(program):
    return list(walk_ops(program["body"]))


def loops(program):
    return [e for e in program["body"] if "loop" in e]


def ran(traced):
    res = traced.run()
    assert res.gen_time_us > 0
    return res


# ---- the compatibility suite: each kernel traced as written, then run ----------------------


def test_qwen3_rms_norm_through_its_custom_op_with_a_tail():
    name, k = trace_file(compat("qwen3_rms_norm.py"), as_main=True)
    assert name == "rms_norm_kernel"
    p = k.program
    assert {t["name"]: t["shape"] for t in p["inputs"]} == {
        "x_view_d0_0_96": [96, 2048], "x_view_d0_96_100": [4, 2048], "gamma": [1, 2048]}
    assert [o["name"] for o in p["outputs"]] == ["y_part_d0_0_96", "y_part_d0_96_100"]
    # 100 tokens in chunks of 32, as PyPTO runs them: three root functions of 32, then the
    # tail of 4 (its tiles partial: copies and vector work at 4 rows, UB at the full tile)
    assert [(lp["loop"], lp["loop_count"], lp["axis"]) for lp in loops(p)] == [
        ("tokens", 3, 0), ("tokens_tail", 1, 0)]
    assert any("chunks of 3 x 32, 1 x 4 rows of dim 0, as PyPTO runs them: program loops "
               "'tokens', 'tokens_tail'" in n for n in k.notes), k.notes
    # vec_nbuffer_setting {-1: 4}: buffer depth 4
    assert k.config()["buffer_count"] == 4
    assert any("stopped at" in n and "allclose" in n for n in k.notes)
    # gamma's cast runs once, before the loop; the rest in each root function
    assert [o["op"] for o in p["body"] if "op" in o] == ["cast"]
    names = ["cast", "mul", "mul", "sum", "add", "sqrt", "mul", "div", "mul", "cast"]
    assert [o["op"] for o in ops(loops(p)[0])] == [o["op"] for o in ops(loops(p)[1])] == names
    res = ran(k)
    assert res.root_functions == 5  # the hoisted cast's, three chunks, the tail
    assert any("run once before it" in n for n in k.notes)
    ran(k)


def test_qwen3_rms_norm_called_with_another_token_count():
    call = ("rms_norm(torch.randn(7, HIDDEN, dtype=torch.bfloat16), "
            "torch.ones(HIDDEN, dtype=torch.bfloat16))")
    _, k = trace_file(compat("qwen3_rms_norm.py"), call=call)
    assert k.program["inputs"][0]["shape"] == [7, 2048]
    assert loops(k.program)[0]["loop_count"] == 1
    ran(k)


def test_rope_unsqueezed_cos_sin_rotate_half_and_unroll():
    _, k = trace_file(compat("rope.py"), as_main=True)
    p = k.program
    shapes = {t["name"]: t["shape"] for t in p["inputs"]}
    assert shapes["cos"] == [48, 1, 128] and shapes["sin"] == [48, 1, 128]
    assert "rotate_half" in [o["op"] for o in ops(p)]
    # 6 iterations unrolled by 2: three root functions of 16 tokens
    assert loops(p)[0]["loop_count"] == 3 and k.loops[0]["chunk"] == 16
    assert any("cube_l1_reuse_setting: the kernel has no matmul" in n for n in k.notes)
    ran(k)


def test_attention_softmax_through_a_library_impl_with_loop_unroll():
    _, k = trace_file(compat("attention_softmax.py"), as_main=True)
    assert loops(k.program)[0]["loop_count"] == 2
    assert k.config()["runtime"] == {"stitch_function_max_num": 32}
    assert any("device_sched_mode" in n for n in k.notes)
    ran(k)


def test_adamw_three_outputs_full_constants_and_a_tail():
    _, k = trace_file(compat("adamw.py"), as_main=True)
    p = k.program
    assert sorted(o["name"] for o in p["outputs"]) == [
        f"{n}_part_d0_{a}_{b}" for n in ("avg_out", "avg_sq_out", "param_out")
        for a, b in ((0, 999424), (999424, 1000000))]
    # ceil(1e6 / 8192) = 123 chunks: 122 of 8192 and a tail of 576
    assert [lp["loop_count"] for lp in loops(p)] == [122, 1]
    assert any("max_workspace_kb" in n for n in k.notes)
    adds = [o for o in ops(p) if o["op"] == "add" and o.get("scalar") == 1e-8]
    assert adds, "pypto.full(..., EPS) is a scalar operand"
    ran(k)


def test_batchnorm_reshapes_its_argument():
    _, k = trace_file(compat("batchnorm_reduce.py"),
                      call="batch_norm_stats(torch.randn(N, C, H, W))")
    assert k.program["inputs"][0]["shape"] == [8, 64, 784]
    assert any("read as [8, 64, 784]" in n for n in k.notes)
    ran(k)


def test_a_refused_kernel_does_not_stop_the_clean_one():
    path = compat("add_rms_norm.py")
    with pytest.raises(TraceFailure, match="add_rms_norm_kernel, top_k_kernel \\(refused\\)"):
        trace_file(path, as_main=True)
    with pytest.raises(TraceFailure, match=r"add_rms_norm.py:\d+: pypto.topk"):
        trace_file(path, "top_k_kernel", as_main=True)
    _, k = trace_file(path, "add_rms_norm_kernel", as_main=True)
    p = k.program
    assert sorted(o["name"] for o in p["outputs"]) == [
        f"{n}_part_d0_{a}_{b}" for n in ("residual_out", "y")
        for a, b in ((0, 32), (32, 40), (40, 44))]
    # sg_set_scope 1 names the stage its first op opens
    assert [o["psg"] for o in ops(p) if "psg" in o][0].startswith("sg_scope1_")
    # 11 iterations of 4 rows unrolled by [4, 2, 1]: two root functions of 16 rows, one of 8,
    # one of 4, each run a program loop of its own over its part of the tensors
    assert [(lp["loop"], lp["loop_count"]) for lp in loops(p)] == [
        ("rows", 2), ("rows_by8", 1), ("rows_by4", 1)]
    assert any("pg_upper_bound" in n for n in k.notes)
    assert k.config()["buffer_count"] == 2
    ran(k)


def test_trace_pypto_cli_file_call_and_module(tmp_path, cli):
    out = tmp_path / "rope.json"
    line = cli("trace-pypto", compat("rope.py"), "--main", "--json", out).stdout
    assert "rope_kernel: tiles" in line and "note:" in line
    assert json.loads(out.read_text())["program"] == "rope_kernel"
    # -m: a module of a package (its relative import works), the wrapper called by --call
    pkg = tmp_path / "ports"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("HIDDEN = 1024\n")
    (pkg / "norm.py").write_text(open(compat("qwen3_rms_norm.py")).read().replace(
        "HIDDEN = 2048\n", "from .consts import HIDDEN\n"))
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}")
    p = subprocess.run([os.environ["TILESIM_BINARY"], "trace-pypto", "-m", "ports.norm",
                        "--call", "rms_norm(torch.empty(64, HIDDEN, dtype=torch.bfloat16), "
                        "torch.empty(HIDDEN, dtype=torch.bfloat16))", "--json", "-"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["inputs"][0]["shape"] == [64, 1024]
    p = subprocess.run([os.environ["TILESIM_BINARY"], "trace-pypto", "--json", "-"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "kernel file or -m MODULE" in p.stderr


# ---- the torch stand-in --------------------------------------------------------------------


def test_torch_standin_answers_what_wrappers_read():
    with torch_standin.installed() as torch:
        import torch.nn.functional as F
        import torch_npu  # noqa: F401
        x = torch.randn(4, 3072, dtype=torch.float16, device="npu:0")
        assert x.shape == (4, 3072) and x.size(-1) == 3072 and x.stride() == (3072, 1)
        assert x.numel() == 12288 and x.element_size() == 2 and str(x.device) == "npu:0"
        assert x.view(-1, 1024).shape == (12, 1024) and x.is_contiguous()
        assert x.unsqueeze(0).expand(2, 4, 3072).shape == (2, 4, 3072)
        assert torch.cat([x, x], 1).shape == (4, 6144) and F.pad(x, (0, 64)).shape == (4, 3136)
        assert (x @ x.T).shape == (4, 4) and x.sum(-1, keepdim=True).shape == (4, 1)
        with pytest.raises(torch_standin.StandInError, match="non-contiguous"):
            x.T.view(-1)
        assert x.T.contiguous().view(-1).shape == (12288,)
        with pytest.raises(torch_standin.NeedsValues, match="torch.allclose"):
            torch.allclose(x, x)
        with pytest.raises(torch_standin.StandInError, match="torch.fft"):
            torch.fft  # noqa: B018


def test_torch_standin_registrations_call_the_npu_implementation():
    with torch_standin.installed() as torch:
        calls = []

        @torch.library.custom_op("t::f", mutates_args=())
        def f(a: torch.Tensor) -> torch.Tensor:
            calls.append("default")
            return a

        @f.register_kernel("npu")
        def _(a):
            calls.append("npu")
            return a

        lib = torch.library.Library("t", "DEF")
        lib.define("g(Tensor a) -> Tensor")
        lib.impl("g", lambda a: calls.append("g") or a, "PrivateUse1")
        torch.ops.t.f(torch.empty(2))
        torch.ops.t.g(torch.empty(2))
        assert calls == ["npu", "g"]
        assert torch._dynamo.allow_in_graph(len) is len
        with pytest.raises(torch_standin.StandInError, match="no NPU implementation"):
            torch.ops.t.missing(torch.empty(2))


def test_torch_standin_shadows_a_real_torch_only_while_installed(monkeypatch):
    real = types.ModuleType("torch")
    monkeypatch.setitem(sys.modules, "torch", real)
    with torch_standin.installed() as torch:
        assert sys.modules["torch"] is torch is not real
    assert sys.modules["torch"] is real and "torch_npu" not in sys.modules


# ---- options -------------------------------------------------------------------------------


def kernel(**jit):
    @pypto.jit(**jit)
    def k(x: pypto.Tensor((64, 256), FP32), y: pypto.Tensor((64, 256), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = pypto.exp(x)
    return k


def test_pass_options_set_what_the_model_runs():
    k = kernel(pass_options={"vec_nbuffer_setting": {-1: 3}, "mg_copyin_upper_bound": 4096,
                             "vec_nbuffer_mode": 0, "pg_lower_bound": 10}).trace()
    cfg = k.config()
    assert cfg["buffer_count"] == 3
    assert cfg["partition"] == {"style": "pypto", "max_tasks_per_psg": 0}
    assert k.what_ifs == {"control.cube_merge_copyin_bytes": 4096}
    assert any("pg_lower_bound: not modelled" in n for n in k.notes)
    assert ran(k).tasks == 8


def test_option_refusals_come_at_the_call_never_at_import():
    k = kernel(pass_options={"no_such_pass": 1})  # defining it is fine
    with pytest.raises(pypto.UnsupportedError, match="'no_such_pass' is not one tilesim knows"):
        k.trace()
    k = kernel(runtime_options={"not_a_runtime_key": 1})
    with pytest.raises(pypto.UnsupportedError, match="'not_a_runtime_key'"):
        k.trace()
    k = kernel(pass_options={"vec_nbuffer_setting": 4})
    with pytest.raises(pypto.UnsupportedError, match="a dict"):
        k.trace()


# ---- constructs ----------------------------------------------------------------------------


def test_static_offset_views_and_output_parts():
    @pypto.jit
    def k(x: pypto.Tensor((16, 512), FP32), y: pypto.Tensor((16, 512), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        left = pypto.view(x, [16, 256], [0, 0])
        right = pypto.view(x, [16, 256], [0, 256])
        pypto.assemble(pypto.concat([pypto.exp(left), pypto.exp(right)], 1), [0, 0], y)

    t = k.trace()
    assert sorted(i["name"] for i in t.program["inputs"]) == ["x_view_d1_0_256",
                                                             "x_view_d1_256_512"]
    assert sorted(o["name"] for o in t.program["outputs"]) == ["y_part_d1_0_256",
                                                              "y_part_d1_256_512"]
    ran(t)


def test_valid_shape_tail_without_loop_count_dividing():
    @pypto.jit
    def k(x: pypto.Tensor((100, 256), FP32), y: pypto.Tensor((100, 256), FP32)):
        pypto.set_vec_tile_shapes(16, 256)
        for i in pypto.loop(4, idx_name="i"):
            v = pypto.view(x, [25, 256], [i * 25, 0])
            pypto.assemble(pypto.exp(v), [i * 25, 0], y)

    assert not k.trace().notes  # 4 x 25: no tail

    @pypto.jit
    def tail(x: pypto.Tensor((100, 256), FP32), y: pypto.Tensor((100, 256), FP32)):
        pypto.set_vec_tile_shapes(16, 256)
        for i in pypto.loop(3, idx_name="i"):
            v = pypto.view(x, [34, 256], [i * 34, 0], valid_shape=[pypto.min(34, 100 - i * 34),
                                                                   256])
            pypto.assemble(pypto.exp(v), [i * 34, 0], y)

    t = tail.trace()
    assert loops(t.program)[0]["loop_count"] == 3 and not t.notes  # 34, 34, 32: even
    ran(t)


def test_composites_and_activations_as_ops():
    @pypto.jit
    def k(x: pypto.Tensor((8, 512), FP16), g: pypto.Tensor((512,), FP16),
          b: pypto.Tensor((512,), FP16), y: pypto.Tensor((8, 512), FP16)):
        pypto.set_vec_tile_shapes(8, 512)
        y[:] = pypto.silu(pypto.gelu(pypto.layer_norm(x, g, b)))

    names = [o["op"] for o in ops(k.trace().program)]
    assert names[-2:] == ["gelu", "silu"] and names.count("sum") == 2
    assert pypto.Tensor.reshape is not None and "npu" not in dir(pypto.platform)


def test_platform_answers_from_the_hardware_file():
    # PyPTO's pypto.platform has npuarch only (python/pypto/platform.py); kernels compare it
    # with NPUArch names, and the shipped hardware files are Atlas A2 910B: DAV_2201
    assert pypto.platform.npuarch == "DAV_2201"
    pypto.platform.npuarch = "DAV_2201"  # setting the arch the hardware file is: a no-op
    with pytest.raises(pypto.UnsupportedError, match=r"test_pypto_compat.py:\d+: "
                       r"pypto.platform.npuarch = 'DAV_3510': tilesim's hardware files are "
                       r"DAV_2201"):
        pypto.platform.npuarch = "DAV_3510"
    with pytest.raises(pypto.UnsupportedError, match=r"test_pypto_compat.py:\d+: "
                       r"pypto.platform.core_num: not a query of PyPTO's pypto.platform; "
                       r"pypto.platform has npuarch only"):
        pypto.platform.core_num  # noqa: B018


def test_a_kernel_picks_its_variant_by_npuarch():
    @pypto.jit
    def k(x: pypto.Tensor((8, 512), FP16), y: pypto.Tensor((8, 512), FP16)):
        pypto.set_vec_tile_shapes(8, 512)
        if pypto.platform.npuarch == "DAV_3510":
            y[:] = pypto.exp(x)
        else:
            y[:] = pypto.sigmoid(x)

    names = [o["op"] for o in ops(k.trace().program)]
    assert "sigmoid" in names and "exp" not in names


def _matmul_kernel(pass_options, m=512):
    @pypto.jit(pass_options=pass_options)
    def k(a: pypto.Tensor((m, 256), FP16), b: pypto.Tensor((256, 1024), FP16),
          c: pypto.Tensor((m, 1024), FP16)):
        pypto.set_cube_tile_shapes(128, 256, 128)
        c[:] = pypto.matmul(a, b, FP16)

    traced = k.trace()
    return traced, [o for o in ops(traced.program) if o["op"] == "matmul"][0]


def test_cube_l1_reuse_setting_merges_c_tiles_sharing_an_operand():
    plain, op = _matmul_kernel({})
    assert "l1_reuse" not in op and "l1_resident" not in op
    # {-1: 4}: every class of cube subgraphs merges up to 4 that copy the same GM data into
    # L1; side 0 (either operand), 4 m tiles: the C tiles next to each other in PyPTO's walk
    # (n outer, m inner) share B's panel
    merged, op = _matmul_kernel({"cube_l1_reuse_setting": {-1: 4}})
    assert (op["l1_resident"], op["l1_reuse"]) == ("b", 4)
    assert any('l1_resident "b", l1_reuse 4' in n for n in merged.notes), merged.notes
    base, reuse = plain.run(), merged.run()
    # B's panel loaded once per 4 C tiles: less read from GM, a quarter of the cube tasks
    assert reuse.gm["read_bytes"] < base.gm["read_bytes"]
    assert reuse.tasks < base.tasks
    # {-1: 1}: merge count 1 turns the pass off (PyPTO's GetModeBySetting)
    off, op = _matmul_kernel({"cube_l1_reuse_setting": {-1: 1}})
    assert "l1_reuse" not in op
    assert off.run().gm["read_bytes"] == base.gm["read_bytes"]


def test_cube_l1_reuse_setting_sides_orders_and_auto_count():
    # count + side * 1000000: side 2 is the right matrix (B), side 1 the left (A)
    _, op = _matmul_kernel({"cube_l1_reuse_setting": {0: 2000003}})
    assert (op["l1_resident"], op["l1_reuse"]) == ("b", 3)
    traced, op = _matmul_kernel({"cube_l1_reuse_setting": {"DEFAULT": 1000002}})
    assert (op["l1_resident"], op["l1_reuse"]) == ("a", 2)
    assert any("none of which share A, so nothing merges" in n for n in traced.notes)
    # one m tile: every C tile shares A's rows, so side 0 keeps A
    _, op = _matmul_kernel({"cube_l1_reuse_setting": {-1: 8}}, m=128)
    assert (op["l1_resident"], op["l1_reuse"]) == ("a", 8)
    # a hash order that names no matmul is ignored, and the matmul gets PyPTO's auto count:
    # 32 C tiles over 2 x 24 AIC cores is 0, no merge
    traced, op = _matmul_kernel({"cube_l1_reuse_setting": {3: 4}})
    assert "l1_reuse" not in op
    assert any("keys [3]: the kernel's root functions have at most 1 matmul" in n
               for n in traced.notes), traced.notes
    assert any("auto count, its 32 C tiles over 2 x 24 AIC cores, is 0" in n
               for n in traced.notes), traced.notes


def test_cube_l1_reuse_setting_counts_hash_orders_per_root_function():
    @pypto.jit(pass_options={"cube_l1_reuse_setting": {1: 2000004}})
    def k(a: pypto.Tensor((512, 256), FP16), b: pypto.Tensor((256, 1024), FP16),
          b2: pypto.Tensor((256, 1024), FP16), c: pypto.Tensor((512, 1024), FP16),
          d: pypto.Tensor((512, 1024), FP16)):
        pypto.set_cube_tile_shapes(128, 256, 128)
        c[:] = pypto.matmul(a, b, FP16)
        d[:] = pypto.matmul(a, b2, FP16)

    first, second = [o for o in ops(k.trace().program) if o["op"] == "matmul"]
    assert "l1_reuse" not in first  # hash order 0: the auto count, 0
    assert (second["l1_resident"], second["l1_reuse"]) == ("b", 4)

    @pypto.jit(pass_options={"cube_l1_reuse_setting": {0: 2}})
    def rows(a: pypto.Tensor((1024, 256), FP16), b: pypto.Tensor((256, 1024), FP16),
             c: pypto.Tensor((1024, 1024), FP16)):
        pypto.set_cube_tile_shapes(128, 256, 128)
        for i in pypto.loop(4, name="rows"):
            a_i = pypto.view(a, [256, 256], [i * 256, 0])
            c[i * 256:(i + 1) * 256, :] = pypto.matmul(a_i, b, FP16)

    # the loop body is a root function of its own: its first matmul is hash order 0 there
    (op,) = [o for o in ops(rows.trace().program) if o["op"] == "matmul"]
    assert (op["l1_resident"], op["l1_reuse"]) == ("b", 2)


def test_sg_set_scope_note_says_where_the_model_stops():
    @pypto.jit
    def k(x: pypto.Tensor((8, 512), FP16), y: pypto.Tensor((8, 512), FP16)):
        pypto.set_vec_tile_shapes(8, 512)
        pypto.set_pass_options(sg_set_scope=3)
        t = pypto.exp(x)
        y[:] = pypto.mul(t, x)
        pypto.set_pass_options(sg_set_scope=-1)

    traced = k.trace()
    named = [o for o in ops(traced.program) if "psg" in o]
    assert len(named) == 1 and named[0]["psg"].startswith("sg_scope3_")
    assert any("cannot join two, so PyPTO's merged stage is not modelled" in n
               for n in traced.notes), traced.notes
    assert not any("ends tilesim's stage" in n for n in traced.notes)

    @pypto.jit
    def split(x: pypto.Tensor((8, 512), FP16), y: pypto.Tensor((8, 512), FP16)):
        pypto.set_vec_tile_shapes(8, 512)
        pypto.set_pass_options(sg_set_scope=1)
        t = pypto.exp(x)
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = pypto.mul(t, x)

    notes = split.trace().notes
    assert any(re.search(r"sg_set_scope 1: a changed vector tile at .*test_pypto_compat.py:\d+ "
                         r"ends tilesim's stage sg_scope1_\d+ inside the scope", n)
               for n in notes), notes


def test_a_tiled_row_softmax_keeps_its_running_max_and_sum_in_its_own_tensors():
    call = "row_softmax(torch.randn(16, 1500, dtype=torch.float16))"
    name, k = trace_file(compat("tiled_row_softmax.py"), call=call)
    assert name == "row_softmax_kernel"
    # the wrapper padded 1500 columns to three tiles of 512; each tile of a row is a part of
    # 's' read three times (max, sum, normalise) and a part of 'p' written once
    assert sorted(t["name"] for t in k.program["inputs"]) == [
        f"s_view_d1_{a}_{a + 512}" for a in (0, 1024, 512)]
    names = [o["op"] for o in ops(k.program)]
    # peak[:] = ... and total[:] = ... rebind the kernel's own tensors: the first tile sets
    # them, the other two fold in (maximum, add); no write of 'peak' or 'total' is an output
    assert names.count("amax") == 3 and names.count("maximum") == 2
    assert names.count("sum") == 3 and names.count("add") == 2
    assert names.count("div") == 3
    assert not any(o["name"] in ("peak", "total") for o in k.program["outputs"])
    assert ran(k).root_functions == 16


def test_a_local_tensor_written_in_an_inner_loop_stays_a_buffer():
    @pypto.jit
    def k(x: pypto.Tensor((4, 256), FP32), y: pypto.Tensor((4, 256), FP32)):
        acc = pypto.tensor([1, 256], FP32, "acc")
        pypto.set_vec_tile_shapes(1, 256)
        for i in pypto.loop(4, idx_name="i"):
            acc[:] = pypto.exp(pypto.view(x, [1, 256], [i, 0]))
            pypto.assemble(acc, [i, 0], y)

    # made outside the loop and written inside it: a loop-carried buffer, not a name to rebind
    with pytest.raises(pypto.UnsupportedError, match="pypto.assemble: 'acc' is assembled at "
                       "chunks {}"):
        k.trace()


def test_stream_mixing_slices_views_of_a_chunk_and_axpy():
    call = ("stream_mix(torch.randn(2, 50, 4, 2048, dtype=torch.bfloat16), torch.randn(2, 50, 4), "
            "torch.randn(2, 50, 1, 2048, dtype=torch.bfloat16))")
    # the file defines two kernels; the call runs the bf16 one, which is the one traced
    name, k = trace_file(compat("stream_mix.py"), call=call)
    assert name == "stream_mix_bf16"
    assert any("other kernels (stream_mix_fp32) were not called" in n for n in k.notes)
    assert any("unrolled by 8, 13 root functions of 8, the last of 4 along dim 0" in n
               for n in k.notes), k.notes
    assert k.config()["buffer_count"] == 2
    # each stream of a loop chunk is a part of 'x' on dim 1, cut by the token loop on dim 0
    shapes = {t["name"]: t["shape"] for t in k.program["inputs"]}
    assert shapes["x_view_d1_0_1"] == [100, 1, 2048] and shapes["x_view_d1_3_4"] == [100, 1, 2048]
    assert shapes["w_view_d1_0_1"] == [100, 1, 1]
    # acc.axpy_(stream * weight, alpha=1.0): one add per stream, acc rebound to the sum
    names = [o["op"] for o in ops(k.program)]
    assert names.count("add") == 4 and names[-1] == "cast"
    assert ran(k).root_functions == 13  # 12 unrolled runs of 8 tokens, then the rest of 4
    fp32 = ("stream_mix(torch.randn(1, 24, 4, 1024), torch.randn(1, 24, 4), "
            "torch.randn(1, 24, 1, 1024))")
    assert trace_file(compat("stream_mix.py"), call=fp32)[0] == "stream_mix_fp32"


def test_factory_kernels_tails_on_views_of_a_chunk_and_a_cast_concat():
    call = ("rope_k(torch.randn(10, 2, 64, dtype=torch.bfloat16), torch.randn(10, 1, 32), "
            "torch.randn(10, 1, 32), torch.empty(10, 2, 64, dtype=torch.bfloat16))")
    path = compat("head_rope_factory.py")
    # the factory made two kernels both named `kernel`: each goes by the name bound to it, and
    # the call ran rope_k (rope_q, not called, has no shapes to trace)
    name, k = trace_file(path, call=call)
    assert name == "rope_k"
    assert any("other kernels (rope_q) were not called" in n for n in k.notes)
    with pytest.raises(TraceFailure, match="'x' has dynamic dims \\[pypto.DYNAMIC, 8, 64\\]"):
        trace_file(path, "rope_q", call=call)
    # the halves of the chunk, viewed with the chunk's own tail, are the program's view ops;
    # the cast of their concat is a cast of each half, assembled at its offset
    names = [o["op"] for o in ops(k.program)]
    assert names.count("view") == 2 and names[-2:] == ["cast", "cast"]
    assert [(t["name"], t["shape"]) for t in k.program["outputs"]] == [
        ("out_part_d2_0_32", [10, 2, 32]), ("out_part_d2_32_64", [10, 2, 32])]
    assert any("cast mode CAST_RINT: the rounding mode changes the values" in n for n in k.notes)
    assert ran(k).root_functions == 3  # 10 tokens in chunks of 4: 4, 4, then the tail of 2


def test_a_half_of_an_arguments_loop_chunk_is_a_part_read_in_the_loop():
    @pypto.jit
    def halves(x: pypto.Tensor((64, 256), FP32), y: pypto.Tensor((64, 128), FP32)):
        pypto.set_vec_tile_shapes(8, 128)
        for i in pypto.loop(8, idx_name="i"):
            rows = x[i * 8:(i + 1) * 8, :]
            lo, hi = rows[:, :128], rows[:, 128:]
            y[i * 8:(i + 1) * 8, :] = pypto.exp(hi) + lo

    traced = halves.trace()
    assert sorted((t["name"], t["shape"]) for t in traced.program["inputs"]) == [
        ("x_view_d1_0_128", [64, 128]), ("x_view_d1_128_256", [64, 128])]
    assert loops(traced.program)[0]["loop_count"] == 8
    ran(traced)


def test_rotate_half_under_a_tile_of_part_of_the_last_dim(tmp_path):
    f = tmp_path / "quarter_rope.py"
    f.write_text(textwrap.dedent("""\
        import torch
        import pypto

        @pypto.frontend.jit
        def rope(q: pypto.tensor(), cos: pypto.tensor(), sin: pypto.tensor(),
                 out: pypto.tensor()):
            pypto.set_vec_tile_shapes(*[TILE for _ in range(q.dim)])
            half = q.shape[-1] // 2
            turned = pypto.concat([pypto.neg(q[..., half:]), q[..., :half]], dim=-1)
            out[:] = q * cos + turned * sin

        def apply(q, cos, sin):
            out = torch.empty_like(q)
            rope(q, cos, sin, out)
            return out
        """))
    call = "apply(*[torch.randn(64, 128, dtype=torch.float16) for _ in range(3)])"
    src = f.read_text()
    f.write_text("TILE = 32\n" + src)
    _, k = trace_file(str(f), call=call)
    assert "rotate_half" in [o["op"] for o in ops(k.program)]
    quarter = ran(k)  # each 32-column tile reads the same columns of the other half
    f.write_text("TILE = 128\n" + src)
    whole = ran(trace_file(str(f), call=call)[1])
    assert quarter.gm["read_bytes"] == whole.gm["read_bytes"] == 3 * 64 * 128 * 2
    f.write_text("TILE = 48\n" + src)  # 48 does not divide the half (64): a tile straddles it
    with pytest.raises(Exception, match="splits the last dim of .* across its halves, which "
                       "rotate_half swaps \\(set the last tile dim to a divisor of 64 or >= 128"):
        trace_file(str(f), call=call)[1].run()


# ---- refusals: one per class ---------------------------------------------------------------


NO_ARGS = ()


def refusal(body, *words, args=None):
    src = textwrap.dedent("""\
        import tilesim.pypto as pypto
        FP32 = pypto.DT_FP32

        @pypto.jit
        def k(x: pypto.Tensor([pypto.DYNAMIC, 256], FP32), w: pypto.Tensor((256,), FP32),
              y: pypto.Tensor([pypto.DYNAMIC, 256], FP32)):
            pypto.set_vec_tile_shapes(8, 256)
        """) + textwrap.indent(textwrap.dedent(body), "    ")
    ns = {}
    exec(compile(src, "refused.py", "exec"), ns)
    with pytest.raises(pypto.UnsupportedError) as e:
        ns["k"].trace(*(args if args is not None else [pypto.tensor([64, 256], FP32), pypto.tensor([256], FP32),
                                 pypto.tensor([64, 256], FP32)]))
    msg = str(e.value)
    assert msg.startswith("refused.py:" if args is None else __file__), msg
    for w in words:
        assert w in msg, msg
    return msg


@pytest.mark.parametrize("case, body, words", [
    ("dynamic", "y[:] = pypto.exp(x)", ["dynamic dims [pypto.DYNAMIC, 256]", "--call"]),
    ("not_a_tail", """\
        for i in pypto.loop(3, idx_name="i"):
            v = pypto.view(x, [30, 256], [i * 30, 0], valid_shape=[i * 0 + 30, 256])
            pypto.assemble(pypto.exp(v), [i * 30, 0], y)""", ["valid_shape on dim 0 (i * 0 + 30)"]),
    ("uneven", """\
        for i in pypto.loop(3, idx_name="i"):
            v = pypto.view(x, [30, 256], [i * 30, 0])
            pypto.assemble(pypto.exp(v), [i * 30, 0], y)""", ["3 chunks of 30", "valid_shape"]),
    ("sym_text", """\
        for i in pypto.loop(4, idx_name="i"):
            v = pypto.view(x, [16, 256], [i * 8, 0])""", ["starts at 8 (offset i * 8), not 16"]),
    ("reshape_computed", "y[:] = pypto.reshape(pypto.exp(x), [128, 128])",
     ["pypto.assemble", "is a reshape of", "assembled into 'y'", "only whole"]),
    ("reshape_computed_chunk", """\
        for i in pypto.loop(4, idx_name="i"):
            e = pypto.exp(pypto.view(x, [16, 256], [i * 16, 0]))
            y[:] = pypto.reshape(e, [16, 1, 256])""",
     ["is a reshape of", "assembled into 'y'"]),
    ("reshape_moving_the_loop_dim", """\
        for i in pypto.loop(4, idx_name="i"):
            e = pypto.exp(pypto.view(x, [16, 256], [i * 16, 0]))
            y[:] = pypto.reshape(e, [1, 16, 256])""",
     ["computed on a loop chunk", "[16, 256] into [1, 16, 256]", "moves the dims the loop cuts",
      "keep the loop's dims leading"]),
    ("reshape_then_old_shape", """\
        flat = pypto.reshape(x, [16, 1024])
        for i in pypto.loop(4, idx_name="i"):
            v = x[i * 16:(i + 1) * 16, :]""",
     ["'x' is read as [64, 256] here and as [16, 1024]", "refused.py:", "one shape"]),
    ("reshape_after_use", "e = pypto.exp(x)\ny[:] = pypto.reshape(x, [128, 128])",
     ["used as [64, 256] before this reshape"]),
    ("expand_into_unary", "y[:] = pypto.exp(pypto.expand_clone(w, [64, 256]))",
     ["shape-only view", "broadcast"]),
    ("concat_into_op", "y[:] = pypto.concat([x, x], 0) * w", ["a concat feeds only"]),
    ("full_alone", "y[:] = pypto.exp(pypto.full([64, 256], 1.0))", ["pypto.full"]),
    ("view_of_computed", """\
        e = pypto.exp(x)
        pypto.assemble(pypto.view(e, [32, 256], [0, 0]), [0, 0], y)""", ["pypto.assemble",
                                                                        "is a view of"]),
    ("view_of_computed_at_loop_index", """\
        e = pypto.exp(x)
        for i in pypto.loop(4, idx_name="i"):
            v = pypto.view(e, [16, 256], [i * 16, 0])""", ["pypto.view", "follows a loop index",
                                                          "static offsets"]),
    ("unknown_op", "y[:] = pypto.topk(x, 4, -1)", ["pypto.topk", "it traces"]),
    ("strided_pick", "y[:] = pypto.gathermask(x, pattern_mode=1)",
     ["pypto.gathermask: picks elements of the last dim by a bit pattern", "strided pick",
      "view them (x[..., :d // 2], x[..., d // 2:])"]),
    ("bad_unroll", """\
        for i in pypto.loop(4, unroll_list=[0, 1]):
            pass""", ["unroll_list [0, 1]"]),
    ("unsqueeze_computed_mid", "y[:] = pypto.unsqueeze(pypto.exp(x), 1)",
     ["pypto.assemble", "is a reshape of", "assembled into 'y'"]),
    ("view_past_extent", "y[:] = pypto.exp(pypto.view(x, [64, 128], [0, 200]))",
     ["offset 200 + size 128 passes the extent 256", "valid_shape"]),
    ("axpy_into_an_argument", "x.axpy_(pypto.exp(x))",
     ["Tensor.axpy_", "updates 'x', a tensor of the kernel, in place"]),
    ("view_of_part_of_a_chunk", """\
        for i in pypto.loop(4, idx_name="i"):
            rows = x[i * 16:(i + 1) * 16, :]
            v = pypto.view(rows, [8, 256], [8, 0])""",
     ["which loop 'loop_L", "takes 8 from 8 of the chunk of 16 of 'x'",
      "takes the chunk whole"]),
    ("tail_of_a_view_of_a_computed_chunk", """\
        for i in pypto.loop(3, idx_name="i"):
            v = pypto.view(x, [30, 256], [i * 30, 0], valid_shape=[pypto.min(30, 64 - i * 30),
                                                                   256])
            e = pypto.exp(v)
            h = pypto.view(e, [30, 128], [0, 0], valid_shape=[pypto.min(30, 64 - i * 30), 100])""",
     ["valid_shape", "makes part of a view of a value computed inside the kernel invalid on a "
      "dim no loop cuts"]),
    ("needs_shape_tail_loop", """\
        for i in pypto.loop(3, idx_name="i"):
            v = pypto.view(x, [30, 256], [i * 30, 0], valid_shape=[pypto.min(30, 64 - i * 30),
                                                                   256])
            pypto.assemble(pypto.reduce_max(v), [i * 30, 0], y)""", ["pypto.reduce_max"]),
])
def test_refusal_classes(case, body, words):
    refusal(body, *words, args=NO_ARGS if case == "dynamic" else None)


def test_refusal_of_output_parts_that_overlap():
    @pypto.jit
    def k(x: pypto.Tensor((8, 256), FP32), y: pypto.Tensor((8, 512), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        pypto.assemble(pypto.exp(x), [0, 0], y)
        pypto.assemble(pypto.exp(x), [0, 128], y)

    with pytest.raises(pypto.UnsupportedError, match="overlaps the part"):
        k.trace()


def test_needs_values_before_any_kernel_is_a_refusal(tmp_path):
    f = tmp_path / "golden_first.py"
    f.write_text("import torch\nx = torch.randn(4)\nprint(x.tolist())\n")
    with pytest.raises(TraceFailure, match=r"golden_first.py:3: Tensor.tolist: needs tensor "
                                           "values"):
        trace_file(str(f))
    # item() of a tensor of several elements is no scalar, as in torch
    f.write_text("import torch\nx = torch.randn(4)\nprint(x.item())\n")
    with pytest.raises(TraceFailure, match=r"golden_first.py:3: Tensor.item: a tensor of 4 "
                                           "elements is no scalar"):
        trace_file(str(f))


def test_scalar_reads_before_the_kernel_are_answered_and_noted_after_it_stop_the_file(tmp_path):
    """The wrapper reads scale.item() for a kernel scalar before the kernel runs: answered 1.0,
    with a note (the stand-in holds no data); the bias row goes in through extend_params."""
    call = ("scaled_linear(torch.randn(4, 64, 256, dtype=torch.float16), "
            "torch.randn(512, 256, dtype=torch.float16), torch.randn(512), torch.tensor([0.5]))")
    _, k = trace_file(compat("scaled_linear.py"), call=call)
    assert any("Tensor.item at scaled_linear.py:31" in n and "answered 1.0" in n
               for n in k.notes)
    assert any("adds its bias 'bias' in the cube" in n for n in k.notes)
    mm = next(o for o in ops(k.program) if o["op"] == "matmul")
    assert mm["inputs"][2] == "bias"
    ran(k)
    # after a kernel ran, a scalar read checks its results: the file stops there, as before
    f = tmp_path / "golden_after.py"
    f.write_text(textwrap.dedent("""\
        import torch
        import pypto

        @pypto.jit
        def k(x: pypto.Tensor((64, 256), pypto.DT_FP32), y: pypto.Tensor((64, 256), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 256)
            y[:] = pypto.exp(x)

        x = torch.randn(64, 256)
        y = torch.empty_like(x)
        k(x, y)
        assert (y - x).abs().max().item() < 1e-3
        """))
    _, k = trace_file(str(f))
    assert any("stopped at" in n and "golden_after.py:12" in n for n in k.notes)
    assert not any("answered" in n for n in k.notes)


def test_a_frontend_kernel_returns_its_outputs_to_the_wrapper(tmp_path):
    f = tmp_path / "swiglu.py"
    f.write_text(textwrap.dedent("""\
        import torch
        import pypto

        N = pypto.frontend.dynamic("N")

        @pypto.frontend.jit
        def swiglu(gate: pypto.Tensor([N, 1024], pypto.DT_FP16),
                   up: pypto.Tensor([N, 1024], pypto.DT_FP16)):
            pypto.set_vec_tile_shapes(8, 1024)
            return pypto.silu(gate) * up

        def mlp(x):
            g, u = x.chunk(2, dim=-1)
            out = swiglu(g.contiguous(), u.contiguous())
            return out.view(-1, 512, 2).shape

        print(mlp(torch.randn(16, 2048, dtype=torch.float16)))
        """))
    _, k = trace_file(str(f))
    assert [o["op"] for o in ops(k.program)] == ["silu", "mul"]
    assert k.program["outputs"] == [{"name": "out0", "shape": [16, 1024], "dtype": "fp16"}]


def test_nothing_is_refused_at_import(tmp_path):
    f = tmp_path / "two.py"
    f.write_text(textwrap.dedent("""\
        import pypto

        pypto.set_print_options(edgeitems=3)

        @pypto.jit(pass_options={"no_such_pass": 1})
        def bad_option(x: pypto.Tensor((8, 256), pypto.DT_FP32),
                       y: pypto.Tensor((8, 256), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 256)
            y[:] = pypto.exp(x)

        @pypto.jit
        def nz(x: pypto.Tensor((8, 256), pypto.DT_FP32, format=pypto.TileOpFormat.TILEOP_NZ),
               y: pypto.Tensor((8, 256), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 256)
            y[:] = pypto.exp(x)

        @pypto.jit
        def clean(x: pypto.Tensor((8, 256), pypto.DT_FP32),
                  y: pypto.Tensor((8, 256), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(8, 256)
            y[:] = pypto.exp(x)
        """))
    _, k = trace_file(str(f), "clean")
    assert any("pypto.set_print_options at two.py:3" in n for n in k.notes)
    with pytest.raises(TraceFailure, match="two.py:5: pypto.jit: pass option 'no_such_pass' is not one tilesim knows"):
        trace_file(str(f), "bad_option")
    with pytest.raises(TraceFailure, match="two.py:12: pypto.Tensor: format"):
        trace_file(str(f), "nz")


def test_a_loop_walking_from_a_static_offset_reads_a_part():
    @pypto.jit
    def k(x: pypto.Tensor((72, 256), FP32), y: pypto.Tensor((64, 256), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        for i in pypto.loop(4, idx_name="i"):
            v = pypto.view(x, [16, 256], [i * 16 + 8, 0])  # skips 8 header rows
            pypto.assemble(pypto.exp(v), [i * 16, 0], y)

    t = k.trace()
    assert t.program["inputs"] == [{"name": "x_view_d0_8_72", "shape": [64, 256],
                                    "dtype": "fp32"}]
    assert loops(t.program)[0]["loop_count"] == 4
    ran(t)


@pytest.mark.parametrize("call, words", [
    ("rms_norm(", "not a Python expression"),
    ("no_such_wrapper(1)", "NameError: name 'no_such_wrapper' is not defined"),
])
def test_a_bad_call_is_one_line_naming_it(call, words):
    with pytest.raises(TraceFailure, match=f"--call {re.escape(call)}: .*{re.escape(words)}"):
        trace_file(compat("qwen3_rms_norm.py"), call=call)


def test_torch_standin_autograd_function_distributed_and_new_tensors():
    with torch_standin.installed() as torch:
        import torch.distributed as dist

        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.new_zeros(x.shape[0], 2, dtype=torch.float8_e4m3fn)

        y = Scale.apply(torch.empty(3, 4))
        assert y.shape == (3, 2) and y.dtype is torch.float8_e4m3fn and y.element_size() == 1
        assert dist.get_world_size() == 1 and not dist.is_initialized()
        x = torch.randn(5, 6).requires_grad_(True)
        assert torch.autograd.grad((x * x).sum(), [x])[0].shape == (5, 6)
        with pytest.raises(torch_standin.NeedsValues, match="bool"):
            if torch.any(x > 0):
                pass


def test_operation_options_are_notes_and_a_bias_is_the_cubes_bias_path():
    bias = True

    @pypto.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, ...], FP16), w: pypto.Tensor([], FP16),
          b: pypto.Tensor([], FP32), y: pypto.Tensor([pypto.DYNAMIC, ...], FP32)):
        pypto.experimental.set_operation_options(combine_axis=True)
        m = x.shape[0]
        for idx in pypto.loop(pypto.ceildiv(m, 128), idx_name="idx"):
            off = idx * 128
            xt = pypto.view(x, [128, x.shape[1]], [off, 0], valid_shape=[(m - off).min(128),
                                                                         x.shape[1]])
            pypto.set_cube_tile_shapes([128, 128], [128, 128], [128, 128])
            if bias:
                mm = pypto.matmul(xt, w, FP32, extend_params={"bias_tensor": b})  # at:bias
            else:
                mm = pypto.matmul(xt, w, FP32)
            y[off:, 0:] = mm

    args = [pypto.tensor([300, 256], FP16), pypto.tensor([256, 512], FP16),
            pypto.tensor([512], FP32), pypto.tensor([300, 512], FP32)]
    # PyPTO's CheckBiasShapeParam: a bias of rank 2 whose penultimate dim is 1
    with pytest.raises(pypto.UnsupportedError, match=r"bias_tensor \[512\]: PyPTO's bias is a "
                                                     r"row \[1, n\]") as e:
        k.trace(*args)
    assert e.value.line == next(n for n, t in enumerate(open(__file__), 1)
                                if t.rstrip().endswith("# at:bias"))
    args[2] = pypto.tensor([1, 512], FP32)
    t = k.trace(*args)
    assert [len(o["inputs"]) for o in ops(t.program) if o["op"] == "matmul"] == [3, 3]
    with_bias = ran(t)
    bias = False
    t = k.trace(*args)
    assert any("set_operation_options ['combine_axis']" in n for n in t.notes)
    assert [lp["loop_count"] for lp in loops(t.program)] == [2, 1]  # 128, 128, then 44
    assert ran(t).gen_time_us <= with_bias.gen_time_us

    @pypto.jit
    def scaled(x: pypto.Tensor((128, 256), FP16), w: pypto.Tensor((256, 512), FP16),
               y: pypto.Tensor((128, 512), FP32)):
        pypto.set_cube_tile_shapes([128, 128], [128, 128], [128, 128])
        y[:] = pypto.matmul(x, w, FP32, extend_params={"scale_tensor": x})

    with pytest.raises(pypto.UnsupportedError, match=r"extend_params \['scale_tensor'\]: the "
                                                     "fixpipe's dequantisation"):
        scaled.trace()


def test_option_getters_hold_no_compiler_state():
    assert pypto.get_codegen_options() == {} and pypto.get_pass_options() == {}


def test_a_tail_with_two_tiles_sets_them_again():
    @pypto.jit
    def k(x: pypto.Tensor((100, 512), FP32), y: pypto.Tensor((100, 1), FP32)):
        for i in pypto.loop(4, idx_name="i"):
            v = pypto.view(x, [32, 512], [i * 32, 0], valid_shape=[pypto.min(32, 100 - i * 32),
                                                                   512])
            pypto.set_vec_tile_shapes(8, 512)
            e = pypto.exp(v)
            pypto.set_vec_tile_shapes(16, 512)
            pypto.assemble(pypto.sum(e, -1, keepdim=True), [i * 32, 0], y)

    t = k.trace()
    head, tail = loops(t.program)
    tiles = [e["name"] for e in tail["body"] if "set_vec_tile_shapes" in e]
    assert len(tiles) == 2 and all("_again_" in n for n in tiles)
    assert [e.get("op") for e in head["body"]] == [e.get("op") for e in tail["body"]]
    assert ran(t).root_functions == 4


# ../shared issue 48: a 1-D weight cast inside the row loop was refused with advice that changed
# the kernel ("view its chunk by idx x 16": each chunk of rows would read another part of the
# weight). It traces as the [1, N] form does: the cast runs once before the loop, the weight read
# as [1, N] (the same data), and both forms give the same run.
WEIGHT_IN_LOOP = textwrap.dedent("""\
    import pypto

    @pypto.jit
    def k(x: pypto.Tensor((64, 1024), pypto.DT_FP32), w: pypto.Tensor(WSHAPE, pypto.DT_FP16),
          y: pypto.Tensor((64, 1024), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 1024)
        for idx in pypto.loop(0, 4, 1, name="rows"):
            xs = pypto.view(x, [16, 1024], [idx * 16, 0])
            wf = pypto.cast(w, pypto.DT_FP32)
            pypto.assemble(xs * wf, [idx * 16, 0], y)
    """)


def test_a_1d_weight_cast_inside_the_row_loop_traces_as_its_broadcast_shape(tmp_path):
    traced = {}
    for shape in ("(1024,)", "(1, 1024)"):
        path = tmp_path / f"k{len(traced)}.py"
        path.write_text(WEIGHT_IN_LOOP.replace("WSHAPE", shape))
        _, traced[shape] = trace_file(str(path))
    one_d, two_d = traced["(1024,)"], traced["(1, 1024)"]
    assert {t["name"]: t["shape"] for t in one_d.program["inputs"]}["w"] == [1, 1024]
    assert one_d.program["body"] == two_d.program["body"]
    assert [o["op"] for o in one_d.program["body"] if "op" in o] == ["cast"]
    assert any("'w' [1024] is read as [1, 1024]" in n for n in one_d.notes), one_d.notes
    assert ran(one_d).gen_time_us == ran(two_d).gen_time_us


# ---- the vendor's example style: options scopes, fake-tensor guards, split-K, labels ---------


def test_an_options_scoped_test_function_calls_the_kernel_through_torch_ops():
    # @pypto.options on the test function, FakeTensor imported from torch._subclasses,
    # torch.library.impl(lib, "op", "NPU"), a `with pypto.options(vec_tile_shapes=...)` block
    name, k = trace_file(compat("scoped_layer_norm.py"), call="test_layer_norm()")
    assert name == "layer_norm_kernel"
    p = k.program
    assert p["body"][0]["set_vec_tile_shapes"] == [16, 1024]
    assert [o["op"] for o in ops(p)][:3] == ["cast", "sum", "div"]
    assert any("enable_slice: not modelled" in n and "OP_SLICE" in n for n in k.notes), k.notes
    ran(k)
    # the scope's options held for the call only: the defaults are as before it
    assert not any("enable_slice" in n for n in pypto._options.GLOBAL[0].notes)
    name, k2 = trace_file(compat("scoped_layer_norm.py"), as_main=True)
    assert k2.program == p


def test_options_scope_outside_and_inside_a_kernel():
    @pypto.jit
    def k(x: pypto.Tensor((64, 256), FP32), y: pypto.Tensor((64, 256), FP32)):
        with pypto.options(pass_options={"vec_nbuffer_setting": {-1: 2}},
                           vec_tile_shapes=[16, 256]):
            y[:] = pypto.exp(x)

    t = pypto.options(runtime_options={"stitch_function_max_num": 4})(k.trace)()
    assert t.program["body"][0]["set_vec_tile_shapes"] == [16, 256]
    assert t.config()["buffer_count"] == 2 and t.config()["runtime"] == {
        "stitch_function_max_num": 4}
    assert k.trace().config().get("runtime") is None  # restored after the decorated call
    ran(t)
    bad = pypto.options(pass_options={"no_such_pass": 1})  # made at import: never refused there
    with pytest.raises(pypto.UnsupportedError, match="'no_such_pass' is not one tilesim knows"):
        with bad:
            pass
    with pytest.raises(pypto.UnsupportedError, match="matrix_size"):
        with pypto.options(matrix_size=[16, 16, 16]):
            pass


def test_a_weight_cast_before_the_first_view_runs_once_before_the_unrolled_runs():
    call = ("rms_norm(torch.randn(3, 37, HIDDEN, dtype=torch.float16), "
            "torch.ones(HIDDEN, dtype=torch.float16))")
    _, k = trace_file(compat("clipped_rms_norm.py"), call=call)
    p = k.program
    # 111 tokens, unroll_list [4, 1] of 8 rows: 3 x 32, one 8, the tail of 7; the weight's
    # reshape and cast (traced before the view fixed the loop's axis) run once before them
    assert [o["op"] for o in p["body"] if "op" in o] == ["cast"]
    assert [(lp["loop"], lp["loop_count"]) for lp in loops(p)] == [
        ("rows", 3), ("rows_by8", 1), ("rows_tail", 1)]
    body = [o["op"] for o in ops(loops(p)[0])]
    assert body[:3] == ["cast", "maximum", "minimum"]  # pypto.clip as PyPTO builds it
    assert all([o["op"] for o in ops(lp)] == body for lp in loops(p))
    assert any("run once before it" in n for n in k.notes)
    assert any("set_semantic_label 'norm'" in n for n in k.notes)
    names = [o["out"] for o in ops(p)]
    assert len(names) == len(set(names))  # each program tensor written once
    # the default tile is the first one an op runs under, not the one replaced before any op
    assert k.config()["program_tile"] == p["body"][1]["name"]
    ran(k)


def test_a_tile_set_at_the_top_of_the_loop_body_is_set_again_for_its_hoisted_ops(tmp_path):
    src = open(compat("clipped_rms_norm.py")).read()
    f = tmp_path / "tile_in_loop.py"
    f.write_text(src.replace('pypto.set_semantic_label("weight")',
                             "pypto.set_vec_tile_shapes(4, HIDDEN)"))
    call = ("rms_norm(torch.randn(100, HIDDEN, dtype=torch.float16), "
            "torch.ones(HIDDEN, dtype=torch.float16))")
    _, k = trace_file(str(f), call=call)
    body = k.program["body"]
    hoisted = [i for i, e in enumerate(body) if e.get("op") == "cast"]
    assert len(hoisted) == 1 and body[hoisted[0] - 1]["set_vec_tile_shapes"] == [4, 2048]
    assert all(lp["body"][0]["set_vec_tile_shapes"] == [4, 2048] for lp in loops(k.program))
    assert k.config()["program_tile"] == loops(k.program)[0]["body"][0]["name"]
    ran(k)


def test_a_loop_begun_with_no_tile_hoists_the_weight_casts_after_its_first_tile(tmp_path):
    """A gated cell in the style of LSTM ports: no vector tile before the loop_unroll; its body
    sets one, casts the reshaped 1-D weights (no chunk of the loop), then views its rows. The
    casts run once before the loop under the body's first tile, where the loop would otherwise
    chunk their [1, H] rows by its count (which `tilesim run` refuses)."""
    f = tmp_path / "gated_cell.py"
    f.write_text(textwrap.dedent("""\
        import torch
        import pypto

        H = 1024

        @pypto.frontend.jit(runtime_options={"device_sched_mode": 1})
        def cell_kernel(gates: pypto.Tensor([pypto.DYNAMIC, 2 * H], pypto.DT_FP16),
                        w: pypto.Tensor([H], pypto.DT_FP16),
                        out: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_FP16)):
            w_row = pypto.reshape(w, [1, H], inplace=True)
            for b, n in pypto.loop_unroll(0, gates.shape[0], 1, name="BATCH", idx_name="b",
                                          unroll_list=[1, 2, 4]):
                pypto.set_vec_tile_shapes(n, H)
                wf = pypto.cast(w_row, pypto.DT_FP32)
                pypto.set_vec_tile_shapes(1, 2 * H)
                g = pypto.cast(pypto.view(gates, [n, 2 * H], [b, 0]), pypto.DT_FP32)
                pypto.set_vec_tile_shapes(1, H)
                f_gate = pypto.sigmoid(pypto.view(g, [n, H], [0, 0]))
                c = pypto.mul(pypto.view(g, [n, H], [0, H]), wf)
                pypto.assemble(pypto.cast(pypto.mul(c, f_gate), pypto.DT_FP16), [b, 0], out)

        def cell(gates, w):
            out = torch.empty(gates.shape[0], H, dtype=torch.float16)
            cell_kernel(gates, w, out)
            return out
        """))
    _, k = trace_file(str(f), call="cell(torch.randn(32, 2048, dtype=torch.float16), "
                                   "torch.randn(1024, dtype=torch.float16))")
    p = k.program
    body = p["body"]
    assert [e.get("op") for e in body if "op" in e] == ["cast"]
    cast = next(i for i, e in enumerate(body) if e.get("op") == "cast")
    assert body[cast - 1]["set_vec_tile_shapes"] == [4, 1024]  # the body's first tile
    assert body[cast]["inputs"] == ["w"]
    # 32 rows in steps of 4 (the largest unroll): 8 root functions
    assert [(lp["loop"], lp["axis"], lp["loop_count"]) for lp in loops(p)] == [("BATCH", 0, 8)]
    assert [o["op"] for o in ops(loops(p)[0])][0] == "cast"
    assert any("run once before it" in n for n in k.notes)
    res = ran(k)
    assert res.root_functions == 9  # the hoisted cast's, then the loop's 8
    # the hoisted cast: one task; each root function's 4 rows: a [1, 2H] cast task per row,
    # then the [1, H] stage per row
    assert res.tasks == 1 + 8 * 4 + 8 * 4


def test_a_pseudo_query_matmul_broadcasts_its_batch_of_one():
    """Attention over residual blocks as model ports write it: one learned query [1, 1, D]
    scores each token's L blocks [T, L, D] (b_trans), a batch dim of 1 that PyPTO's matmul
    broadcasts (python/pypto/op/matmul.py); each token's C row reads the one query."""
    T_, L, D = 16, 8, 256

    @pypto.jit
    def k(blocks: pypto.Tensor((T_, L, D), FP32), query: pypto.Tensor((1, 1, D), FP32),
          scores: pypto.Tensor((T_, 1, L), FP32)):
        for t, n in pypto.loop_unroll(0, T_, 1, name="TOKENS", idx_name="t",
                                      unroll_list=[1, 4]):
            rows = pypto.view(blocks, [n, L, D], [t, 0, 0])
            pypto.set_vec_tile_shapes(1, L, D)
            pypto.set_cube_tile_shapes([16, 16], [256, 256], [16, 16])
            s = pypto.matmul(query, rows * 2.0, pypto.DT_FP32, b_trans=True)
            pypto.assemble(s, [t, 0, 0], scores)

    t = k.trace()
    mm = next(o for o in ops(t.program) if o["op"] == "matmul")
    assert mm["inputs"][0] == "query" and mm["transpose_b"]
    assert [(lp["loop"], lp["loop_count"]) for lp in loops(t.program)] == [("TOKENS", 4)]
    res = ran(t)
    assert res.root_functions == 4
    # per token: the scaled rows (one vector task) and its C row [1, 8] (one cube task)
    assert res.tasks == T_ + T_


def test_split_k_matmul_as_pypto_accumulates_in_gm():
    @pypto.jit
    def k(a: pypto.Tensor((64, 4096), FP16), b: pypto.Tensor((4096, 128), FP16),
          c: pypto.Tensor((64, 128), FP32)):
        pypto.set_cube_tile_shapes([64, 64], [256, 1024], [128, 128], enable_split_k=True)
        c[:] = pypto.matmul(a, b, FP32)

    t = k.trace()
    mm = next(o for o in ops(t.program) if o["op"] == "matmul")
    assert (mm["split_k"], mm["split_k_merge"]) == (4, "vector")  # 4096 / k L1 1024
    assert any("enable_split_k" in n and "split_k 4" in n for n in t.notes)
    ran(t)

    @pypto.jit
    def half(a: pypto.Tensor((64, 4096), FP16), b: pypto.Tensor((4096, 128), FP16),
             c: pypto.Tensor((64, 128), FP16)):
        pypto.set_cube_tile_shapes([64, 64], [256, 1024], [128, 128], enable_split_k=True)
        c[:] = pypto.matmul(a, b, FP16)

    with pytest.raises(pypto.UnsupportedError, match="enable_split_k with a"):
        half.trace()


def test_a_status_shape_takes_a_tensor_of_higher_rank_as_pypto_does():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], FP32),
          y: pypto.Tensor([pypto.STATIC, pypto.STATIC], FP32)):
        pypto.set_vec_tile_shapes(1, 8, 256)
        y[:] = pypto.exp(x)

    t = k.trace(pypto.tensor([1, 8, 256], FP32), pypto.tensor([1, 8, 256], FP32))
    assert t.program["inputs"][0]["shape"] == [1, 8, 256]
    with pytest.raises(pypto.UnsupportedError, match=r"annotated \[pypto.STATIC, pypto.STATIC\]"):
        k.trace(pypto.tensor([256], FP32), pypto.tensor([256], FP32))

    @pypto.frontend.jit
    def exact(x: pypto.Tensor([8, 256], FP32), y: pypto.Tensor([8, 256], FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = pypto.exp(x)

    with pytest.raises(pypto.UnsupportedError, match=r"annotated \[8, 256\]"):
        exact.trace(pypto.tensor([1, 8, 256], FP32), pypto.tensor([1, 8, 256], FP32))


def test_the_call_names_torch_when_the_kernel_file_does_not_import_it(tmp_path):
    f = tmp_path / "factory.py"
    f.write_text(textwrap.dedent("""\
        import pypto

        def make_kernel(cols):
            @pypto.frontend.jit(runtime_options={"device_sched_mode": 1})
            def scale(x: pypto.Tensor([pypto.DYNAMIC, cols], pypto.DT_FP32),
                      y: pypto.Tensor([pypto.DYNAMIC, cols], pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(8, cols)
                y[:] = x * 2.0
            return scale
        """))
    _, k = trace_file(str(f), call="make_kernel(512)(torch.randn(32, 512), torch.empty(32, 512))")
    assert k.program["inputs"][0]["shape"] == [32, 512]


def test_torch_standin_old_library_impl_and_fake_tensor():
    mods = torch_standin.modules()
    torch = mods["torch"]
    lib = torch.library.Library("demo_ns", "FRAGMENT")
    lib.define("twice(Tensor x) -> Tensor")
    seen = []
    torch.library.impl(lib, "twice", "Meta")(lambda x: seen.append("meta"))
    torch.library.impl(lib, "twice", "NPU")(lambda x: seen.append("npu") or x)
    x = torch.randn(4, 8)
    assert torch.ops.demo_ns.twice(x) is x and seen == ["npu"]
    fake = mods["torch._subclasses.fake_tensor"].FakeTensor
    assert not isinstance(x, fake) and torch._subclasses.fake_tensor.FakeTensor is fake


def test_fake_quant_rounds_as_pypto_and_clips():
    call = ("fake_quant(torch.randn(1024, 2048, dtype=torch.bfloat16), "
            "torch.rand(1024, 1, dtype=torch.bfloat16))")
    _, k = trace_file(compat("fake_quant.py"), call=call)
    body = [o["op"] for o in ops(loops(k.program)[0])]
    assert body[body.index("div"):body.index("div") + 4] == ["div", "round", "maximum", "minimum"]
    ran(k)

    @pypto.jit
    def half(x: pypto.Tensor((64, 256), FP16), y: pypto.Tensor((64, 256), FP16)):
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = pypto.round(x)

    with pytest.raises(pypto.UnsupportedError, match="cast to DT_FP32 first"):
        half.trace()

    @pypto.jit
    def decimals(x: pypto.Tensor((64, 256), FP32), y: pypto.Tensor((64, 256), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = x.round(decimals=2)

    with pytest.raises(pypto.UnsupportedError, match="decimals=2"):
        decimals.trace()


def test_a_reshape_to_a_padded_shape_reads_its_valid_part():
    @pypto.jit
    def k(x: pypto.Tensor((64, 256), FP32), w: pypto.Tensor((256,), FP32),
          y: pypto.Tensor((64, 256), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        y[:] = x * pypto.reshape(w, [1, 512], valid_shape=[1, 256])

    t = k.trace()
    assert {i["name"]: i["shape"] for i in t.program["inputs"]}["w"] == [1, 256]
    ran(t)


def test_set_matrix_size_is_checked_against_the_traced_matmul():
    """PyPTO's set_matrix_size([m, k, n]) gives the static extents its cube copies use; a trace
    has static shapes, so the hint is a note where it matches and refused where it does not."""
    size = [64, 256, 128]

    @pypto.jit
    def k(x: pypto.Tensor((128, 256), FP16), w: pypto.Tensor((256, 128), FP16),
          y: pypto.Tensor((128, 128), FP32)):
        pypto.set_cube_tile_shapes([64, 64], [128, 128], [128, 128])
        for i in pypto.loop(2, name="rows", idx_name="i"):
            pypto.set_matrix_size(size)
            xt = pypto.view(x, [64, 256], [i * 64, 0])
            pypto.assemble(pypto.matmul(xt, w, FP32), [i * 64, 0], y)  # at:matrix

    t = k.trace()
    assert any("set_matrix_size([64, 256, 128])" in n for n in t.notes)
    ran(t)
    size = [128, 256, 128]
    with pytest.raises(pypto.UnsupportedError, match=r"set_matrix_size\(\[128, 256, 128\]\) at "
                                                     r"test_pypto_compat.py:\d+ is not this "
                                                     r"matmul's traced \[m, k, n\] \[64, 256, "
                                                     r"128\]") as e:
        k.trace()
    assert e.value.line == next(n for n, t in enumerate(open(__file__), 1)
                                if t.rstrip().endswith("# at:matrix"))


def test_views_and_reshapes_of_computed_values_are_aliases():
    """Slices of a computed value, a reshape of a computed chunk that adds a unit dim, a
    reshape assembled into an output and an argument read in two shapes: the program's view
    and reshape ops (no copy), traced and run."""
    _, k = trace_file(compat("gated_heads.py"), call="gated_heads(torch.randn(64, 16, 128))")
    body = ops(loops(k.program)[0])
    views = [o for o in body if o["op"] == "view"]
    assert [v["offsets"] for v in views] == [[0, 0], [0, 8]]
    assert all(v["shape"] == [64, 8] for v in views)
    reshapes = [o for o in body if o["op"] == "reshape"]
    assert [r["shape"] for r in reshapes] == [[64, 16, 128], [64, 16, 1]]  # x per head, gate
    assert reshapes[0]["inputs"] == ["x"]
    assert {"name": "mixed", "shape": [64, 8], "dtype": "fp32"} in k.program["outputs"] or \
        "mixed" in k.program["outputs"]
    assert any("'mixed' [64, 2, 4] is written as [64, 8]" in n for n in k.notes)
    assert any("views of values computed inside the kernel are the program's view op" in n
               for n in k.notes)
    ran(k)


def test_a_slice_of_an_expanded_argument_is_the_slice_it_broadcasts():
    """scale.expand_clone([3, n])[1:2, :] is row 1 of scale, broadcast: a static part of the
    argument (its broadcast dim taken once), which the elementwise op broadcasts."""

    @pypto.jit
    def k(x: pypto.Tensor((64, 256), FP32), scale: pypto.Tensor((3,), FP32),
          y: pypto.Tensor((64, 256), FP32)):
        pypto.set_vec_tile_shapes(8, 256)
        s = pypto.reshape(scale, [3, 1]).expand_clone([3, 256])
        y[:] = x * s[1:2, :]

    t = k.trace()
    mul = next(o for o in ops(t.program) if o["op"] == "mul")
    part = next(i for i in t.program["inputs"] if i["name"] == mul["inputs"][1])
    assert part["shape"] == [1, 1] and "d0_1_2" in part["name"]
    ran(t)


def test_views_of_computed_values_follow_a_loops_tail():
    """A loop of 32-row chunks over 100 rows (a valid_shape tail): each run's views and the
    reshape assembled into an output name that run's part."""

    @pypto.jit
    def k(x: pypto.Tensor((100, 64), FP32), y: pypto.Tensor((100, 32), FP32),
          z: pypto.Tensor((100, 4, 8), FP32)):
        for i in pypto.loop(pypto.ceildiv(100, 32), idx_name="i"):
            off = i * 32
            xv = pypto.view(x, [32, 64], [off, 0], valid_shape=[(100 - off).min(32), 64])
            pypto.set_vec_tile_shapes(8, 64)
            e = pypto.exp(xv)
            pypto.set_vec_tile_shapes(8, 32)
            y[off:, 0:] = e[:, 0:32] + e[:, 32:64]
            z[off:, 0:, 0:] = pypto.reshape(pypto.exp(e[:, 0:32]), [e.shape[0], 4, 8])

    t = k.trace()
    main, tail = loops(t.program)
    assert {tuple(o["shape"]) for o in ops(main) if o["op"] == "view"} == {(96, 32)}
    assert {tuple(o["shape"]) for o in ops(tail) if o["op"] == "view"} == {(4, 32)}
    assert any("'z' [100, 4, 8] is written as [100, 32]" in n for n in t.notes)
    ran(t)
