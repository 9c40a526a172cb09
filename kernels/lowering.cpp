#include "kernels/lowering.hpp"

#include "kernels/lower/diagnostics.hpp"
#include "kernels/lower/program_lowering.hpp"
#include "kernels/lower/task_packing.hpp"
#include "kernels/program/program.hpp"
#include "kernels/spec/registry.hpp"
#include "model/error.hpp"

namespace tilesim {

LoweredKernel lower_kernel(const KernelSpec& spec, const Hardware& hw) {
  const KernelFamily* family = spec.program ? nullptr : find_family(spec.op);
  if (!family && !spec.program) throw Error(unknown_op_message(spec.op));
  if (family) validate_params(spec);  // specs built in code (tools, tests) skip the loader's check
  check_work_size(spec, "");
  // A user's tile program, or a registered op; both are packed and planned the same way below.
  LoweredKernel k =
      lower_program(spec.program ? program_of(spec) : family->program(spec, hw), spec, hw);
  if (spec.triton) {
    // The Triton-Ascend compiler plans UB for every kind of the kernel (TaskKind).
    for (auto& kind : k.graph.kinds) kind.compiler_multibuffer = true;
    fill_buffer_diagnostics(hw, k);
  }
  if (k.graph.runtime == RuntimeStyle::kMpmd && spec.max_tasks_per_psg != 0) {
    const int64_t cap[2] = {spec.max_tasks_per_psg > 0 ? spec.max_tasks_per_psg : hw.cores.aiv,
                            spec.max_tasks_per_psg > 0 ? spec.max_tasks_per_psg : hw.cores.aic};
    k.graph = pack_tasks(k.graph, cap, hw.control.cube_merge_copyin_bytes);
    k.diag.tasks = static_cast<int64_t>(k.graph.tasks.size());
  }
  k.diag.launches = k.graph.num_launches();
  return k;
}

}  // namespace tilesim
