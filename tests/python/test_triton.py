"""tilesim.triton: Triton(-Ascend) kernel files traced as written. Each shipped example's traced
launch runs as the equivalent hand-written tile program does (the same tasks, the same time
within 1%); each construct outside the traced surface is refused with one line naming the
kernel's file:line, the construct and what is supported instead."""
import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import source

import tilesim
import tilesim.triton as tt
from tilesim.pypto import TraceFailure

EXAMPLES = source("examples/triton")


def spmd(program, grid, hardware="ascend910b4"):
    return {"program": program, "partition": {"style": "spmd", "grid": grid, "source": "triton"},
            "hardware": hardware}


def prog(inputs, outputs, body, name="hand"):
    return {"program": name, "inputs": [{"name": n, "shape": s, "dtype": d}
                                        for n, s, d in inputs],
            "outputs": outputs, "body": body}


def op(name, inputs, out, **keys):
    return {"op": name, "inputs": inputs, "out": out, **keys}


def tile(*dims):
    return {"set_vec_tile_shapes": list(dims), "name": "t"}


# The equivalent programs, written by hand from each kernel.
HAND = {
    "vector_add": spmd(prog([("x", [1000003], "fp32"), ("y", [1000003], "fp32")], ["out"],
                            [tile(8192), op("add", ["x", "y"], "out")]), 123),
    "softmax": spmd(prog([("x", [1823, 781], "fp32")], ["y"], [
        tile(1, 1024), op("amax", ["x"], "m", dim=1, keepdim=True), op("sub", ["x", "m"], "d"),
        op("exp", ["d"], "e"), op("sum", ["e"], "s", dim=1, keepdim=True),
        op("div", ["e", "s"], "y")]), 1823),
    "layernorm": spmd(prog([("x", [1151, 8192], "fp32"), ("w", [1, 8192], "fp32"),
                            ("b", [1, 8192], "fp32")], ["y"], [
        tile(1, 1024), op("sum", ["x"], "s1", dim=1, keepdim=True, apply_in_task=True),
        op("div", ["s1"], "mean", scalar=8192.0), op("sub", ["x", "mean"], "d0"),
        op("where_index", ["d0"], "d"),
        op("mul", ["d", "d"], "dd"), op("sum", ["dd"], "s2", dim=1, keepdim=True),
        op("div", ["s2"], "var", scalar=8192.0), op("add", ["var"], "ve", scalar=1e-5),
        op("sqrt", ["ve"], "sd"), op("reciprocal", ["sd"], "rstd"),
        op("sub", ["x", "mean"], "d2"), op("mul", ["d2", "rstd"], "n"),
        op("mul", ["n", "w"], "nw"), op("add", ["nw", "b"], "y")]), 1151),
    "rmsnorm": spmd(prog([("x", [4096, 2048], "fp16"), ("w", [1, 2048], "fp16")], ["y"], [
        tile(1, 2048), op("cast", ["w"], "wf", dtype="fp32"),
        op("cast", ["x"], "xf", dtype="fp32"), op("mul", ["xf", "xf"], "sq"),
        op("sum", ["sq"], "ss", dim=1, keepdim=True), op("div", ["ss"], "ms", scalar=2048.0),
        op("add", ["ms"], "me", scalar=1e-6), op("rsqrt", ["me"], "r"),
        op("mul", ["xf", "r"], "n"), op("mul", ["n", "wf"], "nw"),
        op("cast", ["nw"], "y", dtype="fp16")]), 40),
    "row_sum": spmd(prog([("x", [1000, 8192], "fp32")], ["y"], [
        tile(1, 2048), op("sum", ["x"], "y", dim=1, keepdim=True)]), 40),
    "mul_sum": spmd(prog([("x", [1000, 8192], "fp32"), ("w", [1, 8192], "fp32")], ["y"], [
        tile(16, 512), op("mul", ["x", "w"], "xw"),
        op("sum", ["xw"], "y", dim=1, keepdim=True)]), 63),
    "matmul": spmd(prog([("a", [2048, 1024], "fp16"), ("b", [1024, 2048], "fp16")], ["c"], [
        {"set_cube_tile_shapes": [128, 64, 128], "name": "c"},
        op("matmul", ["a", "b"], "c", out_dtype="fp16", assignment="strided")]), 20),
}
CALLS = {"mul_sum": "mul_sum(torch.randn(1000, 8192), torch.randn(8192), block_m=16)"}


@pytest.mark.parametrize("name", sorted(HAND))
def test_traced_examples_run_as_the_hand_written_program(name):
    launches = tt.trace_file(os.path.join(EXAMPLES, f"{name}.py"),
                             call=CALLS.get(name, "main()"), hardware="ascend910b4")
    assert len(launches) == 1
    traced = tilesim.run(launches[0].config)
    hand = tilesim.run(HAND[name])
    assert traced.tasks == hand.tasks
    assert traced.kernel_time_us == pytest.approx(hand.kernel_time_us, rel=0.01)
    assert traced.gm["read_bytes"] == hand.gm["read_bytes"]


def test_a_kernel_reading_its_input_three_times_moves_three_times_the_bytes():
    """The layernorm example walks each row three times (mean, variance, output): x is read
    three times, w and b once per output block. Each program makes its passes over its own row
    in sequence, so the kernel is one launch, as on the board."""
    launch = tt.trace_file(os.path.join(EXAMPLES, "layernorm.py"), call="main()",
                           hardware="ascend910b4")[0]
    x = 1151 * 8192 * 4
    run = tilesim.run(launch.config)
    read = run.gm["read_bytes"]
    assert 5 * x <= read <= 5 * x + 1151 * 128
    assert run.diagnostics.get("launches", 1) == 1  # the key is left out for one launch
    assert run.tasks == 1151  # a block per row, its three passes in one task


def test_the_fused_multiply_sum_of_the_board_fits_ub():
    """(25, 512) fp32 sub-tiles of [1000, 8192] on grid 40, as ran on a 910B4: w[None, :] is read
    in place by the multiply (InlineOTFBroadcast), x * w written over x, so UB holds x and w
    double-buffered and the row sums: 2 x 51200 + 2 x 2048 + 2 x 800 B."""
    launch = tt.trace_file(os.path.join(EXAMPLES, "mul_sum.py"),
                           call="mul_sum(torch.randn(1000, 8192), torch.randn(8192), block_m=25)",
                           hardware="ascend910b4")[0]
    assert launch.grid == 40
    run = tilesim.run(launch.config)
    assert run.diagnostics["ub_bytes"] == 2 * 51200 + 2 * 2048 + 2 * 800
    # Issue 45's acceptance: within 25% of the board's 16.00 us (mindspore-ai/akg, akg_agents'
    # Triton-Ascend reduction case for [1000, 8192] fp32, grid 40, (25, 512): runs not flushed,
    # so L2 holds the 32.8 MB input).
    warm = dict(launch.config, runtime={"l2": "warm"})
    assert abs(tilesim.run(warm).kernel_time_us / 16.00 - 1) < 0.25


GATED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def gated(a_ptr, b_ptr, c_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    for start in tl.range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=offs < n, other=0.0)
        if TANH:
            g = 0.5 * a * (1.0 + tl.math.tanh(0.79788456 * (a + 0.044715 * a * a * a)))
        else:
            g = a * tl.sigmoid(a)
        tl.store(c_ptr + offs, g.to(b.dtype) * b, mask=offs < n)


def go(tanh):
    a = torch.randn(4096, 11008, dtype=torch.bfloat16)
    b = torch.randn(4096, 11008, dtype=torch.bfloat16)
    gated[(40,)](a, b, torch.empty_like(a), a.numel(), TANH=tanh, BLOCK=8192)
'''


def test_the_compiler_multi_buffers_copies_and_writes_temporaries_in_place(tmp_path):
    """A gated activation over bf16 rows as operator libraries write it (a grid-stride loop of
    8192-element blocks, computed in fp32). The Triton-Ascend compiler multi-buffers the buffers
    its loads fill and its stores drain (AscendNPU-IR MarkMultiBuffer), not the vector ops'
    results, and writes a result over a source that dies at it (PlanMemory's in-place reuse):
    a, b and c 2 x 16384 B each, then the fp32 temporaries once. SiLU: a and sigmoid(a), 2 x
    32768 B (a * sigmoid(a) written over a); GELU's tanh form: a, the tanh argument and the one
    scratch tile of tanh, 3 x 32768 B: exactly the 196608 B of UB (these were refused as UB
    overflows while temporaries were doubled and written beside their sources)."""
    path = tmp_path / "gated.py"
    path.write_text(GATED)
    copies = 3 * 2 * 16384
    for tanh, temporaries in ((False, 2 * 32768), (True, 3 * 32768)):
        launch = tt.trace_file(str(path), call=f"go({tanh})", hardware="ascend910b4")[0]
        run = tilesim.run(launch.config)
        assert run.diagnostics["ub_bytes"] == copies + temporaries
        assert run.diagnostics["buffer_depth"] == 2


SOFTMAX_3PASS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_long(X, Y, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(X + row * stride + cols, mask=cols < N, other=-float("inf")))
    row_max = tl.max(m, 0)
    s = tl.zeros([BLOCK], tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        s += tl.exp(tl.load(X + row * stride + cols, mask=cols < N, other=-float("inf")) - row_max)
    denom = tl.sum(s, 0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + row * stride + cols, mask=cols < N, other=-float("inf"))
        tl.store(Y + row * stride + cols, tl.exp(x - row_max) / denom, mask=cols < N)


def go():
    x = torch.randn(64, 32768)
    softmax_long[(64,)](x, torch.empty_like(x), 32768, x.stride(0), BLOCK=4096)
'''


def test_each_pass_reads_the_input_and_only_the_output_is_written(tmp_path):
    """A softmax over long rows in three loops (max, sum of exp, output): x is read three
    times, and each statistic is computed where the kernel computes it, so nothing but y (and
    a row statistic handed between passes, a few bytes a row) is written."""
    path = tmp_path / "softmax_long.py"
    path.write_text(SOFTMAX_3PASS)
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    gm = tilesim.run(launch.config).gm
    x = 64 * 32768 * 4
    assert 3 * x <= gm["read_bytes"] <= 3 * x + 64 * 256
    assert x <= gm["write_bytes"] <= x + 64 * 64
    ops = [e["op"] for e in launch.program["body"] if "op" in e]
    assert ops == ["amax", "sub", "exp", "sum", "sub", "exp", "div"]


def test_a_loop_of_one_iteration_is_its_body():
    """BLOCK_N = N: the row loop runs once, and its accumulated sum is the one reduction."""
    launch = tt.trace_file(os.path.join(EXAMPLES, "row_sum.py"), call="main()",
                           hardware="ascend910b4")[0]
    for block in (8192, 16384):
        body = launch.retrace(BLOCK_N=block).program["body"]
        assert [e["op"] for e in body if "op" in e] == ["sum"]


