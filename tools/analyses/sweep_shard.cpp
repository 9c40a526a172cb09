#include "tools/analyses/sweep_shard.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>

#include "model/error.hpp"
#include "model/integer_text.hpp"
#include "model/json_reader.hpp"
#include "model/recycling_allocator.hpp"
#include "tools/analyses/candidate_json.hpp"
#include "tools/analyses/parallel_indices.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/version.hpp"

namespace tilesim {

namespace {

constexpr int64_t kShardFormat = 2;  // 2: results_hash

// FNV-1a, 64 bits: a stable fingerprint of the sweep (std::hash may differ between builds).
std::string fingerprint(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

std::string shard_name(const ShardSpec& s) {
  return fmt::format("{}/{}", s.k, s.n);
}

// The most candidates the job's sweep may have: its constraints.max_candidates (--max-candidates
// writes it there), so a shard's candidate count is bounded before anything is allocated by it.
int64_t max_candidates_of(const nlohmann::json& job) {
  const auto pointer =
      nlohmann::json::json_pointer("/config_doc/candidates/constraints/max_candidates");
  const auto* v = job.is_object() && job.contains(pointer) ? &job.at(pointer) : nullptr;
  return v && v->is_number_integer() && v->get<int64_t>() > 0 ? v->get<int64_t>()
                                                              : SweepConstraints{}.max_candidates;
}

std::string shard_count_error(const ShardSpec& s, size_t total) {
  return fmt::format(
      "{}: the sweep has {} candidate{}, so N is at most {} (a shard beyond them "
      "would hold none)",
      shard_name(s), total, total == 1 ? "" : "s", total);
}

// "2/9..5/9, 7/9, 8/9": the shards of N in `ks` (ascending), runs of three or more condensed, so a
// large N prints short.
std::string shard_ranges(const std::vector<int64_t>& ks, int64_t n) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ks.size();) {
    size_t j = i;
    while (j + 1 < ks.size() && ks[j + 1] == ks[j] + 1) ++j;
    if (j - i < 2) j = i;  // a run of two prints as two names
    parts.push_back(j == i ? shard_name({ks[i], n})
                           : fmt::format("{}..{}", shard_name({ks[i], n}), shard_name({ks[j], n})));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

ShardSpec parse_shard(const std::string& text, const std::string& what) {
  const auto slash = text.find('/');
  ShardSpec s;
  bool ok = slash != std::string::npos && slash > 0 && slash + 1 < text.size();
  if (ok) {
    const std::string_view all = text;
    const std::optional<int64_t> k = parse_int64(all.substr(0, slash));
    const std::optional<int64_t> n = parse_int64(all.substr(slash + 1));
    ok = k && n && *n >= 1 && *k >= 1 && *k <= *n;
    if (ok) s = {*k, *n};
  }
  if (!ok)
    throw Error(
        fmt::format("{} {}: expected K/N, integers with 1 <= K <= N (e.g. 2/8)", what, text));
  return s;
}

size_t shard_size(size_t total, const ShardSpec& s) {
  const auto first = static_cast<size_t>(s.k - 1);
  return first < total ? (total - 1 - first) / static_cast<size_t>(s.n) + 1 : 0;
}

void check_shard_count(const ShardSpec& s, size_t total, const std::string& what) {
  if (static_cast<uint64_t>(s.n) > total) throw Error(what + " " + shard_count_error(s, total));
}

std::vector<size_t> shard_indices(size_t total, const ShardSpec& s) {
  std::vector<size_t> v;
  v.reserve(shard_size(total, s));
  for (size_t i = static_cast<size_t>(s.k - 1); i < total; i += static_cast<size_t>(s.n))
    v.push_back(i);
  return v;
}

SweepJob sweep_job(const nlohmann::json& config_doc, const std::string& config_path,
                   const std::string& hardware_override, const std::vector<std::string>& settings) {
  SweepConfig cfg = sweep_config_from_json(config_doc, config_path);
  if (!hardware_override.empty()) cfg.hardware = resolve_hardware_arg(hardware_override);
  const std::string origin = cfg.hardware.string();
  nlohmann::json job = {
      {"config", config_path},
      {"config_doc", config_doc},
      {"hardware_origin", origin},
      {"hardware", nlohmann::json::parse(merged_hardware_file(cfg.hardware, settings).dump())}};
  return sweep_job_from_doc(job, config_path);
}

SweepJob sweep_job_from_file(const std::string& config_path, const std::string& hardware_override,
                             const std::vector<std::string>& settings) {
  return sweep_job(read_json_file(config_path, "sweep config"), config_path, hardware_override,
                   settings);
}

SweepJob sweep_job_from_doc(const nlohmann::json& doc, const std::string& origin) {
  const JsonReader r(doc, origin, "job");
  r.expect_object();
  r.check_keys({"config", "config_doc", "hardware_origin", "hardware"});
  SweepJob job;
  job.doc = doc;
  job.hash = fingerprint(doc.dump() + "\n" + tilesim_version());
  const std::string hw_origin = r.at("hardware_origin").string();
  job.cfg = sweep_config_from_json(r.at("config_doc").json(), r.at("config").string());
  job.cfg.hardware = hw_origin;
  job.hw = hardware_from_json(r.at("hardware").json(), hw_origin);
  job.candidates = expand_candidates(job.cfg, job.hw);
  return job;
}

SweepShard run_shard(const SweepJob& job, const ShardSpec& shard, const SweepOptions& options) {
  check_shard_count(shard, job.candidates.size(), "shard");
  SweepShard s;
  s.job = job.doc;
  s.hash = job.hash;
  s.shard = shard;
  s.total = job.candidates.size();
  const auto indices = shard_indices(job.candidates.size(), shard);
  s.results.resize(indices.size());
  evaluate_candidates(job.cfg, job.hw, job.candidates, indices, s.results, options);
  return s;
}

nlohmann::json shard_to_json(const SweepShard& s) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : s.results) results.push_back(candidate_to_json(c));
  const std::string results_hash = fingerprint(results.dump());
  return {{"tilesim_shard", kShardFormat}, {"tilesim_version", tilesim_version()},
          {"config_hash", s.hash},         {"shard", {s.shard.k, s.shard.n}},
          {"candidates", s.total},         {"job", s.job},
          {"results", std::move(results)}, {"results_hash", results_hash}};
}

SweepShard shard_from_json(const nlohmann::json& doc, const std::string& origin) {
  const JsonReader r(doc, origin);
  r.expect_object();
  r.check_keys({"tilesim_shard", "tilesim_version", "config_hash", "shard", "candidates", "job",
                "results", "results_hash"});
  r.at("tilesim_shard").integer(kShardFormat, kShardFormat);
  SweepShard s;
  s.origin = origin;
  const std::string version = r.at("tilesim_version").string();
  if (version != tilesim_version())
    r.at("tilesim_version")
        .fail(fmt::format("written by tilesim {}, this is {} (rerun the shard)", version,
                          tilesim_version()));
  s.hash = r.at("config_hash").string();
  const auto k_n = r.at("shard").positive_ints(2);
  s.shard = parse_shard(fmt::format("{}/{}", k_n[0], k_n[1]), origin + ": shard");
  s.job = r.at("job").json();
  // Every shard's job is checked against its hash (merge rebuilds the sweep from the first).
  const std::string job_hash = fingerprint(s.job.dump() + "\n" + tilesim_version());
  if (job_hash != s.hash)
    r.at("config_hash")
        .fail(fmt::format("{} does not match the job the file carries (its hash is {}: the file "
                          "was edited; write "
                          "shard files with tilesim sweep --shard)",
                          s.hash, job_hash));
  const int64_t limit = max_candidates_of(s.job);
  s.total = static_cast<size_t>(r.at("candidates").integer(1, limit));
  if (static_cast<uint64_t>(s.shard.n) > s.total)
    r.at("shard").fail(shard_count_error(s.shard, s.total));
  const auto results = r.at("results");
  const size_t expected_count = shard_size(s.total, s.shard);
  if (!results.json().is_array() || results.json().size() != expected_count)
    results.fail(fmt::format("expected the {} candidates of shard {} of a {}-candidate sweep",
                             expected_count, shard_name(s.shard), s.total));
  const auto expected = shard_indices(s.total, s.shard);
  for (size_t j = 0; j < expected.size(); ++j) {
    s.results.push_back(candidate_from_json(results.json()[j], origin));
    if (s.results.back().index != expected[j])
      results.fail(fmt::format("item {} is candidate {}, shard {} holds candidate {} there", j,
                               s.results.back().index, shard_name(s.shard), expected[j]));
  }
  // The results are the shard's run's, as written: each figure checked above, and together
  // against the hash the shard was written with.
  const std::string results_hash = fingerprint(results.json().dump());
  if (r.at("results_hash").string() != results_hash)
    r.at("results_hash")
        .fail(fmt::format("{} does not match the results the file carries (their hash is {}: the "
                          "file was edited; write shard files with tilesim sweep --shard)",
                          r.at("results_hash").string(), results_hash));
  return s;
}

namespace {
// Starts with a byte no JSON text starts with.
constexpr std::string_view kShardBytesMagic{"\x01tilesim-shard-bytes\n", 21};
constexpr uint32_t kByteOrderMark = 0x01020304;
}  // namespace

bool is_shard_bytes(std::string_view text) {
  return text.starts_with(kShardBytesMagic);
}

namespace {
// Binary shards above this many bytes (before or after compression) are refused, as shard files.
constexpr uint64_t kMaxShardBytes = uint64_t{1} << 30;
// zstd's fastest standard level: a half of the exhaustive softmax sweep, 7.1 MB of records,
// becomes 3.5 MB in ~15 ms and comes back in ~5 ms; higher levels gain a few percent for several
// times the time (zstd -b1 / -b3 on that shard: x2.05 at 466 MB/s, x2.09 at 191 MB/s).
constexpr int kZstdLevel = 1;

// What is read before the rest can be: the magic, the byte order and the version.
void shard_head(ByteWriter& w) {
  w.raw(kShardBytesMagic.data(), kShardBytesMagic.size());
  w.raw(&kByteOrderMark, sizeof kByteOrderMark);  // the doubles' bits are in the machine's order
  w(std::string(tilesim_version()));
}
// The rest, which travels compressed; `job` is the shard's job's dump.
void shard_body(ByteWriter& w, const SweepShard& s, const std::string& job) {
  w(s.hash);
  w(s.shard.k), w(s.shard.n);
  w(static_cast<uint64_t>(s.total));
  w(job);
  w(static_cast<uint64_t>(s.results.size()));
  for (const auto& c : s.results) write_candidate_bytes(w, c);
}
}  // namespace

void shard_to_bytes(const SweepShard& s, const std::function<std::span<char>(size_t)>& allocate) {
  const std::string job = s.job.dump();
  ByteWriter head, counter;
  shard_head(head);
  shard_body(counter, s, job);
  // The records and their compression in recycled buffers (model/recycling_allocator.hpp): a
  // worker's next chunk writes into the same pages, and only the compressed bytes are new memory.
  RecycledVector<char> body(counter.size());
  ByteWriter w(body);
  shard_body(w, s, job);
  if (w.size() != body.size())
    throw InternalError("binary shard: " + std::to_string(w.size()) + " bytes written, " +
                        std::to_string(body.size()) + " counted");
  RecycledVector<char> packed(ZSTD_compressBound(body.size()));
  const size_t n =
      ZSTD_compress(packed.data(), packed.size(), body.data(), body.size(), kZstdLevel);
  if (ZSTD_isError(n) != 0)
    throw InternalError(std::string("binary shard: zstd: ") + ZSTD_getErrorName(n));
  const std::span<char> out = allocate(head.size() + n);
  ByteWriter hw(out.first(head.size()));
  shard_head(hw);
  std::memcpy(out.data() + head.size(), packed.data(), n);
}

std::string shard_to_bytes(const SweepShard& s) {
  std::string out;
  shard_to_bytes(s, [&](size_t size) {
    out.resize(size);
    return std::span<char>(out);
  });
  return out;
}

SweepShard shard_from_bytes(std::string_view bytes, const std::string& origin) {
  if (!is_shard_bytes(bytes)) throw Error(origin + ": not a tilesim binary shard");
  const std::string_view after_magic = bytes.substr(kShardBytesMagic.size());
  ByteReader head(after_magic, origin, "the binary shard");
  uint32_t order = 0;
  head.raw(&order, sizeof order);
  std::string version;
  head(version);
  if (order != kByteOrderMark || version != tilesim_version())
    throw Error(
        fmt::format("{}: a binary shard of tilesim {} on another machine's byte order "
                    "or version (this is {}): binary shards pass between processes of "
                    "one tilesim; write shard files (JSON) to keep them",
                    origin, version, tilesim_version()));
  const std::string_view packed = after_magic.substr(head.position());
  const size_t frame = ZSTD_findFrameCompressedSize(packed.data(), packed.size());
  if (ZSTD_isError(frame) != 0)
    head.fail(std::string("its compressed part: zstd: ") + ZSTD_getErrorName(frame));
  if (frame != packed.size())
    head.fail(fmt::format("{} bytes after its compressed part", packed.size() - frame));
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxShardBytes)
    head.fail("its compressed part does not say a size up to 1 GiB");
  RecycledVector<char> body(static_cast<size_t>(size));
  const size_t got = ZSTD_decompress(body.data(), body.size(), packed.data(), packed.size());
  if (ZSTD_isError(got) != 0)
    head.fail(std::string("its compressed part: zstd: ") + ZSTD_getErrorName(got));
  if (got != body.size())
    head.fail(
        fmt::format("its compressed part holds {} bytes, not the {} it says", got, body.size()));
  ByteReader in(std::string_view(body.data(), body.size()), origin, "the binary shard");
  SweepShard s;
  s.origin = origin;
  in(s.hash);
  in(s.shard.k), in(s.shard.n);
  uint64_t total = 0;
  in(total);
  std::string job;
  in(job);
  try {
    s.job = nlohmann::json::parse(job);
  } catch (const nlohmann::json::exception& e) {
    in.fail(e.what());
  }
  const std::string job_hash = fingerprint(s.job.dump() + "\n" + tilesim_version());
  if (job_hash != s.hash)
    throw Error(fmt::format("{}: config hash {} does not match the job the shard carries ({})",
                            origin, s.hash, job_hash));
  s.total = static_cast<size_t>(total);
  if (s.shard.k < 1 || s.shard.k > s.shard.n || s.total < 1 ||
      static_cast<int64_t>(s.total) > max_candidates_of(s.job) ||
      static_cast<uint64_t>(s.shard.n) > s.total)
    in.fail(fmt::format("shard {} of a {}-candidate sweep", shard_name(s.shard), s.total));
  uint64_t count = 0;
  in(count);
  const auto expected = shard_indices(s.total, s.shard);
  if (count != expected.size())
    in.fail(fmt::format("{} candidates, shard {} of a {}-candidate sweep has {}", count,
                        shard_name(s.shard), s.total, expected.size()));
  s.results.reserve(expected.size());
  for (const size_t index : expected) {
    s.results.push_back(candidate_from_bytes(in, origin));
    if (s.results.back().index != index)
      in.fail(fmt::format("candidate {} where shard {} holds candidate {}", s.results.back().index,
                          shard_name(s.shard), index));
  }
  if (!in.at_end()) in.fail("bytes after the last candidate");
  return s;
}

