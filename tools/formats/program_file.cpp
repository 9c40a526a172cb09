#include "tools/formats/program_file.hpp"

#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "model/error.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

// One op entry as written, before its tensors are resolved.
struct RawOp {
  JsonReader at;
  std::vector<std::string> inputs;
  std::string out;
  int tile = -1, cube = -1, loop = -1;
};

DType read_dtype(const JsonReader& r) {
  try {
    return parse_program_dtype(r.string());
  } catch (const Error& e) {
    r.fail(e.what());
  }
}

// PyPTO's set_cube_tile_shapes([mL0, mL1], [kL0, kL1], [nL0, nL1]): the L1 tile [mL1, kL1, nL1]
// (the C tile and the L1 k step) and the L0 tile of each mmad, each L1 extent whole L0 tiles.
void read_two_level_cube_tile(const JsonReader& r, ProgTile& t) {
  if (r.json().size() != 3)
    r.fail(
        fmt::format("expected [tm, tk, tn] or PyPTO's [[mL0, mL1], [kL0, kL1], [nL0, nL1]], "
                    "got {}",
                    r.json().dump()));
  size_t d = 0;
  for (const JsonReader& pair : r.items()) {
    const auto v = pair.positive_ints(2);
    if (v[1] % v[0] != 0)
      pair.fail(fmt::format("{} L1 {} is not a multiple of its L0 {} (each L1 extent holds whole "
                            "L0 tiles)",
                            "mkn"[d], v[1], v[0]),
                ErrorKind::kLimits);
    t.l0.push_back(v[0]);
    t.dims.push_back(v[1]);
    ++d;
  }
  if (t.l0 == t.dims) t.l0.clear();
}

class Loader {
 public:
  explicit Loader(const JsonReader& doc) : doc_(doc) {}
  Program run();

 private:
  void read_body(const JsonReader& body, int loop);
  void resolve(const RawOp& raw);
  void resolve_alias(const RawOp& raw);

  // The op resolve() is building: its entry, and "op N (name)", which starts its messages.
  struct OpSite {
    const JsonReader& e;
    std::string where;
    [[noreturn]] void fail(const std::string& what) const {
      e.fail(where + ": " + what, ErrorKind::kInput);
    }
  };
  // The steps of resolve(): each checks what it reads and fails naming the op.
  void check_input_count(const OpSite& at, const ProgOp& op) const;
  void check_keys_apply(const OpSite& at, const ProgOp& op) const;
  void require_same_dtype(const OpSite& at, int a, int b) const;
  // Operand t's dtype is one the op's record takes.
  void require_operand_dtype(const OpSite& at, const ProgOp& op, int t) const;
  ProgTensor output_of(const OpSite& at, ProgOp& op) const;
  void elementwise_output(const OpSite& at, const ProgOp& op, ProgTensor& out) const;
  void reduce_output(const OpSite& at, ProgOp& op, ProgTensor& out) const;
  void read_reduce_dims(const OpSite& at, ProgOp& op, int64_t rank) const;
  static MergeMode read_merge(const OpSite& at, const ReduceRecord& reduce);
  void matmul_output(const OpSite& at, ProgOp& op, ProgTensor& out) const;
  void matmul_bias(const OpSite& at, const ProgOp& op, const ProgTensor& out) const;
  static void read_matmul_options(const JsonReader& e, MatmulOptions& o);
  const ProgTensor& tensor(int t) const { return p_.tensors[static_cast<size_t>(t)]; }
  std::string text(int t) const {
    return fmt::format("'{}' {} {}", tensor(t).name, format_dims(tensor(t).shape),
                       dtype_name(tensor(t).dtype));
  }

  // Name -> index of p_.tensors / tiles / loops: a linear search per lookup made the loader
  // quadratic in the program's size.
  int tensor_id(const std::string& n) const {
    const auto it = tensor_ids_.find(n);
    return it == tensor_ids_.end() ? -1 : it->second;
  }
  void add_tensor(ProgTensor t) {
    tensor_ids_.emplace(t.name, static_cast<int>(p_.tensors.size()));
    p_.tensors.push_back(std::move(t));
  }

  const JsonReader& doc_;
  Program p_;
  std::unordered_map<std::string, int> tensor_ids_;
  std::unordered_set<std::string> tile_names_, loop_names_;
  std::unordered_set<int> load_results_;  // tensors a load keeps on chip
  std::vector<RawOp> raw_;
  int vec_tile_ = -1, cube_tile_ = -1;
};

// A matmul op's cube options (MatmulOptions).
constexpr const char* kMatmulKeys[] = {"b_layout",      "l1_resident",     "l1_reuse", "split_k",
                                       "split_k_merge", "vector_epilogue", "swizzle",  "assignment",
                                       "l2_block",      "shuffle_k"};

