// libFuzzer target: tile programs (tools/formats/program_file.hpp), read and planned; when small
// enough to stay fast (at most kSmall elements in all tensors) executed tiled and untiled with
// Eigen and lowered under pypto and spmd, as `tilesim run` and the functional proof do.
#include "kernels/functional/functional.hpp"
#include "kernels/lower/program_lowering.hpp"
#include "kernels/program/program.hpp"
#include "model/hardware.hpp"
#include "tests/fuzz/fuzz_support.hpp"
#include "tools/formats/program_file.hpp"

namespace {
constexpr int64_t kSmall = 1 << 14;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return tilesim::fuzz::run_loader(data, size, "program.json", [](const auto& file) {
    const tilesim::Program p = tilesim::load_program(file);
    tilesim::plan_stages(p);
    int64_t elements = 0;
    for (const auto& t : p.tensors) elements += tilesim::product(t.shape);
    if (elements > kSmall) return;
    const auto in = tilesim::program_inputs(p, 1);
    tilesim::execute_program_untiled(p, in);
    tilesim::execute_program_tiled(p, in);
    static const tilesim::Hardware hw = tilesim::load_hardware("ascend910b1");
    tilesim::KernelSpec spec;
    spec.op = "program:" + p.name;
    tilesim::lower_program(p, spec, hw);
    spec.partition = tilesim::PartitionStyle::kSpmd;
    spec.grid = 8;
    tilesim::lower_program(p, spec, hw);
  });
}