def test_the_device_properties_come_from_the_hardware_file():
    for hardware, cores in (("ascend910b4", 40), ("ascend910b1", 48)):
        launch = tt.trace_file(os.path.join(EXAMPLES, "row_sum.py"), call="main()",
                               hardware=hardware)[0]
        assert launch.grid == cores
        assert launch.config["hardware"] == hardware
        assert launch.config["partition"] == {"style": "spmd", "grid": cores,
                                              "source": "triton"}


def test_strided_row_loops_are_noted_and_masked_partial_blocks_traced():
    launch = tt.trace_file(os.path.join(EXAMPLES, "rmsnorm.py"), call="main()",
                           hardware="ascend910b4")[0]
    assert any("strided" in n for n in launch.notes)
    add = tt.trace_file(os.path.join(EXAMPLES, "vector_add.py"), call="main()")[0]
    assert add.program["inputs"][0]["shape"] == [1000003]  # 123 blocks, the last partial


KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, n, N: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
{body}


def go(grid=4, n=4096, N=1024, BLOCK=1024):
    x = torch.randn(n)
    y = torch.empty(n)
    k[(grid,)](x, y, n, N=N, BLOCK=BLOCK)
'''

REFUSED = {
    "dot_1d": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
               "    x = tl.load(x_ptr + offs)\n"
               "    tl.store(y_ptr + offs, tl.dot(x, x))",
               "tl.dot: operands of shapes [1024] and [1024]"),
    "compare": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                "    x = tl.load(x_ptr + offs)\n"
                "    tl.store(y_ptr + offs, tl.where(x > 1.0, x, 0.0))",
                "a comparison of data: comparisons of loaded values"),
    "data_mask": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                  "    x = tl.load(x_ptr + offs)\n"
                  "    tl.store(y_ptr + offs, x * 2.0, mask=x > 0)",
                  "a comparison of data: comparisons of loaded values"),
    "loop_redoes_blocks": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                           "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
                           "    for i in range(0, 2):\n"
                           "        acc += tl.load(x_ptr + offs)\n"
                           "    tl.store(y_ptr + offs, acc * 2.0)",
                           "a loop: no load or store inside the loop at"),
    "masked_moved_pointer": ("    ptrs = x_ptr + pid * 2 * BLOCK + tl.arange(0, BLOCK)\n"
                             "    optr = y_ptr + pid * 2 * BLOCK + tl.arange(0, BLOCK)\n"
                             "    for i in range(0, 2):\n"
                             "        tl.store(optr, tl.load(ptrs, mask=tl.arange(0, BLOCK) < n)"
                             " * 2.0)\n"
                             "        ptrs += BLOCK\n"
                             "        optr += BLOCK",
                             "a masked access through 'ptrs', which the loop moves"),
    "branch_on_pid": ("    if pid > 0:\n"
                      "        offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                      "        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)",
                      "a condition on a program id or loop index"),
    "mask_inside": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                    "    m = offs >= 100\n"
                    "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)",
                    "it cuts inside the tensor, not at its end"),
    "past_the_end": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                     "    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)",
                     "reads or writes past the end of 'x_ptr'"),
    "unknown_call": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                     "    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))",
                     "tl.cumsum: not in what tilesim.triton traces"),
    "flat_mask_2d": ("    r = tl.arange(0, 4)[:, None]\n"
                     "    c = tl.arange(0, BLOCK)[None, :]\n"
                     "    offs = (pid * 4 + r) * N + c\n"
                     "    m = offs < n\n"
                     "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)",
                     "one comparison of a 2-D offset block (offs < n over rows and columns)"),
    "overlap": ("    offs = pid * 8 + tl.arange(0, BLOCK)\n"
                "    m = offs < n\n"
                "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)",
                "not a multiple of its 1024: blocks must tile the tensor"),
    "read_twice": ("    offs = (pid % 2) * BLOCK + tl.arange(0, BLOCK)\n"
                   "    out = pid * BLOCK + tl.arange(0, BLOCK)\n"
                   "    tl.store(y_ptr + out, tl.load(x_ptr + offs) * 2.0)",
                   "is read again (programs 0 and 2) in one pass"),
    "read_part": ("    offs = 2 * pid * BLOCK + tl.arange(0, BLOCK)\n"
                  "    out = pid * BLOCK + tl.arange(0, BLOCK)\n"
                  "    tl.store(y_ptr + out, tl.load(x_ptr + offs) * 2.0)",
                  "the programs read 2 of the 3 blocks of 'x_ptr' in one pass"),
    # what operator libraries write beyond the traced surface
    "or_of_masks": ("    r = tl.arange(0, 8)\n"
                    "    c = tl.arange(0, BLOCK)\n"
                    "    m = (r < 4)[:, None] or (c < N)[None, :]\n"
                    "    tl.store(y_ptr + r[:, None] * N + c[None, :], 1.0, mask=m)",
                    "mask | mask (or `or`): a disjunction of masks is not a box"),
    "if_on_a_mask": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                     "    if offs < n:\n"
                     "        tl.store(y_ptr + offs, tl.load(x_ptr + offs))",
                     "a condition on a mask: a kernel cannot branch on a block of booleans"),
    "reshape_2d": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                   "    x = tl.load(x_ptr + offs).reshape(32, BLOCK // 32)\n"
                   "    tl.store(y_ptr + offs, x)",
                   "tl.reshape: a reshape of a [1024] block to [32, 32]; a reshape that adds axes"),
    "sub_block_parallel": ("    from triton.language.extra.cann import extension\n"
                           "    for s in extension.parallel(0, 2, bind_sub_block=True):\n"
                           "        offs = pid * BLOCK + tl.arange(0, BLOCK)",
                           "extension.parallel: a loop split over a core's vector units"),
    "unused_import_used": ("    from triton.language.extra.libdevice import erfinv\n"
                           "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                           "    tl.store(y_ptr + offs, erfinv(tl.load(x_ptr + offs)))",
                           "libdevice.erfinv: not in what tilesim.triton traces"),
    "select_by_position": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                           "    x = tl.load(x_ptr + offs)\n"
                           "    at3 = tl.arange(0, BLOCK) == 3\n"
                           "    tl.store(y_ptr + offs, tl.where(at3, x * 2.0, x))",
                           "tl.where: a select by position"),
    "data_plus_loop_index": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                             "    for i in range(2):\n"
                             "        tl.store(y_ptr + offs, tl.load(x_ptr + offs) + i)",
                             "an operation between data and a program id or loop index"),
    "min_of_blocks": ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                      "    tl.store(y_ptr + offs, tl.load(x_ptr + min(offs, n - 1)))",
                      "min(...) in a kernel: a min of"),
}
CALL = {"past_the_end": "go(grid=5)", "read_part": "go(grid=2)", "flat_mask_2d": "go(grid=1, n=4096)",
        "loop_redoes_blocks": "go(grid=4)", "masked_moved_pointer": "go(grid=2, n=4096)"}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_line_the_construct_and_what_is_supported(tmp_path, name):
    body, said = REFUSED[name]
    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL.format(body=body))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call=CALL.get(name, "go()"))
    message = str(e.value)
    assert said in message, message
    assert message.startswith(f"{path}:"), message
    line = int(message.split(":")[1])
    assert 10 <= line <= 10 + body.count("\n") + 1, message
    assert "\n" not in message


MOVED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def sumsq_rows(x_ptr, y_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    x_bp = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1),
                             offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                             order=(1, 0))
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BLOCK_N)):
        x = tl.load(x_bp, boundary_check=(0, 1), padding_option="zero")
        acc += x * x
        x_bp = tl.advance(x_bp, (0, BLOCK_N))
    y_bp = tl.make_block_ptr(y_ptr, shape=(M,), strides=(1,), offsets=(pid * BLOCK_M,),
                             block_shape=(BLOCK_M,), order=(0,))
    tl.store(y_bp, tl.sum(acc, axis=1), boundary_check=(0,))


@triton.jit
def twice(x_ptr, y_ptr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    xp = x_ptr + pid * BLOCK * STEPS + tl.arange(0, BLOCK)
    yp = y_ptr + pid * BLOCK * STEPS + tl.arange(0, BLOCK)
    for i in range(STEPS):
        tl.store(yp, tl.load(xp) * 2.0)
        xp += BLOCK
        yp += BLOCK


def go():
    x = torch.randn(1000, 5000)
    sumsq_rows[(125,)](x, torch.empty(1000), 1000, 5000, x.stride(0), BLOCK_M=8, BLOCK_N=1024)


def go2():
    x = torch.randn(40 * 4 * 4096)
    twice[(40,)](x, torch.empty_like(x), BLOCK=4096, STEPS=4)
'''


def test_block_pointers_and_pointers_moved_in_a_loop(tmp_path):
    """tl.make_block_ptr / tl.advance / boundary_check, and ptrs += BLOCK in a loop, trace as
    the same kernels written with offsets from the loop index."""
    path = tmp_path / "moved.py"
    path.write_text(MOVED)
    bp = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    hand = spmd(prog([("x", [1000, 5000], "fp32")], ["y"], [
        tile(8, 1024), op("mul", ["x", "x"], "sq"),
        op("sum", ["sq"], "y", dim=1, keepdim=True)]), 125)
    a, b = tilesim.run(bp.config), tilesim.run(hand)
    assert a.tasks == b.tasks and a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    inc = tt.trace_file(str(path), call="go2()", hardware="ascend910b4")[0]
    hand = spmd(prog([("x", [655360], "fp32")], ["y"], [
        tile(4096), op("mul", ["x"], "y", scalar=2.0)]), 40)
    a, b = tilesim.run(inc.config), tilesim.run(hand)
    assert a.tasks == b.tasks and a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)


def test_a_guard_every_program_passes_is_taken_and_noted(tmp_path):
    path = tmp_path / "guard.py"
    path.write_text(KERNEL.format(body="    if pid * BLOCK >= n:\n"
                                       "        return\n"
                                       "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                                       "    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)"))
    launch = tt.trace_file(str(path), call="go()")[0]
    assert any("is False for every program" in n for n in launch.notes)
    with pytest.raises(TraceFailure) as e:  # program 4 of 5 would return: programs differ
        tt.trace_file(str(path), call="go(grid=5)")
    assert "a condition on a program id or loop index" in str(e.value)


AND_MASKS = '''
import torch
import triton
import triton.language as tl


def make(split):
    @triton.jit
    def matmul_and(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid = tl.program_id(0)
        num_n = tl.cdiv(N, BLOCK_N)
        for tile in range(pid, tl.cdiv(M, BLOCK_M) * num_n, tl.num_programs(0)):
            rm = (tile // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (tile % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            msk_m = rm < M
            msk_n = rn < N
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, tl.cdiv(K, BLOCK_K)):
                rk = tl.arange(0, BLOCK_K)
                a = tl.load(a_ptr + rm[:, None] * stride_am + (k * BLOCK_K + rk)[None, :],
                            mask=msk_m[:, None] and (rk[None, :] < K - k * BLOCK_K), other=0.0)
                b = tl.load(b_ptr + (k * BLOCK_K + rk)[:, None] * stride_bk + rn[None, :],
                            mask=msk_n[None, :] and (rk[:, None] < K - k * BLOCK_K), other=0.0)
                acc = tl.dot(a, b, acc)
            if split and not (BLOCK_M < 16):  # scalars (a closure's, constexprs): Python's own
                tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
                         mask=(rm[:, None] < M) and (rn[None, :] < N))
    return matmul_and


def go():
    a = torch.randn(2048, 1024, dtype=torch.float16)
    b = torch.randn(1024, 2048, dtype=torch.float16)
    c = torch.empty((2048, 2048), dtype=torch.float16)
    make(True)[(20,)](a, b, c, 2048, 2048, 1024, a.stride(0), b.stride(0), c.stride(0),
                      BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
'''


def test_masks_joined_with_and_are_joined_as_triton_does(tmp_path):
    """`msk_m[:, None] and (rk[None, :] < K - k * BLOCK_K)`, as triton-ascend's matmul tutorial
    writes its masks: Triton compiles `and` between blocks as logical_and (its code generator's
    visit_BoolOp), so the kernel traces as the example written with `&` (same tasks and time);
    `and` / `not` between scalars (a closure's flag, a constexpr test) stay Python's."""
    path = tmp_path / "matmul_and.py"
    path.write_text(AND_MASKS)
    traced = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    amp = tt.trace_file(os.path.join(EXAMPLES, "matmul.py"), call="main()",
                        hardware="ascend910b4")[0]
    assert traced.grid == amp.grid == 20
    a, b = tilesim.run(traced.config), tilesim.run(amp.config)
    assert a.tasks == b.tasks and a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)