void Loader::read_body(const JsonReader& body, int loop) {
  if (!body.json().is_array() || body.json().empty())
    body.fail("expected a non-empty array of ops, tile shapes and loops");
  for (const JsonReader& e : body.items()) {
    e.expect_object();
    for (const char* set : {"set_vec_tile_shapes", "set_cube_tile_shapes"}) {
      if (!e.has(set)) continue;
      e.check_keys({set, "name"});
      const bool cube = std::string(set) == "set_cube_tile_shapes";
      ProgTile t;
      t.cube = cube;
      if (cube && e.at(set).json().is_array() && !e.at(set).json().empty() &&
          e.at(set).json()[0].is_array())
        read_two_level_cube_tile(e.at(set), t);
      else
        t.dims = e.at(set).positive_ints(cube ? 3 : 0);
      t.name = e.string_or("name", fmt::format("{}{}", cube ? "cube" : "vec", p_.tiles.size()));
      if (!tile_names_.insert(t.name).second)
        e.at("name").fail(
            fmt::format("tile name '{}' is used twice (each tile shape is named once)", t.name));
      (cube ? cube_tile_ : vec_tile_) = static_cast<int>(p_.tiles.size());
      p_.tiles.push_back(t);
    }
    if (e.has("set_vec_tile_shapes") || e.has("set_cube_tile_shapes")) continue;
    if (e.has("loop")) {
      e.check_keys({"loop", "axis", "loop_count", "body"});
      int depth = 1;
      for (int up = loop; up >= 0; up = p_.loops[static_cast<size_t>(up)].parent) ++depth;
      if (depth > kMaxLoopDepth)
        e.fail(fmt::format("loop '{}' is nested {} deep; at most {} loops nest (each innermost "
                           "chunk is a root function)",
                           e.at("loop").string(), depth, kMaxLoopDepth),
               ErrorKind::kLimits);
      ProgLoop l;
      l.name = e.at("loop").string();
      if (!loop_names_.insert(l.name).second)
        e.at("loop").fail("loop name '" + l.name + "' is used twice (each loop is named once)");
      l.axis = static_cast<int>(e.at("axis").integer(0, 4));
      l.loop_count = e.at("loop_count").integer(1, int64_t{1} << 24);
      l.parent = loop;
      for (int up = loop; up >= 0; up = p_.loops[static_cast<size_t>(up)].parent)
        if (p_.loops[static_cast<size_t>(up)].axis == l.axis)
          e.at("axis").fail(
              fmt::format("loop '{}' cuts axis {}, which its enclosing loop '{}' "
                          "already cuts (nested loops cut different axes)",
                          l.name, l.axis, p_.loops[static_cast<size_t>(up)].name));
      p_.loops.push_back(l);
      read_body(e.at("body"), static_cast<int>(p_.loops.size()) - 1);
      continue;
    }
    if (!e.has("op"))
      e.fail(
          "expected an op ({\"op\": ...}), a loop ({\"loop\": ...}) or set_vec_tile_shapes / "
          "set_cube_tile_shapes");
    RawOp r{e, {}, "", vec_tile_, cube_tile_, loop};
    const std::string name = e.at("op").string();
    if (name == "view" || name == "reshape") {  // aliases: no op, no copy (resolve_alias)
      e.check_keys(name == "view"
                       ? std::vector<std::string>{"op", "inputs", "out", "offsets", "shape"}
                       : std::vector<std::string>{"op", "inputs", "out", "shape"});
      for (const JsonReader& i : e.at("inputs").items()) r.inputs.push_back(i.string());
      r.out = e.at("out").string();
      raw_.push_back(r);
      continue;
    }
    if (!find_op_record(name))
      e.at("op").fail(
          fmt::format("unknown op '{}' (known: {})", name, fmt::join(op_record_names(), ", ")));
    std::vector<std::string> keys = {
        "op",         "inputs",   "out",       "scalar",        "dim",
        "keepdim",    "merge",    "dtype",     "out_dtype",     "transpose_b",
        "psg",        "dest",     "spmd_rows", "apply_in_task", "bank_conflict_free",
        "row_reduce", "c0_stride"};
    keys.insert(keys.end(), std::begin(kMatmulKeys), std::end(kMatmulKeys));
    e.check_keys(keys);
    for (const JsonReader& i : e.at("inputs").items()) r.inputs.push_back(i.string());
    r.out = e.at("out").string();
    raw_.push_back(r);
  }
}

// A view or reshape: the output names part or all of its input's bytes in another shape; no op
// runs (PyPTO's view of a tile and reshape of a contiguous one move no data). A view feeds
// vector ops (their copies read its part at the parent's strides); a reshape, any op.
void Loader::resolve_alias(const RawOp& raw) {
  const JsonReader& e = raw.at;
  const std::string kind = e.at("op").string();
  const auto fail = [&](const std::string& m) {
    e.fail(fmt::format("{} '{}': {}", kind, raw.out, m));
  };
  if (raw.inputs.size() != 1) fail(fmt::format("takes 1 input (got {})", raw.inputs.size()));
  const int x = tensor_id(raw.inputs[0]);
  if (load_results_.count(x))
    fail(fmt::format("'{}' is a load's result, which stays on chip", raw.inputs[0]));
  ProgTensor out;
  out.name = raw.out;
  out.dtype = tensor(x).dtype;
  out.alias_of = x;
  out.shape = e.at("shape").positive_ints();
  const Dims& in = tensor(x).shape;
  if (kind == "view") {
    for (const JsonReader& o : e.at("offsets").items())
      out.view_offset.push_back(o.integer(0, int64_t{1} << 40));
    bool fits = out.view_offset.size() == in.size() && out.shape.size() == in.size();
    for (size_t d = 0; fits && d < in.size(); ++d)
      fits = out.view_offset[d] + out.shape[d] <= in[d];
    if (!fits)
      fail(fmt::format("offsets {} and shape {} are not a part of {} (same rank, inside it)",
                       format_dims(out.view_offset), format_dims(out.shape), text(x)));
  } else {
    if (product(out.shape) != product(in))
      fail(fmt::format("{} has {} elements, {} holds {}", format_dims(out.shape),
                       product(out.shape), text(x), product(in)));
    if (tensor(x).is_view())
      fail(fmt::format("{} is a view, whose rows are not contiguous: reshape the tensor it views",
                       text(x)));
  }
  if (tensor_id(out.name) >= 0) throw InternalError("program: alias defined twice");
  add_tensor(out);
}

