// libFuzzer target: shard files (tools/analyses/sweep_shard.hpp), loaded and merged as
// `tilesim merge` does with one shard: the job they carry is rebuilt and its result ranked.
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/analyses/sweep_shard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "shard.json", [](const auto& file) {
    std::vector<tilesim::SweepShard> shards;
    shards.push_back(tilesim::load_shard(file));
    tilesim::merge_shards(std::move(shards));
  });
}
