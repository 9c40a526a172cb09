#include "kernels/spec/spec_reader.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/spec/registry.hpp"
#include "model/error.hpp"
#include "model/json_reader.hpp"

namespace tilesim {

namespace {

// The reduction dim(s): one integer or an array, each normalised into 0..rank-1.
std::vector<int> read_dims(const JsonReader& d, int64_t rank) {
  std::vector<JsonReader> raw;
  if (d.json().is_array())
    raw = d.items();
  else
    raw.push_back(d);
  std::vector<int> dims;
  for (const auto& x : raw) {
    if (!x.json().is_number_integer()) d.fail("expected an integer or an array of integers");
    const auto v = x.json().get<int64_t>();
    if (v < -rank || v >= rank)
      d.fail(fmt::format("{} is out of range for a rank-{} shape (allowed {}..{})", v, rank, -rank,
                         rank - 1));
    dims.push_back(static_cast<int>(v < 0 ? v + rank : v));
  }
  return dims;
}

// The spec's dtype, one of those its op's record takes (the float types for a family's own op).
DType read_dtype(const JsonReader& r, const std::string& op, DTypeSet allowed) {
  const std::string list = allowed.text();
  if (!r.json().is_string()) r.fail(fmt::format("expected a string ({})", list));
  DType t{};
  try {
    t = parse_program_dtype(r.string());
  } catch (const Error&) {
    r.fail(fmt::format("unknown dtype '{}' (allowed: {})", r.string(), list));
  }
  if (!allowed.contains(t))
    r.fail(fmt::format("{} does not take {} (allowed: {})", op, r.string(), list));
  return t;
}

}  // namespace

KernelSpec kernel_spec_from_json(const nlohmann::json& doc, const std::string& origin,
                                 const std::set<std::string>& caller_keys) {
  const JsonReader r(doc, origin);
  std::vector<std::string> allowed = {"buffer_count", "dim", "dtype",  "loop_axis",
                                      "loop_count",   "op",  "params", "partition",
                                      "shape",        "tile"};
  allowed.insert(allowed.end(), caller_keys.begin(), caller_keys.end());
  r.check_keys(allowed);
  KernelSpec s;
  s.op = r.at("op").string();
  if (!find_family(s.op)) r.at("op").fail(unknown_op_message(s.op));
  s.shape = r.at("shape").positive_ints();
  const auto rank = static_cast<int64_t>(s.shape.size());
  if (rank > 5) r.at("shape").fail("at most 5 dims are supported", ErrorKind::kLimits);
  if (const auto d = r.find("dtype"))
    s.dtype = read_dtype(*d, s.op, op_dtypes(find_op(s.op)->record));
  s.tile = r.at("tile").positive_ints();
  if (const auto d = r.find("dim")) s.dims = read_dims(*d, rank);
  s.loop_count = r.integer_or("loop_count", s.loop_count, 1);
  s.loop_axis = static_cast<int>(r.integer_or("loop_axis", s.loop_axis, 0, rank - 1));
  s.buffer_count = static_cast<int>(r.integer_or("buffer_count", s.buffer_count, 1, 8));
  if (const auto p = r.find("partition")) read_partition(*p, s);  // after shape: block's rank
  // Params are checked here, so a typo is one load error naming the file and key.
  static const nlohmann::json kNoParams = nlohmann::json::object();
  const auto params = r.find("params");
  const JsonReader param_reader = params ? *params : JsonReader(kNoParams, origin, "params");
  validate_params(s.op, param_reader);
  if (params) s.params = params->json();
  check_spec_params(s, param_reader);
  check_work_size(s, origin);
  return s;
}

void check_work_size(const KernelSpec& spec, const std::string& origin) {
  const std::string where = origin.empty() ? spec.op : origin;
  const int64_t bytes = dtype_bytes(spec.dtype);
  auto tensor_bytes = [&](const Dims& d) {
    int64_t n = bytes;
    for (int64_t x : d) n = capped_mul(n, x, kMaxTensorBytes);
    return n;
  };
  const KernelFamily* family = find_family(spec.op);
  auto largest = [&](const Dims& d) {
    if (!family || !family->tensors_of) return tensor_bytes(d);
    int64_t most = 0;
    for (const Dims& t : family->tensors_of(d)) most = std::max(most, tensor_bytes(t));
    return most;
  };
  for (const auto& [key, dims] : {std::pair<const char*, const Dims*>{"shape", &spec.shape},
                                  {"tile", &spec.tile},
                                  {"partition.block", &spec.block}})
    if (!dims->empty() && largest(*dims) > kMaxTensorBytes)
      throw Error(
          fmt::format("{}: {}: {} {} is over {} B (1 TiB), more than any device holds", where, key,
                      format_dims(*dims), dtype_name(spec.dtype), kMaxTensorBytes),
          ErrorKind::kLimits);
  const int64_t subtiles = implied_subtiles(spec);
  if (subtiles > max_tasks())
    throw Error(fmt::format("{}: tile: {} over shape {} implies {:.3g} tasks (sub-tiles); the "
                            "limit is {:.3g}; raise it with --max-tasks or use a larger tile",
                            where, format_dims(spec.tile), format_dims(spec.shape),
                            static_cast<double>(subtiles), static_cast<double>(max_tasks())),
                ErrorKind::kLimits);
}

}  // namespace tilesim
