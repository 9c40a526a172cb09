// Matmul C[m, n] = A[m, k] @ B[k, n] on the cube cores, shape = [m, k, n], as a tile program of
// one matmul op (kernels/program/program.hpp), which the matmul stage lowers (kernels/lower/
// program/matmul_stage.cpp): a cube task per C tile (or split-K slice of it), A and B through L1
// and L0, C out through the fixpipe.
//
//  - pypto (PyPTO's cube lowering, hicann/pypto framework/src/interface/operation/
//    cube_operation_impl.cpp ConstructTileGraph): tile = [mL0, kL0, nL0] (set_cube_tile_shapes'
//    L0 shapes; mL1 = mL0, nL1 = nL0, which that lowering requires), params.k_l1 the L1 k step:
//    the program's two-level cube tile. The loop cuts m into loop_count chunks (BASIC_BATCH =
//    ceil_div(m, loop_count)), or params.l2_block views make a root function each (a 2-D loop /
//    view: the matmul guide's L2 blocking). params.l1_reuse merges runs of tiles that share the
//    resident operand into one task (PyPTO's L1CopyInReuseMerge, cube_l1_reuse_setting).
//  - spmd (catlass's basic matmul): tile = the L1 tile [m1, k1, n1], params.l0_tile the mmad's,
//    `grid` blocks on the AIC cores sharing the C tiles in swizzle order.
//
// A split K combines its partial C tiles atomically in GM (fp32 / int32 output) or through a
// workspace that AIV tasks sum and cast (split_k_merge "vector").
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/cube/cube_task.hpp"
#include "kernels/families/families.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// Both partitions: shape [m, k, n], a tile of rank 3 (named `tile_dims`) and no dim.
void check_matmul_spec(const KernelSpec& spec, const char* tile_dims) {
  if (spec.shape.size() != 3 || spec.tile.size() != 3)
    throw Error(fmt::format("matmul: shape and tile must be [m, k, n] and {} (got {} and {})",
                            tile_dims, format_dims(spec.shape), format_dims(spec.tile)));
  if (!spec.dims.empty()) throw Error("matmul: dim: matmul reduces k by definition; leave dim out");
}

// The params one partition does not take, refused by name.
void refuse_params(const KernelSpec& spec, std::initializer_list<const char*> names,
                   const char* why) {
  for (const char* n : names)
    if (has_param(spec, n))
      throw Error(fmt::format("matmul: params.{} {}", n, why), ErrorKind::kParams);
}

void check_fractal_alignment(const KernelSpec& spec, const Dims& l0, const char* l0_name,
                             const Hardware& hw) {
  const int64_t f = hw.cube.fractal;
  for (const auto& [what, dims] :
       {std::pair<std::string, Dims>{fmt::format("tile {}", format_dims(spec.tile)), spec.tile},
        {fmt::format("{} [{}]", l0_name, fmt::join(l0, ", ")), l0}})
    for (const int64_t d : dims)
      if (d % f != 0)
        throw Error(fmt::format("matmul: {} is misaligned: {} is not a multiple of the cube "
                                "fractal {} (cube.fractal)",
                                what, d, f),
                    ErrorKind::kAlignment);
}

// The pypto cube tile: L0 [tm, tk, tn] = the tile, L1 [tm, k_l1, tn] (params.k_l1, a multiple of
// the tile's k, PyPTO's kL1 % kL0 == 0). Refuses the spmd partition's params and a second cut of
// the loop.
ProgTile pypto_cube_tile(const KernelSpec& spec, const Hardware& hw) {
  if (spec.partition != PartitionStyle::kPypto)
    throw Error(
        "matmul: the ascendc partition is not modelled (use pypto, or spmd for "
        "catlass's basic matmul)",
        ErrorKind::kLimits);
  refuse_params(spec, {"l1_tile", "l0_tile", "swizzle", "assignment", "shuffle_k"},
                "applies to the spmd partition (catlass's block tiling); the pypto partition's "
                "tile is the cube tile [tm, tk, tn], params.k_l1 its L1 k step");
  if (has_param(spec, "l2_block") && spec.loop_count != 1)
    throw Error(fmt::format("matmul: loop_count {} and params.l2_block both cut the loop into "
                            "root functions; give one (l2_block is a 2-D loop over m and n views)",
                            spec.loop_count),
                ErrorKind::kParams);
  check_matmul_spec(spec, "[tm, tk, tn]");
  if (!has_param(spec, "l2_block"))
    check_loop_count(spec.op + ": ", spec.loop_count, 0, spec.shape[0]);
  const int64_t tk = spec.tile[1];
  const int64_t kl1 = has_param(spec, "k_l1") ? param_int(spec, "k_l1") : tk;
  if (kl1 % tk != 0)
    throw Error(fmt::format("matmul: params.k_l1 {} must be a multiple of the tile's k {} (PyPTO: "
                            "kL1 % kL0 == 0)",
                            kl1, tk),
                ErrorKind::kParams);
  check_fractal_alignment(spec, {kl1}, "params.k_l1", hw);
  ProgTile t{"cube", true, {spec.tile[0], kl1, spec.tile[2]}, {}};
  if (kl1 != tk) t.l0 = spec.tile;
  return t;
}