def test_kernels_made_by_one_factory_keep_their_own_closures(tmp_path):
    """Two kernels of one factory share their code, not their closure: the flag each was made
    with decides its `if twice and not DEBUG` (scalars: Python's `and` / `not`)."""
    path = tmp_path / "factory.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        def make(twice):
            @triton.jit
            def k(x_ptr, y_ptr, n, DEBUG: tl.constexpr, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n and offs >= 0)
                if twice and not DEBUG:
                    x = x * 2.0
                tl.store(y_ptr + offs, x + 1.0, mask=offs < n)
            return k


        def go():
            x = torch.randn(4096)
            make(True)[(4,)](x, torch.empty_like(x), 4096, DEBUG=False, BLOCK=1024)
            make(False)[(4,)](x, torch.empty_like(x), 4096, DEBUG=False, BLOCK=1024)
        '''))
    launches = tt.trace_file(str(path), call="go()")
    assert [[e["op"] for e in t.program["body"] if "op" in e] for t in launches] == \
        [["mul", "add"], ["add"]]


def test_erf_is_the_op_tables_erf(tmp_path):
    """GELU in its erf form, as operator libraries write it: tl.erf (and libdevice.erf) is the
    op table's erf, Ascend C's Erf API."""
    body = ("    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n"
            "    tl.store(y_ptr + offs, 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476)))")
    (tmp_path / "gelu_erf.py").write_text(KERNEL.format(body=body))
    launch = tt.trace_file(str(tmp_path / "gelu_erf.py"), call="go()")[0]
    ops = [e["op"] for e in launch.program["body"] if "op" in e]
    assert ops == ["mul", "mul", "erf", "add", "mul"]
    assert tilesim.run(launch.config).tasks == 4


def test_a_where_on_x_positive_is_a_relu(tmp_path):
    path = tmp_path / "relu.py"
    path.write_text(KERNEL.format(body="    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                                       "    x = tl.load(x_ptr + offs)\n"
                                       "    tl.store(y_ptr + offs, tl.where(x > 0, x, 0))"))
    launch = tt.trace_file(str(path), call="go()")[0]
    assert [e["op"] for e in launch.program["body"] if "op" in e] == ["relu"]


def _where_kernel(tmp_path, name, cols):
    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL.format(body=(
        "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
        f"    x = tl.where({cols} < n, x * 2.0, 0.0)\n"
        "    tl.store(y_ptr + offs, x, mask=offs < n)")))
    return tt.trace_file(str(path), call="go(n=4000)", hardware="ascend910b4")[0]


def test_a_where_on_integer_offsets_runs_on_the_scalar_unit(tmp_path):
    """tl.where(offs < n, ...): the vector unit's Cmp takes no int32 / int64, so the compare and
    select run on the scalar unit, element by element (triton-ascend's profiling guide); the
    offsets cast to fp32 compare on the vector unit. 4 programs of 1024 elements, one each: the
    integer form's one extra pass is 1024 x scalar.index_compare_cycles_per_element (77.7) per
    program, which nothing overlaps (a program is one load, one pass, one store)."""
    scalar = _where_kernel(tmp_path, "where_int", "offs")
    vector = _where_kernel(tmp_path, "where_fp32", "offs.to(tl.float32)")
    ops = lambda launch: [e["op"] for e in launch.program["body"] if "op" in e]  # noqa: E731
    assert ops(scalar) == ["mul", "where_index"]
    assert ops(vector) == ["mul", "where_index_fp32"]
    assert any("scalar unit" in n and "where_int.py:" in n for n in scalar.notes), scalar.notes
    s, v = tilesim.run(scalar.config), tilesim.run(vector.config)
    assert s.tasks == v.tasks == 4
    with open(source("configs/hardware/ascend910b4.json")) as f:
        mhz = json.load(f)["parameters"]["clock_mhz"]["value"]
    vec = lambda r: r.per_core[0]["vec_us"]  # noqa: E731 - program 0's block is whole
    free = tilesim.run(scalar.config, set={"scalar.index_compare_cycles_per_element": 0})
    assert vec(s) - vec(free) == pytest.approx(1024 * 77.7 / mhz, rel=1e-6)
    assert s.kernel_time_us > v.kernel_time_us > free.kernel_time_us


def test_an_index_cast_to_float_is_only_compared(tmp_path):
    path = tmp_path / "fused.py"
    path.write_text(KERNEL.format(body=(
        "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs)\n"
        "    tl.store(y_ptr + offs, x + offs.to(tl.float32))")))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="go()")
    assert "fused.py:" in str(e.value) and "an index block cast to a float" in str(e.value)


def test_autotune_heuristics_and_libentry_launch_with_the_first_config(tmp_path):
    path = tmp_path / "tuned.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        from triton.runtime.libentry import libentry


        @libentry()
        @triton.autotune(configs=[triton.Config({"BLOCK": 2048}, num_warps=4),
                                  triton.Config({"BLOCK": 4096})], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @triton.jit
        def scale(x_ptr, y_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            if EVEN:
                tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))
            else:
                tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


        def run(x):
            y = torch.empty_like(x)
            scale[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
            return y
        '''))
    launch = tt.trace_file(str(path), call="run(torch.randn(65536))")[0]
    assert launch.grid == 32 and launch.meta == {"EVEN": True, "BLOCK": 2048}
    assert launch.space["configs"] == [{"BLOCK": 2048}, {"BLOCK": 4096}]


def test_the_cli_writes_the_launch_and_refuses_in_one_line(cli, tmp_path):
    out = tmp_path / "softmax.json"
    p = cli("trace-triton", os.path.join(EXAMPLES, "softmax.py"), "--call", "main()",
            "--hardware", "ascend910b4", "--json", out)
    assert "softmax_kernel: grid 1823" in p.stdout
    config = json.loads(out.read_text())
    assert config["partition"]["source"] == "triton" and config["hardware"] == "ascend910b4"
    run = cli("run", out, "--json", "-")
    assert json.loads(run.stdout)["tasks"] == 1823
    p = cli("trace-triton", os.path.join(EXAMPLES, "row_sum.py"), "--call", "main()",
            "--hardware", "ascend910b4", "--sweep", "--json", tmp_path / "row_sum.json")
    assert "recommended BLOCK_N=8192" in p.stdout and "paste at row_sum.py:" in p.stdout
    bad = tmp_path / "bad.py"
    bad.write_text(KERNEL.format(body=REFUSED["dot_1d"][0]))
    p = cli("trace-triton", bad, "--call", "go()", "--json", tmp_path / "x.json", code=2)
    assert f"{bad}:" in p.stderr and "tl.dot" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", sorted(HAND))
def test_the_examples_print_their_recommendation_when_run(name):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"{name}.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("tilesim recommends for "), p.stdout
    assert "us kernel_time_us" in p.stdout


def test_a_module_with_relative_imports_traces(tmp_path, monkeypatch):
    pkg = tmp_path / "mypkg"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "helpers.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl


        @triton.jit
        def silu(x):
            return x * tl.sigmoid(x)
        '''))
    (pkg / "ops" / "act.py").write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        from .helpers import silu


        @triton.jit
        def act_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, silu(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


        def main():
            x = torch.randn(100000, dtype=torch.float16)
            act_kernel[(triton.cdiv(x.numel(), 4096),)](x, torch.empty_like(x), x.numel(),
                                                        BLOCK=4096)
        '''))
    monkeypatch.chdir(tmp_path)
    launch = tt.trace_file(module="mypkg.ops.act", call="main()")[0]
    ops = [e["op"] for e in launch.program["body"] if "op" in e]
    assert ops == ["sigmoid", "mul"] and launch.grid == 25


def test_rmsnorm_is_one_launch_moving_what_the_source_moves():
    """The example's w.to(tl.float32) runs in each program's row stage, as the kernel does (a
    block computes what its code computes), not in a stage of its own whose fp32 result every
    row reads through GM: one launch reading x once and the fp16 weight once per row."""
    launch = tt.trace_file(os.path.join(EXAMPLES, "rmsnorm.py"), call="main()",
                           hardware="ascend910b4")[0]
    run = tilesim.run(launch.config)
    assert run.diagnostics.get("launches", 1) == 1
    x = 4096 * 2048 * 2
    assert run.gm["read_bytes"] == x + 4096 * 2048 * 2
    assert run.gm["write_bytes"] == x
    assert not any("broadcast operands" in n for n in launch.notes)


HOISTED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, g_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    g = tl.load(g_ptr + cols, mask=ok, other=1.0).to(tl.float32)
    for r in range(pid, n_rows, tl.num_programs(0)):
        v = tl.load(x_ptr + r * n_cols + cols, mask=ok, other=0.0).to(tl.float32)
        m = tl.max(v, axis=0)
        tl.store(y_ptr + r * n_cols + cols, (v / m * g).to(tl.float16), mask=ok)


