// libFuzzer target: sweep configs (tools/formats/sweep_config.hpp), read and expanded into their
// candidate space (the limits are checked before anything is allocated). The task limit is
// lowered to 4096, so a space that lowers a tile to learn the core type stays fast.
#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/formats/sweep_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool limited = (tilesim::set_max_tasks(4096), true);
  (void)limited;
  return tilesim::fuzz::run_loader(data, size, "sweep.json", [](const auto& file) {
    const tilesim::SweepConfig cfg = tilesim::load_sweep_config(file);
    tilesim::expand_candidates(cfg, tilesim::load_hardware(cfg.hardware));
  });
}
