// libFuzzer target: swimlane traces (tools/formats/swimlane.hpp), read and analysed as
// `tilesim analyze` does without a graph.
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/formats/swimlane.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "trace.json", [](const auto& file) {
    tilesim::analyze_swimlane(tilesim::load_swimlane(file));
  });
}
