// User tile programs (issue 14): the loader's one-line errors, the stage plan, the functional
// proof (tiled == untiled) on the shipped programs and on 1000 seeded random small programs, and
// shipped ops re-expressed as programs against today's lowering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/families/families.hpp"
#include "kernels/functional/functional.hpp"
#include "kernels/lower/program_lowering.hpp"
#include "kernels/program/program.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/vector_cost.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/analyses/candidate_json.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/program_file.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The softmax family's pricing of its (max, sum of exp) statistic, as its own lowering wrote it
// before the builder: a tile's ReduceMax, Sub, Exp, ReduceSum; a merge's 3 simple, 2 exp_ln and
// 3 simple instructions over the outputs.
void add_max_sum_partial(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
  add_reduce_ops(g, dt, ops);
  add_elementwise(VecClass::kSimple, dt, g.elems, 1, ops);
  add_elementwise(VecClass::kExpLn, dt, g.elems, 1, ops);
  add_reduce_ops(g, dt, ops);
}
void add_max_sum_combine(int64_t n, std::vector<VecOp>& ops) {
  add_elementwise(VecClass::kSimple, DType::kFp32, n, 3, ops);
  add_elementwise(VecClass::kExpLn, DType::kFp32, n, 2, ops);
  add_elementwise(VecClass::kSimple, DType::kFp32, n, 3, ops);
}

Program parse(const json& j) {
  return program_from_json(JsonReader(j, "p.json"));
}

std::string load_error(const json& j) {
  try {
    parse(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A two-input program around `body`.
json prog(const json& body, const json& outputs = json::array({"y"})) {
  return {{"program", "t"},
          {"inputs",
           {{{"name", "x"}, {"shape", {4, 64}}, {"dtype", "fp32"}},
            {{"name", "z"}, {"shape", {4, 32}}, {"dtype", "fp32"}},
            {{"name", "h"}, {"shape", {4, 64}}, {"dtype", "fp16"}}}},
          {"outputs", outputs},
          {"body", body}};
}

json tile(const json& dims) {
  return {{"set_vec_tile_shapes", dims}};
}

json op(const std::string& name, const json& inputs, const std::string& out) {
  return {{"op", name}, {"inputs", inputs}, {"out", out}};
}

// The bad programs of the acceptance list, each with its exact one-line message.
struct Bad {
  std::string what;
  json program;
  std::string message;
};

std::vector<Bad> bad_programs() {
  return {
      {"cycle",
       prog({tile({1, 64}), op("exp", {"b"}, "a"), op("exp", {"a"}, "b"), op("exp", {"b"}, "y")}),
       "p.json: body[1].inputs: op 0 (exp): cycle: it reads 'b', which is written by op 1 from "
       "this op's output"},
      {"use before def", prog({tile({1, 64}), op("exp", {"a"}, "y"), op("exp", {"x"}, "a")}),
       "p.json: body[1].inputs: op 0 (exp): 'a' is used before it is defined (op 1 writes it; ops "
       "run in program order)"},
      {"unknown tensor", prog({tile({1, 64}), op("add", {"x", "q"}, "y")}),
       "p.json: body[1].inputs: op 0 (add): unknown tensor 'q' (defined before it: x, z, h)"},
      {"shape mismatch", prog({tile({1, 64}), op("add", {"x", "z"}, "y")}),
       "p.json: body[1]: op 0 (add): shape mismatch: 'x' (4, 64) fp32 and 'z' (4, 32) fp32 do not "
       "broadcast (numpy rules: right-aligned, each dim equal or 1)"},
      {"integer operand of a float op",
       {{"program", "t"},
        {"inputs", {{{"name", "x"}, {"shape", {4, 64}}, {"dtype", "int32"}}}},
        {"outputs", {"y"}},
        {"body", {tile({1, 64}), op("exp", {"x"}, "y")}}},
       "p.json: body[1]: op 0 (exp): dtype mismatch: 'x' (4, 64) int32 is an integer tensor; exp "
       "takes fp32, fp16, bf16 (cast it first)"},
      {"int32 matmul",
       {{"program", "t"},
        {"inputs",
         {{{"name", "a"}, {"shape", {32, 32}}, {"dtype", "int32"}},
          {{"name", "b"}, {"shape", {32, 32}}, {"dtype", "int32"}}}},
        {"outputs", {"y"}},
        {"body", {{{"set_cube_tile_shapes", {16, 16, 16}}}, op("matmul", {"a", "b"}, "y")}}},
       "p.json: body[1]: op 0 (matmul): dtype mismatch: 'a' (32, 32) int32 is an integer tensor; "
       "matmul takes fp32, fp16, bf16, int8 (cast it first)"},
      {"dtype mismatch", prog({tile({1, 64}), op("mul", {"x", "h"}, "y")}),
       "p.json: body[1]: op 0 (mul): dtype mismatch: 'x' (4, 64) fp32 and 'h' (4, 64) fp16 (cast "
       "one first)"},
      {"written twice", prog({tile({1, 64}), op("exp", {"x"}, "y"), op("abs", {"x"}, "y")}),
       "p.json: body[2].out: op 1 (abs): output 'y' is already written by op 0 (each tensor is "
       "written once)"},
      {"unknown op", prog({tile({1, 64}), op("softplus", {"x"}, "y")}),
       "p.json: body[1].op: unknown op 'softplus' (known: exp, log, sqrt, rsqrt, reciprocal, abs, "
       "neg, relu, copy, nd2nz, where_index, where_index_fp32, round, tanh, erf, sigmoid, silu, "
       "gelu, "
       "add, sub, mul, div, maximum, "
       "minimum, "
       "where, cast, "
       "sum, amax, amin, mean, prod, any, all, logsumexp, sumexp, pick, argmax, argmin, cumsum, "
       "rotate_half, "
       "transpose, gather, load, matmul)"},
      {"split product merged atomically",
       prog({tile({1, 32}),
             {{"op", "prod"}, {"inputs", {"x"}}, {"dim", -1}, {"merge", "atomic"}, {"out", "y"}}}),
       "p.json: op 0 (prod): tile 'vec0' (1, 32) splits a reduced dim of 'x' (4, 64) fp32 and "
       "merge \"atomic\" has no product (atomic DMA adds, maxes or mins; use in_task, chain or "
       "tree)"},
      {"unknown merge",
       prog({tile({1, 32}),
             {{"op", "sum"}, {"inputs", {"x"}}, {"dim", -1}, {"merge", "ring"}, {"out", "y"}}}),
       "p.json: body[1].merge: op 0 (sum): unknown merge 'ring' (allowed: in_task, chain, tree, "
       "atomic, auto; online for logsumexp)"},
      {"argmax over two dims",
       prog({tile({4, 64}),
             {{"op", "argmax"},
              {"inputs", {"x"}},
              {"dim", {0, 1}},
              {"keepdim", true},
              {"out", "y"}}}),
       "p.json: body[1].dim: op 0 (argmax): argmax takes one dim (the index is along it)"},
      {"argmin merged atomically",
       prog(
           {tile({1, 32}),
            {{"op", "argmin"}, {"inputs", {"x"}}, {"dim", -1}, {"merge", "atomic"}, {"out", "y"}}}),
       "p.json: op 0 (argmin): tile 'vec0' (1, 32) splits a reduced dim of 'x' (4, 64) fp32 and "
       "merge \"atomic\" has no index (atomic DMA adds, maxes or mins; use in_task, chain or "
       "tree)"},
      {"merge on a cumsum",
       prog({tile({1, 32}),
             {{"op", "cumsum"}, {"inputs", {"x"}}, {"dim", -1}, {"merge", "tree"}, {"out", "y"}}}),
       "p.json: body[1]: op 0 (cumsum): \"merge\" applies to reductions"},
      {"matmul shapes that do not chain",
       prog({{{"set_cube_tile_shapes", {16, 16, 16}}}, op("matmul", {"x", "z"}, "y")}),
       "p.json: body[1]: op 0 (matmul): shape mismatch: 'x' (4, 64) fp32 @ 'z' (4, 32) fp32 (A "
       "[..., m, k] and B [..., k, n] of one rank, equal k, each batch dim equal or 1 in one of "
       "them)"},
      {"n-ary sub", prog({tile({1, 64}), op("sub", {"x", "x", "x"}, "y")}),
       "p.json: body[1]: op 0 (sub): takes 2 inputs (got 3)"},
      {"loop nest too deep",
       prog({{{"loop", "a"},
              {"axis", 0},
              {"loop_count", 2},
              {"body",
               {{{"loop", "b"},
                 {"axis", 1},
                 {"loop_count", 2},
                 {"body",
                  {{{"loop", "c"},
                    {"axis", 2},
                    {"loop_count", 2},
                    {"body",
                     {{{"loop", "d"},
                       {"axis", 3},
                       {"loop_count", 1},
                       {"body", {tile({1, 64}), op("exp", {"x"}, "y")}}}}}}}}}}}}}),
       "p.json: body[0].body[0].body[0].body[0]: loop 'd' is nested 4 deep; at most 3 loops nest "
       "(each innermost chunk is a root function)"},
      {"nested loop on the same axis",
       prog({{{"loop", "a"},
              {"axis", 0},
              {"loop_count", 2},
              {"body",
               {{{"loop", "b"},
                 {"axis", 0},
                 {"loop_count", 2},
                 {"body", {tile({1, 64}), op("exp", {"x"}, "y")}}}}}}}),
       "p.json: body[0].body[0].axis: loop 'b' cuts axis 0, which its enclosing loop 'a' already "
       "cuts (nested loops cut different axes)"},
      {"merge on an elementwise op",
       prog({tile({1, 32}), {{"op", "exp"}, {"inputs", {"x"}}, {"merge", "tree"}, {"out", "y"}}}),
       "p.json: body[1]: op 0 (exp): \"merge\" applies to reductions"},
      {"row_reduce on an elementwise op",
       prog({tile({1, 32}),
             {{"op", "exp"}, {"inputs", {"x"}}, {"row_reduce", "block"}, {"out", "y"}}}),
       "p.json: body[1]: op 0 (exp): \"row_reduce\" applies to reductions"},
      {"row_reduce not a route",
       prog(
           {tile({1, 64}),
            {{"op", "sum"}, {"inputs", {"x"}}, {"dim", -1}, {"row_reduce", "tree"}, {"out", "y"}}}),
       "p.json: body[1].row_reduce: \"tree\" is not allowed (allowed: whole, block)"},
      {"no tile", prog(json::array({op("exp", {"x"}, "y")})),
       "p.json: op 0 (exp): no vec tile shapes in force (add a set_vec_tile_shapes entry before "
       "it)"},
  };
}

TEST(ProgramLoader, BadProgramsGiveOneExactLine) {
  for (const Bad& b : bad_programs()) EXPECT_EQ(load_error(b.program), b.message) << b.what;
}

// Lowering checks that need the hardware: UB and alignment, naming the op and tensor.
std::string lower_error(const json& j) {
  const Program p = parse(j);
  KernelSpec spec;
  spec.op = "program:t";
  try {
    lower_program(p, spec, test::default_hw());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ProgramLoader, TileOverUbAndMisalignedTileNameTheOpAndTensor) {
  json big = prog({tile({4, 64}), op("exp", {"x"}, "y")});
  big["inputs"][0]["shape"] = {64, 65536};
  big["body"][0]["set_vec_tile_shapes"] = {16, 65536};
  EXPECT_EQ(lower_error(big),
            "p.json: op 0 (exp): stage 'stage0:exp' tile (16, 65536): UB overflow in task "
            "'stage0:exp(16, 65536)': needs 4194304 B, has 196608 B (buffers: x+y 4194304 B)");
  // A loop chunk cuts the (8, 4096) tile to 4 rows; its buffers still hold the full tile, and the
  // task's name says so (issue 48: the message named only the 4-row task).
  json cut = prog({tile({8, 4096}),
                   {{"loop", "l"},
                    {"axis", 0},
                    {"loop_count", 4},
                    {"body", {op("exp", {"x"}, "t"), op("add", {"t", "x"}, "y")}}}});
  cut["inputs"][0]["shape"] = {16, 4096};
  EXPECT_EQ(lower_error(cut),
            "p.json: op 0 (exp): stage 'stage0:exp+add' tile (8, 4096): UB overflow in task "
            "'stage0:exp+add(4, 4096) of tile (8, 4096)': needs 262144 B, has 196608 B (buffers: "
            "x 131072 B, y 131072 B)");
  EXPECT_EQ(lower_error(prog({tile({1, 12}), op("exp", {"x"}, "y")})),
            "p.json: op 0 (exp): tile (1, 12) of 'x' is misaligned: last dim 12 x 4 B = 48 B is "
            "not a multiple of 32 B (use a multiple of 8 elements)");
  // A tensor whose whole row is shorter than one UB block ([4, 4] fp32: 16 B) takes one padded
  // block a row, as PyPTO pads it; its tile holds the whole row. Part of such a row stays refused.
  json short_rows = prog({tile({2, 4}), op("exp", {"x"}, "y")});
  short_rows["inputs"][0]["shape"] = {4, 4};
  EXPECT_EQ(lower_error(short_rows), "");
  json part = prog({tile({2, 2}), op("exp", {"x"}, "y")});
  part["inputs"][0]["shape"] = {4, 4};
  EXPECT_NE(lower_error(part).find("is misaligned: last dim 2 x 4 B = 8 B"), std::string::npos);
}

// ../shared/hostile-t3 prog_fanout_1e5_outputs and prog_inputs_1e5: a fused stage of 10^5 ops
// (each output of its own, or each reading an input of its own) was quadratic to plan (the live
// set summed and swept per op; loads deduplicated by a search) and its UB overflow listed every
// buffer. The plan is n log n; the stage name and the buffer list keep to one readable line.
TEST(ProgramLoader, AStageOfManyOutputsPlansInOnePassAndNamesItsLargestBuffers) {
  constexpr int kOps = 20000;
  json fan = prog(json::array({tile({1, 64})}));
  fan["outputs"] = json::array();
  for (int i = 0; i < kOps; ++i) {
    fan["body"].push_back(op("exp", {"x"}, fmt::format("o{}", i)));
    fan["outputs"].push_back(fmt::format("o{}", i));
  }
  const std::string stage =
      "stage0:exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+exp+...(19984 ops)...+exp";
  EXPECT_EQ(lower_error(fan),
            fmt::format("p.json: op 0 (exp): stage '{0}' tile (1, 64): UB overflow in task "
                        "'{0}(1, 64)': needs 5120000 B, has 196608 B (buffers: x+o19999 256 B, "
                        "o0 256 B, o1 256 B, o2 256 B, o3 256 B, o4 256 B, o5 256 B, o6 256 B, o7 "
                        "256 B, o8 256 B, o9 256 B, o10 256 B, and 19988 more of 5116928 B in "
                        "all)",
                        stage));
  // A few hundred fit: the plan is the same one-pass plan (each output's buffer, x reused).
  fan["outputs"] = json::array();
  fan["body"] = json::array({tile({1, 64})});
  for (int i = 0; i < 300; ++i) {
    fan["body"].push_back(op("exp", {"x"}, fmt::format("o{}", i)));
    fan["outputs"].push_back(fmt::format("o{}", i));
  }
  EXPECT_EQ(lower_error(fan), "");
}

// PyPTO's UB plan shares one pool by lifetime and writes a result over a source that dies at it.
// Two kernels that ran on boards, which a plan of every tensor in its own buffer refused:
//  - a softmax chain on (8, 2048) fp32 tiles, one stage (the tile covers the row): it loads x
//    (64 KiB); s = x - m, e = exp(s) and y = e / z each take x's buffer in turn and y is stored
//    from it; the row maxima m and sums z (8 x 32 B each, one live at a time) are temporaries:
//    x+y and 256 B double-buffered, 2 x 65792 B (it needed 197376 B with s, e and x apart);
//  - the RMSNorm + RoPE program over [1, 11, 16, 128] bf16 in one tile: stage 0 casts x (44 KiB)
//    to xf (88 KiB, stored), squares it into sq (88 KiB) and means sq into ms (5.5 KiB, stored);
//    x dies at the cast, so at the mean xf + sq + ms = 185856 B are live, at depth 1 (it needed
//    230912 B with x kept).
TEST(ProgramPlan, UbIsSharedByLifetimeAndResultsGoInPlace) {
  json chain = {{"program", "t"},
                {"inputs", {{{"name", "x"}, {"shape", {64, 2048}}, {"dtype", "fp32"}}}},
                {"outputs", {"y"}},
                {"body",
                 {tile({8, 2048}),
                  {{"op", "amax"}, {"inputs", {"x"}}, {"dim", -1}, {"keepdim", true}, {"out", "m"}},
                  op("sub", {"x", "m"}, "s"),
                  op("exp", {"s"}, "e"),
                  {{"op", "sum"}, {"inputs", {"e"}}, {"dim", -1}, {"keepdim", true}, {"out", "z"}},
                  op("div", {"e", "z"}, "y")}}};
  KernelSpec spec;
  spec.op = "program:t";
  const LoweredKernel k = lower_program(parse(chain), spec, test::default_hw());
  EXPECT_EQ(k.diag.buffer_depth, 2);
  EXPECT_EQ(k.diag.ub_bytes, 2 * (65536 + 256));
  bool in_place = false;
  for (const TaskKind& kind : k.graph.kinds)
    for (const Buffer& b : kind.buffers) in_place = in_place || b.name == "x+y";
  EXPECT_TRUE(in_place);
  // Own buffers (an Ascend C kernel's queues): x's buffer takes s, then e (a vector instruction
  // writes over its source, dst == src); y has its own; m and z are temporaries: the second
  // pass of a norm in the buffers the family gave it: x + y and the temporaries' peak, 512 B
  // (it needed another 64 KiB for s and e apart from x).
  chain["ub_plan"] = "buffers";
  const LoweredKernel own = lower_program(parse(chain), spec, test::default_hw());
  EXPECT_EQ(own.diag.ub_bytes, 65536 + 65536 + 512);
  const auto run =
      test::run_cli("run " + test::source_path("configs/programs/rmsnorm_rope_1x11x16x128.json") +
                        " --tile 1,11,16,128 --json",
                    false);
  ASSERT_EQ(run.code, 0) << run.out;
  const json d = json::parse(run.out)["diagnostics"];
  EXPECT_EQ(d["ub_bytes"], 185856);
  EXPECT_EQ(d["buffer_depth"], 1);
}

fs::path write_temp(const std::string& name, const std::string& text) {
  // One folder per process: ctest runs this file's tests in parallel processes.
  const auto dir =
      fs::temp_directory_path() / ("tilesim_program_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return dir / name;
}

TEST(ProgramLoader, CliExitsTwoWithOneLine) {
  json big = prog({tile({16, 65536}), op("exp", {"x"}, "y")});
  big["inputs"][0]["shape"] = {64, 65536};
  std::vector<json> cases;
  for (const Bad& b : bad_programs()) cases.push_back(b.program);
  cases.push_back(big);
  for (size_t i = 0; i < cases.size(); ++i) {
    const fs::path f = write_temp(fmt::format("bad{}.json", i), cases[i].dump());
    const test::CmdResult r = test::run_cli("run " + f.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out.rfind("tilesim: error: " + f.string() + ": ", 0), 0u) << r.out;
  }
}

// The loader fuzzed with the same inputs: truncated and byte-mutated, it answers Error or a
// program, never anything else.
TEST(ProgramLoader, FuzzedInputsNeverCrash) {
  std::mt19937 rng(14);
  std::vector<std::string> seeds;
  for (const Bad& b : bad_programs()) seeds.push_back(b.program.dump());
  for (const auto& f : fs::directory_iterator(test::source_path("configs/programs")))
    seeds.push_back(
        std::string(std::istreambuf_iterator<char>(std::ifstream(f.path()).rdbuf()), {}));
  const std::string alphabet = "{}[]\",:0123456789-.eabxyz ";
  const Hardware hw = test::default_hw();
  int loaded = 0;
  for (int i = 0; i < 400; ++i) {
    std::string text = seeds[static_cast<size_t>(i) % seeds.size()];
    if (i % 3 == 0) {
      text.resize(rng() % text.size());
    } else {
      for (int m = 0; m < 1 + i % 4; ++m)
        text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
    }
    const fs::path f = write_temp("fuzz.json", text);
    try {
      const Program p = load_program(f);
      // Lowered too when small (a mutated digit can make a shipped program's graph huge).
      int64_t elems = 0;
      for (const ProgTensor& t : p.tensors) elems += product(t.shape);
      if (elems < (int64_t{1} << 22)) {
        KernelSpec spec;
        spec.op = "program";
        lower_program(p, spec, hw);
      }
      ++loaded;
    } catch (const Error&) {
    }
  }
  EXPECT_GT(loaded, 0);
}

// Ops under one tile fuse; a reduction whose tile covers the row keeps its users in its stage
// (column ops on its result too); one that splits the row ends its stage.
TEST(ProgramPlan, ElementwiseChainsFuseAndOnlyASplitReductionEndsAStage) {
  const auto chain = [](int64_t width) {
    json sum = {{"op", "sum"}, {"inputs", {"b"}}, {"dim", -1}, {"keepdim", true}, {"out", "s"}};
    json eps = op("add", {"s"}, "se");
    eps["scalar"] = 1.0;
    return parse(prog({tile({1, width}), op("exp", {"x"}, "a"), op("mul", {"a", "x"}, "b"), sum,
                       eps, op("reciprocal", {"se"}, "r"), op("mul", {"b", "r"}, "y")}));
  };
  // The tile covers the row: one stage, only x loaded and y stored (a, b, s and r stay in UB).
  const Program whole = chain(64);
  auto stages = plan_stages(whole);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].psg, "stage0:exp+mul+sum+add+reciprocal+mul");
  EXPECT_EQ(stages[0].loads, (std::vector<int>{0}));
  EXPECT_EQ(stages[0].stores, (std::vector<int>{whole.tensor_id("y")}));
  // The column ops run on the tile's column: one element per row each (add, reciprocal), and
  // the apply on the whole tile.
  KernelSpec spec;
  spec.op = "program:t";
  const LoweredKernel k = lower_program(whole, spec, test::default_hw());
  std::vector<int64_t> elems;
  for (const VecOp& v : k.graph.kinds[0].steps[0].vec)
    if (v.cls == VecClass::kSimple || v.cls == VecClass::kComplex || v.cls == VecClass::kExpLn)
      elems.push_back(v.batch * v.rows * v.cols);
  // exp, mul, +1, 1/x, then the apply: the tile's one row has one r, a vector-scalar Muls (no
  // Brcb of the column).
  EXPECT_EQ(elems, (std::vector<int64_t>{64, 64, 1, 1, 64}));
  // Two rows per tile: r holds a value per row, spread by Brcb over one UB block each (2 x 8
  // fp32) before the mul.
  json two = prog({tile({2, 64}),
                   op("exp", {"x"}, "a"),
                   op("mul", {"a", "x"}, "b"),
                   {{"op", "sum"}, {"inputs", {"b"}}, {"dim", -1}, {"keepdim", true}, {"out", "s"}},
                   op("reciprocal", {"s"}, "r"),
                   op("mul", {"b", "r"}, "y")});
  const LoweredKernel k2 = lower_program(parse(two), spec, test::default_hw());
  elems.clear();
  for (const VecOp& v : k2.graph.kinds[0].steps[0].vec)
    if (v.cls == VecClass::kSimple || v.cls == VecClass::kComplex || v.cls == VecClass::kExpLn)
      elems.push_back(v.batch * v.rows * v.cols);
  EXPECT_EQ(elems, (std::vector<int64_t>{128, 128, 2, 16, 128}));  // ..., 1/x, Brcb, mul
  // A 32-wide tile splits the row: the sum ends stage 0 (b and s cross GM), the column ops are
  // a stage of their own ([4, 1]: the tile does not cover the row, so the apply cannot take them
  // in) and r crosses GM to the apply.
  stages = plan_stages(chain(32));
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].psg, "stage0:exp+mul+sum");
  EXPECT_EQ(stages[1].psg, "stage1:add+reciprocal");
  EXPECT_EQ(stages[2].psg, "stage2:mul");
  EXPECT_EQ(stages[0].stores.size(), 2u);
}

// ---- Functional proof: tiled == untiled -------------------------------------------------------

bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= 1e-9 * (1.0 + std::abs(b));
}

