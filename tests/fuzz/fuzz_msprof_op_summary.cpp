// libFuzzer target: msprof op_summary CSVs (tools/formats/msprof_op_summary.hpp over
// tools/formats/csv_reader.hpp), read as `tilesim measurements from-msprof` reads them.
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/formats/msprof_op_summary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "op_summary.csv",
                                   [](const auto& file) { tilesim::load_msprof_op_summary(file); });
}