@triton.jit
def scale_rows_in_loop(x_ptr, g_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    for r in range(pid, n_rows, tl.num_programs(0)):
        v = tl.load(x_ptr + r * n_cols + cols, mask=ok, other=0.0).to(tl.float32)
        m = tl.max(v, axis=0)
        g = tl.load(g_ptr + cols, mask=ok, other=1.0).to(tl.float32)
        tl.store(y_ptr + r * n_cols + cols, (v / m * g).to(tl.float16), mask=ok)


def go(kernel=scale_rows):
    x = torch.randn(2000, 1000, dtype=torch.float16)
    kernel[(40,)](x, torch.ones(1000, dtype=torch.float16), torch.empty_like(x), 2000, 1000,
                  BLOCK=1024)
'''


def test_a_weight_cast_before_the_row_loop_joins_the_rows_stage(tmp_path):
    """Written before the row loop (the first op of the program) or inside it, the weight's
    cast runs in the rows' stage: one launch. Loaded before the loop, the weight is resident:
    each of the 40 programs reads its 2000 B once, where inside the loop each of the 2000 rows
    reads it again."""
    path = tmp_path / "hoisted.py"
    path.write_text(HOISTED)
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    ops = [e["op"] for e in launch.program["body"] if "op" in e]
    assert ops[0] == "cast" and launch.program["body"][1]["inputs"] == ["g_ptr"]
    run = tilesim.run(launch.config)
    assert run.diagnostics.get("launches", 1) == 1 and run.tasks == 40
    assert launch.program["inputs"][0] == {"name": "g_ptr", "shape": [1, 1000], "dtype": "fp16",
                                           "resident": True}
    in_loop = tt.trace_file(str(path), call="go(scale_rows_in_loop)", hardware="ascend910b4")[0]
    assert "resident" not in in_loop.program["inputs"][0]
    assert tilesim.run(in_loop.config).gm["read_bytes"] - run.gm["read_bytes"] == \
        (2000 - 40) * 2000


AS_WRITTEN = '''
import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import erfinv  # imported, never used: no refusal
from triton.language.math import tanh
from triton.tools.tensor_descriptor import TensorDescriptor  # likewise


@triton.jit
def row_blocks(x_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, SUB: tl.constexpr,
               COLS: tl.constexpr):
    start = tl.program_id(0) * ROWS
    r = tl.arange(0, SUB)
    c = tl.arange(0, COLS)
    for i in tl.range(0, ROWS, SUB):
        offs = (start + i + r[:, None]) * n_cols + c[None, :]
        v = tl.load(x_ptr + offs, mask=(c < n_cols)[None, :], other=0.0)
        top = tl.max(v, axis=1).reshape(SUB, 1)
        e = tl.exp(v - top)
        tot = tl.expand_dims(tl.sum(e, axis=1), 1)
        tl.store(y_ptr + offs, e / tot, mask=(c < n_cols)[None, :])


@triton.jit
def even_share(x_ptr, y_ptr, n_rows, n_cols, COLS: tl.constexpr, USE_TL: tl.constexpr):
    per = (n_rows + tl.num_programs(0) - 1) // tl.num_programs(0)
    first = tl.program_id(0) * per
    if USE_TL:
        mine = tl.minimum(per, n_rows - first)
    else:
        mine = min(per, n_rows - first)
    c = tl.arange(0, COLS)
    for j in tl.range(0, mine):
        v = tl.load(x_ptr + (first + j) * n_cols + c, mask=c < n_cols, other=0.0)
        h = tanh(v.to(tl.float32))
        tl.store(y_ptr + (first + j) * n_cols + c, h.cast(v.dtype), mask=c < n_cols)


@triton.jit
def flat_gelu_like(a_ptr, b_ptr, total, BLOCK: tl.constexpr):
    for s in tl.range(tl.program_id(0) * BLOCK, total, tl.num_programs(0) * BLOCK):
        offs = s + tl.arange(0, BLOCK)
        a = tl.load(a_ptr + offs, mask=offs < total, other=0.0)
        t = a.to(tl.float32)
        tl.store(b_ptr + offs, (t * tl.sigmoid(t)).to(a.dtype), mask=offs < total)


def rows():
    x = torch.randn(1200, 700)
    row_blocks[(40,)](x, torch.empty_like(x), 1200, 700, ROWS=30, SUB=6, COLS=1024)


def share(use_tl):
    x = torch.randn(960, 500, dtype=torch.bfloat16)
    even_share[(48,)](x, torch.empty_like(x), 960, 500, COLS=512, USE_TL=use_tl)


def flat():
    a = torch.randn(300, 5000, dtype=torch.float16)
    flat_gelu_like[(40,)](a, torch.empty_like(a), a.numel(), BLOCK=4096)
'''


def test_kernels_as_libraries_write_them(tmp_path):
    """Constructs of public Triton-Ascend operator kernels: a reduction reshaped (or
    expand_dims) to a column, Python's min / tl.minimum of program-dependent row counts, tanh
    from tl.math, x.cast(y.dtype), a grid-stride loop over x.numel() whose blocks straddle
    rows (the tensors walked as flat arrays), and unused imports of what is not traced."""
    path = tmp_path / "as_written.py"
    path.write_text(AS_WRITTEN)
    launch = tt.trace_file(str(path), call="rows()", hardware="ascend910b4")[0]
    hand = spmd(prog([("x", [1200, 700], "fp32")], ["y"], [
        tile(6, 1024), op("amax", ["x"], "m", dim=1, keepdim=True), op("sub", ["x", "m"], "d"),
        op("exp", ["d"], "e"), op("sum", ["e"], "s", dim=1, keepdim=True),
        op("div", ["e", "s"], "y")]), 40)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks and a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    for use_tl in (False, True):
        launch = tt.trace_file(str(path), call=f"share({use_tl})", hardware="ascend910b4")[0]
        assert [e["op"] for e in launch.program["body"] if "op" in e] == ["cast", "tanh", "cast"]
        assert tilesim.run(launch.config).tasks == 48
    launch = tt.trace_file(str(path), call="flat()", hardware="ascend910b4")[0]
    assert launch.program["inputs"] == [{"name": "a_ptr", "shape": [1500000], "dtype": "fp16"}]
    assert tilesim.run(launch.config).gm["read_bytes"] == 300 * 5000 * 2


WRAPPER = '''
import torch
import torch_npu
import triton
import triton.language as tl
from torch.nn.modules.utils import _pair

AMP = torch.npu.amp.custom_fwd if getattr(torch.npu, "amp", None) is not None else None
NO_SUCH = getattr(torch.npu, "no_such_thing", "fallback")
TARGET = triton.runtime.driver.active.get_current_target()


@triton.jit
def halve(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 0.5, mask=offs < n)


@torch.amp.custom_fwd(device_type="npu")
def run(x):
    assert TARGET.backend == "npu" and NO_SUCH == "fallback" and _pair(3) == (3, 3)
    stream = torch.npu.current_stream()
    ref = torch.nn.Softmax(dim=-1)(x)
    y = torch.empty_like(x)
    halve[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, stream=stream.npu_stream)
    stream.synchronize()
    return ref, y
'''


def test_a_wrapper_probing_the_device_and_timing_with_streams(tmp_path):
    path = tmp_path / "wrapper.py"
    path.write_text(WRAPPER)
    launch = tt.trace_file(str(path), call="run(torch.randn(8192))", hardware="ascend910b4")[0]
    assert launch.grid == 8



def test_a_block_size_passed_by_position_sweeps(tmp_path):
    """A tutorial passes its BLOCK_SIZE by position: each sweep candidate replaces it there."""
    path = tmp_path / "positional.py"
    path.write_text(KERNEL.format(body="    for r in tl.range(pid, n // N, tl.num_programs(0)):\n"
                                       "        c = tl.arange(0, BLOCK)\n"
                                       "        v = tl.load(x_ptr + r * N + c, mask=c < N)\n"
                                       "        tl.store(y_ptr + r * N + c, v * 3.0, mask=c < N)")
                    + "\n\ndef by_position():\n    x = torch.randn(64, 1000)\n"
                      "    k[(8,)](x, torch.empty_like(x), 64000, 1000, 1024)\n")
    launch = tt.trace_file(str(path), call="by_position()", hardware="ascend910b4")[0]
    assert launch.meta == {"N": 1000, "BLOCK": 1024}
    sweep = launch.sweep({"BLOCK": [1024, 2048]})
    assert [c.time is not None for c in sweep.candidates] == [True, True]


BOXES = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, w_ptr, y_ptr, M, N: tl.constexpr, GRID: tl.constexpr, SUB: tl.constexpr):
    pid = tl.program_id(0)
    per = {per}
    first = pid * per
    last = tl.minimum(first + per, M)
    cols = tl.arange(0, N)
    w = tl.load(w_ptr + cols)
    for r in range(first, last, SUB):
        rows = r + tl.arange(0, SUB)
        offs = rows[:, None] * N + cols[None, :]
        m = (rows < last)[:, None]
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0) * w[None, :], mask=m)


def go(M=1000, N=64, GRID=8, SUB=32):
    x = torch.randn(M, N)
    y = torch.empty(M, N)
    scale_rows[(GRID,)](x, torch.randn(N), y, M, N, GRID=GRID, SUB=SUB)
'''


def test_programs_owning_a_box_of_rows_cut_at_its_end_are_the_partitions_blocks(tmp_path):
    # Each program owns cdiv(1000, 8) = 125 rows from pid * 125, walked in 32-row sub-tiles
    # from the box's start (125 = 3 x 32 + 29: the fourth cut by the box's end, row_end): the
    # spmd partition's block regions, as a hand-written config says them (partition.block).
    path = tmp_path / "boxes.py"
    path.write_text(BOXES.format(per="(M + GRID - 1) // GRID"))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    assert launch.config["partition"]["block"] == [125, 64]
    hand = spmd(prog([("x", [1000, 64], "fp32"), ("w", [1, 64], "fp32")], ["y"],
                     [tile(32, 64), op("mul", ["x", "w"], "y")]), 8)
    hand["partition"]["block"] = [125, 64]
    hand["program"]["inputs"][1]["resident"] = True  # loaded before the loop
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 8
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=1e-9)
    assert a.gm["read_bytes"] == b.gm["read_bytes"]


def test_boxes_that_leave_rows_unowned_are_refused(tmp_path):
    # per = M // GRID: 8 boxes of 125 rows leave row 1000 of 1001 to no program.
    path = tmp_path / "boxes.py"
    path.write_text(BOXES.format(per="M // GRID"))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="go(M=1001)")
    message = str(e.value)
    assert "'y_ptr' has 64064 elements where the program computes 64000" in message, message
    assert message.startswith(f"{path}:19: tl.store") and "\n" not in message


def test_a_sweep_where_no_candidate_runs_says_why_in_its_summary(tmp_path):
    path = tmp_path / "boxes.py"
    path.write_text(BOXES.format(per="(M + GRID - 1) // GRID").replace(
        "@triton.jit", "@triton.autotune(configs=[triton.Config({'SUB': 4096}), "
        "triton.Config({'SUB': 8192})], key=['M'])\n@triton.jit").replace(
        "GRID=GRID, SUB=SUB)", "GRID=GRID)").replace("N=64", "N=1024"))
    launch = tt.trace_file(str(path), call="go(M=100000)", hardware="ascend910b4")[0]
    brief = launch.sweep().brief
    assert brief.startswith("no candidate of the 2 ran (SUB=4096: ") and "UB overflow" in brief