void Loader::resolve(const RawOp& raw) {
  const JsonReader& e = raw.at;
  const std::string kind = e.at("op").string();
  if (kind == "view" || kind == "reshape") return resolve_alias(raw);
  ProgOp op;
  op.index = static_cast<int>(p_.ops.size());  // aliases make no op
  op.name = kind;
  op.info = find_op_record(op.name);
  op.loop = raw.loop;
  op.tile = op.info->kind == OpKind::kMatmul ? raw.cube : raw.tile;
  const OpSite at{e, op.where()};
  for (const std::string& n : raw.inputs) {
    op.in.push_back(tensor_id(n));
    if (load_results_.count(op.in.back()))
      at.fail(
          fmt::format("'{}' is a load's result, which stays on chip: no op reads it (read the "
                      "load's input instead)",
                      n));
  }
  check_input_count(at, op);
  const OpKind kind_of = op.info->kind;
  if (kind_of == OpKind::kMatmul || kind_of == OpKind::kGather || kind_of == OpKind::kLoad ||
      kind_of == OpKind::kTranspose)
    for (int t : op.in)
      if (tensor(t).is_view())
        at.fail(
            fmt::format("{} is a view at an offset; views feed vector ops (this op's copies "
                        "take whole tensors)",
                        text(t)));
  if (e.has("scalar")) {
    if (op.info->kind != OpKind::kBinary)
      at.fail("\"scalar\" applies to binary ops (add, sub, mul, ...)");
    op.scalar = e.at("scalar").number();
  }
  check_keys_apply(at, op);
  if (e.has("bank_conflict_free")) op.bank_conflict_free = e.at("bank_conflict_free").boolean();
  if (e.has("c0_stride")) op.c0_stride = e.at("c0_stride").integer(1, 1 << 20);
  if (e.has("row_reduce"))
    op.block_reduce = e.at("row_reduce").one_of({"whole", "block"}) == "block";
  if (e.has("psg")) {
    op.psg = e.at("psg").string();
    if (op.psg.empty()) e.at("psg").fail("expected a non-empty name for the stage this op opens");
  }
  ProgTensor out = output_of(at, op);
  out.name = raw.out;
  if (tensor_id(out.name) >= 0) throw InternalError("program: output defined twice");
  op.out = static_cast<int>(p_.tensors.size());
  if (op.info->kind == OpKind::kLoad) load_results_.insert(op.out);
  add_tensor(out);
  p_.ops.push_back(op);
}

void Loader::check_input_count(const OpSite& at, const ProgOp& op) const {
  const OpKind kind = op.info->kind;
  const bool scalar = at.e.has("scalar");
  const size_t want =
      kind == OpKind::kBinary && scalar ? 1 : static_cast<size_t>(op_inputs(*op.info));
  if (kind == OpKind::kBinary && op.info->n_ary && !scalar) {
    if (op.in.size() < 2)
      at.fail(fmt::format("takes 2 or more inputs (got {}; {} folds them left to right)",
                          op.in.size(), op.name));
  } else if (kind == OpKind::kMatmul && op.in.size() == 3) {
    // A, B and a bias row (PyPTO's extend_params bias_tensor): matmul_output checks it.
  } else if (op.in.size() != want) {
    at.fail(fmt::format("takes {} input{} (got {}){}", want, want == 1 ? "" : "s", op.in.size(),
                        kind == OpKind::kMatmul ? "; a third is the bias row [1, n]" : ""));
  }
}

// Keys that only some kinds of op take ("scalar" is checked as it is read).
void Loader::check_keys_apply(const OpSite& at, const ProgOp& op) const {
  const JsonReader& e = at.e;
  const OpKind kind = op.info->kind;
  for (const char* key : {"keepdim", "merge", "spmd_rows", "apply_in_task", "row_reduce"})
    if (e.has(key) && kind != OpKind::kReduce)
      at.fail(std::string("\"") + key + "\" applies to reductions");
  if (e.has("dim") && kind != OpKind::kReduce && kind != OpKind::kScan)
    at.fail("\"dim\" applies to reductions and cumsum");
  if (e.has("dtype") && kind != OpKind::kCast) at.fail("\"dtype\" applies to cast");
  if (e.has("out_dtype") && kind != OpKind::kMatmul) at.fail("\"out_dtype\" applies to matmul");
  if (e.has("transpose_b") && kind != OpKind::kMatmul) at.fail("\"transpose_b\" applies to matmul");
  for (const char* key : kMatmulKeys)
    if (e.has(key) && kind != OpKind::kMatmul)
      at.fail(std::string("\"") + key + "\" applies to matmul");
  if (e.has("dest") && kind != OpKind::kLoad) at.fail("\"dest\" applies to load");
  if (e.has("bank_conflict_free") && (kind != OpKind::kBinary || op.in.size() != 2))
    at.fail("\"bank_conflict_free\" applies to binary ops of two tensors (add, sub, mul, ...)");
  if (e.has("c0_stride") && op.info->name != std::string_view(kNd2nzOp))
    at.fail(fmt::format("\"c0_stride\" applies to {} (the ND -> NZ scatter in UB)", kNd2nzOp));
}

