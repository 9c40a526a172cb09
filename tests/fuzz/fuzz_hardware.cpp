// libFuzzer target: hardware files (model/hardware.hpp).
#include "model/hardware.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "hardware.json",
                                   [](const auto& file) { tilesim::load_hardware(file); });
}