FLATTENED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def scale_planes(a_ptr, s_ptr, o_ptr, B, HW: tl.constexpr, BLOCK_B: tl.constexpr,
                 SUB: tl.constexpr):
    pid = tl.program_id(0)
    b = pid * BLOCK_B + tl.arange(0, BLOCK_B)
    s = tl.load(s_ptr + b)
    for h in range(0, HW, SUB):
        hw = h + tl.arange(0, SUB)
        offs = b[:, None] * HW + hw[None, :]
        tl.store(o_ptr + offs, tl.load(a_ptr + offs) * s[:, None])


def go(BLOCK_B=2, SUB=1024):
    a = torch.randn(8, 32, 64)
    o = torch.empty_like(a)
    scale_planes[(8 // BLOCK_B,)](a, torch.randn(8, 1, 1), o, 8, 2048, BLOCK_B=BLOCK_B, SUB=SUB)
'''


@pytest.mark.parametrize("block_b", [1, 2])
def test_a_block_walking_contiguous_dims_as_one_reads_them_merged(tmp_path, block_b):
    # Offsets b * H * W + hw walk a [8, 32, 64] tensor's last two dims as one (H * W flattened,
    # akg's elemwise_mul_002 style): the program's tensors are [8, 2048] and the scale [8, 1],
    # with one row per program (BLOCK_B 1: the row is the program id's, no arange) as with two.
    path = tmp_path / "planes.py"
    path.write_text(FLATTENED)
    launch = tt.trace_file(str(path), call=f"go(BLOCK_B={block_b})", hardware="ascend910b4")[0]
    shapes = {i["name"]: i["shape"] for i in launch.program["inputs"]}
    assert shapes == {"a_ptr": [8, 2048], "s_ptr": [8, 1]}
    hand = spmd(prog([("a", [8, 2048], "fp32"), ("s", [8, 1], "fp32")], ["o"],
                     [tile(block_b, 1024), op("mul", ["a", "s"], "o")]), 8 // block_b)
    hand["program"]["inputs"][1]["resident"] = True  # the scale, loaded before the loop
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks and a.gm["read_bytes"] == b.gm["read_bytes"]
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=1e-9)


ATOMIC = '''
import torch
import triton
import triton.language as tl


@triton.jit
def block_min(x_ptr, out_ptr, n, BLOCK: tl.constexpr, TILE: tl.constexpr):
    pid = tl.program_id(0)
    for i in range(0, BLOCK, TILE):  # runs once: TILE == BLOCK
        offs = pid * BLOCK + tl.arange(0, TILE)
        x = tl.load(x_ptr + offs, mask=offs < n, other=float("inf"))
        tl.{atomic}(out_ptr, {value})


def go(n=65536, BLOCK=16384):
    x = torch.randn(n)
    out = torch.tensor([float("inf")])
    block_min[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, TILE=BLOCK)
'''


def test_an_atomic_of_each_programs_reduction_is_the_launchs_reduction(tmp_path):
    # Each program's tl.min of its 16384-element block combined by tl.atomic_min into one value:
    # the program's amin over the whole tensor, split over 4 programs, as a hand-written one.
    path = tmp_path / "atomic.py"
    path.write_text(ATOMIC.format(atomic="atomic_min", value="tl.min(x, axis=0)"))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    hand = spmd(prog([("x", [65536], "fp32")], ["out"],
                     [tile(16384), op("amin", ["x"], "out", dim=0, keepdim=True)]), 4)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 4
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=1e-9)


@pytest.mark.parametrize("atomic, value, said", [
    ("atomic_min", "tl.max(x, axis=0)", "tl.atomic_min: a value that is not the program's amin"),
    ("atomic_add", "x", "tl.atomic_add: a value that is not the program's sum of its block"),
])
def test_an_atomic_of_another_value_is_refused(tmp_path, atomic, value, said):
    path = tmp_path / "atomic.py"
    path.write_text(ATOMIC.format(atomic=atomic, value=value))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="go()")
    assert said in str(e.value) and str(e.value).startswith(f"{path}:13:"), str(e.value)


PROD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def row_prod(x_ptr, y_ptr, N: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.full((BLOCK_N,), 1.0, dtype=tl.float32)
    for c in range(0, N, BLOCK_N):
        cols = c + tl.arange(0, BLOCK_N)
        acc *= tl.load(x_ptr + row * N + cols)
    tl.store(y_ptr + row, tl.reduce(acc, 0, mul))


def go():
    x = torch.randn(64, 4096)
    y = torch.empty(64)
    row_prod[(64,)](x, y, 4096, BLOCK_N=1024)
'''


def test_a_product_accumulated_over_the_loop_and_reduced_is_a_prod(tmp_path):
    path = tmp_path / "prod.py"
    path.write_text(PROD)
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    ops = [e["op"] for e in launch.program["body"] if "op" in e]
    assert ops == ["prod"], launch.program["body"]
    hand = spmd(prog([("x", [64, 4096], "fp32")], ["y"],
                     [tile(1, 1024), op("prod", ["x"], "y", dim=1, keepdim=True)]), 64)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks and a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=1e-9)


def test_a_reduction_over_every_axis_of_a_2d_block_reduces_them_all(tmp_path):
    # tl.max(x) with axis=None over a (BLOCK_M, N) block, combined by tl.atomic_max: the
    # launch's amax over both dims (akg's reduction_amax_003 style).
    path = tmp_path / "all_axes.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, out_ptr, N: tl.constexpr, BLOCK_M: tl.constexpr):
            rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
            x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
            tl.atomic_max(out_ptr, tl.max(x))


        def go():
            out = torch.tensor([float("-inf")])
            k[(8,)](torch.randn(64, 256), out, 256, BLOCK_M=8)
    '''))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    ops = [e for e in launch.program["body"] if "op" in e]
    assert [e["op"] for e in ops] == ["amax"] and sorted(ops[0]["dim"]) == [0, 1], ops
    assert tilesim.run(launch.config).tasks == 8


def test_boxes_of_whole_rows_of_a_row_reduction_are_the_partitions_blocks(tmp_path):
    # Each program sums 128 whole rows in 8-row sub-tiles, the last program 1000 - 7 * 128 = 104
    # (akg's reduction_weighted_swiglu_bwd style): the row sums' regions are partition.block
    # [128, 512], no reduced dim cut.
    path = tmp_path / "row_boxes.py"
    path.write_text(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, y_ptr, M, N: tl.constexpr, BLOCK: tl.constexpr, SUB: tl.constexpr,
              BLOCK_N: tl.constexpr):
            pid = tl.program_id(0)
            for r in range(0, BLOCK, SUB):
                rows = pid * BLOCK + r + tl.arange(0, SUB)
                acc = tl.zeros((SUB,), dtype=tl.float32)
                for c in range(0, N, BLOCK_N):
                    cols = c + tl.arange(0, BLOCK_N)
                    m = (rows < M)[:, None]
                    acc += tl.sum(tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m,
                                          other=0.0), axis=1)
                tl.store(y_ptr + rows, acc, mask=rows < M)


        def go():
            y = torch.empty(1000)
            k[(8,)](torch.randn(1000, 512), y, 1000, 512, BLOCK=128, SUB=8, BLOCK_N=256)
    '''))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    assert launch.config["partition"]["block"] == [128, 512]
    assert tilesim.run(launch.config).tasks == 8