void Loader::require_same_dtype(const OpSite& at, int a, int b) const {
  if (tensor(a).dtype != tensor(b).dtype)
    at.fail(fmt::format("dtype mismatch: {} and {} (cast one first)", text(a), text(b)));
}

void Loader::require_operand_dtype(const OpSite& at, const ProgOp& op, int t) const {
  const DType d = tensor(t).dtype;
  if (!op.info->operands.contains(d))
    at.fail(fmt::format("dtype mismatch: {} is {} tensor; {} takes {} (cast it first)", text(t),
                        d == DType::kInt8 || d == DType::kInt32
                            ? std::string("an integer")
                            : fmt::format("a {}", dtype_name(d)),
                        op.name, op.info->operands.text()));
}

// The op's output (its name aside): shape and dtype by the kind of op, once its inputs are
// checked to fit it.
ProgTensor Loader::output_of(const OpSite& at, ProgOp& op) const {
  const JsonReader& e = at.e;
  const ProgTensor& x = tensor(op.in[0]);
  ProgTensor out;
  out.dtype = op.info->out == OutDType::kInt32 ? DType::kInt32 : x.dtype;
  // Every value operand (where's condition and gather's index have their own rules).
  const size_t first = op.info->kind == OpKind::kWhere ? 1 : 0;
  const bool index_last =
      op.info->kind == OpKind::kGather || (op.info->reduction && op.info->reduction->picks);
  const size_t last = index_last                         ? 1
                      : op.info->kind == OpKind::kMatmul ? 2  // a bias has its own rule
                                                         : op.in.size();
  for (size_t i = first; i < last; ++i) require_operand_dtype(at, op, op.in[i]);
  switch (op.info->kind) {
    case OpKind::kUnary:
      out.shape = x.shape;
      break;
    case OpKind::kLoad:
      out.shape = x.shape;
      if (e.has("dest"))
        op.dest = e.at("dest").one_of({"ub", "l1"}) == "l1" ? MemSpace::kL1 : MemSpace::kUb;
      break;
    case OpKind::kRotateHalf:
      if (x.shape.back() % 2 != 0)
        at.fail(fmt::format("{}: rotate_half swaps the halves of the last dim, which must be even",
                            text(op.in[0])));
      out.shape = x.shape;
      break;
    case OpKind::kBinary:
    case OpKind::kWhere:
      elementwise_output(at, op, out);
      break;
    case OpKind::kCast:
      out.shape = x.shape;
      out.dtype = read_dtype(e.at("dtype"));
      break;
    case OpKind::kScan: {
      const auto rank = static_cast<int64_t>(x.shape.size());
      if (!e.has("dim")) at.fail("\"dim\": missing (the dim to scan)");
      const int64_t v = e.at("dim").integer(-rank, rank - 1);
      op.dims = {static_cast<int>(v < 0 ? v + rank : v)};
      out.shape = x.shape;
      break;
    }
    case OpKind::kReduce:
      reduce_output(at, op, out);
      break;
    case OpKind::kTranspose:
      if (x.shape.size() < 2)
        at.fail(fmt::format("{} has rank 1; transpose swaps the last two dims", text(op.in[0])));
      out.shape = x.shape;
      std::swap(out.shape[out.shape.size() - 1], out.shape[out.shape.size() - 2]);
      break;
    case OpKind::kGather: {
      const ProgTensor& idx = tensor(op.in[1]);
      if (idx.dtype != DType::kInt32 || idx.shape.size() != 1)
        at.fail(fmt::format("dtype mismatch: the index {} must be a rank-1 int32 tensor of rows",
                            text(op.in[1])));
      out.shape = x.shape;
      out.shape[0] = idx.shape[0];
      break;
    }
    case OpKind::kMatmul:
      matmul_output(at, op, out);
      break;
  }
  return out;
}

// A binary op or where (whose first input, the condition, may be of any dtype): float inputs of
// one dtype, their shapes broadcast.
void Loader::elementwise_output(const OpSite& at, const ProgOp& op, ProgTensor& out) const {
  const size_t first = op.info->kind == OpKind::kWhere ? 1 : 0;
  for (size_t i = first + 1; i < op.in.size(); ++i) require_same_dtype(at, op.in[first], op.in[i]);
  Dims s = tensor(op.in[0]).shape;
  for (size_t i = 1; i < op.in.size(); ++i) {
    const auto b = broadcast_shapes(s, tensor(op.in[i]).shape);
    if (!b)
      at.fail(
          fmt::format("shape mismatch: {} and {} do not broadcast (numpy rules: right-aligned, "
                      "each dim equal or 1)",
                      text(op.in[i - 1]), text(op.in[i])));
    s = *b;
  }
  out.shape = s;
  out.dtype = tensor(op.in[first]).dtype;
}

