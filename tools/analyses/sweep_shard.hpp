#pragma once
// A sweep split into shards (`tilesim sweep --shard K/N`, Dask chunks from Python) and merged
// back (`tilesim merge`). Shard K of N (1 <= K <= N) evaluates the candidates whose index i has
// i % N == K - 1: every shard gets a fair mix of the space (cost grows along its axes), and the
// split depends only on the candidate count. A shard file carries the sweep it belongs to (the
// config document and the path it was read from, the hardware merged with its bases, a hash of
// all that and the tilesim version), its K and N, the candidate count and its evaluated
// candidates; merge checks that the shards belong together and rebuilds the ranked result with
// rank_sweep, so it equals the unsharded sweep in every output format. The merge needs no file
// but the shards: the config and hardware travel inside them.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "model/recycling_allocator.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {

struct ShardSpec {
  int64_t k = 1;  // 1-based
  int64_t n = 1;
};
// "K/N" with 1 <= K <= N; `what` names the option in the one-line error.
ShardSpec parse_shard(const std::string& text, const std::string& what);
// The candidate indices of shard `s` of a `total`-candidate sweep, ascending, and their count.
std::vector<size_t> shard_indices(size_t total, const ShardSpec& s);
size_t shard_size(size_t total, const ShardSpec& s);
// Refuses N above `total`: a shard beyond the candidates would hold none. `what` names the option.
void check_shard_count(const ShardSpec& s, size_t total, const std::string& what);

// One sweep as every shard sees it.
struct SweepJob {
  nlohmann::json doc;  // {"config", "config_doc", "hardware_origin", "hardware"}: what shards carry
  std::string hash;    // 16 hex digits over doc and the tilesim version
  SweepConfig cfg;
  Hardware hw;
  std::vector<Candidate> candidates;
};
// The sweep of a config document read from `config_path` (a dict from Python names itself
// "<dict>"), on its own hardware or on `hardware_override` (a --hardware argument) when not empty,
// with the what-ifs `settings` ("key=value", --set) over it: the job carries the hardware as set.
SweepJob sweep_job(const nlohmann::json& config_doc, const std::string& config_path,
                   const std::string& hardware_override = "",
                   const std::vector<std::string>& settings = {});
SweepJob sweep_job_from_file(const std::string& config_path,
                             const std::string& hardware_override = "",
                             const std::vector<std::string>& settings = {});
// Rebuilds a job from the `doc` a shard carries (no file is read).
SweepJob sweep_job_from_doc(const nlohmann::json& doc, const std::string& origin);

struct SweepShard {
  std::string origin;  // the file it was read from (for errors)
  nlohmann::json job;  // SweepJob::doc
  std::string hash;
  ShardSpec shard;
  size_t total = 0;  // the sweep's candidate count
  // The shard's candidates, ascending index: ~900 B each, in a block a worker's next chunk reuses.
  RecycledVector<CandidateResult> results;
};

SweepShard run_shard(const SweepJob& job, const ShardSpec& shard, const SweepOptions& options = {});
nlohmann::json shard_to_json(const SweepShard& s);
// A shard file's content; one-line errors name `origin` and the key.
SweepShard shard_from_json(const nlohmann::json& doc, const std::string& origin);
SweepShard load_shard(const std::string& file);
// Shards 0 .. n-1 read by `read(i)` side by side (a merge's shards are independent: files parsed,
// chunks decompressed and checked), on every core; an error is the first shard's by position,
// whichever thread met it first.
std::vector<SweepShard> read_shards(size_t n, const std::function<SweepShard(size_t)>& read);

// The same shard as bytes, for one tilesim build to hand to itself (Dask chunks): the records as
// tools/formats/byte_record.hpp writes them (varints, one byte a zero), zstd-compressed, instead
// of JSON text and trees: about a sixth of the JSON's size, and no tree to build or parse. The
// uncompressed header names the tilesim version and byte order, and a reader of another refuses
// it; the job is checked against its hash and the candidates against the shard as
// shard_from_json checks them. is_shard_bytes tells the two forms apart by their first bytes.
std::string shard_to_bytes(const SweepShard& s);
// The same bytes into memory the caller allocates, once, for the size `allocate` is given (half
// of a 10^4-candidate sweep is ~3.5 MB: Python's bytes object takes them without another copy).
void shard_to_bytes(const SweepShard& s, const std::function<std::span<char>(size_t)>& allocate);
SweepShard shard_from_bytes(std::string_view bytes, const std::string& origin);
bool is_shard_bytes(std::string_view text);

struct MergedSweep {
  SweepJob job;
  SweepResult result;
};
// Checks that the shards are one sweep (one hash, one N, one candidate count, every K once) and
// rebuilds its ranked result. One-line errors: a shard missing, given twice or from another sweep.
MergedSweep merge_shards(std::vector<SweepShard> shards);

}  // namespace tilesim