// Every output of the tiled run equals the untiled one and is written by exactly one tile.
::testing::AssertionResult proves(const Program& p, unsigned seed) {
  const auto in = program_inputs(p, seed);
  const auto ref = execute_program_untiled(p, in);
  const auto got = execute_program_tiled(p, in);
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (!p.tensors[t].output) continue;
    for (Eigen::Index i = 0; i < ref[t].data.size(); ++i) {
      if (got.writes[t].data[i] != 1.0)
        return ::testing::AssertionFailure() << p.tensors[t].name << "[" << i << "] written "
                                             << got.writes[t].data[i] << " times";
      if (!same(got.tensors[t].data[i], ref[t].data[i]))
        return ::testing::AssertionFailure()
               << p.tensors[t].name << "[" << i << "] tiled " << got.tensors[t].data[i]
               << " untiled " << ref[t].data[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// A shipped program at test size: every dim and tile dim capped at 16 (equal sizes stay equal, so
// shapes still broadcast; 16 elements keep a row 32 B aligned for every dtype), loop counts at 2.
json shrunk(json j) {
  for (auto& i : j["inputs"])
    for (auto& d : i["shape"]) d = std::min<int64_t>(d.get<int64_t>(), 16);
  std::function<void(json&)> walk = [&](json& body) {
    for (auto& e : body) {
      for (const char* k : {"set_vec_tile_shapes", "set_cube_tile_shapes"})
        if (e.contains(k))
          for (auto& d : e[k]) d = std::min<int64_t>(d.get<int64_t>(), 16);
      if (e.contains("loop")) {
        e["loop_count"] = std::min<int64_t>(e["loop_count"].get<int64_t>(), 2);
        walk(e["body"]);
      }
    }
  };
  walk(j["body"]);
  return j;
}

TEST(ProgramFunctional, ShippedProgramsTiledEqualsUntiled) {
  int n = 0;
  for (const auto& f : fs::directory_iterator(test::source_path("configs/programs"))) {
    const json j = JsonReader::parse_file(f.path(), "tile program");
    const Program p = parse(shrunk(j));
    EXPECT_TRUE(proves(p, 7)) << f.path();
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(ProgramFunctional, GatherMatmulAndLoopsTiledEqualsUntiled) {
  // Rows of a table by index, then a matmul under its cube tile, inside a loop over the rows.
  const json j = {{"program", "g"},
                  {"inputs",
                   {{{"name", "table"}, {"shape", {10, 48}}, {"dtype", "fp32"}},
                    {{"name", "index"}, {"shape", {7}}, {"dtype", "int32"}},
                    {{"name", "w"}, {"shape", {48, 32}}, {"dtype", "fp32"}}}},
                  {"outputs", {"rows", "y"}},
                  {"body",
                   {{{"loop", "l"},
                     {"axis", 0},
                     {"loop_count", 3},
                     {"body",
                      {tile({2, 16}),
                       op("gather", {"table", "index"}, "rows"),
                       {{"set_cube_tile_shapes", {2, 16, 16}}},
                       op("matmul", {"rows", "w"}, "y")}}}}}};
  const Program p = parse(j);
  EXPECT_EQ(plan_stages(p).size(), 2u);
  EXPECT_TRUE(proves(p, 3));
  KernelSpec spec;
  spec.op = "program:g";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  // The loop cuts the 7 rows into chunks of 3, 3 and 1, each cut into tiles of 2 rows: 5 row
  // pieces. gather: 5 x 3 column tiles of 16; matmul: 5 x 2 C column tiles (k walked in a task).
  EXPECT_EQ(k.graph.tasks.size(), 15u + 10u);
  EXPECT_EQ(k.graph.num_roots(), 3);
}

// PyPTO's matmul broadcasts a batch dim of 1 (python/pypto/op/matmul.py: (1 x n x k) @
// (b x k x m) -> (b x n x m)): a query row [1, 1, k] against each batch's keys [b, l, k]^T, in a
// loop over the batch. Each batch reads the one A matrix: the untiled result is A[0] @ B[b]^T,
// and the tiled one equals it.
TEST(ProgramFunctional, MatmulBroadcastsABatchDimOfOne) {
  const int64_t batch = 6, l = 8, kd = 64;
  json mm = op("matmul", {"q", "keys"}, "s");
  mm["transpose_b"] = true;
  const json loop = {{"loop", "b"},
                     {"axis", 0},
                     {"loop_count", 3},
                     {"body", {{{"set_cube_tile_shapes", {16, 64, 16}}}, mm}}};
  json j = {{"program", "bc"},
            {"inputs",
             {{{"name", "q"}, {"shape", {1, 1, kd}}, {"dtype", "fp32"}},
              {{"name", "keys"}, {"shape", {batch, l, kd}}, {"dtype", "fp32"}}}},
            {"outputs", {"s"}}};
  j["body"] = json::array({loop});
  const Program p = parse(j);
  const auto id = [&](const char* n) { return static_cast<size_t>(p.tensor_id(n)); };
  EXPECT_EQ(p.tensors[id("s")].shape, (Dims{batch, 1, l}));
  const auto in = program_inputs(p, 5);
  const auto ref = execute_program_untiled(p, in);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t n = 0; n < l; ++n) {
      double want = 0;
      for (int64_t i = 0; i < kd; ++i) want += in[id("q")][{0, 0, i}] * in[id("keys")][{b, n, i}];
      EXPECT_TRUE(same(ref[id("s")][{b, 0, n}], want)) << b << ", " << n;
    }
  EXPECT_TRUE(proves(p, 5));
  KernelSpec spec;
  spec.op = "program:bc";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  // one C tile [1, 8] per batch, in 3 root functions of 2 batches
  EXPECT_EQ(k.graph.tasks.size(), static_cast<size_t>(batch));
  EXPECT_EQ(k.graph.num_roots(), 3);
  // the other way round: A's batches against one B [1, l, k]
  json rev = j;
  rev["inputs"][0]["shape"] = {batch, 1, kd};
  rev["inputs"][1]["shape"] = {1, l, kd};
  EXPECT_TRUE(proves(parse(rev), 5));
  // batch dims that differ and are not 1 do not broadcast
  json bad = j;
  bad["inputs"][0]["shape"] = {4, 1, kd};
  EXPECT_NE(load_error(bad).find("each batch dim equal or 1 in one of them"), std::string::npos)
      << load_error(bad);
}

// Flash attention as one program: S = Q K^T, scale, mask, an online logsumexp, P = exp(S - lse)
// cast to fp16, O = P V. Lq 48 in query blocks of 16, Lk 40 in key blocks of 16 (a ragged 8),
// row pieces of 8, head dims 16 (QK) and 24 (V), two batches.
json flash_program(const json& lse_extra = json::object(), const json& pv_tile = {16, 16, 24}) {
  json lse = {{"op", "logsumexp"}, {"inputs", {"masked"}}, {"out", "lse"},
              {"dim", -1},         {"keepdim", true},      {"merge", "online"}};
  lse.update(lse_extra);
  return {{"program", "flash"},
          {"inputs",
           {{{"name", "q"}, {"shape", {2, 48, 16}}, {"dtype", "fp16"}},
            {{"name", "k"}, {"shape", {2, 40, 16}}, {"dtype", "fp16"}},
            {{"name", "v"}, {"shape", {2, 40, 24}}, {"dtype", "fp16"}},
            {{"name", "mask"}, {"shape", {48, 40}}, {"dtype", "fp16"}},
            {{"name", "neg"}, {"shape", {1}}, {"dtype", "fp32"}}}},
          {"outputs", {"o", "lse"}},
          {"body",
           {{{"set_cube_tile_shapes", {16, 16, 16}}, {"name", "qk"}},
            {{"op", "matmul"},
             {"inputs", {"q", "k"}},
             {"out", "s"},
             {"transpose_b", true},
             {"out_dtype", "fp32"}},
            {{"set_vec_tile_shapes", {1, 8, 16}}, {"name", "rows"}},
            {{"op", "mul"}, {"inputs", {"s"}}, {"out", "scaled"}, {"scalar", 0.25}},
            op("where", {"mask", "scaled", "neg"}, "masked"),
            lse,
            op("sub", {"masked", "lse"}, "shifted"),
            op("exp", {"shifted"}, "p32"),
            {{"op", "cast"}, {"inputs", {"p32"}}, {"out", "p"}, {"dtype", "fp16"}},
            {{"set_cube_tile_shapes", pv_tile}, {"name", "pv"}},
            {{"op", "matmul"}, {"inputs", {"p", "v"}}, {"out", "o"}, {"out_dtype", "fp16"}}}}};
}

TEST(ProgramFlash, OnlineSoftmaxFusesQkSoftmaxAndPvIntoOneStageAndProvesEqual) {
  const Program p = parse(flash_program());
  const auto stages = plan_stages(p);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].online, 3);
  EXPECT_EQ(stages[0].tile, (Dims{1, 16, 16}));
  // Only the inputs are loaded and only O and the statistic stored: S and P stay on chip.
  EXPECT_EQ(stages[0].loads.size(), 5u);
  EXPECT_EQ(stages[0].stores.size(), 2u);
  // The running max, sum and O rescale give the untiled softmax-then-matmul exactly.
  EXPECT_TRUE(proves(p, 11));
  EXPECT_TRUE(proves(p, 12));
  KernelSpec spec;
  spec.op = "program:flash";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  // 2 batches x 3 query blocks = 6 chains, each 3 key blocks (16, 16, 8) of: S on the AIC, the
  // statistic on 2 row pieces, P V on the AIC, O's rescale on 2 row pieces: 6 tasks. None packs
  // (each depends on the one before it in its chain).
  EXPECT_EQ(k.graph.tasks.size(), 6u * 3u * 6u);
  int aic = 0;
  for (const auto& t : k.graph.tasks)
    aic += k.graph.kinds[static_cast<size_t>(t.kind)].core == CoreType::kAic;
  EXPECT_EQ(aic, 6 * 3 * 2);
  // Per chain: S -> stats (2), stats -> P V (2), P V -> rescale (2), stats -> rescale (2),
  // stats -> stats and rescale -> rescale across key blocks (2 + 2 per later block), and the
  // two-slot workspaces' reuse from the third block on (S: 2, P: 2, P V: 2).
  const int64_t per_chain = 3 * 8 + 2 * 4 + 6;
  EXPECT_EQ(k.graph.num_edges(), 6 * per_chain);
  // spmd: one mixed launch of partition.grid blocks, two chains per block; S and P V on the
  // block's AIC, the first row piece on its first AIV and the second on its second; the same
  // tasks and edges, every edge inside its block.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 3;
  const LoweredKernel m = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(m.graph.tasks.size(), k.graph.tasks.size());
  EXPECT_EQ(m.graph.num_edges(), 6 * per_chain);
  EXPECT_EQ(m.graph.num_launches(), 1);
  std::map<int, int> lanes;
  int blocks = 0;
  for (const auto& t : m.graph.tasks) {
    ++lanes[t.mix_lane];
    blocks += !t.continues_block;
    EXPECT_EQ(t.mix_lane == 0, m.graph.kinds[static_cast<size_t>(t.kind)].core == CoreType::kAic);
  }
  EXPECT_EQ(blocks, 3);
  EXPECT_EQ(lanes, (std::map<int, int>{{0, 36}, {1, 36}, {2, 36}}));
  // O's rescale in the middle of a chain: under pypto it reads P V, O and alpha and writes O back
  // through GM; under spmd the block's AIV keeps O and the statistics in UB, so it reads P V only.
  const auto middle_rescale = [](const LoweredKernel& lk) {
    std::set<std::pair<size_t, size_t>> copies;  // (loads, stores) of each middle rescale
    for (const TaskKind& kind : lk.graph.kinds) {
      const TileStep& st = kind.steps.front();
      if (kind.label.find(":rescale_o") != std::string::npos && st.vec.size() == 3)  // Brcb, *, +
        copies.emplace(st.loads.size(), st.stores.size());
    }
    return copies;
  };
  EXPECT_EQ(middle_rescale(k), (std::set<std::pair<size_t, size_t>>{{3, 1}}));
  EXPECT_EQ(middle_rescale(m), (std::set<std::pair<size_t, size_t>>{{1, 0}}));
  const SimResult r = simulate(m.graph, test::default_hw());
  std::set<int32_t> cores;
  for (const auto& t : r.tasks) cores.insert(t.core);
  EXPECT_EQ(cores.size(), 9u);  // three clusters of three cores
  // S's workspace: a ring of two slots, one block per row piece. Under pypto a ring per query
  // block (6 chains x 2 pieces x 2 slots); under spmd a ring per block, which its two chains take
  // in turn (3 blocks x 2 x 2; pto-isa's FIFOs per core, TSyncCVID.hpp).
  const auto s_slots = [](const LoweredKernel& lk) {
    std::set<uint64_t> keys;
    for (int32_t t = 0; t < static_cast<int32_t>(lk.graph.tasks.size()); ++t) {
      const TaskKind& kind = lk.graph.kinds[static_cast<size_t>(lk.graph.tasks[t].kind)];
      if (kind.label.find(":qk") == std::string::npos) continue;
      for (const Access* a = lk.graph.access_begin(t); a != lk.graph.access_end(t); ++a)
        if (a->write) keys.insert(a->block);
    }
    return keys.size();
  };
  EXPECT_EQ(s_slots(k), 6u * 2u * 2u);
  EXPECT_EQ(s_slots(m), 3u * 2u * 2u);
}

// S's L0 tile narrower than the key block (pto-isa's CUBE_S1 sub-tiles of a TILE_S1 key block):
// each L0 tile of key columns is its own accumulator, sent out by the fixpipe when its mmads end,
// so a full key block of 16 leaves L0C as two 16 x 8 fp32 stores (512 B each) and the ragged one
// of 8 as one; Q is loaded once per task (the head dim is one L1 k step). The tasks and the proof
// are those of the undivided tile.
TEST(ProgramFlash, SLeavesL0cAnL0TileOfKeysAtATime) {
  json j = flash_program();
  j["body"][0]["set_cube_tile_shapes"] = {{16, 16}, {16, 16}, {8, 16}};
  const Program p = parse(j);
  EXPECT_TRUE(proves(p, 13));
  KernelSpec spec;
  spec.op = "program:flash";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 6u * 3u * 6u);
  std::multiset<std::vector<int64_t>> qk;  // per qk kind: its fixpipe stores' bytes
  for (const TaskKind& kind : k.graph.kinds) {
    if (kind.label.find(":qk") == std::string::npos) continue;
    std::vector<int64_t> out;
    int a_loads = 0;
    for (const TileStep& st : kind.steps) {
      for (const DmaOp& d : st.stores)
        if (d.path == DmaPath::kFixpipe)
          for (int r = 0; r < st.repeat; ++r) out.push_back(d.bytes());
      a_loads += static_cast<int>(st.loads.size()) * st.repeat;
    }
    EXPECT_EQ(a_loads, out.size() == 2 ? 3 : 2) << kind.label;  // Q once, K per part
    qk.insert(out);
  }
  EXPECT_EQ(qk, (std::multiset<std::vector<int64_t>>{{512, 512}, {512}}));
}

// Random flash programs: batches, query and key lengths (a ragged last key block), head dims, the
// query block, key block and row piece, the ops on S before the statistic (scale, mask select,
// additive bias), P cast to fp16 or kept fp32, lse an output or not. Each fuses into one stage,
// proves equal to the untiled softmax-then-matmul and lowers in both partitions.
TEST(ProgramFlash, TwoHundredRandomFlashProgramsProveAndLower) {
  std::mt19937 rng(20261205);
  const auto pick = [&](int64_t n) {
    return static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  };
  const Hardware hw = test::default_hw();
  int with_lse = 0, fp16_p = 0, ragged = 0, simulated = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t batch = 1 + pick(2), qb = 8 << pick(3), kb = 16 << pick(2);
    const int64_t lq = qb * (1 + pick(3)), lk = kb * (1 + pick(3)) + (pick(2) ? 0 : 8);
    const int64_t dk = 16 * (1 + pick(2)), dv = 8 * (2 + pick(3)), rows = qb >> pick(3);
    const bool cast = pick(2) == 0, keep_lse = pick(2) == 0;
    const DType pd = cast ? DType::kFp16 : DType::kFp32;
    json body = {{{"set_cube_tile_shapes", {qb, 16, kb}}, {"name", "qk"}},
                 {{"op", "matmul"},
                  {"inputs", {"q", "k"}},
                  {"out", "s"},
                  {"transpose_b", true},
                  {"out_dtype", "fp32"}},
                 {{"set_vec_tile_shapes", {1, rows, kb}}, {"name", "rows"}}};
    std::string x = "s";
    if (pick(2) == 0) {
      body.push_back({{"op", "mul"}, {"inputs", {x}}, {"out", "scaled"}, {"scalar", 0.125}});
      x = "scaled";
    }
    if (pick(2) == 0) {
      body.push_back(op("where", {"mask", x, "neg"}, "masked"));
      x = "masked";
    }
    if (pick(3) == 0) {
      body.push_back(op("add", {x, "bias"}, "biased"));
      x = "biased";
    }
    body.push_back({{"op", "logsumexp"},
                    {"inputs", {x}},
                    {"out", "lse"},
                    {"dim", -1},
                    {"keepdim", true},
                    {"merge", "online"}});
    body.push_back(op("sub", {x, "lse"}, "shifted"));
    body.push_back(op("exp", {"shifted"}, cast ? "p32" : "p"));
    if (cast)
      body.push_back({{"op", "cast"}, {"inputs", {"p32"}}, {"out", "p"}, {"dtype", "fp16"}});
    body.push_back({{"set_cube_tile_shapes", {qb, kb, dv}}, {"name", "pv"}});
    body.push_back({{"op", "matmul"}, {"inputs", {"p", "v"}}, {"out", "o"}, {"out_dtype", "fp32"}});
    const std::string vd(dtype_name(pd));
    const json j = {{"program", "flash"},
                    {"inputs",
                     {{{"name", "q"}, {"shape", {batch, lq, dk}}, {"dtype", "fp16"}},
                      {{"name", "k"}, {"shape", {batch, lk, dk}}, {"dtype", "fp16"}},
                      {{"name", "v"}, {"shape", {batch, lk, dv}}, {"dtype", vd}},
                      {{"name", "mask"}, {"shape", {lq, lk}}, {"dtype", "fp16"}},
                      {{"name", "bias"}, {"shape", {batch, lq, lk}}, {"dtype", "fp32"}},
                      {{"name", "neg"}, {"shape", {1}}, {"dtype", "fp32"}}}},
                    {"outputs", keep_lse ? json{"o", "lse"} : json{"o"}},
                    {"body", body}};
    Program p;
    try {
      p = parse(j);
    } catch (const Error& e) {
      FAIL() << "program " << i << ": " << e.what() << "\n" << j.dump();
    }
    const auto stages = plan_stages(p);
    ASSERT_EQ(stages.size(), 1u) << j.dump();
    ASSERT_GE(stages[0].online, 0) << j.dump();
    ASSERT_TRUE(proves(p, static_cast<unsigned>(i))) << "program " << i << "\n" << j.dump();
    KernelSpec spec;
    spec.op = "program:flash";
    const LoweredKernel k = lower_program(p, spec, hw);
    // Per chain (batch x query block) and key block: S, P V and a statistic and a rescale task
    // per row piece.
    const int64_t keys = (lk + kb - 1) / kb, chains = batch * (lq / qb), pieces = qb / rows;
    EXPECT_EQ(static_cast<int64_t>(k.graph.tasks.size()), chains * keys * (2 + 2 * pieces))
        << j.dump();
    spec.partition = PartitionStyle::kSpmd;
    spec.grid = 1 + pick(30);
    const LoweredKernel m = lower_program(p, spec, hw);
    EXPECT_EQ(m.graph.tasks.size(), k.graph.tasks.size());
    EXPECT_EQ(m.graph.num_edges(), k.graph.num_edges());  // every edge inside its block
    if (i % 20 == 0) {  // the runtimes run them through; overlapped tasks' copies count once
      for (const LoweredKernel* lk_ : {&k, &m}) {
        const SimResult r = simulate(lk_->graph, hw);
        EXPECT_GT(r.last_end, 0);
        for (const CoreMetrics& c : compute_metrics(lk_->graph, r, hw).per_core) {
          EXPECT_LE(c.mte2_us, c.core_total_work_time_us * (1 + 1e-9)) << j.dump();
          EXPECT_LE(c.mte3_us, c.core_total_work_time_us * (1 + 1e-9)) << j.dump();
        }
      }
      ++simulated;
    }
    with_lse += keep_lse;
    fp16_p += cast;
    ragged += lk % kb != 0;
  }
  EXPECT_GT(with_lse, 50);
  EXPECT_GT(fp16_p, 50);
  EXPECT_GT(ragged, 50);
  EXPECT_EQ(simulated, 10);
}