// A reduction: its dims, keepdim and merge read, the reduced dims dropped (or kept as 1).
void Loader::reduce_output(const OpSite& at, ProgOp& op, ProgTensor& out) const {
  const JsonReader& e = at.e;
  const ProgTensor& x = tensor(op.in[0]);
  const auto rank = static_cast<int64_t>(x.shape.size());
  read_reduce_dims(at, op, rank);
  op.keepdim = e.boolean_or("keepdim", false);
  const ReduceRecord& red = *op.info->reduction;
  if ((red.gives_index || red.picks) && op.dims.size() != 1)
    e.at("dim").fail(at.where + ": " + op.name + " takes one dim (the index is along it)");
  if (red.picks) {
    Dims rows = x.shape;
    rows[static_cast<size_t>(op.dims[0])] = 1;
    const ProgTensor& idx = tensor(op.in[1]);
    if (idx.dtype != DType::kInt32 || idx.shape != rows)
      at.fail(
          fmt::format("the index {} must be int32 of shape {} (one position along dim {} per "
                      "row of {})",
                      text(op.in[1]), format_dims(rows), op.dims[0], text(op.in[0])));
  }
  if (e.has("merge") && e.at("merge").string() == "online") {
    // Online softmax carried into its consumers (flash attention): the statistic is kept per
    // query row as a running max and sum while the row's key tiles stream by
    // (kernels/program/program.cpp fuse_online checks the pattern it needs).
    if (!red.online)
      e.at("merge").fail(fmt::format(
          "{}: merge \"online\" carries a log-sum-exp's running max and sum into the ops after "
          "it (flash attention); {} has no such statistic (allowed for {}: in_task, chain, tree, "
          "atomic, auto)",
          at.where, op.name, op.name));
    op.online = true;
  } else if (e.has("merge")) {
    op.merge = read_merge(at, red);
  }
  if (e.has("apply_in_task")) op.apply_in_task = e.at("apply_in_task").boolean();
  if (e.has("spmd_rows"))
    op.spmd_rows =
        *enum_named(kSpmdRowsNames, e.at("spmd_rows").one_of(enum_names(kSpmdRowsNames)));
  if (op.spmd_rows == SpmdRows::kTiles && !op.info->reduction->merges_atomically)
    at.fail("\"spmd_rows\": \"tiles\" adds each sub-tile's partial atomically: sum, amax or amin");
  for (int64_t d = 0; d < rank; ++d) {
    const bool red = std::find(op.dims.begin(), op.dims.end(), d) != op.dims.end();
    if (!red)
      out.shape.push_back(x.shape[static_cast<size_t>(d)]);
    else if (op.keepdim)
      out.shape.push_back(1);
  }
  if (out.shape.empty()) out.shape.push_back(1);
  if (!op.keepdim && static_cast<int64_t>(op.dims.size()) == rank)
    at.fail("reducing every dim needs \"keepdim\": true (a tensor keeps at least one dim)");
}

// "dim": one dim or an array of them, each in -rank..rank-1, into op.dims (sorted, 0..rank-1).
void Loader::read_reduce_dims(const OpSite& at, ProgOp& op, int64_t rank) const {
  const JsonReader& e = at.e;
  std::vector<JsonReader> dims;
  if (!e.has("dim")) at.fail("\"dim\": missing (the dim or dims to reduce)");
  if (e.at("dim").json().is_array())
    dims = e.at("dim").items();
  else
    dims.push_back(e.at("dim"));
  for (const JsonReader& d : dims) {
    const int64_t v = d.integer(-rank, rank - 1);
    op.dims.push_back(static_cast<int>(v < 0 ? v + rank : v));
  }
  std::sort(op.dims.begin(), op.dims.end());
  if (std::adjacent_find(op.dims.begin(), op.dims.end()) != op.dims.end() || op.dims.empty())
    e.at("dim").fail(at.where + ": each dim once, at least one");
}

// A reduction's "merge".
MergeMode Loader::read_merge(const OpSite& at, const ReduceRecord& reduce) {
  const std::string m = at.e.at("merge").string();
  if (m != "in_task" && m != "chain" && m != "tree" && m != "atomic" && m != "auto")
    at.e.at("merge").fail(fmt::format(
        "{}: unknown merge '{}' (allowed: in_task, chain, tree, atomic, auto; online for "
        "logsumexp)",
        at.where, m));
  // auto: as the reduce families merge under pypto (reduction_program.cpp make_phase).
  return m != "auto"                ? parse_merge_mode(m)
         : reduce.merges_atomically ? MergeMode::kAtomic
                                    : MergeMode::kTree;
}