// The spmd cube tile: the L1 tile [m1, k1, n1] = the tile (params.l1_tile restates it in
// catlass's [m, n, k] order and must agree), params.l0_tile [m0, n0, k0] the mmad's.
ProgTile spmd_cube_tile(const KernelSpec& spec, const Hardware& hw) {
  check_matmul_spec(spec, "[m1, k1, n1]");
  const int64_t m1 = spec.tile[0], k1 = spec.tile[1], n1 = spec.tile[2];
  if (has_param(spec, "l1_tile")) {
    const auto l1 = param_ints(spec, "l1_tile");
    if (l1 != Dims{m1, n1, k1})
      throw Error(fmt::format("matmul: params.l1_tile [{}, {}, {}] disagrees with tile {}: under "
                              "the spmd partition tile is the L1 tile [m1, k1, n1], so l1_tile "
                              "must be [{}, {}, {}] (or left out)",
                              l1[0], l1[1], l1[2], format_dims(spec.tile), m1, n1, k1),
                  ErrorKind::kParams);
  }
  const auto l0 = param_ints(spec, "l0_tile");
  refuse_params(spec, {"vector_epilogue", "k_l1", "l1_reuse"},
                "applies to the pypto partition (catlass's basic matmul writes C from L0C "
                "through the fixpipe, with the L1 tile as its k step)");
  if (spec.loop_count != 1)
    throw Error(fmt::format("matmul: loop_count {} applies to the pypto partition; the spmd "
                            "partition shares the C tiles over partition.grid blocks",
                            spec.loop_count),
                ErrorKind::kLimits);
  check_fractal_alignment(spec, l0, "params.l0_tile", hw);
  return {"cube", true, spec.tile, {l0[0], l0[2], l0[1]}};
}

// The family's params as the matmul op's cube options.
MatmulOptions matmul_options(const KernelSpec& spec, bool spmd) {
  MatmulOptions o;
  o.b_nz = param_string(spec, "b_layout") == "nz";
  o.l1_resident = *enum_named(kL1ResidentNames, param_string(spec, "l1_resident"));
  o.l1_reuse = param_int(spec, "l1_reuse");
  o.split_k = param_int(spec, "split_k");
  o.split_k_atomic = param_string(spec, "split_k_merge") == "atomic";
  o.vector_epilogue = param_bool(spec, "vector_epilogue");
  if (spmd) {
    o.swizzle = param_ints(spec, "swizzle");
    o.strided = param_string(spec, "assignment") == "strided";
    o.shuffle_k = param_bool(spec, "shuffle_k");
  }
  if (has_param(spec, "l2_block")) o.l2_block = param_ints(spec, "l2_block");
  o.aiv_psg = o.split_k > 1 && !o.split_k_atomic ? "matmul:split_k_merge" : "matmul:epilogue";
  o.fixed_depth = true;
  return o;
}

// C's dtype in GM: params.out_dtype, or the operands' (int32 for int8 operands).
DType out_dtype(const KernelSpec& spec) {
  const std::string s = param_string(spec, "out_dtype");
  if (s == "same") return spec.dtype == DType::kInt8 ? DType::kInt32 : spec.dtype;
  return parse_program_dtype(s);
}

// The kernel as a tile program: C = A @ B (B stored [n, k] when column-major) under the cube tile,
// the pypto loop over m.
Program matmul_program(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  const bool spmd = spec.partition == PartitionStyle::kSpmd;
  Program p;
  p.name = spec.op;
  p.built_in = true;
  p.tiles.push_back(spmd ? spmd_cube_tile(spec, hw) : pypto_cube_tile(spec, hw));
  const int64_t m = spec.shape[0], k = spec.shape[1], n = spec.shape[2];
  const bool column_major = param_string(spec, "b_layout") == "column_major";
  p.tensors = {{"a", {m, k}, spec.dtype, true, false},
               {"b", column_major ? Dims{n, k} : Dims{k, n}, spec.dtype, true, false},
               {"c", {m, n}, out_dtype(spec), false, true}};
  ProgOp op;
  op.name = "matmul";
  op.info = find_op_record("matmul");
  op.in = {0, 1};
  op.out = 2;
  op.transpose_b = column_major;
  op.mm = matmul_options(spec, spmd);
  op.psg = spmd ? "matmul:block_tile" : "matmul:cube";
  op.tile = 0;
  if (spec.loop_count > 1) {
    p.loops.push_back({"loop", 0, spec.loop_count, -1});
    op.loop = 0;
  }
  p.ops.push_back(op);
  return p;
}

}  // namespace