TEST(ProgramFlash, EachBrokenConditionHasItsError) {
  const auto error = [](const json& j) { return load_error(j); };
  EXPECT_NE(error(flash_program(json::object(), {16, 8, 24}))
                .find("matmul shapes do not chain: P V's cube "
                      "tile must be [16, 16, 24]"),
            std::string::npos);
  EXPECT_NE(error(flash_program({{"dim", 1}})).find("reduces the last dim of S"),
            std::string::npos);
  json summed = flash_program({{"op", "sum"}});
  EXPECT_NE(error(summed).find("merge \"online\" carries a log-sum-exp's running max"),
            std::string::npos);
  json s_out = flash_program();
  s_out["outputs"].push_back("s");
  EXPECT_NE(error(s_out).find("keeps S and P on chip: 's' (op 0 (matmul)) is a program output"),
            std::string::npos);
  json p_read = flash_program();
  p_read["body"].push_back(op("exp", {"p32"}, "extra"));
  p_read["outputs"].push_back("extra");
  EXPECT_NE(error(p_read).find("keeps S and P on chip: 'p32' (op 5 (exp)) is read by op 8 (exp)"),
            std::string::npos)
      << error(p_read);
  json no_exp = flash_program();
  no_exp["body"][7] = op("abs", {"shifted"}, "p32");
  EXPECT_NE(error(no_exp).find("needs sub(x, lse) -> exp -> matmul(p, v)"), std::string::npos);
  json wide_rows = flash_program();
  wide_rows["body"][2]["set_vec_tile_shapes"] = {1, 8, 32};
  EXPECT_NE(error(wide_rows).find("needs the vec tile [1..., rows, 16]"), std::string::npos);
}

// The GM bytes a lowered kernel's tasks read (or write).
double gm_bytes(const LoweredKernel& k, bool write) {
  double bytes = 0;
  for (const auto& task : k.graph.tasks)
    for (const auto& st : k.graph.kinds[static_cast<size_t>(task.kind)].steps)
      for (const auto& d : write ? st.stores : st.loads)
        bytes += static_cast<double>(st.repeat * d.bytes());
  return bytes;
}

// A split statistic with apply_in_task and the vector stage using it on the same tiles: where the
// statistic is whole inside one task (in_task under pypto, an spmd block's whole rows), that task
// walks the row's tiles again (the second pass), the statistic kept in UB and not stored; where
// it is not (tree merges, rows split over blocks) the second pass is a stage of its own, as it is
// without apply_in_task.
TEST(ProgramPlan, ASplitStatisticsSecondPassRunsInTheTaskThatFinishesTheRow) {
  auto softmax = [](const std::string& merge) {
    json lse = {{"op", "logsumexp"},    {"inputs", {"x"}}, {"dim", 1},
                {"keepdim", true},      {"merge", merge},  {"out", "l"},
                {"apply_in_task", true}};
    return program_from_json(JsonReader(
        json{{"program", "sm"},
             {"inputs", {{{"name", "x"}, {"shape", {16, 16384}}, {"dtype", "fp32"}}}},
             {"outputs", {"y"}},
             {"body", {tile({1, 4096}), lse, op("sub", {"x", "l"}, "d"), op("exp", {"d"}, "y")}}},
        "sm.json"));
  };
  const double x = 16.0 * 16384 * 4;
  KernelSpec spec;
  spec.op = "program:sm";
  // in_task: one task per row, x read twice, y written, the statistic never leaves UB.
  const LoweredKernel in_task = lower_program(softmax("in_task"), spec, test::default_hw());
  EXPECT_EQ(in_task.graph.tasks.size(), 16u);
  EXPECT_EQ(in_task.graph.num_edges(), 0);
  EXPECT_EQ(gm_bytes(in_task, false), 2 * x);
  EXPECT_EQ(gm_bytes(in_task, true), x);
  Program separate = softmax("in_task");
  separate.ops[0].apply_in_task = false;
  EXPECT_EQ(lower_program(separate, spec, test::default_hw()).graph.tasks.size(), 16u + 16u * 4);
  // tree: 4 partial tasks per row merged by a tree (3 merges), the statistic stored, then 4
  // second-pass tasks per row reading it.
  const LoweredKernel tree = lower_program(softmax("tree"), spec, test::default_hw());
  EXPECT_EQ(tree.graph.tasks.size(), 16u * (4 + 3 + 4));
  EXPECT_GT(gm_bytes(tree, true), x);
  // spmd, 16 blocks of whole rows: one launch, each block its row's two passes.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 16;
  const LoweredKernel whole = lower_program(softmax("in_task"), spec, test::default_hw());
  EXPECT_EQ(whole.graph.num_launches(), 1);
  EXPECT_EQ(whole.graph.tasks.size(), 16u);
  EXPECT_EQ(gm_bytes(whole, true), x);
  // spmd, 32 blocks: rows split over blocks; their parts merge in a second launch and the
  // second pass is a third.
  spec.grid = 32;
  const LoweredKernel split = lower_program(softmax("in_task"), spec, test::default_hw());
  EXPECT_EQ(split.graph.num_launches(), 3);
}

// RMSNorm with a weight [1, N] cast to fp32, tiles of one row: the cast written before the row's
// ops (a weight loaded before the row loop) or where the output uses it; its result also an output
// when `weight_out`.
Program weighted_rmsnorm(bool cast_first, bool weight_out, bool recompute) {
  json cast_w = {{"op", "cast"}, {"inputs", {"w"}}, {"out", "wf"}, {"dtype", "fp32"}};
  json body = {tile({1, 64})};
  if (cast_first) body.push_back(cast_w);
  body.push_back({{"op", "cast"}, {"inputs", {"x"}}, {"out", "xf"}, {"dtype", "fp32"}});
  body.push_back(op("mul", {"xf", "xf"}, "sq"));
  body.push_back({{"op", "sum"}, {"inputs", {"sq"}}, {"out", "ss"}, {"dim", 1}, {"keepdim", true}});
  body.push_back(op("rsqrt", {"ss"}, "r"));
  body.push_back(op("mul", {"xf", "r"}, "n"));
  if (!cast_first) body.push_back(cast_w);
  body.push_back(op("mul", {"n", "wf"}, "y"));
  json outputs = {"y"};
  if (weight_out) outputs.push_back("wf");
  Program p = parse({{"program", "rms"},
                     {"inputs",
                      {{{"name", "x"}, {"shape", {8, 64}}, {"dtype", "fp16"}},
                       {{"name", "w"}, {"shape", {1, 64}}, {"dtype", "fp16"}}}},
                     {"outputs", outputs},
                     {"body", body}});
  p.recompute_broadcasts = recompute;
  return p;
}

// A vector op on operands broadcast along the rows the tiles walk (a weight's cast): PyPTO computes
// it once, a stage of its own whose result each row's tile reads through GM; a block of an spmd
// (or ascendc) launch runs its kernel's code for each tile, so the cast runs in the stage of the
// ops that use it, before them or after, and the kernel is one launch reading x and the fp16
// weight once per row. A result that must reach GM (an output) stays computed once.
TEST(ProgramStages, BroadcastOpsRunInTheirUsersStageUnderSpmd) {
  for (const bool first : {true, false}) {
    EXPECT_EQ(plan_stages(weighted_rmsnorm(first, false, false)).size(), first ? 2u : 3u);
    const Program p = weighted_rmsnorm(first, false, true);
    const auto stages = plan_stages(p);
    ASSERT_EQ(stages.size(), 1u) << first;
    EXPECT_EQ(stages[0].shape, (Dims{8, 64}));
    EXPECT_TRUE(recomputed_in(p, stages[0], p.ops[first ? 0 : 5]));
    EXPECT_FALSE(recomputed_in(p, stages[0], p.ops[first ? 1 : 0]));
    EXPECT_TRUE(proves(p, 5));
    const Program kept = weighted_rmsnorm(first, true, true);
    EXPECT_EQ(plan_stages(kept).size(), first ? 2u : 3u);
    EXPECT_TRUE(proves(kept, 5));
  }
  // The weight's cast under a tile of its own ([1, 64], the rows' tile [2, 64]: a Triton kernel
  // loading the weight before its loop over blocks of two rows): the stage widens to the rows'
  // space and tile.
  json body = {tile({1, 64}),
               {{"op", "cast"}, {"inputs", {"w"}}, {"out", "wf"}, {"dtype", "fp32"}},
               tile({2, 64}),
               {{"op", "cast"}, {"inputs", {"x"}}, {"out", "xf"}, {"dtype", "fp32"}},
               op("mul", {"xf", "wf"}, "y")};
  Program two_rows = parse({{"program", "rows2"},
                            {"inputs",
                             {{{"name", "x"}, {"shape", {8, 64}}, {"dtype", "fp16"}},
                              {{"name", "w"}, {"shape", {1, 64}}, {"dtype", "fp16"}}}},
                            {"outputs", {"y"}},
                            {"body", body}});
  EXPECT_EQ(plan_stages(two_rows).size(), 2u);
  two_rows.recompute_broadcasts = true;
  const auto widened = plan_stages(two_rows);
  ASSERT_EQ(widened.size(), 1u);
  EXPECT_EQ(widened[0].tile, (Dims{2, 64}));
  EXPECT_TRUE(proves(two_rows, 9));
  KernelSpec spec;
  spec.op = "program:rms";
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 4;
  spec.program = std::make_shared<const Program>(weighted_rmsnorm(false, false, false));
  const LoweredKernel k = lower_program(program_of(spec), spec, test::default_hw());
  EXPECT_EQ(k.graph.num_launches(), 1);
  EXPECT_EQ(gm_bytes(k, false), 8 * 64 * 2 + 8 * 64 * 2);  // x, and w for each row's tile
  // pypto, the cast first: w read once, then x and the fp32 wf for each row's tile.
  spec.partition = PartitionStyle::kPypto;
  spec.program = std::make_shared<const Program>(weighted_rmsnorm(true, false, false));
  const LoweredKernel once = lower_program(program_of(spec), spec, test::default_hw());
  EXPECT_EQ(gm_bytes(once, false), 64 * 2 + 8 * 64 * 2 + 8 * 64 * 4);
}

