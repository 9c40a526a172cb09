#include "kernels/lowering.hpp"

#include "kernels/families.hpp"
#include "model/error.hpp"

namespace tilesim {

std::vector<std::string> known_ops() {
  return {"copy_in", "add", "sub", "mul", "div", "relu", "exp"};
}

LoweredKernel lower_kernel(const KernelSpec& spec, const Hardware& hw) {
  if (spec.op == "copy_in") return lower_copy_in(spec, hw);
  if (is_elementwise_op(spec.op)) return lower_elementwise(spec, hw);
  std::string list;
  for (const auto& op : known_ops()) list += (list.empty() ? "" : ", ") + op;
  throw Error("unknown op '" + spec.op + "' (known: " + list + ")");
}

}  // namespace tilesim
