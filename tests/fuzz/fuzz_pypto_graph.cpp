// libFuzzer target: PyPTO fixed-latency task graphs (tools/formats/pypto_graph.hpp), read and,
// when they load, simulated as `tilesim replay` does.
#include "model/hardware.hpp"
#include "sim/simulator.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/formats/pypto_graph.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tilesim::Hardware hw = tilesim::load_hardware(tilesim::default_hardware_path());
  return tilesim::fuzz::run_loader(data, size, "graph.json", [](const auto& file) {
    // One thread: the batch pipeline runs on the calling thread, at twice the executions per
    // second; its answers on other thread counts are tests/pypto_formats_test.cpp's.
    const tilesim::PyptoGraph pg = tilesim::load_pypto_graph(file, 1);
    tilesim::simulate_costed(pg.graph, pg.kind_costs, hw);
  });
}