// Split reductions over the same dims written one after another, none reading another's result
// (a norm's sum and sum of squares), are one pass: one split stage whose partials travel as one
// record. A reduction that reads an earlier one's result is a pass of its own.
TEST(ProgramPlan, ConsecutiveSplitStatisticsShareOnePass) {
  auto moments = [](const std::string& merge, bool centred) {
    auto sum = [&](const std::string& in, const std::string& out) {
      return json{{"op", "sum"},     {"inputs", {in}}, {"dim", 1},
                  {"keepdim", true}, {"merge", merge}, {"out", out}};
    };
    json body = {tile({1, 1024}), op("mul", {"x", "x"}, "sq"), sum("x", "s1")};
    if (centred) body.push_back(op("sub", {"sq", "s1"}, "sq2"));
    body.push_back(sum(centred ? "sq2" : "sq", "s2"));
    return parse(json{{"program", "m"},
                      {"inputs", {{{"name", "x"}, {"shape", {8, 4096}}, {"dtype", "fp32"}}}},
                      {"outputs", {"s1", "s2"}},
                      {"body", body}});
  };
  const Program p = moments("tree", false);
  const auto stages = plan_stages(p);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_TRUE(stages[0].split);
  EXPECT_EQ(stages[0].reduce_first, 1);
  EXPECT_EQ(stages[0].last, 2);
  EXPECT_EQ(plan_stages(moments("tree", true)).size(), 2u);  // s2 reads s1: a second pass
  KernelSpec spec;
  spec.op = "program:m";
  const double x = 8.0 * 4096 * 4;
  // tree: per row 4 partial tasks, 3 merges; each partial writes one record of both statistics
  // (8 B per row), each merge reads two records.
  const LoweredKernel tree = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(tree.graph.tasks.size(), 8u * (4 + 3));
  double read = 0, written = 0;
  int64_t copies = 0;
  for (const auto& task : tree.graph.tasks)
    for (const auto& st : tree.graph.kinds[static_cast<size_t>(task.kind)].steps) {
      for (const auto& d : st.loads) read += static_cast<double>(st.repeat * d.bytes());
      for (const auto& d : st.stores) written += static_cast<double>(st.repeat * d.bytes());
      copies += static_cast<int64_t>(st.loads.size() + st.stores.size());
    }
  // Reads: x once, each merge two 8 B records. Writes: every partial's record (4 per row), the
  // first level's merged records (2 per row), the root merge's two outputs (4 B each).
  EXPECT_EQ(read, x + 8 * 3 * 2 * 8);
  EXPECT_EQ(written, 8 * 4 * 8 + 8 * 2 * 8 + 8 * 2 * 4);
  // Copies: 32 tile loads, 48 records into merges; 32 + 16 records out, 16 outputs.
  EXPECT_EQ(copies, 32 + 48 + 32 + 16 + 16);
  // in_task: one task per row, x read once.
  const LoweredKernel walk = lower_program(moments("in_task", false), spec, test::default_hw());
  EXPECT_EQ(walk.graph.tasks.size(), 8u);
  // atomic: each partial adds into both outputs.
  EXPECT_EQ(lower_program(moments("atomic", false), spec, test::default_hw()).graph.tasks.size(),
            32u);
  for (const char* merge : {"tree", "chain", "atomic", "in_task"}) {
    EXPECT_TRUE(proves(moments(merge, false), 3)) << merge;
    EXPECT_TRUE(proves(moments(merge, true), 3)) << merge;
  }
  spec.partition = PartitionStyle::kSpmd;
  for (const int64_t grid : {4, 8, 32}) {
    spec.grid = grid;
    EXPECT_GT(lower_program(moments("in_task", false), spec, test::default_hw()).graph.tasks.size(),
              0u);
  }
}

// RMSNorm over a split row with apply_in_task: the column ops on the statistic (+ eps, rsqrt) are
// its epilogue, run once per row by the task that completes the row (the in_task chain, the root
// merge, a task after the atomic partials, an spmd block of whole rows), their result kept in UB
// for the second pass where that pass runs in the same task, else stored for it.
TEST(ProgramPlan, AStatisticsEpilogueRunsOncePerRowWhereTheRowCompletes) {
  auto rmsnorm = [](const std::string& merge) {
    json ms = {{"op", "mean"},         {"inputs", {"sq"}}, {"dim", 1},
               {"keepdim", true},      {"merge", merge},   {"out", "ms"},
               {"apply_in_task", true}};
    json eps = op("add", {"ms"}, "mse");
    eps["scalar"] = 1e-6;
    return parse(json{{"program", "rms"},
                      {"inputs", {{{"name", "x"}, {"shape", {8, 4096}}, {"dtype", "fp32"}}}},
                      {"outputs", {"y"}},
                      {"body",
                       {tile({1, 1024}), op("mul", {"x", "x"}, "sq"), ms, eps,
                        op("rsqrt", {"mse"}, "r"), op("mul", {"x", "r"}, "y")}}});
  };
  const double x = 8.0 * 4096 * 4;
  KernelSpec spec;
  spec.op = "program:rms";
  // in_task: a task per row reads x twice and writes y; ms and r never leave UB.
  const LoweredKernel in_task = lower_program(rmsnorm("in_task"), spec, test::default_hw());
  EXPECT_EQ(in_task.graph.tasks.size(), 8u);
  EXPECT_EQ(gm_bytes(in_task, false), 2 * x);
  EXPECT_EQ(gm_bytes(in_task, true), x);
  // tree: per row 4 partials and 3 merges, the root merge finishing r (stored, 4 B), then the
  // second pass's 4 tasks reading it; no task of its own for the epilogue.
  const LoweredKernel tree = lower_program(rmsnorm("tree"), spec, test::default_hw());
  EXPECT_EQ(tree.graph.tasks.size(), 8u * (4 + 3 + 4));
  // Writes per row: 4 partials and 2 merged partials of ms (4 B each), r (4 B; ms itself only
  // feeds the epilogue, so it stays in UB), and y.
  EXPECT_EQ(gm_bytes(tree, true), x + 8 * (4 * 4 + 2 * 4 + 4));
  // atomic: per row 4 partials adding into ms, one task reading ms and writing r, 4 apply tasks.
  const LoweredKernel atomic = lower_program(rmsnorm("atomic"), spec, test::default_hw());
  EXPECT_EQ(atomic.graph.tasks.size(), 8u * (4 + 1 + 4));
  // Without apply_in_task the epilogue is a stage of its own: a task per row more.
  Program apart = rmsnorm("tree");
  apart.ops[1].apply_in_task = false;
  EXPECT_EQ(lower_program(apart, spec, test::default_hw()).graph.tasks.size(),
            8u * (4 + 3 + 1 + 4));
  for (const char* merge : {"tree", "chain", "atomic", "in_task"})
    EXPECT_TRUE(proves(rmsnorm(merge), 3)) << merge;
  // tree: each row's second-pass tasks follow the row's own tasks (the families' apply tasks),
  // before the next row's partials: row 0's 4 partials and 3 merges are tasks 0-6, its second
  // pass 7-10.
  const auto& kinds = tree.graph.kinds;
  auto psg_of = [&](size_t t) {
    return tree.graph
        .psg_names[static_cast<size_t>(kinds[static_cast<size_t>(tree.graph.tasks[t].kind)].psg)];
  };
  EXPECT_EQ(psg_of(7), psg_of(10));
  EXPECT_NE(psg_of(7), psg_of(0));
  EXPECT_EQ(psg_of(11), psg_of(0));
  // spmd, 8 blocks of whole rows: one launch; 16 blocks split rows: the parts add atomically,
  // then one launch in which each block finishes its parts' rows (the epilogue, from ms in GM)
  // and walks its own parts again: x read twice, y written once.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 8;
  const LoweredKernel whole = lower_program(rmsnorm("in_task"), spec, test::default_hw());
  EXPECT_EQ(whole.graph.num_launches(), 1);
  EXPECT_EQ(gm_bytes(whole, true), x);
  spec.grid = 16;
  const LoweredKernel split = lower_program(rmsnorm("in_task"), spec, test::default_hw());
  EXPECT_EQ(split.graph.num_launches(), 2);
  EXPECT_EQ(split.graph.tasks.size(), 32u);
  // Reads: x twice, each block's row statistic once (4 B, ms) in the second launch.
  EXPECT_EQ(gm_bytes(split, false), 2 * x + 16 * 4);
}

// X10: the softmax family's (max, sum of exp) statistic as m = amax(x) and s = sumexp(x) over a
// split row, one pass whose partials merge as one record: the sumexp takes the amax as its running
// max, so a tile costs the family's ReduceMax, Sub, Exp, ReduceSum and a merge its 6 simple and 2
// exp_ln instructions (kernels/families/softmax.cpp add_max_sum_partial / add_max_sum_combine).
// Later ops read both m and s: 1 / s once per row, then exp(x - m) * (1 / s).
Program online_softmax(const std::string& merge, int64_t tile_cols, bool with_amax = true) {
  auto red = [&](const std::string& name, const std::string& out) {
    return json{{"op", name},           {"inputs", {"x"}}, {"dim", 1},
                {"keepdim", true},      {"merge", merge},  {"out", out},
                {"apply_in_task", true}};
  };
  json body = {tile({1, tile_cols})};
  if (with_amax) body.push_back(red("amax", "m"));
  body.push_back(red("sumexp", "s"));
  body.push_back(op("reciprocal", {"s"}, "r"));
  body.push_back(op("sub", {"x", with_amax ? "m" : "x"}, "d"));
  body.push_back(op("exp", {"d"}, "e"));
  body.push_back(op("mul", {"e", "r"}, "y"));
  return parse(json{{"program", "osm"},
                    {"inputs", {{{"name", "x"}, {"shape", {8, 4096}}, {"dtype", "fp32"}}}},
                    {"outputs", {"y"}},
                    {"body", body}});
}

TEST(ProgramPlan, AmaxAndSumexpAreTheFamilysMaxAndSumOfExpInOnePass) {
  const Program p = online_softmax("in_task", 1024);
  const auto stages = plan_stages(p);
  ASSERT_EQ(stages.size(), 3u);  // statistics; 1 / s; the second pass
  EXPECT_TRUE(stages[0].split);
  EXPECT_EQ(stages[0].reduce_first, 0);
  EXPECT_EQ(stages[0].last, 1);
  EXPECT_EQ(reused_max(p, stages[0], p.ops[1]), 0);
  EXPECT_EQ(reused_max(p, stages[0], p.ops[0]), -1);  // an amax has no running max to reuse
  // in_task: a task per row; its first steps are the row's four tiles (the last three one step
  // repeated), each the family's partial and (past the first) its combine, in the family's order.
  KernelSpec spec;
  spec.op = "program:osm";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 8u);
  const TaskKind& kind = k.graph.kinds[static_cast<size_t>(k.graph.tasks[0].kind)];
  const auto same_ops = [](const std::vector<VecOp>& a, const std::vector<VecOp>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].cls != b[i].cls || a[i].dtype != b[i].dtype || a[i].batch != b[i].batch ||
          a[i].rows != b[i].rows || a[i].cols != b[i].cols)
        return false;
    return true;
  };
  ASSERT_GE(kind.steps.size(), 2u);
  EXPECT_EQ(kind.steps[1].repeat, 3);
  for (size_t j = 0; j < 2; ++j) {
    std::vector<VecOp> family;
    add_max_sum_partial(reduce_geometry({1, 1024}, {1}), DType::kFp32, family);
    if (j > 0) add_max_sum_combine(1, family);
    EXPECT_TRUE(same_ops(kind.steps[j].vec, family)) << "tile " << j;
  }
  // By hand: ReduceMax (1 in-row reduce), Sub, Exp, ReduceSum; the merge Max, Sub, Sub, Exp,
  // Exp, Mul, Mul, Add over the row's one output.
  EXPECT_EQ(kind.steps[1].vec.size(), 4u + 8u);
  // tree: the merges fold both statistics in one record (8 B per row): 4 partials, 3 merges.
  const LoweredKernel tree = lower_program(online_softmax("tree", 1024), spec, test::default_hw());
  EXPECT_EQ(tree.graph.tasks.size(), 8u * (4 + 3 + 4));
  // A sumexp with no amax beside it runs its own max: one more reduce per tile, one more Max per
  // merge.
  const Program alone = online_softmax("in_task", 1024, false);
  const LoweredKernel a = lower_program(alone, spec, test::default_hw());
  const TaskKind& ak = a.graph.kinds[static_cast<size_t>(a.graph.tasks[0].kind)];
  EXPECT_EQ(ak.steps[1].vec.size(), 4u + 8u);  // its max in place of the amax's
  // A tile covering the row: m and s fused with the rest in one task per row; the sumexp's max
  // is the amax's there too.
  const Program covering = online_softmax("in_task", 4096);
  const auto cs = plan_stages(covering);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(reused_max(covering, cs[0], covering.ops[1]), 0);
  // The functional proof: tiled equals untiled under every merge, and y is softmax(x).
  for (const char* merge : {"tree", "chain", "in_task"}) {
    EXPECT_TRUE(proves(online_softmax(merge, 1024), 5)) << merge;
    EXPECT_TRUE(proves(online_softmax(merge, 1024, false), 5)) << merge;
  }
  EXPECT_TRUE(proves(covering, 5));
  const auto in = program_inputs(p, 7);
  const auto got = execute_program_tiled(p, in);
  const int y = p.tensor_id("y");
  for (int64_t r = 0; r < 8; ++r) {
    double m = -1e300, sum = 0;
    for (int64_t c = 0; c < 4096; ++c) m = std::max(m, in[0][{r, c}]);
    for (int64_t c = 0; c < 4096; ++c) sum += std::exp(in[0][{r, c}] - m);
    for (int64_t c = 0; c < 4096; c += 511) {
      const double want = std::exp(in[0][{r, c}] - m) / sum;
      const double have = got.tensors[static_cast<size_t>(y)][{r, c}];
      EXPECT_NEAR(have, want, 1e-12);
    }
  }
  // spmd: whole rows in one launch; split rows merge their (max, sum) records in a second.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 8;
  EXPECT_EQ(lower_program(p, spec, test::default_hw()).graph.num_launches(), 1);
  spec.grid = 32;
  EXPECT_GE(lower_program(p, spec, test::default_hw()).graph.num_launches(), 2);
  // A sumexp does not merge atomically.
  EXPECT_NE(load_error(prog({tile({1, 32}), json{{"op", "sumexp"},
                                                 {"inputs", {"x"}},
                                                 {"dim", 1},
                                                 {"keepdim", true},
                                                 {"merge", "atomic"},
                                                 {"out", "y"}}})),
            "");
}

// A loss as a program: cross entropy's per-sample logsumexp(x) - x[target] (amax, sumexp and
// pick in one pass, X10 and X14), then the batch mean over the per-sample values.
Program cross_entropy_program(int64_t rows, int64_t cols, int64_t tile_cols, int64_t t2) {
  const auto red = [](const std::string& name, json in, const std::string& out, int dim) {
    return json{{"op", name}, {"inputs", in}, {"dim", dim}, {"keepdim", true}, {"out", out}};
  };
  return parse(json{
      {"program", "ce"},
      {"inputs",
       {{{"name", "x"}, {"shape", {rows, cols}}, {"dtype", "fp32"}},
        {{"name", "t"}, {"shape", {rows, 1}}, {"dtype", "int32"}}}},
      {"outputs", {"loss"}},
      {"body",
       {tile({8, tile_cols}), red("amax", {"x"}, "m", 1), red("sumexp", {"x"}, "s", 1),
        red("pick", {"x", "t"}, "xt", 1), op("log", {"s"}, "ls"), op("add", {"m", "ls"}, "lse"),
        op("sub", {"lse", "xt"}, "r"), tile({t2, 1}), red("mean", {"r"}, "loss", 0)}}});
}

TEST(ProgramPlan, PickKeepsEachRowsElementAtItsIndexOneInstructionPerRow) {
  // The functional proof, covering and split rows: tiled equals untiled, and the loss is the
  // batch mean of logsumexp(x) - x[t].
  for (int64_t tc : {64, 16}) {
    const Program p = cross_entropy_program(32, 64, tc, 16);
    EXPECT_TRUE(proves(p, 3)) << tc;
    const auto in = program_inputs(p, 3);
    const auto got = execute_program_tiled(p, in);
    double want = 0;
    for (int64_t r = 0; r < 32; ++r) {
      double m = -1e300, sum = 0;
      for (int64_t c = 0; c < 64; ++c) m = std::max(m, in[0][{r, c}]);
      for (int64_t c = 0; c < 64; ++c) sum += std::exp(in[0][{r, c}] - m);
      const auto target = static_cast<int64_t>(in[1][{r, 0}]);
      ASSERT_GE(target, 0);
      ASSERT_LT(target, 64);
      want += m + std::log(sum) - in[0][{r, target}];
    }
    const NdArray& loss = got.tensors[static_cast<size_t>(p.tensor_id("loss"))];
    EXPECT_NEAR((loss[{0, 0}]), want / 32, 1e-12);
  }
  // By hand: a covering (8, 64) tile's pick is one simple instruction over its 8 rows, after
  // the amax (one in-row reduce) and the sumexp past the max (Sub, Exp, ReduceSum); the finalize
  // Ln, Add, Sub over the 8 rows; the index loads as an int32 column (8 x 4 B).
  KernelSpec spec;
  spec.op = "program:ce";
  const Program p = cross_entropy_program(32, 64, 64, 32);
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  const TaskKind& kind = k.graph.kinds[static_cast<size_t>(k.graph.tasks[0].kind)];
  ASSERT_EQ(kind.steps.size(), 1u);
  const auto& vec = kind.steps[0].vec;
  ASSERT_EQ(vec.size(), 1u + 3u + 1u + 3u);
  EXPECT_EQ(vec[4].cls, VecClass::kSimple);  // the pick
  EXPECT_EQ(vec[4].batch * vec[4].rows * vec[4].cols, 8);
  ASSERT_EQ(kind.steps[0].loads.size(), 2u);
  EXPECT_EQ(kind.steps[0].loads[1].bytes(), 8 * 4);
  // Split rows: a pick's partials add (the index lies in one tile, the others hold 0), merged
  // atomically: one more Add per merge.
  EXPECT_TRUE(find_op_record("pick")->reduction->merges_atomically);
  // The index must be int32, one position per row.
  json bad = prog(
      {tile({4, 64}),
       json{{"op", "pick"}, {"inputs", {"x", "z"}}, {"dim", 1}, {"keepdim", true}, {"out", "y"}}});
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (pick): the index 'z' (4, 32) fp32 must be int32 of shape "
            "(4, 1) (one position along dim 1 per row of 'x' (4, 64) fp32)");
}