// A matmul: A [..., m, k] @ B [..., k, n] (B [..., n, k] with transpose_b) of one dtype. A batch
// dim of 1 in one operand broadcasts to the other's (PyPTO's matmul: python/pypto/op/matmul.py,
// "(1 x n x k) and (b x k x m) -> (b x n x m)"; tensor_ops/matmul.cpp BroadcastShapes).
void Loader::matmul_output(const OpSite& at, ProgOp& op, ProgTensor& out) const {
  const JsonReader& e = at.e;
  const ProgTensor& x = tensor(op.in[0]);
  const ProgTensor& b = tensor(op.in[1]);
  require_same_dtype(at, op.in[0], op.in[1]);
  op.transpose_b = e.boolean_or("transpose_b", false);
  const size_t r = x.shape.size();
  const size_t kd = op.transpose_b ? r - 1 : r - 2;  // B's k dim
  const auto batch_ok = [&] {
    for (size_t d = 0; d + 2 < r; ++d)
      if (x.shape[d] != b.shape[d] && x.shape[d] != 1 && b.shape[d] != 1) return false;
    return true;
  };
  if (r < 2 || b.shape.size() != r || x.shape[r - 1] != b.shape[kd] || !batch_ok())
    at.fail(
        fmt::format("shape mismatch: {} @ {}{} (A [..., m, k] and B [..., {}] of one rank, "
                    "equal k, each batch dim equal or 1 in one of them)",
                    text(op.in[0]), text(op.in[1]), op.transpose_b ? "^T" : "",
                    op.transpose_b ? "n, k" : "k, n"));
  out.shape = x.shape;
  for (size_t d = 0; d + 2 < r; ++d) out.shape[d] = std::max(x.shape[d], b.shape[d]);
  out.shape.back() = b.shape[op.transpose_b ? r - 2 : r - 1];
  out.dtype = e.has("out_dtype") ? read_dtype(e.at("out_dtype")) : DType::kFp32;
  read_matmul_options(e, op.mm);
  if (op.in.size() == 3) matmul_bias(at, op, out);
  if (op.mm.b_nz && op.transpose_b)
    at.fail(
        "\"b_layout\": \"nz\" is B [..., k, n] in the cube's fractal layout; leave "
        "\"transpose_b\" out");
}

// A matmul's bias (its third input): a row [1, n] added to C in the cube (PyPTO's
// extend_params bias_tensor, cube_operation_impl.cpp CheckBiasParam / LinkBias: GM -> L1 -> the
// bias table, which the first mmad of each C tile starts from). Its dtype: fp32 for fp32 / bf16
// inputs, fp32 or fp16 for fp16, int32 for int8; PyPTO refuses it with GM accumulation (split K).
void Loader::matmul_bias(const OpSite& at, const ProgOp& op, const ProgTensor& out) const {
  const ProgTensor& bias = tensor(op.in[2]);
  const DType in = tensor(op.in[0]).dtype;
  if (bias.shape.size() != 2 || bias.shape[0] != 1 || bias.shape[1] != out.shape.back())
    at.fail(fmt::format("shape mismatch: the bias {} is a row [1, n] of C's n ({})", text(op.in[2]),
                        out.shape.back()));
  const bool ok = in == DType::kInt8   ? bias.dtype == DType::kInt32
                  : in == DType::kFp16 ? bias.dtype == DType::kFp32 || bias.dtype == DType::kFp16
                                       : bias.dtype == DType::kFp32;
  if (!ok)
    at.fail(fmt::format("dtype mismatch: the bias {} of a {} matmul is {} (PyPTO's CheckBiasParam)",
                        text(op.in[2]), dtype_name(in),
                        in == DType::kInt8   ? "int32"
                        : in == DType::kFp16 ? "fp32 or fp16"
                                             : "fp32"));
  if (op.mm.split_k > 1)
    at.fail("a bias with split_k: PyPTO adds a bias only without GM accumulation");
}

// The matmul's cube options (the matmul family's params of the same names).
void Loader::read_matmul_options(const JsonReader& e, MatmulOptions& o) {
  if (e.has("b_layout")) o.b_nz = e.at("b_layout").one_of({"nd", "nz"}) == "nz";
  if (e.has("l1_resident"))
    o.l1_resident =
        *enum_named(kL1ResidentNames, e.at("l1_resident").one_of(enum_names(kL1ResidentNames)));
  o.l1_reuse = e.integer_or("l1_reuse", 1, 1, 1 << 20);
  o.split_k = e.integer_or("split_k", 1, 1, 1 << 16);
  if (e.has("split_k_merge"))
    o.split_k_atomic = e.at("split_k_merge").one_of({"atomic", "vector"}) == "atomic";
  o.vector_epilogue = e.boolean_or("vector_epilogue", false);
  if (e.has("swizzle")) {
    const JsonReader sw = e.at("swizzle");
    if (!sw.json().is_array() || sw.json().size() != 2)
      sw.fail("expected [offset, direction] (offset >= 1, direction 0 or 1)");
    o.swizzle = {sw.items()[0].integer(1, 1 << 20), sw.items()[1].integer(0, 1)};
  }
  if (e.has("assignment"))
    o.strided = e.at("assignment").one_of({"contiguous", "strided"}) == "strided";
  o.shuffle_k = e.boolean_or("shuffle_k", false);
  if (e.has("l2_block")) o.l2_block = e.at("l2_block").positive_ints(2);
}

// Tarjan's strongly connected components of the graph `succ` (vertex -> its successors),
// iteratively: component[v] is the same for vertices on a common cycle.
std::vector<size_t> strongly_connected(const std::vector<std::vector<size_t>>& succ) {
  const size_t n = succ.size();
  constexpr size_t kUnseen = static_cast<size_t>(-1);
  std::vector<size_t> index(n, kUnseen), low(n, 0), component(n, kUnseen), stack;
  std::vector<bool> on_stack(n, false);
  size_t next = 0, components = 0;
  std::vector<std::pair<size_t, size_t>> frames;  // (vertex, next successor to visit)
  for (size_t root = 0; root < n; ++root) {
    if (index[root] != kUnseen) continue;
    frames.emplace_back(root, 0);
    index[root] = low[root] = next++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!frames.empty()) {
      auto& [v, k] = frames.back();
      if (k < succ[v].size()) {
        const size_t w = succ[v][k++];
        if (index[w] == kUnseen) {
          index[w] = low[w] = next++;
          stack.push_back(w);
          on_stack[w] = true;
          frames.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        size_t w = kUnseen;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component[w] = components;
        } while (w != v);
        ++components;
      }
      const size_t done = v;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
    }
  }
  return component;
}

