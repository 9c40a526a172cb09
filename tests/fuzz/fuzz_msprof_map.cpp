// libFuzzer target: msprof mapping files (tools/calibration/msprof_map.hpp), their run configs
// included (a config_file resolves beside the input).
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/calibration/msprof_map.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "map.json",
                                   [](const auto& file) { tilesim::load_msprof_map(file); });
}