// A traced Triton layernorm over [48, 4096] fp32 in (1, 1024) tiles: mean, then the variance of
// x - mean, then the output, each a pass over the row (its sums finishing the row in the task
// with apply_in_task).
Program three_pass_layernorm(bool apply_in_task) {
  const auto sum = [&](const std::string& in, const std::string& out) {
    return json{{"op", "sum"},     {"inputs", {in}}, {"dim", 1},
                {"keepdim", true}, {"out", out},     {"apply_in_task", apply_in_task}};
  };
  const auto scaled = [](const std::string& in, const std::string& out) {
    return json{{"op", "mul"}, {"inputs", {in}}, {"scalar", 1.0 / 4096}, {"out", out}};
  };
  return parse(json{{"program", "ln"},
                    {"inputs", {{{"name", "x"}, {"shape", {48, 4096}}, {"dtype", "fp32"}}}},
                    {"outputs", {"y"}},
                    {"body",
                     {tile({1, 1024}), sum("x", "s1"), scaled("s1", "mean"),
                      op("sub", {"x", "mean"}, "xc"), op("mul", {"xc", "xc"}, "sq"),
                      sum("sq", "s2"), scaled("s2", "var"), op("rsqrt", {"var"}, "rstd"),
                      op("sub", {"x", "mean"}, "xc2"), op("mul", {"xc2", "rstd"}, "y")}}});
}

// Two split reductions in a row, each finishing its rows in the task: under spmd the second pass
// reads the first's epilogue result; blocks wait on launches, not on producers' tasks (this
// crashed).
TEST(ProgramPlan, ConsecutiveSplitReductionsWithSecondPassesLowerUnderSpmd) {
  const Program p = three_pass_layernorm(true);
  KernelSpec spec;
  spec.op = "program:ln";
  spec.partition = PartitionStyle::kSpmd;
  for (int64_t grid : {48, 96}) {
    spec.grid = grid;
    const LoweredKernel k = lower_program(p, spec, test::default_hw());
    // A block per row: its passes in sequence, one launch; rows split over blocks: the second
    // reduction's blocks wait for the first's partials (launch_join.cpp).
    if (grid == 48) {
      EXPECT_EQ(k.graph.num_launches(), 1);
    } else {
      EXPECT_GE(k.graph.num_launches(), 2);
    }
    EXPECT_EQ(k.graph.num_edges(), 0) << grid;  // launches order the blocks
  }
  EXPECT_TRUE(proves(p, 6));
}

// A traced Triton layernorm's three passes over its rows (mean, variance, normalise), none
// finishing a row in the task: each pass reads only what the same block wrote before it (its own
// rows' statistics), so the blocks run the passes in sequence in one launch, as the kernel's
// programs do on the board; the bytes are the passes' own, x three times. Rows split over more
// blocks than rows: a block reads another's partials, and launches separate the passes.
TEST(ProgramPlan, RowLocalPassesOfOneGridShareALaunch) {
  const Program p = three_pass_layernorm(false);
  KernelSpec spec;
  spec.op = "program:ln";
  spec.partition = PartitionStyle::kSpmd;
  const auto read_bytes = [](const LoweredKernel& k) {
    int64_t bytes = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(k.graph.tasks.size()); ++t)
      for (const Access* a = k.graph.access_begin(t); a != k.graph.access_end(t); ++a)
        if (!a->write) bytes += a->bytes;
    return bytes;
  };
  spec.grid = 48;
  const LoweredKernel one = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(one.graph.num_launches(), 1);
  EXPECT_EQ(one.graph.tasks.size(), 48u);  // a task per block, every pass in it
  // x three times (48 rows of 16 KiB each pass); on top, per row, the 4 B statistics: the mean
  // by each of the variance pass's 4 tiles, mean and rstd by each of the output pass's 4, and
  // each sum once by its epilogue (mean = s1 / n, rstd of s2): 16 + 32 + 8 = 56 B.
  const int64_t x = 48 * 4096 * 4;
  EXPECT_EQ(read_bytes(one), 3 * x + 48 * 56);
  spec.grid = 96;  // two blocks per row: each pass's partials fold in a launch after it
  EXPECT_GE(lower_program(p, spec, test::default_hw()).graph.num_launches(), 3);
}

// X13 folds only a per-row result of a fused vector stage or a split stage (or its epilogue):
// a full sum of a second pass's output (not per row) or of a cumsum's stays a launch of its own,
// its input stored, and the kernel computes what it says.
TEST(ProgramPlan, AFullReductionNotOfPerRowResultsIsALaunchOfItsOwn) {
  const auto all = [](const std::string& in, const std::string& out) {
    return json{{"op", "sum"}, {"inputs", {in}}, {"dim", {0, 1}}, {"keepdim", true}, {"out", out}};
  };
  const Program second =
      parse(json{{"program", "norm_total"},
                 {"inputs", {{{"name", "x"}, {"shape", {8, 256}}, {"dtype", "fp32"}}}},
                 {"outputs", {"total"}},
                 {"body",
                  {tile({1, 64}),
                   {{"op", "sum"},
                    {"inputs", {"x"}},
                    {"dim", 1},
                    {"keepdim", true},
                    {"apply_in_task", true},
                    {"out", "s"}},
                   op("div", {"x", "s"}, "y"),
                   tile({8, 256}),
                   all("y", "total")}}});
  const Program scan =
      parse(json{{"program", "cumsum_total"},
                 {"inputs", {{{"name", "x"}, {"shape", {8, 256}}, {"dtype", "fp32"}}}},
                 {"outputs", {"total"}},
                 {"body",
                  {tile({8, 64}),
                   {{"op", "cumsum"}, {"inputs", {"x"}}, {"dim", 1}, {"out", "c"}},
                   tile({8, 256}),
                   all("c", "total")}}});
  KernelSpec spec;
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 8;
  for (const Program* p : {&second, &scan}) {
    spec.op = "program:" + p->name;
    const LoweredKernel k = lower_program(*p, spec, test::default_hw());
    int64_t written = 0;
    for (const Task& t : k.graph.tasks)
      for (const TileStep& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps)
        for (const DmaOp& d : st.stores) written += d.bytes() * st.repeat;
    EXPECT_GE(written, 8 * 256 * 4) << p->name;  // the full-shape result crosses GM
    EXPECT_GE(k.graph.num_launches(), 2) << p->name;
    EXPECT_TRUE(proves(*p, 5)) << p->name;
  }
}

TEST(ProgramPlan, AColumnReducesAsAVectorOfItsValues) {
  // [t, 1] reduced along dim 0: its t values lie side by side in UB, one in-row reduce (as a
  // [1, t] row), not t - 1 Adds of one element.
  const TileReduceGeometry g = reduce_geometry({1024, 1}, {0});
  EXPECT_TRUE(g.last_reduced);
  EXPECT_EQ(g.inner, 1024);
  std::vector<VecOp> ops;
  add_reduce_ops(g, DType::kFp32, ops);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].cls, VecClass::kReduceLast);
  EXPECT_EQ(ops[0].cols, 1024);
  // A dim after the reduced one with extent > 1 keeps the across-rows form.
  const TileReduceGeometry rows = reduce_geometry({1024, 8}, {0});
  EXPECT_FALSE(rows.last_reduced);
  EXPECT_EQ(rows.cols, 8);
}

TEST(ProgramPlan, SpmdBlocksFoldTheirRowsIntoAFullReductionAfterThem) {
  // X13: the batch mean after the per-sample statistics runs in the statistics' spmd blocks:
  // one launch; each block reduces its rows' values (one in-row reduce of as many values as it
  // has rows), scales them (the mean's Muls) and adds one value atomically; the per-sample
  // values are never stored.
  const Program p = cross_entropy_program(64, 64, 64, 64);
  KernelSpec spec;
  spec.op = "program:ce";
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 4;
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(k.graph.num_launches(), 1);
  ASSERT_EQ(k.graph.tasks.size(), 4u);
  const TaskKind& kind = k.graph.kinds[static_cast<size_t>(k.graph.tasks[0].kind)];
  const TileStep& fold = kind.steps.back();
  ASSERT_EQ(fold.vec.size(), 2u);
  EXPECT_EQ(fold.vec[0].cls, VecClass::kReduceLast);
  EXPECT_EQ(fold.vec[0].cols, 16);  // 64 rows over 4 blocks
  EXPECT_EQ(fold.vec[1].cls, VecClass::kSimple);
  EXPECT_TRUE(fold.accumulates);
  ASSERT_EQ(fold.stores.size(), 1u);
  EXPECT_EQ(fold.stores[0].bytes(), 4);
  int64_t stored = 0;
  for (const TileStep& st : kind.steps)
    for (const DmaOp& d : st.stores) stored += d.bytes();
  EXPECT_EQ(stored, 4);  // only the block's share of the loss
  // Rows split over blocks with a statistic that is not linear (cross entropy's max): the rows
  // finish in a later launch, and the mean is a launch of its own after them.
  spec.grid = 16;
  const Program split = cross_entropy_program(8, 64, 16, 8);
  EXPECT_GE(lower_program(split, spec, test::default_hw()).graph.num_launches(), 2);
  EXPECT_TRUE(proves(split, 4));
}

TEST(ProgramPlan, NestedLoopsMakeARootPerChunkPair) {
  // exp over [6, 8, 64] in (1, 2, 64) tiles, a loop over axis 0 (count 3) holding one over axis 1
  // (count 2): 3 x 2 root functions, each of 2 rows x 2 tile rows = 4 tasks.
  const json j = {{"program", "n"},
                  {"inputs", {{{"name", "x"}, {"shape", {6, 8, 64}}, {"dtype", "fp32"}}}},
                  {"outputs", {"y"}},
                  {"body",
                   {{{"loop", "outer"},
                     {"axis", 0},
                     {"loop_count", 3},
                     {"body",
                      {{{"loop", "inner"},
                        {"axis", 1},
                        {"loop_count", 2},
                        {"body", {tile({1, 2, 64}), op("exp", {"x"}, "y")}}}}}}}}};
  const Program p = parse(j);
  const auto stages = plan_stages(p);
  ASSERT_EQ(stages.size(), 1u);
  EXPECT_EQ(stages[0].loop_axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(stages[0].roots(), 6);
  EXPECT_TRUE(proves(p, 5));
  KernelSpec spec;
  spec.op = "program:n";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 24u);
  EXPECT_EQ(k.graph.num_roots(), 6);
  std::map<int32_t, int> per_root;
  for (const auto& t : k.graph.tasks) ++per_root[t.root];
  for (const auto& [root, n] : per_root) EXPECT_EQ(n, 4) << root;
}

// A random small program: fp32 tensors of rank 2 or 3, a chain of 2 to 6 ops drawn from every
// kind (unary, binary with row / column / scalar broadcasting, where, casts there and back,
// reductions with keepdim, rotate_half, transpose, gather, matmul), tiles that change between
// ops, and sometimes a loop over axis 0.
json random_program(std::mt19937& rng) {
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  const int rank = 2 + static_cast<int>(pick(2));
  Dims shape;
  for (int d = 0; d < rank - 1; ++d) shape.push_back(1 + pick(5));
  shape.push_back(16 * (1 + pick(3)));
  Dims row(rank, 1), col = shape;
  row.back() = shape.back();
  col.back() = 1;
  json inputs = {{{"name", "x"}, {"shape", shape}, {"dtype", "fp32"}},
                 {{"name", "y"}, {"shape", shape}, {"dtype", "fp32"}},
                 {{"name", "r"}, {"shape", row}, {"dtype", "fp32"}},
                 {{"name", "c"}, {"shape", col}, {"dtype", "fp32"}},
                 {{"name", "m"}, {"shape", shape}, {"dtype", "fp32"}}};
  const bool loop = pick(3) == 0 && shape[0] > 1;
  // Sometimes a loop over axis 1 nested in the loop over axis 0 (rank 3).
  const bool nested = loop && rank == 3 && shape[1] > 1 && pick(2) == 0;
  auto vec_tile = [&](bool cover_last) {
    Dims t;
    for (int d = 0; d < rank - 1; ++d) t.push_back(1 + pick(3));
    t.push_back(cover_last ? shape.back() : 16 * (1 + pick(2)));
    return json{{"set_vec_tile_shapes", t}};
  };
  json body = json::array();
  body.push_back(vec_tile(false));
  std::vector<std::string> full = {"x", "y"}, any = {"x", "y", "r", "c"};
  std::vector<std::string> outs;
  const std::vector<std::string> unary = {"exp", "log",  "sqrt", "rsqrt",   "reciprocal", "abs",
                                          "neg", "relu", "tanh", "sigmoid", "silu",       "gelu"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "div", "maximum", "minimum"};
  const std::vector<std::string> reduce = {"sum", "amax",   "amin",   "mean",      "prod",  "any",
                                           "all", "argmax", "argmin", "logsumexp", "sumexp"};
  const int ops = 2 + static_cast<int>(pick(5));
  for (int i = 0; i < ops; ++i) {
    const std::string out = fmt::format("t{}", i);
    const std::string a = full[static_cast<size_t>(pick(static_cast<int64_t>(full.size())))];
    const int64_t kind = pick(10);
    if (kind < 3) {
      body.push_back(op(unary[static_cast<size_t>(pick(12))], {a}, out));
      full.push_back(out);
    } else if (kind < 6) {
      json o = op(binary[static_cast<size_t>(pick(6))], {a}, out);
      if (pick(4) == 0)
        o["scalar"] = 0.5 + static_cast<double>(pick(4));
      else
        o["inputs"].push_back(any[static_cast<size_t>(pick(static_cast<int64_t>(any.size())))]);
      body.push_back(o);
      full.push_back(out);
    } else if (kind == 6) {
      body.push_back(op("where", {"m", a, any[static_cast<size_t>(pick(4))]}, out));
      full.push_back(out);
    } else if (kind == 7) {
      json c1 = op("cast", {a}, out + "h"), c2 = op("cast", {out + "h"}, out);
      c1["dtype"] = "fp16";
      c2["dtype"] = "fp32";
      body.push_back(c1);
      body.push_back(c2);
      full.push_back(out);
    } else if (kind == 8) {
      // A reduction over the last dim (or, outside a loop, dim 0) under a tile covering it.
      // Half of them split the reduced dim, merged in the task, by chain, by tree or atomically.
      const bool last = loop || pick(2) == 0;
      const bool split = pick(2) == 0;
      json t = vec_tile(last && !split);
      if (!last && !split) t["set_vec_tile_shapes"][0] = shape[0];
      if (last && split) t["set_vec_tile_shapes"][rank - 1] = 8 * (1 + pick(shape.back() / 8 - 1));
      if (!last && split)
        t["set_vec_tile_shapes"][0] = 1 + pick(std::max<int64_t>(1, shape[0] - 1));
      body.push_back(t);
      const std::string r = reduce[static_cast<size_t>(pick(static_cast<int64_t>(reduce.size())))];
      const bool index = r == "argmax" || r == "argmin";
      json o = op(r, {a}, out);
      o["dim"] = last ? -1 : 0;
      o["keepdim"] = true;
      if (split) {
        const std::vector<std::string> merges = {"in_task", "chain", "tree", "atomic"};
        const bool atomic = r != "prod" && r != "logsumexp" && r != "sumexp" && !index;
        o["merge"] = merges[static_cast<size_t>(pick(atomic ? 4 : 3))];
      }
      body.push_back(o);
      (index ? outs : any).push_back(out);  // a row or a column now (indices: int32)
      body.push_back(vec_tile(false));
    } else {
      // One op of its own stage kind, as a program output.
      const int64_t which = pick(5);
      if (which == 3) {
        // A running sum along the last dim (or dim 0), its tile covering that dim or, half the
        // time, splitting it (each row's carry crosses its tiles).
        const bool last = pick(2) == 0 || loop;
        const bool split = pick(2) == 0;
        json t = vec_tile(last && !split);
        if (!last)
          t["set_vec_tile_shapes"][0] =
              split ? 1 + pick(std::max<int64_t>(1, shape[0] - 1)) : shape[0];
        if (last && split)
          t["set_vec_tile_shapes"][rank - 1] = 8 * (1 + pick(shape.back() / 8 - 1));
        body.push_back(t);
        json o = op("cumsum", {a}, out);
        o["dim"] = last ? -1 : 0;
        body.push_back(o);
        full.push_back(out);
        body.push_back(vec_tile(false));
      } else if (which == 4) {
        // One fused n-ary add, mul, maximum or minimum of 3 or 4 operands.
        const std::vector<std::string> nary = {"add", "mul", "maximum", "minimum"};
        json o = op(nary[static_cast<size_t>(pick(4))], {a}, out);
        for (int64_t k = 0, n = 2 + pick(2); k < n; ++k)
          o["inputs"].push_back(any[static_cast<size_t>(pick(static_cast<int64_t>(any.size())))]);
        body.push_back(o);
        full.push_back(out);
      } else if (which == 0) {
        body.push_back(vec_tile(true));
        body.push_back(op("rotate_half", {a}, out));
        full.push_back(out);
        body.push_back(vec_tile(false));
      } else if (which == 1 && !(loop && rank == 2) && !nested) {
        Dims t(static_cast<size_t>(rank), 1);
        t[t.size() - 2] = 8 * (1 + pick(2));
        t.back() = 8;
        body.push_back({{"set_vec_tile_shapes", t}});
        body.push_back(op("transpose", {a}, out));
        outs.push_back(out);
        body.push_back(vec_tile(false));
      } else if (rank == 2) {
        // A third of them in PyPTO's two-level form: L1 k steps of 16 over L0 tiles of k 8
        // (tm == 2, no extra draw, so the rest of the sequence is unchanged).
        const int64_t tm = 1 + pick(3);
        if (tm == 2)
          body.push_back({{"set_cube_tile_shapes", {{tm, tm}, {8, 16}, {16, 16}}}});
        else
          body.push_back({{"set_cube_tile_shapes", {tm, 16, 16}}});
        // A @ W, or A @ Wt^T with Wt stored [n, k] (attention's Q K^T).
        const bool t = pick(2) == 0;
        json mm = op("matmul", {a, t ? "wt" : "w"}, out);
        if (t) mm["transpose_b"] = true;
        body.push_back(mm);
        outs.push_back(out);
      } else {
        body.push_back(op("exp", {a}, out));
        full.push_back(out);
      }
    }
  }
  if (rank == 2) {
    inputs.push_back({{"name", "w"}, {"shape", {shape.back(), 16}}, {"dtype", "fp32"}});
    inputs.push_back({{"name", "wt"}, {"shape", {16, shape.back()}}, {"dtype", "fp32"}});
  }
  for (const auto& n : full)
    if (n.size() > 1 && (pick(2) == 0 || n == full.back())) outs.push_back(n);
  for (const auto& n : any)
    if (n.size() > 1) outs.push_back(n);
  if (outs.empty()) {
    body.push_back(op("exp", {"x"}, "last"));
    outs.push_back("last");
  }
  if (nested)
    body = json::array(
        {{{"loop", "inner"}, {"axis", 1}, {"loop_count", 1 + pick(shape[1])}, {"body", body}}});
  if (loop)
    body = json::array(
        {{{"loop", "l"}, {"axis", 0}, {"loop_count", 1 + pick(shape[0])}, {"body", body}}});
  return {{"program", "random"}, {"inputs", inputs}, {"outputs", outs}, {"body", body}};
}