SweepShard load_shard(const std::string& file) {
  // A shard of a large sweep holds every candidate's per-core figures (~5 KB each).
  return shard_from_json(JsonReader::parse_file(file, "shard file", kMaxShardBytes), file);
}

std::vector<SweepShard> read_shards(size_t n, const std::function<SweepShard(size_t)>& read) {
  std::vector<SweepShard> shards(n);
  std::vector<std::exception_ptr> errors(n);
  parallel_indices(n, 0, [&](size_t i) {
    try {
      shards[i] = read(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return shards;
}

MergedSweep merge_shards(std::vector<SweepShard> shards) {
  if (shards.empty()) throw Error("merge: no shard given");
  const SweepShard& first = shards.front();
  std::map<int64_t, const SweepShard*> by_k;
  for (const auto& s : shards) {
    if (s.hash != first.hash)
      throw Error(
          fmt::format("{}: another sweep than {} (config hash {}, not {}: shards of "
                      "different configs, hardware or tilesim versions)",
                      s.origin, first.origin, s.hash, first.hash));
    if (s.shard.n != first.shard.n)
      throw Error(fmt::format("{}: shard {}, but {} is shard {} (one sweep's shards share N)",
                              s.origin, shard_name(s.shard), first.origin,
                              shard_name(first.shard)));
    if (s.total != first.total)
      throw Error(fmt::format("{}: a sweep of {} candidates, but {} has {}", s.origin, s.total,
                              first.origin, first.total));
    const auto [it, added] = by_k.emplace(s.shard.k, &s);
    if (!added)
      throw Error(fmt::format("{}: shard {} given twice (also {})", s.origin, shard_name(s.shard),
                              it->second->origin));
  }
  // N is at most the candidate count (shard_from_json), so this walk is bounded.
  std::vector<int64_t> missing, given;
  for (int64_t k = 1; k <= first.shard.n; ++k) (by_k.count(k) ? given : missing).push_back(k);
  if (!missing.empty())
    throw Error(fmt::format("merge: shard{} {} missing (given: {})", missing.size() > 1 ? "s" : "",
                            shard_ranges(missing, first.shard.n),
                            shard_ranges(given, first.shard.n)));
  MergedSweep m;
  m.job = sweep_job_from_doc(first.job, first.origin);
  if (m.job.hash != first.hash || m.job.candidates.size() != first.total)
    throw Error(
        fmt::format("{}: its sweep does not rebuild here (config hash {}, {} candidates; "
                    "this tilesim makes {}, {})",
                    first.origin, first.hash, first.total, m.job.hash, m.job.candidates.size()));
  std::vector<CandidateResult> results(first.total);
  for (auto& s : shards)
    for (auto& c : s.results) results[c.index] = std::move(c);
  m.result = rank_sweep(m.job.cfg, m.job.candidates, std::move(results));
  return m;
}

}  // namespace tilesim
