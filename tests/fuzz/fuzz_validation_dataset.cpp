// libFuzzer target: validation datasets (tools/calibration/validation_dataset.hpp).
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/calibration/validation_dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(
      data, size, "dataset.json", [](const auto& file) { tilesim::load_validation_dataset(file); });
}