TEST(ProgramFunctional, ThousandRandomProgramsTiledEqualsUntiled) {
  std::mt19937 rng(20261201);
  const Hardware hw = test::default_hw();
  int stages = 0, lowered_tasks = 0, split_stages = 0, spmd_tasks = 0;
  std::map<std::string, int> ops_seen;
  int nests = 0, split_scans = 0, matmul_stages = 0, two_level = 0;
  for (int i = 0; i < 1000; ++i) {
    const json j = random_program(rng);
    Program p;
    try {
      p = parse(j);
    } catch (const Error& e) {
      FAIL() << "program " << i << ": " << e.what() << "\n" << j.dump();
    }
    ASSERT_TRUE(proves(p, static_cast<unsigned>(i))) << "program " << i << "\n" << j.dump();
    nests += p.loops.size() > 1 ? 1 : 0;
    for (const ProgOp& o : p.ops)
      ++ops_seen[o.name + (o.in.size() > 2 && o.name != "where" ? "/n" : "")];
    stages += static_cast<int>(plan_stages(p).size());
    KernelSpec spec;
    spec.op = "program:random";
    lowered_tasks += static_cast<int>(lower_program(p, spec, hw).graph.tasks.size());
    for (const auto& stage : plan_stages(p)) {
      split_stages += stage.split ? 1 : 0;
      matmul_stages += stage.kind == OpKind::kMatmul;
      two_level += stage.kind == OpKind::kMatmul && !stage.l0.empty();
      split_scans += stage.split && p.ops[static_cast<size_t>(stage.last)].name == "cumsum";
    }
    // Under spmd (blocks accumulate in UB): programs without loops or cross-task merges.
    const std::string text = j.dump();
    const bool across = text.find("\"chain\"") != std::string::npos ||
                        text.find("\"tree\"") != std::string::npos ||
                        text.find("\"atomic\"") != std::string::npos;
    if (j["body"][0].contains("loop") || across) continue;
    spec.partition = PartitionStyle::kSpmd;
    spec.grid = 1 + static_cast<int64_t>(rng() % 40);
    spmd_tasks += static_cast<int>(lower_program(p, spec, hw).graph.tasks.size());
    // A block computing again, in each tile, the broadcast ops its users need (as spmd kernels
    // are priced: Program::recompute_broadcasts) computes the same, each output written once.
    p.recompute_broadcasts = true;
    ASSERT_TRUE(proves(p, static_cast<unsigned>(i))) << "program " << i << " recomputing\n"
                                                     << j.dump();
    spmd_tasks += static_cast<int>(lower_program(p, spec, hw).graph.tasks.size());
  }
  EXPECT_GT(split_stages, 150);
  EXPECT_GT(nests, 30);
  EXPECT_GT(split_scans, 10);    // cumsum carrying across its row's tiles
  EXPECT_GT(matmul_stages, 50);  // cube stages, proved and lowered like the rest
  EXPECT_GT(two_level, 15);      // ... with an L1 tile over smaller L0 tiles
  // Every construct is drawn: the new reductions, cumsum and n-ary ops (suffix /n).
  for (const char* name :
       {"any", "all", "argmax", "argmin", "logsumexp", "sumexp", "cumsum", "add/n", "mul/n"})
    EXPECT_GE(ops_seen[name], 10) << name;  // 189 with this seed
  EXPECT_GT(spmd_tasks, 0);
  EXPECT_GT(stages, 1500);  // the programs do cut into stages
  EXPECT_GT(lowered_tasks, 0);
}

// ---- Shipped ops as programs ------------------------------------------------------------------

Metrics run_config_text(const std::string& name, const json& j) {
  const RunConfig rc = load_run_config(write_temp(name, j.dump()));
  return run_kernel(run_spec(rc), load_hardware(rc.hardware), rc.options).metrics;
}

TEST(ProgramVsOps, ElementwiseAndReductionMatchTodaysLoweringExactly) {
  // exp and add: one fused stage, one task per tile in the same loop chunks.
  for (const std::string name : {"exp", "add"}) {
    const json ref = {{"op", name},
                      {"shape", {4096, 4096}},
                      {"dtype", "fp32"},
                      {"tile", {4, 1024}},
                      {"loop_count", 8}};
    json inputs = {{{"name", "x"}, {"shape", {4096, 4096}}, {"dtype", "fp32"}}};
    json o = op(name, {"x"}, "z");
    if (name == "add") {
      inputs.push_back({{"name", "y"}, {"shape", {4096, 4096}}, {"dtype", "fp32"}});
      o["inputs"].push_back("y");
    }
    const json p = {
        {"program",
         {{"inputs", inputs},
          {"outputs", {"z"}},
          {"body",
           {{{"loop", "l"}, {"axis", 0}, {"loop_count", 8}, {"body", {tile({4, 1024}), o}}}}}}}};
    const Metrics a = run_config_text("op.json", ref), b = run_config_text("prog.json", p);
    EXPECT_EQ(a.gen_time_us, b.gen_time_us) << name;
    EXPECT_EQ(a.kernel_time_us, b.kernel_time_us) << name;
  }
  // sum over dim 1: one stage whose tile covers the reduced dim.
  const json ref = {{"op", "sum"}, {"shape", {16, 64, 256, 256}}, {"dtype", "fp32"},
                    {"dim", 1},    {"tile", {1, 64, 1, 256}},     {"loop_count", 4}};
  json o = op("sum", {"x"}, "s");
  o["dim"] = 1;
  o["keepdim"] = true;
  const json p = {{"program",
                   {{"inputs", {{{"name", "x"}, {"shape", {16, 64, 256, 256}}, {"dtype", "fp32"}}}},
                    {"outputs", {"s"}},
                    {"body",
                     {{{"loop", "l"},
                       {"axis", 0},
                       {"loop_count", 4},
                       {"body", {tile({1, 64, 1, 256}), o}}}}}}}};
  const Metrics a = run_config_text("op.json", ref), b = run_config_text("prog.json", p);
  EXPECT_EQ(a.gen_time_us, b.gen_time_us);
}

// nd2nz: a tile rearranged ND -> NZ in UB by a vector Copy. Its default C0 stride is the tile's
// rows (the compact layout): 144 rows put a repeat's 8 blocks in one bank group, 145 (c0_stride,
// one spare row) spread them; the values pass through unchanged; c0_stride on another op is
// refused.
TEST(ProgramOps, Nd2nzScattersAtTheTilesRowsUnlessPadded) {
  const auto program = [](int64_t stride) {
    json z = op("nd2nz", {"x"}, "z");
    if (stride > 0) z["c0_stride"] = stride;
    return json{{"program", "t"},
                {"inputs", {{{"name", "x"}, {"shape", {1152, 128}}, {"dtype", "fp16"}}}},
                {"outputs", {"z"}},
                {"body", {tile({144, 128}), z}}};
  };
  KernelSpec spec;
  spec.op = "program:t";
  const Hardware& hw = test::default_hw();
  const auto scatter = [&](int64_t stride) {
    const LoweredKernel k = lower_program(parse(program(stride)), spec, hw);
    const VecOp& v = k.graph.kinds.at(0).steps.at(0).vec.at(0);
    return std::pair{v.dst_block_stride, vector_cost(v, hw).cycles};
  };
  const auto [compact, compact_cycles] = scatter(0);
  const auto [padded, padded_cycles] = scatter(145);
  EXPECT_EQ(compact, 144);
  EXPECT_EQ(padded, 145);
  EXPECT_DOUBLE_EQ(compact_cycles - padded_cycles,
                   144 * 7 * hw.vector.bank_conflict_cycles_per_repeat);
  json bad = program(0);
  bad["body"][1] = op("abs", {"x"}, "z");
  bad["body"][1]["c0_stride"] = 145;
  EXPECT_NE(test::error_of([&] { parse(bad); }).find("\"c0_stride\" applies to nd2nz"),
            std::string::npos);
}

// What the elementwise family says, a program says too (issue 44: the family is now this program's
// builder): its own buffers (ub_plan), reads past L2, sources in different UB banks, a named PSG,
// the ascendc partition's pinned tasks, an spmd launch's idle blocks and its block regions.
TEST(ProgramPartition, ProgramsSayWhatTheElementwiseFamilySays) {
  const auto program = [](const std::string& plan) {
    json add = op("add", {"x", "w"}, "y");
    add["bank_conflict_free"] = true;
    add["psg"] = "add";
    return json{{"program", "t"},
                {"ub_plan", plan},
                {"inputs",
                 {{{"name", "x"}, {"shape", {64, 1024}}, {"dtype", "fp32"}, {"l2_bypass", true}},
                  {{"name", "w"}, {"shape", {64, 1024}}, {"dtype", "fp32"}, {"l2_bypass", true}}}},
                {"outputs", {"y"}},
                {"body", {tile({4, 1024}), add}}};
  };
  KernelSpec spec;
  spec.op = "program:t";
  const Hardware& hw = test::default_hw();
  // A 16 KiB tile: the pool holds x (y written over it) and w; own buffers x, w and y.
  EXPECT_EQ(lower_program(parse(program("pooled")), spec, hw).diag.ub_bytes, 2 * 2 * 16384);
  const LoweredKernel k = lower_program(parse(program("buffers")), spec, hw);
  EXPECT_EQ(k.diag.ub_bytes, 2 * 3 * 16384);
  EXPECT_EQ(k.graph.psg_names, std::vector<std::string>{"add"});
  EXPECT_EQ(k.graph.kinds.at(0).label, "add(4, 1024)");
  for (const VecOp& v : k.graph.kinds.at(0).steps.at(0).vec) EXPECT_FALSE(v.bank_conflict);
  for (int32_t t = 0; t < static_cast<int32_t>(k.graph.tasks.size()); ++t)
    for (const Access* a = k.graph.access_begin(t); a != k.graph.access_end(t); ++a)
      EXPECT_EQ(a->bypass_l2, !a->write);
  // ascendc: 16 tiles over 4 cores, a pinned task each walking 4 tiles.
  spec.partition = PartitionStyle::kAscendC;
  spec.cores = 4;
  const LoweredKernel c = lower_program(parse(program("auto")), spec, hw);
  ASSERT_EQ(c.graph.tasks.size(), 4u);
  for (int32_t t = 0; t < 4; ++t) EXPECT_EQ(c.graph.tasks[static_cast<size_t>(t)].pinned_core, t);
  EXPECT_EQ(c.graph.kinds.at(0).label, "add_core0");  // the cores' equal kinds are one
  EXPECT_EQ(c.diag.ub_bytes, 2 * 3 * 16384);          // auto: own buffers outside pypto
  // spmd: all 48 blocks start; 32 find no tile. With 8 x 1024 block regions, 8 blocks walk 2
  // sub-tiles each and 40 idle.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 48;
  const LoweredKernel g = lower_program(parse(program("auto")), spec, hw);
  ASSERT_EQ(g.graph.tasks.size(), 48u);
  int idle = 0;
  for (int32_t t = 0; t < 48; ++t)
    idle +=
        g.graph.kinds[static_cast<size_t>(g.graph.tasks[static_cast<size_t>(t)].kind)].steps.empty()
            ? 1
            : 0;
  EXPECT_EQ(idle, 32);
  spec.block = {8, 1024};
  const LoweredKernel r = lower_program(parse(program("auto")), spec, hw);
  ASSERT_EQ(r.graph.tasks.size(), 48u);
  idle = 0;
  for (int32_t t = 0; t < 48; ++t) {
    const TaskKind& kind =
        r.graph.kinds[static_cast<size_t>(r.graph.tasks[static_cast<size_t>(t)].kind)];
    idle += kind.steps.empty() ? 1 : 0;
    if (t < 8) {
      EXPECT_EQ(kind.steps.at(0).repeat, 2) << t;
    }
  }
  EXPECT_EQ(idle, 40);
  // Refused: a block region of another rank than the stage's; ascendc for a split reduction.
  spec.block = {8, 1024, 1};
  EXPECT_THROW(lower_program(parse(program("auto")), spec, hw), Error);
  json split = program("auto");
  split["inputs"].erase(1);
  split["body"] = {tile({4, 256}), {{"op", "sum"}, {"inputs", {"x"}}, {"dim", -1}, {"out", "y"}}};
  spec.partition = PartitionStyle::kAscendC;
  spec.block.clear();
  std::string refused;
  try {
    lower_program(parse(split), spec, hw);
  } catch (const Error& e) {
    refused = e.what();
  }
  EXPECT_NE(refused.find("stage 'stage0:sum' is a reduction that splits its rows"),
            std::string::npos)
      << refused;
}

// A load keeps its tiles on chip (copy_in's program): into L1 it runs on the cube cores, pinned
// under ascendc (every AIC core by default), and is refused under pypto; nothing may read its
// result, which is no output, and a program of loads only has no outputs.
TEST(ProgramPartition, ALoadKeepsItsTilesOnChip) {
  const auto program = [](const json& load, const json& outputs) {
    return json{{"program", "t"},
                {"inputs", {{{"name", "x"}, {"shape", {64, 1024}}, {"dtype", "fp16"}}}},
                {"outputs", outputs},
                {"body", {tile({16, 1024}), load}}};
  };
  json load = op("load", {"x"}, "t");
  load["dest"] = "l1";
  KernelSpec spec;
  spec.op = "program:t";
  spec.partition = PartitionStyle::kAscendC;
  const Hardware& hw = test::default_hw();
  const LoweredKernel k = lower_program(parse(program(load, json::array())), spec, hw);
  ASSERT_EQ(k.graph.tasks.size(), 4u);  // 4 tiles over the 24 AIC cores
  const TaskKind& kind = k.graph.kinds.at(0);
  EXPECT_EQ(kind.core, CoreType::kAic);
  ASSERT_EQ(kind.buffers.size(), 1u);
  EXPECT_EQ(kind.buffers[0].space, MemSpace::kL1);
  EXPECT_EQ(kind.buffers[0].bytes, 16 * 1024 * 2);
  EXPECT_EQ(kind.steps.at(0).loads.at(0).path, DmaPath::kL1Nd2nz);
  EXPECT_TRUE(kind.steps.at(0).stores.empty());
  spec.partition = PartitionStyle::kPypto;
  std::string pypto;
  try {
    lower_program(parse(program(load, json::array())), spec, hw);
  } catch (const Error& e) {
    pypto = e.what();
  }
  EXPECT_NE(pypto.find("a load into L1 runs on the cube cores"), std::string::npos) << pypto;
  EXPECT_NE(load_error(program(load, {"t"})).find("output 't' is a load's result"),
            std::string::npos);
  json read = program(load, {"y"});
  read["body"].push_back(op("exp", {"t"}, "y"));
  EXPECT_NE(load_error(read).find("'t' is a load's result, which stays on chip"), std::string::npos)
      << load_error(read);
  EXPECT_NE(load_error(program(op("exp", {"x"}, "y"), json::array()))
                .find("expected a non-empty array of output tensors"),
            std::string::npos);
}

TEST(ProgramVsOps, RmsnormAndSoftmaxWithinAPercentOfTheirFamilies) {
  // rmsnorm over rows one tile covers: the statistic, the rsqrt on the [n, 1] column and the
  // apply are one task per tile, as the norm family's fused row: the same work; the program's
  // Brcb of the column and its tasks' memory waits differ a little.
  const json ref = {{"op", "rmsnorm"},
                    {"shape", {4096, 4096}},
                    {"dtype", "fp32"},
                    {"tile", {2, 4096}},
                    {"loop_count", 8}};
  json mean = op("mean", {"sq"}, "ms");
  mean["dim"] = 1;
  mean["keepdim"] = true;
  json eps = op("add", {"ms"}, "mse");
  eps["scalar"] = 1e-5;
  const json p = {{"program",
                   {{"inputs", {{{"name", "x"}, {"shape", {4096, 4096}}, {"dtype", "fp32"}}}},
                    {"outputs", {"y"}},
                    {"body",
                     {{{"loop", "l"},
                       {"axis", 0},
                       {"loop_count", 8},
                       {"body",
                        {tile({2, 4096}), op("mul", {"x", "x"}, "sq"), mean, eps,
                         op("rsqrt", {"mse"}, "r"), op("mul", {"x", "r"}, "y")}}}}}}}};
  const Metrics a = run_config_text("op.json", ref), b = run_config_text("prog.json", p);
  EXPECT_NEAR(b.gen_time_us / a.gen_time_us, 1.0, 1e-2);
  EXPECT_EQ(b.tasks, a.tasks);
  EXPECT_EQ(b.gm_read_bytes, a.gm_read_bytes);
  // softmax over rows one tile covers, written as Ascend C's SoftMax computes it (ReduceMax,
  // Sub, Exp, ReduceSum, Div): one task per row, as the softmax family's fused row. Written
  // with 1 / sum on the column and a Mul instead, the program trades the Div's div pass over
  // the tile for a simple one.
  const json sref = {
      {"op", "softmax"}, {"shape", {16, 8192}}, {"dtype", "fp32"}, {"dim", 1}, {"tile", {1, 8192}}};
  json amax = op("amax", {"x"}, "m"), sum = op("sum", {"e"}, "s");
  amax["dim"] = sum["dim"] = 1;
  amax["keepdim"] = sum["keepdim"] = true;
  const auto softmax = [&](bool divide) {
    json body = {tile({1, 8192}), amax, op("sub", {"x", "m"}, "d"), op("exp", {"d"}, "e"), sum};
    if (divide) {
      body.push_back(op("div", {"e", "s"}, "y"));
    } else {
      body.push_back(op("reciprocal", {"s"}, "rs"));
      body.push_back(op("mul", {"e", "rs"}, "y"));
    }
    return json{{"program",
                 {{"inputs", {{{"name", "x"}, {"shape", {16, 8192}}, {"dtype", "fp32"}}}},
                  {"outputs", {"y"}},
                  {"body", body}}}};
  };
  const Metrics sa = run_config_text("op.json", sref);
  const Metrics sb = run_config_text("prog.json", softmax(true));
  const Metrics sm = run_config_text("prog.json", softmax(false));
  EXPECT_NEAR(sb.gen_time_us / sa.gen_time_us, 1.0, 1e-2);
  EXPECT_EQ(sb.tasks, sa.tasks);
  EXPECT_EQ(sb.gm_read_bytes, sa.gm_read_bytes);
  EXPECT_LT(sm.gen_time_us, sb.gen_time_us);
}