Program Loader::run() {
  doc_.check_keys({"program", "description", "inputs", "outputs", "body", "ub_plan"});
  p_.origin = doc_.origin();
  p_.name = doc_.string_or("program", "program");
  if (const auto plan = doc_.find("ub_plan"))
    p_.ub_plan = *enum_named(kUbPlanNames, plan->one_of(enum_names(kUbPlanNames)));
  for (const JsonReader& i : doc_.at("inputs").items()) {
    i.check_keys({"name", "shape", "dtype", "l2_bypass", "resident"});
    ProgTensor t;
    t.name = i.at("name").string();
    t.shape = i.at("shape").positive_ints();
    if (t.shape.size() > 5) i.at("shape").fail("at most 5 dims are supported", ErrorKind::kLimits);
    t.dtype = read_dtype(i.at("dtype"));
    t.input = true;
    if (i.has("l2_bypass")) t.l2_bypass = i.at("l2_bypass").boolean();
    if (i.has("resident")) t.resident = i.at("resident").boolean();
    if (tensor_id(t.name) >= 0) i.at("name").fail("tensor '" + t.name + "' is declared twice");
    add_tensor(t);
  }
  read_body(doc_.at("body"), -1);
  if (raw_.empty()) doc_.at("body").fail("no ops (a program computes at least one op)");
  // Definitions first: an op may only read program inputs and outputs of earlier ops.
  std::map<std::string, size_t> defined_by;
  for (size_t i = 0; i < raw_.size(); ++i) {
    const RawOp& r = raw_[i];
    const std::string where = fmt::format("op {} ({})", i, r.at.at("op").string());
    if (tensor_id(r.out) >= 0)
      r.at.at("out").fail(
          fmt::format("{}: output '{}' is a program input (each tensor is written "
                      "once)",
                      where, r.out));
    if (const auto it = defined_by.find(r.out); it != defined_by.end())
      r.at.at("out").fail(
          fmt::format("{}: output '{}' is already written by op {} (each tensor is "
                      "written once)",
                      where, r.out, it->second));
    defined_by[r.out] = i;
  }
  // Ops that depend on each other in a circle share a strongly connected component of the
  // reads-from graph (linear time, no recursion: a 10^5-op chain must not blow the stack).
  std::vector<std::vector<size_t>> reads(raw_.size());
  for (size_t i = 0; i < raw_.size(); ++i)
    for (const std::string& n : raw_[i].inputs)
      if (const auto it = defined_by.find(n); it != defined_by.end())
        reads[i].push_back(it->second);
  const std::vector<size_t> component = strongly_connected(reads);
  for (size_t i = 0; i < raw_.size(); ++i) {
    const RawOp& r = raw_[i];
    const std::string where = fmt::format("op {} ({})", i, r.at.at("op").string());
    for (const std::string& n : r.inputs) {
      if (tensor_id(n) >= 0) continue;
      const auto it = defined_by.find(n);
      if (it == defined_by.end()) {
        std::vector<std::string> known;
        for (const auto& t : p_.tensors) known.push_back(t.name);
        for (size_t j = 0; j < i; ++j) known.push_back(raw_[j].out);
        r.at.at("inputs").fail(fmt::format("{}: unknown tensor '{}' (defined before it: {})", where,
                                           n, fmt::join(known, ", ")));
      }
      if (it->second == i || component[it->second] == component[i])
        r.at.at("inputs").fail(
            fmt::format("{}: cycle: it reads '{}', which is written by op {} from "
                        "this op's output",
                        where, n, it->second));
      if (it->second > i)
        r.at.at("inputs").fail(
            fmt::format("{}: '{}' is used before it is defined (op {} writes it; "
                        "ops run in program order)",
                        where, n, it->second));
    }
  }
  for (const RawOp& r : raw_) resolve(r);
  const auto outs = doc_.at("outputs");
  if (!outs.json().is_array() || (outs.json().empty() && load_results_.empty()))
    outs.fail(
        "expected a non-empty array of output tensors (empty only when the program's work "
        "is loads)");
  for (const JsonReader& o : outs.items()) {
    const std::string name = o.json().is_string() ? o.string() : o.at("name").string();
    const int t = tensor_id(name);
    if (t < 0 || p_.tensors[static_cast<size_t>(t)].input)
      o.fail(fmt::format("output '{}' is not written by any op", name));
    if (load_results_.count(t))
      o.fail(
          fmt::format("output '{}' is a load's result, which stays on chip (never stored)", name));
    if (p_.tensors[static_cast<size_t>(t)].alias_of >= 0)
      o.fail(
          fmt::format("output '{}' is a view or reshape, which moves no data: name an op's "
                      "output",
                      name));
    ProgTensor& x = p_.tensors[static_cast<size_t>(t)];
    if (o.json().is_object()) {
      o.check_keys({"name", "shape", "dtype"});
      if (o.has("shape") && o.at("shape").positive_ints() != x.shape)
        o.at("shape").fail(fmt::format("shape mismatch: '{}' is declared {} but its op computes {}",
                                       name, format_dims(o.at("shape").positive_ints()),
                                       format_dims(x.shape)));
      if (o.has("dtype") && read_dtype(o.at("dtype")) != x.dtype)
        o.at("dtype").fail(fmt::format("dtype mismatch: '{}' is declared {} but its op computes {}",
                                       name, o.at("dtype").string(), dtype_name(x.dtype)));
    }
    x.output = true;
  }
  plan_stages(p_);  // needs no hardware: tile ranks, split reductions and loop axes fail at load
  return p_;
}

}  // namespace