READ_BACK = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_norm(x_ptr, r_ptr, s_ptr, y_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, N, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        s = tl.load(x_ptr + row * N + cols) + tl.load(r_ptr + row * N + cols)
        tl.store(s_ptr + row * N + cols, s)
        acc += s * s
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N)
    for c in range(0, N, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        tl.store(y_ptr + row * N + cols, tl.load(s_ptr + row * N + cols) * rstd)


def go():
    x = torch.randn(64, 4096)
    s, y = torch.empty_like(x), torch.empty_like(x)
    add_norm[(64,)](x, torch.randn(64, 4096), s, y, 4096, BLOCK=1024)
'''


def test_a_tensor_stored_then_read_back_is_the_value_stored(tmp_path):
    # The residual sum stored in the first pass and read back in the second (mojo_opset's
    # fused_add_rmsnorm style): the second pass reads the program tensor the first wrote.
    path = tmp_path / "read_back.py"
    path.write_text(READ_BACK)
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    ops = [e for e in launch.program["body"] if "op" in e]
    add = next(e for e in ops if e["op"] == "add" and e["out"] == "s_ptr")
    assert any("s_ptr" in e["inputs"] and e["out"] == "y_ptr" for e in ops), ops
    assert add["inputs"] == ["x_ptr", "r_ptr"]
    assert set(launch.program["outputs"]) == {"s_ptr", "y_ptr"}
    run = tilesim.run(launch.config)
    tensor = 64 * 4096 * 4
    # x and r read, s written, s read back in the second pass, y written: one task a row.
    assert run.tasks == 64
    assert run.gm["read_bytes"] == 3 * tensor and run.gm["write_bytes"] == 2 * tensor


def test_a_read_back_of_another_programs_rows_is_refused(tmp_path):
    path = tmp_path / "read_back.py"
    path.write_text(READ_BACK.replace("tl.load(s_ptr + row * N + cols)",
                                      "tl.load(s_ptr + (63 - row) * N + cols)"))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="go()")
    assert "'s_ptr' read back in blocks other than the ones each program stored" in \
        str(e.value), str(e.value)


def test_submodules_the_stand_ins_do_not_define_import_and_refuse_where_used(tmp_path):
    # A package's modules import torch.distributed internals and triton.language.standard /
    # triton.runtime.jit names at import time; the kernel's wrapper never calls them.
    path = tmp_path / "imports.py"
    path.write_text(textwrap.dedent('''
        from typing import Optional
        import torch
        import torch.distributed as dist
        from torch.distributed.distributed_c10d import _get_default_group
        import torch.distributed._functional_collectives as fc
        from triton.language.standard import zeros_like
        from triton.runtime.jit import JITFunction
        import triton
        import triton.language as tl


        def collective(group: Optional[dist.ProcessGroup] = None):
            return _get_default_group()


        @triton.jit
        def k(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


        def go():
            x = torch.randn(4096)
            k[(4,)](x, torch.empty_like(x), BLOCK=1024)
    '''))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    assert launch.grid == 4 or list(launch.config["partition"].values())[1] == 4
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="collective()")
    assert "torch.distributed.distributed_c10d._get_default_group: not in tilesim's torch " \
        "stand-in" in str(e.value), str(e.value)


def test_a_resident_input_is_read_once_per_block_and_held_once():
    # x [64, 1024] fp32 in (8, 1024) sub-tiles, 4 blocks of 16 rows: the (1, 1024) weight row
    # resident is read once per block (4 x 4096 B) instead of once per sub-tile (8 x 4096 B),
    # and its UB buffer is one copy where a per-sub-tile load is double-buffered.
    def config(resident):
        c = spmd(prog([("x", [64, 1024], "fp32"), ("w", [1, 1024], "fp32")], ["y"],
                      [tile(8, 1024), op("mul", ["x", "w"], "y")]), 4)
        c["partition"]["block"] = [16, 1024]
        if resident:
            c["program"]["inputs"][1]["resident"] = True
        return c
    held, each = tilesim.run(config(True)), tilesim.run(config(False))
    assert held.gm["read_bytes"] == 64 * 1024 * 4 + 4 * 4096
    assert each.gm["read_bytes"] == 64 * 1024 * 4 + 8 * 4096
    # x and y (in place over x) 32 KiB double-buffered; the weight 4 KiB held once, or doubled
    assert held.diagnostics["ub_bytes"] == 2 * 32768 + 4096
    assert each.diagnostics["ub_bytes"] == 2 * 32768 + 2 * 4096


def test_a_resident_input_whose_region_changes_within_a_block_is_refused():
    c = spmd(prog([("x", [64, 1024], "fp32"), ("w", [1, 1024], "fp32")], ["y"],
                  [tile(8, 1024), op("mul", ["x", "w"], "y")]), 4)
    c["partition"]["block"] = [16, 1024]
    c["program"]["inputs"][0]["resident"] = True
    with pytest.raises(tilesim.ConfigError, match=r"input 'x' is resident, but its region "
                                                  r"changes between the sub-tiles of a block"):
        tilesim.run(c)


def test_a_loaded_block_stored_as_it_is_is_a_copy_through_ub(tmp_path):
    # y = x block by block (a memcpy kernel): the op copy, the tile through UB with no vector
    # work; its store drains the loaded buffer (one buffer, double-buffered).
    path = tmp_path / "copy.py"
    path.write_text(KERNEL.format(body="    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                                       "    tl.store(y_ptr + offs, tl.load(x_ptr + offs))"))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    assert [e["op"] for e in launch.program["body"] if "op" in e] == ["copy"]
    run = tilesim.run(launch.config)
    assert run.gm["read_bytes"] == run.gm["write_bytes"] == 4096 * 4
    assert run.pipes["V"]["total_us"] == 0
    assert run.diagnostics["ub_bytes"] == 4096  # one 1024-element fp32 buffer, a sub-tile each
    hand = spmd(prog([("x", [4096], "fp32")], ["y"], [tile(1024), op("copy", ["x"], "y")]), 4)
    assert tilesim.run(hand).kernel_time_us == pytest.approx(run.kernel_time_us, rel=1e-9)
    fill = tmp_path / "fill.py"
    fill.write_text(KERNEL.format(body="    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                                       "    tl.store(y_ptr + offs, tl.zeros([BLOCK], "
                                       "dtype=tl.float32))"))
    with pytest.raises(TraceFailure, match="a store of a constant block"):
        tt.trace_file(str(fill), call="go()")


INT_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
{body}
    tl.store(o_ptr + offs, r)


def go():
    x = torch.randint(0, 100, (8192,), dtype=torch.int32)
    k[(8,)](x, torch.randint(0, 100, (8192,), dtype=torch.int32), torch.empty_like(x),
            BLOCK=1024)
'''


def test_int32_add_sub_mul_max_min_trace_and_a_loop_carried_update_is_refused(tmp_path):
    # The vector unit's int32 Add / Sub / Mul / Max / Min: the op table takes them on int32.
    path = tmp_path / "int.py"
    path.write_text(INT_KERNEL.format(body="    r = tl.maximum(x + y, x * y) - y"))
    launch = tt.trace_file(str(path), call="go()", hardware="ascend910b4")[0]
    assert [e["op"] for e in launch.program["body"] if "op" in e] == ["add", "mul", "maximum",
                                                                       "sub"]
    assert {i["dtype"] for i in launch.program["inputs"]} == {"int32"}
    assert tilesim.run(launch.config).tasks == 8
    # r = r + y in a two-iteration loop that loads nothing: the trace would see one iteration.
    path.write_text(INT_KERNEL.format(body="    r = x + y\n    for j in range(2):\n"
                                           "        r = r + y"))
    with pytest.raises(TraceFailure, match="loads nothing, and the trace sees one of its "
                                           "iterations"):
        tt.trace_file(str(path), call="go()")
    path.write_text(INT_KERNEL.format(body="    r = x / y"))
    with pytest.raises(TraceFailure, match="div on int32 data"):
        tt.trace_file(str(path), call="go()")


# Backward norms as public Triton-Ascend operator libraries write them: a grid of twice the
# vector-core count walking its rows with a stride, per-row statistics (rstd, mean) read one
# value a row, and the weight's gradient accumulated per program, in GM (a row of a [grid, N]
# buffer read, added to and written back each iteration, the wrapper summing the rows after) or
# in UB (tl.zeros, then tl.atomic_add after the row loop), or added per block with tl.atomic_add.
NORM_BWD = '''
import torch
import triton
import triton.language as tl


def cores():
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    return props["num_vectorcore"]


@triton.jit
def rms_bwd_2d(dy_ptr, x_ptr, w_ptr, r_ptr, dx_ptr, dw_ptr, n_rows, n_cols: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BN)
    cmask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0)
    for it in range(tl.cdiv(n_rows, nprog * BM)):
        rows = (it * nprog + pid) * BM + tl.arange(0, BM)
        rmask = rows < n_rows
        m2 = rmask[:, None] & cmask[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        dy = tl.load(dy_ptr + offs, mask=m2, other=0.0)
        x = tl.load(x_ptr + offs, mask=m2, other=0.0)
        r = tl.load(r_ptr + rows, mask=rmask, other=0.0)
        g = dy * w[None, :]
        c = tl.sum(g * x, axis=1) * r * r * r / n_cols
        tl.store(dx_ptr + offs, r[:, None] * g - c[:, None] * x, mask=m2)
        acc = dw_ptr + pid * n_cols + cols
        part = tl.load(acc, mask=cmask, other=0.0)
        tl.store(acc, part + tl.sum(dy * x * r[:, None], axis=0), mask=cmask)


@triton.jit
def rms_bwd_cols(dy_ptr, x_ptr, w_ptr, r_ptr, dx_ptr, dw_ptr, n_rows, n_cols: tl.constexpr,
                 BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    for row in tl.range(pid, n_rows, nprog):
        r = tl.load(r_ptr + row)
        dot = 0.0
        for b in range(tl.cdiv(n_cols, BLOCK)):
            cols = b * BLOCK + offs
            dy = tl.load(dy_ptr + row * n_cols + cols)
            x = tl.load(x_ptr + row * n_cols + cols)
            w = tl.load(w_ptr + cols)
            dot += tl.sum(dy * w * x)
        c = dot * r * r * r / n_cols
        for b in range(tl.cdiv(n_cols, BLOCK)):
            cols = b * BLOCK + offs
            dy = tl.load(dy_ptr + row * n_cols + cols)
            x = tl.load(x_ptr + row * n_cols + cols)
            w = tl.load(w_ptr + cols)
            tl.store(dx_ptr + row * n_cols + cols, r * dy * w - c * x)
            acc = dw_ptr + pid * n_cols + cols
            tl.store(acc, tl.load(acc) + dy * x * r)


@triton.jit
def ln_bwd_rows(x_ptr, dy_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, dw_ptr, db_ptr, n_rows,
                n_cols: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    w = tl.load(w_ptr + cols)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    db = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in tl.range(pid, n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * n_cols + cols)
        dy = tl.load(dy_ptr + row * n_cols + cols)
        xh = (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row)
        g = w * dy
        a = tl.sum(xh * g, axis=0) / n_cols
        b = tl.sum(g, axis=0) / n_cols
        tl.store(dx_ptr + row * n_cols + cols, (g - xh * a - b) * tl.load(rstd_ptr + row))
        dw += dy * xh
        db += dy
    tl.atomic_add(dw_ptr + cols, dw)
    tl.atomic_add(db_ptr + cols, db)


@triton.jit
def ln_bwd_atomics(x_ptr, dy_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, n_rows,
                   n_cols: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for row in tl.range(pid, n_rows, tl.num_programs(0)):
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        for b in range(tl.cdiv(n_cols, BLOCK)):
            cols = b * BLOCK + tl.arange(0, BLOCK)
            dy = tl.load(dy_ptr + row * n_cols + cols)
            xh = (tl.load(x_ptr + row * n_cols + cols) - mean) * rstd
            tl.atomic_add(dw_ptr + cols, dy * xh)
            tl.atomic_add(db_ptr + cols, dy)


@triton.jit
def rms_bwd_partials(dy_ptr, x_ptr, r_ptr, dx_ptr, dw_ptr, n_rows, n_cols: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BN)
    acc = tl.zeros((BN,), dtype=tl.float32)
    for it in range(tl.cdiv(n_rows, nprog * BM)):
        rows = (it * nprog + pid) * BM + tl.arange(0, BM)
        rmask = rows < n_rows
        offs = rows[:, None] * n_cols + cols[None, :]
        dy = tl.load(dy_ptr + offs, mask=rmask[:, None], other=0.0)
        x = tl.load(x_ptr + offs, mask=rmask[:, None], other=0.0)
        r = tl.load(r_ptr + rows, mask=rmask, other=0.0)
        tl.store(dx_ptr + offs, dy * r[:, None], mask=rmask[:, None])
        acc += tl.sum(dy * x * r[:, None], axis=0)
    tl.store(dw_ptr + pid * n_cols + cols, acc)


def rms_partials(n_rows=4096, n_cols=1024):
    grid = 2 * cores()
    dy, x = torch.randn(n_rows, n_cols), torch.randn(n_rows, n_cols)
    dw = torch.empty(grid, n_cols)
    rms_bwd_partials[(grid,)](dy, x, torch.randn(n_rows), torch.empty_like(x), dw, n_rows,
                              n_cols, BM=2, BN=n_cols)
    return dw.sum(0)


def rms_2d(n_rows=4096, n_cols=1024):
    grid = 2 * cores()
    dy, x = torch.randn(n_rows, n_cols), torch.randn(n_rows, n_cols)
    dw = torch.zeros(grid, n_cols)
    rms_bwd_2d[(grid,)](dy, x, torch.randn(n_cols), torch.randn(n_rows), torch.empty_like(x),
                        dw, n_rows, n_cols, BM=2048 // n_cols, BN=n_cols)
    return dw.sum(0)


def rms_cols(n_rows=1024, n_cols=8192, block=2048):
    grid = 2 * cores()
    dy, x = torch.randn(n_rows, n_cols), torch.randn(n_rows, n_cols)
    dw = torch.zeros(grid, n_cols)
    rms_bwd_cols[(grid,)](dy, x, torch.randn(n_cols), torch.randn(n_rows), torch.empty_like(x),
                          dw, n_rows, n_cols, BLOCK=block)
    return dw.sum(0)


def ln_rows(n_rows=2048, n_cols=2048):
    x, dy = torch.randn(n_rows, n_cols), torch.randn(n_rows, n_cols)
    dw, db = torch.zeros(n_cols), torch.zeros(n_cols)
    ln_bwd_rows[(cores(),)](x, dy, torch.randn(n_cols), torch.randn(n_rows), torch.randn(n_rows),
                            torch.empty_like(x), dw, db, n_rows, n_cols, BLOCK=n_cols)


def ln_atomics(n_rows=1024, n_cols=8192):
    x, dy = torch.randn(n_rows, n_cols), torch.randn(n_rows, n_cols)
    dw, db = torch.zeros(n_cols), torch.zeros(n_cols)
    ln_bwd_atomics[(2 * cores(),)](x, dy, torch.randn(n_rows), torch.randn(n_rows), dw, db,
                                   n_rows, n_cols, BLOCK=2048)
'''


def _norm_bwd(tmp_path, call, source=NORM_BWD):
    path = tmp_path / "norm_bwd.py"
    path.write_text(source)
    return tt.trace_file(str(path), call=call, hardware="ascend910b4")


def _slots():
    """dw, the column sum of c, each block's part kept in a slot of its own in GM."""
    return op("sum", ["c"], "dw", dim=0, keepdim=True, spmd_rows="slots")


def test_a_per_program_accumulator_row_in_gm_is_a_sum_kept_in_slots(tmp_path):
    # rms_bwd_2d: (2, 1024) blocks of [4096, 1024] fp32 on grid 80 (twice the 910B4's 40 vector
    # cores), each iteration reading, adding to and storing back its program's row of dw
    # [80, 1024]: the column sum of dy * x * r with each block's part in its slot, every
    # sub-tile reading and writing it, and the wrapper's dw.sum(0) a second launch.
    launch = _norm_bwd(tmp_path, "rms_2d()")[0]
    assert launch.grid == 80
    assert any("an accumulator kept in GM" in n for n in launch.notes), launch.notes
    hand = spmd(prog([("dy", [4096, 1024], "fp32"), ("w", [1, 1024], "fp32"),
                      ("x", [4096, 1024], "fp32"), ("r", [4096, 1], "fp32")], ["dx", "dw"], [
        tile(2, 1024), op("mul", ["dy", "w"], "g"), op("mul", ["g", "x"], "gx"),
        op("sum", ["gx"], "s", dim=1, keepdim=True), op("mul", ["s", "r"], "s1"),
        op("mul", ["s1", "r"], "s2"), op("mul", ["s2", "r"], "s3"),
        op("div", ["s3"], "k", scalar=1024.0), op("mul", ["r", "g"], "rg"),
        op("mul", ["k", "x"], "kx"), op("sub", ["rg", "kx"], "dx"),
        op("mul", ["dy", "x"], "yx"), op("mul", ["yx", "r"], "c"), _slots()]), 80)
    hand["program"]["inputs"][1]["resident"] = True
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 2 * 80  # the blocks, then the fold's launch of 80
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    x, row = 4096 * 1024 * 4, 1024 * 4
    # dy and x once, r once, w once per block, each of the 2048 sub-tiles reading its slot, the
    # fold reading the 80 slots; dx, each sub-tile's slot, and the sum written.
    assert a.gm["read_bytes"] == 2 * x + 4096 * 4 + 80 * row + 2048 * row + 80 * row
    assert a.gm["write_bytes"] == x + 2048 * row + row
    assert a.diagnostics["launches"] == 2


def test_a_kernel_reading_its_rows_twice_moves_them_twice_with_its_accumulator_row(tmp_path):
    # rms_bwd_cols: rows of 8192 in 2048-column blocks, dy and x read in both passes (the
    # row's dot product, then dx and dw's row in GM): twice their bytes, where the one-pass
    # 2-D kernel above reads them once.
    launch = _norm_bwd(tmp_path, "rms_cols()")[0]
    hand = spmd(prog([("dy", [1024, 8192], "fp32"), ("w", [1, 8192], "fp32"),
                      ("x", [1024, 8192], "fp32"), ("r", [1024, 1], "fp32")], ["dx", "dw"], [
        tile(1, 2048), op("mul", ["dy", "w"], "g"), op("mul", ["g", "x"], "gx"),
        op("sum", ["gx"], "s", dim=1, keepdim=True, apply_in_task=True),
        op("mul", ["s", "r"], "s1"), op("mul", ["s1", "r"], "s2"), op("mul", ["s2", "r"], "s3"),
        op("div", ["s3"], "k", scalar=8192.0), op("mul", ["r", "dy"], "ry"),
        op("mul", ["ry", "w"], "rg"), op("mul", ["k", "x"], "kx"), op("sub", ["rg", "kx"], "dx"),
        op("mul", ["dy", "x"], "yx"), op("mul", ["yx", "r"], "c"), _slots()]), 80)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    assert a.gm["read_bytes"] == b.gm["read_bytes"]
    x, tile_row = 1024 * 8192 * 4, 2048 * 4
    w = 2 * 1024 * 4 * tile_row  # a weight block per sub-tile, in both passes
    # Every sub-tile's slot, then the fold's: the blocks share (column block, row) units, 20
    # blocks to a column block, so each block's slot is one column block wide.
    slots = 1024 * 4 * tile_row + 80 * tile_row
    stats = a.gm["read_bytes"] - (2 * 2 * x + w + slots)  # rstd and the row statistics
    assert 0 < stats < 1024 * 72, stats
    # dx, every sub-tile's slot, the sum; and the rows' statistic, which the second pass reads
    # in a launch of its own (the blocks walk other rows there: docs/triton.md)
    assert a.gm["write_bytes"] == x + 1024 * 4 * tile_row + 8192 * 4 + 1024 * 4


def test_a_partial_row_stored_per_program_after_the_loop_is_a_slot_written_once(tmp_path):
    # rms_bwd_partials: dw accumulated in UB over each program's row blocks and stored once as
    # the program's row of dw [80, 1024]: each block's part of the column sum written to its
    # slot once (no read), the wrapper's dw.sum(0) a second launch reading the 80 slots.
    launch = _norm_bwd(tmp_path, "rms_partials()")[0]
    assert any("a slot per program (spmd_rows parts)" in n for n in launch.notes), launch.notes
    hand = spmd(prog([("dy", [4096, 1024], "fp32"), ("r", [4096, 1], "fp32"),
                      ("x", [4096, 1024], "fp32")], ["dx", "dw"], [
        tile(2, 1024), op("mul", ["dy", "r"], "dx"), op("mul", ["dy", "x"], "yx"),
        op("mul", ["yx", "r"], "c"),
        op("sum", ["c"], "dw", dim=0, keepdim=True, spmd_rows="parts")]), 80)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 2 * 80
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    x, row = 4096 * 1024 * 4, 1024 * 4
    assert a.gm["read_bytes"] == 2 * x + 4096 * 4 + 80 * row  # dy, x, r; the fold's slots
    assert a.gm["write_bytes"] == x + 80 * row + row  # dx, a slot per block, the sum


def test_accumulators_added_after_the_row_loop_are_the_blocks_split_sum(tmp_path):
    # ln_bwd_rows: dw and db accumulated in UB over each program's rows (tl.zeros, +=) and added
    # with tl.atomic_add after the loop: the column sums each spmd block folds in UB and adds
    # once, in the same task as the rows' dx (one launch); mean and rstd [2048] are per-row
    # values ([2048, 1]), the weight resident.
    launch = _norm_bwd(tmp_path, "ln_rows()")[0]
    inputs = {i["name"]: i for i in launch.program["inputs"]}
    assert inputs["mean_ptr"]["shape"] == inputs["rstd_ptr"]["shape"] == [2048, 1]
    assert inputs["w_ptr"].get("resident")
    hand = spmd(prog([("x", [2048, 2048], "fp32"), ("mean", [2048, 1], "fp32"),
                      ("rstd", [2048, 1], "fp32"), ("w", [1, 2048], "fp32"),
                      ("dy", [2048, 2048], "fp32")], ["dx", "dw", "db"], [
        tile(1, 2048), op("sub", ["x", "mean"], "xm"), op("mul", ["xm", "rstd"], "xh"),
        op("mul", ["w", "dy"], "g"), op("mul", ["xh", "g"], "hg"),
        op("sum", ["hg"], "a0", dim=1, keepdim=True), op("div", ["a0"], "a", scalar=2048.0),
        op("sum", ["g"], "b0", dim=1, keepdim=True), op("div", ["b0"], "b", scalar=2048.0),
        op("mul", ["xh", "a"], "ha"), op("sub", ["g", "ha"], "d0"), op("sub", ["d0", "b"], "d1"),
        op("mul", ["d1", "rstd"], "dx"), op("mul", ["dy", "xh"], "c"),
        op("sum", ["c"], "dw", dim=0, keepdim=True),
        op("sum", ["dy"], "db", dim=0, keepdim=True)]), 40)
    hand["program"]["inputs"][3]["resident"] = True
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 40
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    x, row = 2048 * 2048 * 4, 2048 * 4
    assert a.gm["read_bytes"] == 2 * x + 2 * 2048 * 4 + 40 * row  # x, dy; mean, rstd; w
    assert a.gm["write_bytes"] == x + 2 * 40 * row  # dx; dw and db added once per block
    assert a.diagnostics.get("launches", 1) == 1


def test_an_atomic_add_of_a_block_in_the_row_loop_adds_every_sub_tile(tmp_path):
    # ln_bwd_atomics: tl.atomic_add of each (row, column block) inside the loops: every
    # sub-tile's partial of dw and db added in GM, 2 x 1024 x 8192 x 4 B of atomic writes.
    launch = _norm_bwd(tmp_path, "ln_atomics()")[0]
    hand = spmd(prog([("x", [1024, 8192], "fp32"), ("mean", [1024, 1], "fp32"),
                      ("rstd", [1024, 1], "fp32"), ("dy", [1024, 8192], "fp32")],
                     ["dw", "db"], [
        tile(1, 2048), op("sub", ["x", "mean"], "xm"), op("mul", ["xm", "rstd"], "xh"),
        op("mul", ["dy", "xh"], "c"),
        op("sum", ["c"], "dw", dim=0, keepdim=True, spmd_rows="tiles"),
        op("sum", ["dy"], "db", dim=0, keepdim=True, spmd_rows="tiles")]), 80)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 80
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    x = 1024 * 8192 * 4
    assert a.gm["write_bytes"] == 2 * x
    folded = dict(hand)
    folded["program"] = dict(hand["program"], body=[dict(e) for e in hand["program"]["body"]])
    for e in folded["program"]["body"][-2:]:
        e.pop("spmd_rows")  # each block folds its sub-tiles in UB and adds once
    # (its units are rows of one 2048-column block: 20 blocks to a column block)
    assert tilesim.run(folded).gm["write_bytes"] == 2 * 80 * 2048 * 4


EACH_BLOCK = '''

@triton.jit
def each_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + cols, tl.load(x_ptr + cols))


def go():
    x = torch.randn(4096)
    each_block[(4,)](x, torch.zeros(4096), BLOCK=1024)
'''


@pytest.mark.parametrize("source, call, said", [
    # every program's iterations read, add to and write back the same row of dw
    (NORM_BWD.replace("acc = dw_ptr + pid * n_cols + cols", "acc = dw_ptr + cols"), "rms_2d()",
     "tl.store: a block of 'dw_ptr' read, added to and written back by programs 0 and 1: a "
     "race; give each program its own accumulator row"),
    # each program adds its own block once: no rows summed, no reduction of the block
    (NORM_BWD + EACH_BLOCK, "go()", "tl.atomic_add: a value that is not the program's sum of "
     "its block, nor a block of rows its loop walks"),
])
def test_gm_accumulations_the_trace_cannot_say_are_refused(tmp_path, source, call, said):
    with pytest.raises(TraceFailure) as e:
        _norm_bwd(tmp_path, call, source)
    assert said in str(e.value) and str(e.value).startswith(str(tmp_path)), str(e.value)


GROUPED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def grouped_scale(x_ptr, y_ptr, mu_ptr, rs_ptr, w_ptr, b_ptr, n_groups,
                  per_group: tl.constexpr, plane: tl.constexpr, BC: tl.constexpr,
                  BH: tl.constexpr):
    n = tl.program_id(0)
    unit = tl.program_id(1)  # a (group, channel block) pair
    blocks = per_group // BC
    grp = unit // blocks
    chans = (unit % blocks) * BC + tl.arange(0, BC)
    at = n * n_groups + grp
    mu = tl.load(mu_ptr + at)
    rs = tl.load(rs_ptr + at)
    scale = tl.load(w_ptr + grp * per_group + chans)
    shift = tl.load(b_ptr + grp * per_group + chans)
    start = at * per_group * plane
    for h in tl.range(0, plane, BH):
        where = start + chans[:, None] * plane + h + tl.arange(0, BH)[None, :]
        v = tl.load(x_ptr + where)
        tl.store(y_ptr + where, (v - mu) * rs * scale[:, None] + shift[:, None])


def go(batch=4, channels=64, groups=8, plane=1024, BC=4, BH=256, step=None):
    x = torch.randn(batch, channels, plane).view(batch, groups, -1)
    stats = torch.randn(batch * groups)
    per = channels // groups
    grouped_scale[(batch, groups * (per // BC))](
        x, torch.empty_like(x), stats, torch.randn(batch * groups), torch.randn(channels),
        torch.randn(channels), groups, per, step or plane, BC=BC, BH=BH)
'''


@pytest.mark.parametrize("groups, bc", [(8, 4), (8, 8), (32, 2)])
def test_channels_walked_inside_a_group_read_a_factored_view(tmp_path, groups, bc):
    # x [4, 64, 1024] viewed [4, G, 64 / G * 1024] by the wrapper, its channels stepped by the
    # plane (1024) inside a group: the program reads it as [4, G, 64 / G, 1024]; the [4 * G]
    # statistics at n * G + g lie along its batch and group dims ([4, G, 1, 1]) and the [64]
    # weight and bias along its group and channel dims ([1, G, 64 / G, 1]), with channel blocks
    # shorter than the group (8, 4), the whole group (8, 8) and two channels a group (32, 2).
    path = tmp_path / "grouped.py"
    path.write_text(GROUPED)
    launch = tt.trace_file(str(path), call=f"go(groups={groups}, BC={bc})",
                           hardware="ascend910b4")[0]
    per = 64 // groups
    shapes = {i["name"]: i["shape"] for i in launch.program["inputs"]}
    assert shapes == {"x_ptr": [4, groups, per, 1024], "mu_ptr": [4, groups, 1, 1],
                      "rs_ptr": [4, groups, 1, 1], "w_ptr": [1, groups, per, 1],
                      "b_ptr": [1, groups, per, 1]}
    grid = 4 * groups * (per // bc)
    hand = spmd(prog([("x", [4, groups, per, 1024], "fp32"), ("mu", [4, groups, 1, 1], "fp32"),
                      ("rs", [4, groups, 1, 1], "fp32"), ("w", [1, groups, per, 1], "fp32"),
                      ("b", [1, groups, per, 1], "fp32")], ["y"], [
        tile(1, 1, bc, 256), op("sub", ["x", "mu"], "d"), op("mul", ["d", "rs"], "n"),
        op("mul", ["n", "w"], "nw"), op("add", ["nw", "b"], "y")]), grid)
    for i in hand["program"]["inputs"][1:]:
        i["resident"] = True  # loaded once per program, before its loop
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == grid
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    x = 4 * 64 * 1024 * 4
    # x once, each program's two statistics and its channels' weight and bias once
    assert a.gm["read_bytes"] == b.gm["read_bytes"] == x + grid * (2 * 4 + 2 * bc * 4)
    assert a.gm["write_bytes"] == x


def test_a_step_no_factor_of_a_dim_makes_a_stride_is_refused(tmp_path):
    # channels 1000 apart in a [4, 8, 8192] view: 1000 divides no dim's size times its stride,
    # so no factored view of x has a dim of stride 1000
    path = tmp_path / "grouped_step.py"
    path.write_text(GROUPED.replace("grouped_scale", "grouped_step"))
    with pytest.raises(TraceFailure) as e:
        tt.trace_file(str(path), call="go(step=1000)", hardware="ascend910b4")
    message = str(e.value)
    assert message.startswith(f"{path}:24: tl.load"), message
    assert "'x_ptr' ([4, 8, 8192], strides [65536, 8192, 1]) step by [1000, 1], which are not " \
        "its dims' strides, nor those of a factored view of them" in message, message


GROUPED_GRAD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def grouped_grad(x_ptr, dy_ptr, dx_ptr, gsum_ptr, n_groups, per_group: tl.constexpr,
                 plane: tl.constexpr, BB: tl.constexpr, BH: tl.constexpr):
    grp = tl.program_id(0)
    lanes = tl.arange(0, BH)
    first = (tl.arange(0, BB) * n_groups + grp) * per_group * plane
    tot = tl.zeros([BB], dtype=tl.float32)
    for ch in range(per_group):
        part = 0.0
        for h in range(0, plane, BH):
            at = first[:, None] + ch * plane + h + lanes[None, :]
            g = tl.load(dy_ptr + at) * tl.load(x_ptr + at)
            part += tl.sum(tl.sum(g, axis=1), axis=0)
            tot += tl.sum(g, axis=1)
        tl.store(gsum_ptr + grp * per_group + ch, part)
    for ch in range(per_group):
        for h in range(0, plane, BH):
            at = first[:, None] + ch * plane + h + lanes[None, :]
            tl.store(dx_ptr + at, tl.load(dy_ptr + at) - tot[:, None])


def go(batch=4, channels=32, groups=4, plane=2048, BH=512):
    x = torch.randn(batch, channels, plane).view(batch, groups, -1)
    grouped_grad[(groups,)](x, torch.randn(batch, groups, channels // groups * plane),
                            torch.empty_like(x), torch.empty(channels), groups,
                            channels // groups, plane, BB=batch, BH=BH)
'''


@pytest.mark.parametrize("plane, passes", [(2048, 4), (512, 3)])
def test_a_channel_loop_around_a_column_loop_reads_a_factored_view(tmp_path, plane, passes):
    # Each program walks its group's 8 channels (a loop stepping by the 2048-element plane)
    # and each channel's plane in 512-column blocks (a loop inside it), in a [4, 4, 8 * 2048]
    # view: the two loops walk dims of [4, 4, 8, 2048]. The channel's sum (a float accumulated
    # over the column loop, stored after it) is the sum over the batch and the plane ([1, 4, 8,
    # 1]); tot, a tl.zeros block accumulated over both loops, is each row's sum over the
    # group ([4, 4, 1, 1]), used by the second pass. With a 512-element plane the column loop
    # runs once: still one sum each (the row sum inside it is not a statistic of its own).
    path = tmp_path / f"grouped_grad{plane}.py"
    path.write_text(GROUPED_GRAD.replace("grouped_grad", f"grouped_grad{plane}"))
    launch = tt.trace_file(str(path), call=f"go(plane={plane})", hardware="ascend910b4")[0]
    shapes = {i["name"]: i["shape"] for i in launch.program["inputs"]}
    assert shapes == {"x_ptr": [4, 4, 8, plane], "dy_ptr": [4, 4, 8, plane]}
    assert [e["op"] for e in launch.program["body"] if "op" in e] == ["mul", "sum", "sum", "sub"]
    # a whole plane a tile: gsum is no split reduction, tot the first, run in the block's task
    in_task = {"apply_in_task": True} if plane == 512 else {}
    hand = spmd(prog([("dy", [4, 4, 8, plane], "fp32"), ("x", [4, 4, 8, plane], "fp32")],
                     ["gsum", "dx"], [
        tile(4, 1, 1, 512), op("mul", ["dy", "x"], "g"),
        op("sum", ["g"], "gsum", dim=[0, 3], keepdim=True),
        op("sum", ["g"], "tot", dim=[2, 3], keepdim=True, **in_task),
        op("sub", ["dy", "tot"], "dx")]), 4)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert a.tasks == b.tasks == 4
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
    assert a.gm["read_bytes"] == b.gm["read_bytes"]
    assert a.gm["write_bytes"] == b.gm["write_bytes"]
    # dy and x in the first pass, dy in the second, the sums a few bytes; with 2048-element
    # planes g crosses GM between the two sums over other dims, both split (each a stage of its
    # own: docs/triton.md)
    x = 4 * 32 * plane * 4
    assert passes * x <= a.gm["read_bytes"] < passes * x + 4096
    assert (passes - 2) * x <= a.gm["write_bytes"] < (passes - 2) * x + 4096


FOLD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def fold_rows(part_ptr, out_ptr, n_rows, n_cols, BR: tl.constexpr, BC: tl.constexpr):
    cols = tl.program_id(0) * BC + tl.arange(0, BC)
    acc = tl.zeros([BC], dtype=tl.float32)
    for r0 in range(0, n_rows, BR):
        rows = r0 + tl.arange(0, BR)
        blk = tl.load(part_ptr + rows[:, None] * n_cols + cols[None, :],
                      mask=(rows < n_rows)[:, None], other=0.0)
        acc += tl.sum(blk, axis=0)
    tl.store(out_ptr + cols, acc)


def go(n_rows):
    fold_rows[(2,)](torch.randn(n_rows, 128), torch.empty(128), n_rows, 128, BR=16, BC=64)
'''


@pytest.mark.parametrize("n_rows", [1, 40])
def test_row_blocks_of_a_buffer_with_one_row_read_its_one_row(tmp_path, n_rows):
    # A [1, 128] buffer of parts (one partial row) read in 16-row blocks its mask cuts to the
    # one row: the block's row axis walks the dim of size 1, as it walks 40 rows in 3 blocks.
    path = tmp_path / f"fold{n_rows}.py"
    path.write_text(FOLD.replace("fold_rows", f"fold_rows{n_rows}"))
    launch = tt.trace_file(str(path), call=f"go({n_rows})", hardware="ascend910b4")[0]
    hand = spmd(prog([("p", [n_rows, 128], "fp32")], ["out"], [
        tile(16, 64), op("sum", ["p"], "out", dim=0, keepdim=True)]), 2)
    a, b = tilesim.run(launch.config), tilesim.run(hand)
    assert launch.program["inputs"][0]["shape"] == [n_rows, 128]
    assert a.tasks == b.tasks and a.gm["read_bytes"] == b.gm["read_bytes"] == n_rows * 128 * 4
    assert a.kernel_time_us == pytest.approx(b.kernel_time_us, rel=0.01)
