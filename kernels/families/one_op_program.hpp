#pragma once
// What a family's builder starts from: a tile program of one op over the spec's tile grid, the
// spec's tile and loop rules checked first (with their messages), the op opening a stage named
// after the spec's op, its loop chunks on the loop axis, its tensors taking UB as an Ascend C
// kernel's queues do (a buffer per input and output). The builder adds the tensors and wires the
// op to them.

#include <optional>
#include <string>
#include <vector>

#include "kernels/program/program.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"

namespace tilesim {

struct OneOpProgram {
  Program program;
  ProgOp op;
  // Appends the op (its `in` and `out` set by the builder) and returns the program.
  Program finish();
};
OneOpProgram one_op_program(const KernelSpec& spec, const Hardware& hw, const OpRecord* record);

// A reducing family's builder (softmax, the norms, the losses): the ops appended in order on the
// one tile program, each reduction over `dims` with the family's merge and its second pass in the
// task that finishes the row (apply_in_task); `psg` names the stage the next op opens (the
// statistics pass, "<op>:finalize", "<op>:apply").
struct ReducingProgram {
  OneOpProgram base;
  const KernelSpec* spec = nullptr;
  std::vector<int> dims;
  MergeMode merge = MergeMode::kInTask;
  std::string psg;
  // A new tensor of the spec's dtype; its id.
  int tensor(const std::string& name, const Dims& shape, bool input = false, bool output = false,
             std::optional<DType> dtype = {});
  // Op `name` (an op-table record) from `in` to `out`; `out`.
  int add(const char* name, std::vector<int> in, int out, std::optional<double> scalar = {});
  Program& program() { return base.program; }
};
// `view` is the spec as the family sees it (its shape, tile and reduced dims); `spec` the run
// config, whose params (spmd_rows) the reductions read.
ReducingProgram reducing_program(const KernelSpec& spec, const KernelSpec& view, const Hardware& hw,
                                 MergeMode merge);

}  // namespace tilesim
