#include "kernels/kernel_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/error.hpp"

namespace tilesim {

namespace {

Dims dims_from_json(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array() || v.empty())
    throw Error(where + ": expected a non-empty array of positive integers, got " + v.dump());
  Dims d;
  for (const auto& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() <= 0)
      throw Error(where + ": expected positive integers, got " + v.dump());
    d.push_back(x.get<int64_t>());
  }
  return d;
}

}  // namespace

Dims parse_dims(const std::string& text, const std::string& what) {
  Dims d;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string part =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != part.size() || v <= 0)
      throw Error(what + ": '" + text + "' is not a comma-separated list of positive integers");
    d.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return d;
}

std::string format_dims(const Dims& d) {
  return fmt::format("({})", fmt::join(d, ", "));
}

KernelSpec kernel_spec_from_json(const nlohmann::json& doc, const std::string& origin,
                                 const std::set<std::string>& caller_keys) {
  auto fail = [&](const std::string& key, const std::string& what) {
    throw Error(origin + ": " + key + ": " + what);
  };
  if (!doc.is_object()) fail("top level", "expected a JSON object");
  static const std::set<std::string> keys = {"op",           "shape",      "dtype",     "dim",
                                             "tile",         "loop_count", "loop_axis", "partition",
                                             "buffer_count", "params"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!keys.count(it.key()) && !caller_keys.count(it.key())) {
      std::string allowed;
      for (const auto& k : keys) allowed += (allowed.empty() ? "" : ", ") + k;
      for (const auto& k : caller_keys) allowed += ", " + k;
      fail(it.key(), "unknown key (allowed: " + allowed + ")");
    }
  KernelSpec s;
  if (!doc.contains("op") || !doc["op"].is_string()) fail("op", "missing or not a string");
  s.op = doc["op"].get<std::string>();
  if (!doc.contains("shape")) fail("shape", "missing");
  s.shape = dims_from_json(doc["shape"], origin + ": shape");
  if (s.shape.size() > 5) fail("shape", "at most 5 dims are supported");
  if (doc.contains("dtype")) {
    if (!doc["dtype"].is_string()) fail("dtype", "expected a string (fp32, fp16, bf16)");
    try {
      s.dtype = parse_dtype(doc["dtype"].get<std::string>());
    } catch (const Error& e) {
      fail("dtype", e.what());
    }
  }
  if (!doc.contains("tile")) fail("tile", "missing");
  s.tile = dims_from_json(doc["tile"], origin + ": tile");
  if (doc.contains("dim")) {
    const auto& d = doc["dim"];
    std::vector<int64_t> raw;
    if (d.is_number_integer())
      raw.push_back(d.get<int64_t>());
    else if (d.is_array()) {
      for (const auto& x : d) {
        if (!x.is_number_integer()) fail("dim", "expected an integer or an array of integers");
        raw.push_back(x.get<int64_t>());
      }
    } else {
      fail("dim", "expected an integer or an array of integers");
    }
    const auto rank = static_cast<int64_t>(s.shape.size());
    for (int64_t x : raw) {
      if (x < -rank || x >= rank)
        fail("dim", fmt::format("{} is out of range for a rank-{} shape (allowed {}..{})", x, rank,
                                -rank, rank - 1));
      s.dims.push_back(static_cast<int>(x < 0 ? x + rank : x));
    }
  }
  if (doc.contains("loop_count")) {
    if (!doc["loop_count"].is_number_integer() || doc["loop_count"].get<int64_t>() < 1)
      fail("loop_count", "expected an integer >= 1, got " + doc["loop_count"].dump());
    s.loop_count = doc["loop_count"].get<int64_t>();
  }
  if (doc.contains("loop_axis")) {
    const auto rank = static_cast<int64_t>(s.shape.size());
    if (!doc["loop_axis"].is_number_integer() || doc["loop_axis"].get<int64_t>() < 0 ||
        doc["loop_axis"].get<int64_t>() >= rank)
      fail("loop_axis", fmt::format("expected an integer in 0..{}", rank - 1));
    s.loop_axis = doc["loop_axis"].get<int>();
  }
  if (doc.contains("buffer_count")) {
    if (!doc["buffer_count"].is_number_integer() || doc["buffer_count"].get<int64_t>() < 1 ||
        doc["buffer_count"].get<int64_t>() > 8)
      fail("buffer_count", "expected an integer in 1..8, got " + doc["buffer_count"].dump());
    s.buffer_count = doc["buffer_count"].get<int>();
  }
  if (doc.contains("partition")) {
    const auto& p = doc["partition"];
    std::string style;
    if (p.is_string()) {
      style = p.get<std::string>();
    } else if (p.is_object()) {
      for (auto it = p.begin(); it != p.end(); ++it)
        if (it.key() != "style" && it.key() != "cores" && it.key() != "max_tasks_per_psg")
          fail("partition." + it.key(), "unknown key (allowed: style, cores, max_tasks_per_psg)");
      if (!p.contains("style") || !p["style"].is_string())
        fail("partition.style", "missing (allowed: pypto, ascendc)");
      style = p["style"].get<std::string>();
      if (p.contains("cores")) {
        if (!p["cores"].is_number_integer() || p["cores"].get<int64_t>() < 1)
          fail("partition.cores", "expected an integer >= 1, got " + p["cores"].dump());
        s.cores = p["cores"].get<int64_t>();
      }
      if (p.contains("max_tasks_per_psg")) {
        if (!p["max_tasks_per_psg"].is_number_integer() ||
            p["max_tasks_per_psg"].get<int64_t>() < 0)
          fail("partition.max_tasks_per_psg",
               "expected an integer >= 0 (0: one task per tile chain), got " +
                   p["max_tasks_per_psg"].dump());
        s.max_tasks_per_psg = p["max_tasks_per_psg"].get<int64_t>();
      }
    } else {
      fail("partition", "expected \"pypto\", \"ascendc\" or {\"style\": ..., \"cores\": N}");
    }
    if (style == "pypto")
      s.partition = PartitionStyle::kPypto;
    else if (style == "ascendc")
      s.partition = PartitionStyle::kAscendC;
    else
      fail("partition", "unknown style '" + style + "' (allowed: pypto, ascendc)");
  }
  if (doc.contains("params")) {
    if (!doc["params"].is_object()) fail("params", "expected an object");
    s.params = doc["params"];
  }
  return s;
}

}  // namespace tilesim
