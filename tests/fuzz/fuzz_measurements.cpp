// libFuzzer target: calibration measurements files (tools/calibration/measurements.hpp).
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/calibration/measurements.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "measurements.json",
                                   [](const auto& file) { tilesim::load_measurements(file); });
}
