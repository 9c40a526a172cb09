// libFuzzer target: run configs (tools/formats/run_config.hpp), read and, when small enough to
// stay fast (at most kSmallRun sub-tiles), lowered and simulated as `tilesim run` does.
#include "model/hardware.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/run_config.hpp"

namespace {
constexpr int64_t kSmallRun = 4096;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "run.json", [](const auto& file) {
    const tilesim::RunConfig rc = tilesim::load_run_config(file);
    const tilesim::KernelSpec spec = tilesim::run_spec(rc, {});
    if (tilesim::implied_subtiles(spec) > kSmallRun) return;
    tilesim::run_kernel(spec, tilesim::load_hardware(rc.hardware), rc.options);
  });
}