KernelFamily matmul_kernels() {
  KernelFamily f;
  f.name = "matmul";
  f.spmd = true;
  f.ops = {KernelOp("matmul")};  // the op table's record, as a program's matmul stage
  // The spmd partition's catlass tiling; defaults from catlass's basic matmul example
  // (hicann/catlass examples/00_basic_matmul/basic_matmul.cpp: L1TileShape <128, 256, 256>,
  // L0TileShape <128, 256, 64>, GemmIdentityBlockSwizzle<3, 0>).
  auto ints = [](const char* name, size_t size, int64_t min, nlohmann::json fallback,
                 const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kIntList;
    p.list_size = size;
    p.min = min;
    p.max = int64_t{1} << 24;  // far past any L1 or L0 extent; products of three cannot wrap
    p.fallback = std::move(fallback);
    p.doc = doc;
    return p;
  };
  auto one_of = [](const char* name, std::vector<std::string> allowed, const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kString;
    p.fallback = allowed.front();
    p.allowed = std::move(allowed);
    p.doc = doc;
    return p;
  };
  auto count = [](const char* name, int64_t max, nlohmann::json fallback, const char* doc) {
    ParamDecl p;
    p.name = name;
    p.type = ParamType::kInt;
    p.min = 1;
    p.max = max;
    p.fallback = std::move(fallback);
    p.doc = doc;
    return p;
  };
  f.params = {
      flag_param("vector_epilogue",
                 "pypto: write C as fp32 to a workspace that an AIV task casts and writes"),
      ints("l1_tile", 3, 1, nullptr,
           "spmd: the block's L1 tile [m1, n1, k1] (default: the config's tile [m1, k1, n1])"),
      ints("l0_tile", 3, 1, {128, 256, 64},
           "spmd: the L0A/L0B/L0C tile [m0, n0, k0] one cube mmad works on"),
      ints("swizzle", 2, 0, {3, 0},
           "spmd: [offset, direction] of the order C tiles are handed to blocks (catlass "
           "GemmIdentityBlockSwizzle: bands of offset tile rows (0) or columns (1))"),
      one_of("assignment", {"strided", "contiguous"},
             "spmd: block b takes the work at b, b + grid, ... (catlass's basic matmul) or a "
             "contiguous run of it (catlass's L1 full-load and split-K swizzles)"),
      flag_param("shuffle_k",
                 "spmd: block b starts its K loop at k tile b mod (k tiles), so blocks that share "
                 "an operand panel read different lines at once (catlass ENABLE_SHUFFLE_K)"),
      ints("l2_block", 2, 1, nullptr,
           "[tiles_m, tiles_n]: C tiles walked L2 block by L2 block (spmd: the swizzle runs "
           "inside each block; pypto: a 2-D loop / view, one root function per view)"),
      count("k_l1", int64_t{1} << 24, nullptr,
            "pypto: the L1 k step (set_cube_tile_shapes' kL1; default the tile's k, kL0)"),
      one_of("b_layout", {"row_major", "column_major", "nz"},
             "how B is stored: [k, n] ND, [n, k] ND (transposed) or the cube's zN fractal "
             "layout (catlass RowMajor / ColumnMajor / zN)"),
      one_of("l1_resident", {"none", "a", "b"},
             "keep A's rows (or B's columns) over their whole K in L1 across the C tiles that "
             "share them (catlass full-load A; PyPTO L1 reuse)"),
      count("l1_reuse", 1 << 20, 1,
            "pypto: C tiles sharing the resident operand merged into one task (PyPTO "
            "cube_l1_reuse_setting)"),
      count("split_k", 1 << 16, 1, "cut K into this many slices, each its own cube task"),
      one_of("split_k_merge", {"atomic", "vector"},
             "combine split-K partials: atomic adds into C, or AIV tasks summing a workspace"),
      one_of("out_dtype", {"same", "fp16", "bf16", "fp32", "int32"},
             "C's dtype in GM, cast or quantised by the fixpipe (same: the operands', int32 "
             "for int8)"),
  };
  f.program = matmul_program;
  // The operand tiles the rulebook limit counts (cube_task.hpp).
  f.tile_elements = [](const KernelSpec& spec) { return cube_tile_elements(spec.tile); };
  f.tensors_of = [](const Dims& s) {
    return s.size() == 3 ? std::vector<Dims>{{s[0], s[1]}, {s[1], s[2]}, {s[0], s[2]}}
                         : std::vector<Dims>{s};
  };
  return f;
}

}  // namespace tilesim
