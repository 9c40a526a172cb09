#include "kernels/lowering.hpp"

#include "kernels/families.hpp"
#include "kernels/lowering_support.hpp"
#include "kernels/task_packing.hpp"
#include "model/error.hpp"

namespace tilesim {

std::vector<std::string> known_ops() {
  return {"copy_in",   "add",       "sub",           "mul",       "div",
          "relu",      "exp",       "sum",           "amax",      "amin",
          "mean",      "softmax",   "logsoftmax",    "layernorm", "rmsnorm",
          "groupnorm", "batchnorm", "cross_entropy", "mse",       "triplet_margin",
          "matmul"};
}

ReductionProgram describe_reduction_program(const KernelSpec& spec) {
  if (is_reduce_op(spec.op)) return describe_reduce(spec);
  if (is_softmax_op(spec.op)) return describe_softmax(spec);
  if (is_norm_op(spec.op)) return describe_norm(spec);
  if (is_loss_op(spec.op)) return describe_loss(spec);
  throw Error("'" + spec.op + "' is not a reducing op");
}

namespace {

LoweredKernel lower_unpacked(const KernelSpec& spec, const Hardware& hw) {
  if (spec.op == "copy_in") return lower_copy_in(spec, hw);
  if (is_elementwise_op(spec.op)) return lower_elementwise(spec, hw);
  if (spec.op == "matmul") return lower_matmul(spec, hw);
  if (is_reduce_op(spec.op) || is_softmax_op(spec.op) || is_norm_op(spec.op) ||
      is_loss_op(spec.op)) {
    validate_tile(spec, hw);
    if (spec.partition != PartitionStyle::kPypto)
      throw Error(spec.op + ": only the pypto partition is modelled for reducing ops");
    const ReductionProgram prog = describe_reduction_program(spec);
    LoweredKernel out;
    build_program(prog, spec, hw, out);
    fill_reduction_diagnostics(spec, hw, prog, out);
    return out;
  }
  std::string list;
  for (const auto& op : known_ops()) list += (list.empty() ? "" : ", ") + op;
  throw Error("unknown op '" + spec.op + "' (known: " + list + ")");
}

}  // namespace

LoweredKernel lower_kernel(const KernelSpec& spec, const Hardware& hw) {
  LoweredKernel k = lower_unpacked(spec, hw);
  if (k.graph.runtime == RuntimeStyle::kMpmd && spec.max_tasks_per_psg != 0) {
    const int64_t cap[2] = {spec.max_tasks_per_psg > 0 ? spec.max_tasks_per_psg : hw.cores.aiv,
                            spec.max_tasks_per_psg > 0 ? spec.max_tasks_per_psg : hw.cores.aic};
    k.graph = pack_tasks(k.graph, cap);
    k.diag.tasks = static_cast<int64_t>(k.graph.tasks.size());
  }
  return k;
}

}  // namespace tilesim