TEST(ProgramVsOps, SplitSumEqualsTheReduceFamily) {
  // A row sum in 512-wide tiles: the program's partials merge as the family's do, so the task
  // graphs (and times) are the same, merge by merge and under spmd with whole and split rows.
  auto pair = [](const Dims& shape, const std::string& merge, const json& partition) {
    json ref = {{"op", "sum"}, {"shape", shape},   {"dtype", "fp32"},
                {"dim", 1},    {"tile", {4, 512}}, {"params", {{"merge", merge}}}};
    json o = op("sum", {"x"}, "s");
    o["dim"] = 1;
    o["keepdim"] = true;
    o["merge"] = merge;
    json p = {{"program",
               {{"inputs", {{{"name", "x"}, {"shape", shape}, {"dtype", "fp32"}}}},
                {"outputs", {"s"}},
                {"body", {tile({4, 512}), o}}}}};
    if (!partition.is_null()) {
      ref["partition"] = p["partition"] = partition;
      ref["tile"] = {1, 512};
      p["program"]["body"][0] = tile({1, 512});
      ref.erase("params");
      p["program"]["body"][1].erase("merge");
    }
    return std::pair{run_config_text("op.json", ref), run_config_text("prog.json", p)};
  };
  // auto: the family's pypto merge (atomic for a sum), which tilesim.pypto's reductions take.
  for (const std::string merge : {"in_task", "chain", "tree", "atomic", "auto"}) {
    const auto [a, b] = pair({1000, 8192}, merge, nullptr);
    EXPECT_EQ(a.gen_time_us, b.gen_time_us) << merge;
    EXPECT_EQ(a.tasks, b.tasks) << merge;
  }
  // spmd: whole rows, rows split past the grid, each forced by spmd_rows, and block regions
  // (2 x 3 regions of [8, 3000]: whole rows in ragged sub-tiles, rows split over regions).
  for (const Dims& shape : {Dims{1000, 8192}, Dims{16, 8192}}) {
    const auto [a, b] = pair(shape, "", {{"style", "spmd"}, {"grid", 48}});
    EXPECT_EQ(a.gen_time_us, b.gen_time_us) << format_dims(shape);
    EXPECT_EQ(a.tasks, b.tasks) << format_dims(shape);
  }
  for (const std::string rows : {"whole", "split"}) {
    json ref = {{"op", "sum"},
                {"shape", {64, 8192}},
                {"dtype", "fp32"},
                {"dim", 1},
                {"tile", {1, 512}},
                {"params", {{"spmd_rows", rows}}},
                {"partition", {{"style", "spmd"}, {"grid", 40}}}};
    json o = op("sum", {"x"}, "s");
    o["dim"] = 1;
    o["keepdim"] = true;
    o["spmd_rows"] = rows;
    const json p = {{"program",
                     {{"inputs", {{{"name", "x"}, {"shape", {64, 8192}}, {"dtype", "fp32"}}}},
                      {"outputs", {"s"}},
                      {"body", {tile({1, 512}), o}}}},
                    {"partition", ref["partition"]}};
    const Metrics a = run_config_text("op.json", ref), b = run_config_text("prog.json", p);
    EXPECT_EQ(a.gen_time_us, b.gen_time_us) << rows;
    EXPECT_EQ(a.tasks, b.tasks) << rows;
  }
  const json block = {{"style", "spmd"}, {"grid", 6}, {"block", {8, 3000}}};
  const auto [a, b] = pair({16, 8192}, "", block);
  EXPECT_EQ(a.gen_time_us, b.gen_time_us);
  EXPECT_EQ(a.tasks, 6);
}

TEST(ProgramVsOps, NaryAddEqualsTheElementwiseFamilysOperands) {
  // The shipped four-input add program and the add op with params.operands 4: four loads, three
  // adds and a store per tile, the same tasks.
  const json ref = {{"op", "add"},
                    {"shape", {768, 8192}},
                    {"dtype", "fp16"},
                    {"tile", {1, 8192}},
                    {"params", {{"operands", 4}}}};
  const json p = {{"program", test::source_path("configs/programs/add4_768x8192.json")}};
  const Metrics a = run_config_text("add4_op.json", ref), b = run_config_text("add4_prog.json", p);
  EXPECT_EQ(a.gen_time_us, b.gen_time_us);
  EXPECT_EQ(a.gm_read_bytes, b.gm_read_bytes);
}

// A matmul op says what the matmul family's params say (MatmulOptions): split K and its merge, L1
// residency, the nz layout, the spmd order, L2 blocks. PyPTO's two-level cube tile holds whole L0
// tiles in each L1 extent.
TEST(ProgramLoader, MatmulOptionsAndTwoLevelCubeTiles) {
  json mm = op("matmul", {"a", "b"}, "c");
  mm["split_k"] = 2;
  mm["split_k_merge"] = "vector";
  mm["l1_resident"] = "a";
  mm["l1_reuse"] = 2;
  mm["b_layout"] = "nz";
  mm["swizzle"] = {3, 1};
  mm["assignment"] = "strided";
  mm["l2_block"] = {2, 4};
  json p = {{"inputs",
             {{{"name", "a"}, {"shape", {256, 512}}, {"dtype", "fp16"}},
              {{"name", "b"}, {"shape", {512, 256}}, {"dtype", "fp16"}}}},
            {"outputs", {"c"}},
            {"body", {{{"set_cube_tile_shapes", {128, 128, 128}}}, mm}}};
  const MatmulOptions o = parse(p).ops[0].mm;
  EXPECT_EQ(o.split_k, 2);
  EXPECT_FALSE(o.split_k_atomic);
  EXPECT_EQ(o.l1_resident, L1Resident::kA);
  EXPECT_EQ(o.l1_reuse, 2);
  EXPECT_TRUE(o.b_nz);
  EXPECT_EQ(o.swizzle, (Dims{3, 1}));
  EXPECT_TRUE(o.strided);
  EXPECT_EQ(o.l2_block, (Dims{2, 4}));
  // pypto: 2 x 2 C tiles, each 2 K slices and an AIV merge; the L2 views [2, 4] tiles are one.
  KernelSpec spec;
  const LoweredKernel k = lower_program(parse(p), spec, test::default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 2u * 2 * 2 + 2 * 2);
  EXPECT_EQ(k.graph.psg_names.back(), "stage0:matmul:split_k_merge");
  json bad = p;
  bad["body"][1]["transpose_b"] = true;
  bad["inputs"][1]["shape"] = {256, 512};
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (matmul): \"b_layout\": \"nz\" is B [..., k, n] in the cube's "
            "fractal layout; leave \"transpose_b\" out");
  bad = prog({tile({4, 64}), op("exp", {"x"}, "y")});
  bad["body"][1]["split_k"] = 2;
  EXPECT_EQ(load_error(bad), "p.json: body[1]: op 0 (exp): \"split_k\" applies to matmul");
  // Each L1 extent holds whole L0 tiles; the form is [tm, tk, tn] or three [L0, L1] pairs.
  p["body"][0]["set_cube_tile_shapes"] = {{128, 128}, {96, 256}, {256, 256}};
  EXPECT_EQ(load_error(p),
            "p.json: body[0].set_cube_tile_shapes[1]: k L1 256 is not a multiple of its L0 96 "
            "(each L1 extent holds whole L0 tiles)");
  p["body"][0]["set_cube_tile_shapes"] = {{128, 128}, {64, 256}};
  EXPECT_EQ(load_error(p),
            "p.json: body[0].set_cube_tile_shapes: expected [tm, tk, tn] or PyPTO's [[mL0, mL1], "
            "[kL0, kL1], [nL0, nL1]], got [[128,128],[64,256]]");
}

// A matmul's third input is a bias row [1, n] (PyPTO's extend_params bias_tensor): each C tile
// copies its n range GM -> L1 -> the bias table before its first mmad, which starts from it
// (cube_operation_impl.cpp LinkBias); C is A @ B + bias.
TEST(ProgramLoader, AMatmulBiasIsLoadedPerCTileAndAddedOnce) {
  auto program = [](bool bias) {
    json mm = op("matmul", bias ? json{"a", "b", "bias"} : json{"a", "b"}, "c");
    return json{{"program", "mb"},
                {"inputs",
                 {{{"name", "a"}, {"shape", {64, 128}}, {"dtype", "fp16"}},
                  {{"name", "b"}, {"shape", {128, 96}}, {"dtype", "fp16"}},
                  {{"name", "bias"}, {"shape", {1, 96}}, {"dtype", "fp32"}}}},
                {"outputs", {"c"}},
                {"body", {{{"set_cube_tile_shapes", {32, 64, 32}}}, mm}}};
  };
  const Program with = parse(program(true));
  EXPECT_TRUE(proves(with, 5));  // tiled (two k steps per C tile) equals A @ B + bias
  KernelSpec spec;
  const LoweredKernel k = lower_program(with, spec, test::default_hw());
  const LoweredKernel k0 = lower_program(parse(program(false)), spec, test::default_hw());
  EXPECT_EQ(k.graph.tasks.size(), k0.graph.tasks.size());  // 2 x 3 C tiles either way
  // Each of the 2 x 3 C tiles reads its 32 columns of the bias once: 6 x 32 x 4 B more.
  EXPECT_DOUBLE_EQ(gm_bytes(k, false) - gm_bytes(k0, false), 6.0 * 32 * 4);
  int64_t bt = 0;
  for (const auto& kind : k.graph.kinds)
    for (const auto& st : kind.steps)
      for (const auto& c : st.cube) bt += st.repeat * c.bt_bytes;
  EXPECT_GT(bt, 0);  // and moves it L1 -> the bias table on MTE1

  json bad = program(true);
  bad["inputs"][2]["shape"] = {96};
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (matmul): shape mismatch: the bias 'bias' (96) fp32 is a row "
            "[1, n] of C's n (96)");
  bad = program(true);
  bad["inputs"][2]["dtype"] = "bf16";
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (matmul): dtype mismatch: the bias 'bias' (1, 96) bf16 of a "
            "fp16 matmul is fp32 or fp16 (PyPTO's CheckBiasParam)");
  bad = program(true);
  bad["body"][1]["split_k"] = 2;
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (matmul): a bias with split_k: PyPTO adds a bias only without "
            "GM accumulation");
  bad = program(true);
  bad["body"][1]["inputs"] = {"a", "b", "bias", "bias"};
  EXPECT_EQ(load_error(bad),
            "p.json: body[1]: op 0 (matmul): takes 2 inputs (got 4); a third is the bias row "
            "[1, n]");
}

// A view of part of a computed tensor and a reshape of one make no copy: the tensor they name is
// stored once, and the ops reading them copy their part of its bytes (a view's rows at the
// parent's stride). PyPTO's view / slice of a tile and reshape of a contiguous one.
TEST(ProgramLoader, ViewsAndReshapesOfComputedTensorsAreAliasesNotCopies) {
  json view_op = {
      {"op", "view"}, {"inputs", {"y"}}, {"out", "p"}, {"offsets", {0, 8}}, {"shape", {8, 8}}};
  json reshape_op = {{"op", "reshape"}, {"inputs", {"y"}}, {"out", "r"}, {"shape", {8, 3, 8}}};
  auto program = [&](const json& view, const json& reshape) {
    return json{{"program", "alias"},
                {"inputs", {{{"name", "x"}, {"shape", {8, 24}}, {"dtype", "fp32"}}}},
                {"outputs", {"z", "w"}},
                {"body",
                 {tile({2, 24}), op("exp", {"x"}, "y"), view, reshape, tile({2, 8}),
                  op("neg", {"p"}, "z"), tile({2, 3, 8}), op("abs", {"r"}, "w")}}};
  };
  const Program p = parse(program(view_op, reshape_op));
  EXPECT_EQ(p.ops.size(), 3u);  // exp, neg, abs: the aliases are no ops
  EXPECT_TRUE(proves(p, 7));
  const auto stages = plan_stages(p);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].stores, (std::vector<int>{p.tensor_id("y")}));  // stored once for both
  KernelSpec spec;
  spec.op = "program:alias";
  const LoweredKernel k = lower_program(p, spec, test::default_hw());
  // neg reads 32 B of each 96 B row of y: per task of 2 rows, 2 bursts of 32 B
  bool strided = false;
  for (const auto& kind : k.graph.kinds)
    for (const auto& st : kind.steps)
      for (const auto& d : st.loads) strided = strided || (d.bursts == 2 && d.burst_bytes == 32);
  EXPECT_TRUE(strided);

  json bad_view = view_op;
  bad_view["offsets"] = {0, 22};
  EXPECT_EQ(load_error(program(bad_view, reshape_op)),
            "p.json: body[2]: view 'p': offsets (0, 22) and shape (8, 8) are not a part of 'y' "
            "(8, 24) fp32 (same rank, inside it)");
  json bad_reshape = reshape_op;
  bad_reshape["shape"] = {8, 5, 8};
  EXPECT_EQ(load_error(program(view_op, bad_reshape)),
            "p.json: body[3]: reshape 'r': (8, 5, 8) has 320 elements, 'y' (8, 24) fp32 holds "
            "192");
  bad_reshape = reshape_op;
  bad_reshape["inputs"] = {"p"};
  bad_reshape["shape"] = {64};
  EXPECT_EQ(load_error(program(view_op, bad_reshape)),
            "p.json: body[3]: reshape 'r': 'p' (8, 8) fp32 is a view, whose rows are not "
            "contiguous: reshape the tensor it views");
  json j = program(view_op, reshape_op);
  j["outputs"] = {"z", "w", "p"};
  EXPECT_EQ(load_error(j),
            "p.json: outputs[2]: output 'p' is a view or reshape, which moves no data: name an "
            "op's output");
  j = program(view_op, reshape_op);
  j["body"].push_back(tile({2, 8}));
  j["body"].push_back({{"op", "transpose"}, {"inputs", {"p"}}, {"out", "t"}});
  j["outputs"] = {"z", "w", "t"};
  EXPECT_EQ(load_error(j),
            "p.json: body[9]: op 3 (transpose): 'p' (8, 8) fp32 is a view at an offset; views "
            "feed vector ops (this op's copies take whole tensors)");
}