Program program_from_json(const JsonReader& doc) {
  return Loader(doc).run();
}

Program load_program(const std::filesystem::path& file) {
  const auto json = JsonReader::parse_file(file, "tile program");
  return program_from_json(JsonReader(json, file.string()));
}

int named_tile(const Program& p, const std::string& name, const JsonReader& at) {
  const int id = p.tile_id(name);
  if (id < 0) {
    std::vector<std::string> names;
    for (const auto& x : p.tiles) names.push_back(x.name);
    at.fail(fmt::format("no tile named '{}' in program '{}' (its tiles: {})", name, p.name,
                        fmt::join(names, ", ")));
  }
  return id;
}

KernelSpec program_spec_from_json(const JsonReader& doc, const std::set<std::string>& caller_keys) {
  std::vector<std::string> allowed = {"program", "program_tile", "program_tiles", "program_loop",
                                      "tile",    "loop_count",   "partition",     "buffer_count"};
  allowed.insert(allowed.end(), caller_keys.begin(), caller_keys.end());
  doc.check_keys(allowed);
  const JsonReader src = doc.at("program");
  Program p;
  if (src.json().is_string()) {
    const std::filesystem::path file = resolve_config_path(doc.origin(), src.string());
    if (!std::filesystem::exists(file)) src.fail("no such file: " + file.string());
    p = load_program(file);
  } else if (src.json().is_object()) {
    p = program_from_json(src);
  } else {
    src.fail("expected a program file path or an inline program object");
  }
  KernelSpec s;
  s.op = "program:" + p.name;
  // The knobs: a named tile (default: the first one an op uses) and loop (default: the first).
  int tile = -1;
  if (const auto t = doc.find("program_tile")) {
    tile = named_tile(p, t->string(), *t);
  } else {
    for (const ProgOp& op : p.ops)
      if (op.tile >= 0) {
        tile = op.tile;
        break;
      }
  }
  const ProgOp* user = nullptr;
  for (const ProgOp& op : p.ops)
    if (op.tile == tile) {
      user = &op;
      break;
    }
  if (!user)
    doc.at("program_tile").fail("no op uses this tile (name a tile shape in force at some op)");
  s.program_tile = p.tiles[static_cast<size_t>(tile)].name;
  s.shape = iteration_shape(p, *user);
  // A cube tile [tm, tk, tn] tiles its matmul's [m, k, n]; the batch dims are walked outside it.
  if (p.tiles[static_cast<size_t>(tile)].cube) s.shape.erase(s.shape.begin(), s.shape.end() - 3);
  s.dtype = p.tensors[static_cast<size_t>(user->in[0])].dtype;
  if (s.dtype == DType::kInt8 || s.dtype == DType::kInt32) s.dtype = DType::kFp32;
  s.tile = p.tiles[static_cast<size_t>(tile)].dims;
  if (const auto t = doc.find("tile")) {
    s.tile = t->positive_ints(p.tiles[static_cast<size_t>(tile)].dims.size());
    p.tiles[static_cast<size_t>(tile)].dims = s.tile;
  }
  // The program's other named tiles, one shape each (a sweep's candidates.program_tiles gives
  // several): how a sweep's recommendation runs again.
  if (const auto named = doc.find("program_tiles"))
    named->for_each_member([&](const std::string& name, const JsonReader& v) {
      const int id = named_tile(p, name, v);
      if (id == tile)
        v.fail(fmt::format("'{}' is the run's program_tile: its shape goes in \"tile\"", name));
      ProgTile& t = p.tiles[static_cast<size_t>(id)];
      t.dims = v.positive_ints(t.dims.size());
      s.program_tiles.emplace_back(name, t.dims);
    });
  int loop = p.loops.empty() ? -1 : 0;
  if (const auto l = doc.find("program_loop")) {
    loop = p.loop_id(l->string());
    if (loop < 0) l->fail(fmt::format("no loop named '{}' in program '{}'", l->string(), p.name));
  }
  if (loop >= 0) {
    ProgLoop& l = p.loops[static_cast<size_t>(loop)];
    s.program_loop = l.name;
    l.loop_count = doc.integer_or("loop_count", l.loop_count, 1);
    s.loop_count = l.loop_count;
    if (l.axis < static_cast<int>(s.shape.size())) s.loop_axis = l.axis;
  } else if (doc.has("loop_count")) {
    doc.at("loop_count").fail("the program has no loop (add a {\"loop\": ...} region)");
  }
  s.buffer_count = static_cast<int>(doc.integer_or("buffer_count", s.buffer_count, 1, 8));
  if (const auto part = doc.find("partition")) read_partition(*part, s);
  plan_stages(p);  // the tile and loop as configured; a sweep's candidates are checked when lowered
  s.program = std::make_shared<const Program>(std::move(p));
  check_work_size(s, doc.origin());
  return s;
}

}  // namespace tilesim