// PyPTO's cube lowering builds each root function's C tiles n outer, m inner: a loop over m's
// chunks, or L2 views of l2_block tiles (a root function each), come first. Under spmd a program's
// C tiles go row-major in contiguous runs unless it gives a swizzle and an assignment.
TEST(ProgramLowering, MatmulTilesRootFirstThenNOuterMInner) {
  json mm = op("matmul", {"a", "b"}, "c");
  const json body = {{{"set_cube_tile_shapes", {64, 64, 128}}}, mm};  // 4 x 2 C tiles
  json p = {{"inputs",
             {{{"name", "a"}, {"shape", {256, 64}}, {"dtype", "fp16"}},
              {{"name", "b"}, {"shape", {64, 256}}, {"dtype", "fp16"}}}},
            {"outputs", {"c"}},
            {"body", {{{"loop", "m"}, {"axis", 0}, {"loop_count", 2}, {"body", body}}}}};
  // (root, m tile, n tile) of each task, from its C block's key.
  auto order = [](const json& prog, const KernelSpec& spec) {
    const LoweredKernel k = lower_program(parse(prog), spec, test::default_hw());
    std::vector<std::tuple<int32_t, int64_t, int64_t>> got;
    for (int32_t t = 0; t < static_cast<int32_t>(k.graph.tasks.size()); ++t)
      for (int64_t mi = 0; mi < 4; ++mi)
        for (int64_t ni = 0; ni < 2; ++ni)
          if ((k.graph.access_end(t) - 1)->block == block_key(2, {mi * 64, ni * 128}))
            got.emplace_back(k.graph.tasks[static_cast<size_t>(t)].root, mi, ni);
    return got;
  };
  using O = std::vector<std::tuple<int32_t, int64_t, int64_t>>;
  KernelSpec spec;
  EXPECT_EQ(
      order(p, spec),
      (O{{0, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1}, {1, 2, 0}, {1, 3, 0}, {1, 2, 1}, {1, 3, 1}}));
  // L2 views of 2 x 1 tiles, m views outer: four root functions.
  json views = p;
  views["body"] = body;
  views["body"][1]["l2_block"] = {2, 1};
  EXPECT_EQ(
      order(views, spec),
      (O{{0, 0, 0}, {0, 1, 0}, {1, 0, 1}, {1, 1, 1}, {2, 2, 0}, {2, 3, 0}, {3, 2, 1}, {3, 3, 1}}));
  // spmd, 3 blocks: row-major contiguous runs; catlass's swizzle [2, 0] handed out strided.
  spec.partition = PartitionStyle::kSpmd;
  spec.grid = 3;
  json spmd = p;
  spmd["body"] = body;
  EXPECT_EQ(
      order(spmd, spec),
      (O{{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {0, 2, 1}, {0, 3, 0}, {0, 3, 1}}));
  spmd["body"][1]["swizzle"] = {2, 0};
  spmd["body"][1]["assignment"] = "strided";
  // Swizzle order (0,0) (1,0) (0,1) (1,1) | (2,1) (3,1) (2,0) (3,0) (the second band of two tile
  // rows walks back); block b takes indices b, b + 3, b + 6.
  EXPECT_EQ(
      order(spmd, spec),
      (O{{0, 0, 0}, {0, 1, 1}, {0, 2, 0}, {0, 1, 0}, {0, 2, 1}, {0, 3, 0}, {0, 0, 1}, {0, 3, 1}}));
}

// A cube tile larger than its matmul holds only what the matmul has (PyPTO's L1 / L0 views take
// the valid size, padded to the fractal in the NZ layout): a [1024, 24] fp32 B under a tile n of
// 128 takes 1024 x 32 x 4 B of L1, not 1024 x 128 x 4 B (which alone would fill L1).
TEST(ProgramLowering, ACubeTileLargerThanItsMatmulHoldsTheMatmulsExtent) {
  const json j = {{"program", "narrow"},
                  {"inputs",
                   {{{"name", "a"}, {"shape", {16, 1024}}, {"dtype", "fp32"}},
                    {{"name", "b"}, {"shape", {1024, 24}}, {"dtype", "fp32"}}}},
                  {"outputs", {"c"}},
                  {"body",
                   {{{"set_cube_tile_shapes", {{16, 16}, {512, 1024}, {128, 128}}}},
                    op("matmul", {"a", "b"}, "c")}}};
  KernelSpec spec;
  const LoweredKernel k = lower_program(parse(j), spec, test::default_hw());
  bool found = false;
  for (const auto& kind : k.graph.kinds)
    for (const auto& b : kind.buffers)
      if (b.name == "B" && b.space == MemSpace::kL1) {
        EXPECT_EQ(b.bytes, 1024 * 32 * 4);
        found = true;
      } else if (b.name == "B0") {
        EXPECT_EQ(b.bytes, 512 * 32 * 4);  // the L0 tile's n clipped the same way
      }
  EXPECT_TRUE(found);
}

TEST(ProgramRun, ShippedProgramsRunAndSweepsRecommend) {
  TILESIM_EVERY_SHIPPED_CONFIG();
  for (const auto& f : fs::directory_iterator(test::source_path("configs/programs"))) {
    if (f.path().filename().string().find("8x32x2048") != std::string::npos ||
        f.path().filename().string().find("32x2048x32") != std::string::npos)
      continue;  // 196608 tasks each: seconds, run from the CLI (README, report)
    const RunConfig rc = load_run_config(f.path());
    // The spec's shape is what its tile tiles (a cube tile: the matmul's [m, k, n]).
    EXPECT_EQ(run_spec(rc).shape.size(), run_spec(rc).tile.size()) << f.path();
    const RunOutcome out = run_kernel(run_spec(rc), load_hardware(rc.hardware), rc.options);
    EXPECT_GT(out.metrics.gen_time_us, 0) << f.path();
  }
  // The two small sweeps: a recommendation among several evaluated candidates.
  for (const char* name : {"program_gelu_16x16384.json", "program_rmsnorm_rope_1x11x16x128.json"}) {
    const SweepConfig cfg =
        load_sweep_config(test::source_path(std::string("configs/sweeps/") + name));
    const SweepResult r = run_sweep(cfg, load_hardware(cfg.hardware));
    EXPECT_TRUE(r.recommended.has_value()) << name;
    EXPECT_GE(r.ranking.size(), 7u) << name;
  }
}

}  // namespace
}  // namespace tilesim

namespace tilesim {
namespace {

// A sweep over several named tiles of a program at once: candidates.program_tiles gives each
// other tile its shapes; every combination is a candidate, each runs with all its tiles set.
TEST(ProgramSweep, SeveralNamedTilesAreSweptTogether) {
  const std::string program =
      test::source_path("configs/programs/layernorm_residual_4096x4096.json");
  auto doc = [&](const std::string& tiles) {
    return nlohmann::json::parse(R"({"hardware": "ascend910b1", "program": ")" + program +
                                 R"(", "program_tile": "row", "program_loop": "rows",
      "candidates": {"tiles": [[1, 4096], [2, 4096]], "loop_counts": [8],
                     "program_tiles": )" +
                                 tiles + "}}");
  };
  const SweepConfig cfg = sweep_config_from_json(
      doc(R"({"apply": [[1, 4096], [2, 4096], [4, 4096]], "stat": [[64, 1], [128, 1]]})"),
      "s.json");
  const Hardware hw = test::default_hw();
  const auto cands = expand_candidates(cfg, hw);
  ASSERT_EQ(cands.size(), 12u);  // 2 row tiles x 3 apply x 2 stat
  EXPECT_EQ(cands[1].named_tiles, (NamedTiles{{"apply", {1, 4096}}, {"stat", {128, 1}}}));
  const KernelSpec spec = candidate_spec(cfg, cands[5]);
  const Program p = program_of(spec);
  EXPECT_EQ(p.tiles[static_cast<size_t>(p.tile_id("row"))].dims, (Dims{1, 4096}));
  EXPECT_EQ(p.tiles[static_cast<size_t>(p.tile_id("apply"))].dims, (Dims{4, 4096}));
  EXPECT_EQ(p.tiles[static_cast<size_t>(p.tile_id("stat"))].dims, (Dims{128, 1}));
  // The tiles change the run, and the result keeps them (table, JSON, shards).
  SweepOptions opt;
  opt.threads = 1;
  const SweepResult res = run_sweep(cfg, hw, opt, cands);
  ASSERT_EQ(res.ranking.size(), 12u);
  EXPECT_NE(res.candidates[0].gen_time_us, res.candidates[2].gen_time_us);
  EXPECT_EQ(res.candidates[3].named_tiles, cands[3].named_tiles);
  EXPECT_NE(res.why.find(", apply ("), std::string::npos) << res.why;
  const CandidateResult back = candidate_from_json(candidate_to_json(res.candidates[3]), "x");
  EXPECT_EQ(back.named_tiles, cands[3].named_tiles);
  // Errors name the key and what is allowed.
  auto error = [&](const std::string& tiles) {
    try {
      sweep_config_from_json(doc(tiles), "s.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"({"aply": [[1, 4096]]})"),
            "s.json: candidates.program_tiles.aply: no tile named 'aply' in program "
            "'layernorm_residual' (its tiles: row, stat, apply)");
  EXPECT_EQ(error(R"({"row": [[1, 4096]]})"),
            "s.json: candidates.program_tiles.row: 'row' is the sweep's program_tile: its shapes "
            "go in candidates.tiles or generate_tiles");
  EXPECT_NE(error(R"({"apply": [[1, 2, 4096]]})").find("candidates.program_tiles.apply[0]"),
            std::string::npos);
  EXPECT_NE(error(R"({"apply": []})").find("candidates.program_tiles.apply"), std::string::npos);
  EXPECT_EQ(
      [&] {
        try {
          sweep_config_from_json(nlohmann::json::parse(R"({"op": "add", "shape": [16, 64],
            "tile": [1, 64], "candidates": {"program_tiles": {"x": [[1, 64]]}}})"),
                                 "s.json");
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string("no error");
      }(),
      "s.json: candidates.program_tiles: applies to a tile program's sweep only (this config has "
      "no \"program\"): name its tiles' shapes by tile name");
  // A run config takes one shape per named tile (program_tiles): the candidate again, the same
  // time, its tiles in the table's header and the JSON's candidate.
  const auto run_doc = [&](const std::string& tiles) {
    return nlohmann::json::parse(R"({"hardware": "ascend910b1", "program": ")" + program +
                                 R"(", "program_tile": "row", "program_loop": "rows",
      "tile": [1, 4096], "loop_count": 8, "program_tiles": )" +
                                 tiles + "}");
  };
  const nlohmann::json again = run_doc(R"({"apply": [4, 4096], "stat": [128, 1]})");
  const Metrics m = run_config_text("again.json", again);
  EXPECT_DOUBLE_EQ(m.gen_time_us, res.candidates[5].gen_time_us);
  EXPECT_EQ(cands[5].named_tiles, (NamedTiles{{"apply", {4, 4096}}, {"stat", {128, 1}}}));
  const auto cli =
      test::run_cli("run " + write_temp("again.json", again.dump()).string() + " --json");
  ASSERT_EQ(cli.code, 0) << cli.out;
  EXPECT_EQ(nlohmann::json::parse(cli.out)["candidate"]["program_tiles"],
            nlohmann::json::parse(R"({"apply": [4, 4096], "stat": [128, 1]})"));
  const auto table = test::run_cli("run " + write_temp("again.json", again.dump()).string());
  EXPECT_NE(table.out.find("tile (1, 4096) tiles apply (4, 4096), stat (128, 1) loop_count 8"),
            std::string::npos)
      << table.out;
  const auto run_error = [&](const std::string& tiles) {
    try {
      load_run_config(write_temp("bad.json", run_doc(tiles).dump()));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(run_error(R"({"aply": [1, 4096]})")
                .find("program_tiles.aply: no tile named 'aply' in program 'layernorm_residual' "
                      "(its tiles: row, stat, apply)"),
            std::string::npos);
  EXPECT_NE(run_error(R"({"row": [1, 4096]})")
                .find("program_tiles.row: 'row' is the run's program_tile: its shape goes in "
                      "\"tile\""),
            std::string::npos);
}

}  // namespace
}  // namespace tilesim

namespace tilesim {
namespace {

// ../shared/hostile-t3 prog_chain_1e5, prog_loops_2e4, prog_stages_1e5, prog_tileswitch_5e4: long
// programs the quadratic loader never finished (killed at 20 s) run whole from the CLI: 10^5 exp
// ops in one fused stage, 2 x 10^4 loops in sequence, 10^5 ops alternating sum and exp (5 x 10^4
// stages) and 5 x 10^4 tile switches each followed by an op. Each is one task per stage and core
// pass, so the run's task count is its figure to check.
TEST(ProgramLoader, LongProgramsRunWhole) {
  using nlohmann::json;
  // The sanitizer pass checks these paths' memory at a tenth of the size (137 s there at full
  // size); the Release pass runs the cases' own sizes.
#ifdef __SANITIZE_ADDRESS__
  constexpr int kScale = 10;
#else
  constexpr int kScale = 1;
#endif
  auto op = [](const char* name, const std::string& in, const std::string& out) {
    return json{{"op", name}, {"inputs", {in}}, {"out", out}};
  };
  auto chain_name = [](int i, int n) {
    return i == n - 1 ? std::string("y") : fmt::format("t{}", i);
  };
  auto prev = [](int i) { return i == 0 ? std::string("x") : fmt::format("t{}", i - 1); };
  auto tile = [](int64_t rows, const std::string& name) {
    return json{{"set_vec_tile_shapes", {rows, 64}}, {"name", name}};
  };
  std::map<std::string, json> bodies;
  json chain = json::array({tile(1, "v")});
  for (int i = 0; i < 100000 / kScale; ++i)
    chain.push_back(op("exp", prev(i), chain_name(i, 100000 / kScale)));
  bodies["chain_1e5"] = chain;
  json loops = json::array({tile(4, "v")});
  for (int i = 0; i < 20000 / kScale; ++i)
    loops.push_back({{"loop", fmt::format("l{}", i)},
                     {"axis", 0},
                     {"loop_count", 2},
                     {"body", {op("exp", prev(i), chain_name(i, 20000 / kScale))}}});
  bodies["loops_2e4"] = loops;
  json stages = json::array({tile(4, "v")});
  for (int i = 0; i < 100000 / kScale; ++i) {
    json o = op(i % 2 == 0 ? "sum" : "exp", prev(i), chain_name(i, 100000 / kScale));
    if (i % 2 == 0) {
      o["dim"] = -1;
      o["keepdim"] = true;
    }
    stages.push_back(o);
  }
  bodies["stages_1e5"] = stages;
  json tileswitch = json::array();
  for (int i = 0; i < 50000 / kScale; ++i) {
    tileswitch.push_back(tile(1 + i % 2, fmt::format("v{}", i)));
    tileswitch.push_back(op("exp", prev(i), chain_name(i, 50000 / kScale)));
  }
  bodies["tileswitch_5e4"] = tileswitch;
  for (const auto& [name, body] : bodies) {
    const json program = {{"program", "t"},
                          {"inputs", {{{"name", "x"}, {"shape", {4, 64}}, {"dtype", "fp32"}}}},
                          {"outputs", {"y"}},
                          {"body", body}};
    const fs::path f = write_temp("long_" + name + ".json", program.dump());
    const test::CmdResult r = test::run_cli("run " + f.string() + " --json", false);
    ASSERT_EQ(r.code, 0) << name << ": " << r.out.substr(0, 400);
    EXPECT_GT(json::parse(r.out)["tasks"].get<int64_t>(), 0) << name;
  }
}

// ../shared/hostile-t3 prog_diamond_ladder_60, prog_reverse_chain_7e4: the loader's cycle check
// is linear and iterative. 60 ops that each add the two previous outputs took exponential time;
// 70,000 ops each reading the next one's output overflowed the stack of a recursive check.
TEST(ProgramLoader, CycleChecksAreLinearAndNeedNoStack) {
  auto program = [](nlohmann::json body) {
    return nlohmann::json{{"program", "t"},
                          {"inputs", {{{"name", "x"}, {"shape", {4, 64}}, {"dtype", "fp32"}}}},
                          {"outputs", {"y"}},
                          {"body", std::move(body)}};
  };
  nlohmann::json ladder = nlohmann::json::array({{{"set_vec_tile_shapes", {1, 64}}}});
  ladder.push_back({{"op", "exp"}, {"inputs", {"x"}}, {"out", "t0"}});
  ladder.push_back({{"op", "add"}, {"inputs", {"x", "t0"}}, {"out", "t1"}});
  for (int i = 2; i < 60; ++i)
    ladder.push_back({{"op", "add"},
                      {"inputs", {fmt::format("t{}", i - 1), fmt::format("t{}", i - 2)}},
                      {"out", i == 59 ? std::string("y") : fmt::format("t{}", i)}});
  EXPECT_EQ(program_from_json(JsonReader(program(ladder), "p.json")).ops.size(), 60u);
  // Op i reads op i + 1's output: the first op's error, found without recursion.
  constexpr int kOps = 70000;
  nlohmann::json reverse = nlohmann::json::array({{{"set_vec_tile_shapes", {1, 64}}}});
  for (int i = 0; i < kOps; ++i)
    reverse.push_back({{"op", "exp"},
                       {"inputs", {i + 1 < kOps ? fmt::format("t{}", i + 1) : std::string("x")}},
                       {"out", i == 0 ? std::string("y") : fmt::format("t{}", i)}});
  EXPECT_EQ(load_error(program(reverse)),
            "p.json: body[1].inputs: op 0 (exp): 't1' is used before it is defined (op 1 writes "
            "it; ops run in program order)");
  // A true cycle: two ops reading each other's output.
  const nlohmann::json cycle =
      nlohmann::json::array({{{"set_vec_tile_shapes", {1, 64}}},
                             {{"op", "add"}, {"inputs", {"x", "b"}}, {"out", "a"}},
                             {{"op", "exp"}, {"inputs", {"a"}}, {"out", "b"}},
                             {{"op", "exp"}, {"inputs", {"b"}}, {"out", "y"}}});
  EXPECT_EQ(load_error(program(cycle)),
            "p.json: body[1].inputs: op 0 (add): cycle: it reads 'b', which is written by op 1 "
            "from this op's output");
}

// spmd_rows "tiles" and "slots": a column sum of x [64, 512] fp32 in one-row sub-tiles on 8
// blocks (8 rows each), every block's part kept in GM sub-tile by sub-tile. tiles: each sub-tile
// adds its 2 KiB partial into s atomically (64 writes, one launch; Liger's tl.atomic_add in its
// row loop). slots: each sub-tile reads its block's slot, adds and writes it back (64 reads and
// writes of 2 KiB), and a second launch reads the 8 slots and writes s (a per-program
// accumulator row and the wrapper's sum of the rows). split, the default past the grid: each
// block folds its rows in UB and adds once (8 writes); parts: folds them in UB and writes its
// slot once (8 writes), the second launch reading the 8 slots.
TEST(ProgramPlan, SpmdRowsTilesAndSlotsMergeEverySubTileInGm) {
  const auto lowered = [](const std::string& rows) {
    json s = op("sum", {"x"}, "s");
    s["dim"] = 0;
    s["keepdim"] = true;
    s["spmd_rows"] = rows;
    const Program p =
        parse(json{{"program", "colsum"},
                   {"inputs", {{{"name", "x"}, {"shape", {64, 512}}, {"dtype", "fp32"}}}},
                   {"outputs", {"s"}},
                   {"body", {tile({1, 512}), s}}});
    KernelSpec spec;
    spec.op = "program:colsum";
    spec.partition = PartitionStyle::kSpmd;
    spec.grid = 8;
    return lower_program(p, spec, test::default_hw());
  };
  const auto bytes = [](const LoweredKernel& k, bool write) {
    int64_t n = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(k.graph.tasks.size()); ++t)
      for (const Access* a = k.graph.access_begin(t); a != k.graph.access_end(t); ++a)
        if (a->write == write) n += a->bytes;
    return n;
  };
  const int64_t x = 64 * 512 * 4, row = 512 * 4;
  const LoweredKernel split = lowered("split"), tiles = lowered("tiles"), slots = lowered("slots"),
                      parts = lowered("parts");
  EXPECT_EQ(bytes(split, false), x);
  EXPECT_EQ(bytes(split, true), 8 * row);
  EXPECT_EQ(split.graph.num_launches(), 1);
  EXPECT_EQ(bytes(tiles, false), x);
  EXPECT_EQ(bytes(tiles, true), 64 * row);
  EXPECT_EQ(tiles.graph.num_launches(), 1);
  EXPECT_EQ(bytes(slots, false), x + 64 * row + 8 * row);
  EXPECT_EQ(bytes(slots, true), 64 * row + row);
  EXPECT_EQ(slots.graph.num_launches(), 2);
  EXPECT_EQ(bytes(parts, false), x + 8 * row);
  EXPECT_EQ(bytes(parts, true), 8 * row + row);
  EXPECT_EQ(parts.graph.num_launches(), 2);
}

}  // namespace
}  // namespace tilesim
