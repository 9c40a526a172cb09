// copy_in: GM reads only, one DMA instruction per tile. The calibration kernel for MTE2: into UB
// on the vector cores (DataCopy / DataCopyPad), or with params.dest "l1" into L1 on the cube cores
// (kernels/lower/program/copy_stage.cpp: a program of one load op).
#include <fmt/format.h>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// The kernel as a tile program: one load of its tensor per tile, kept in UB (or L1).
Program copy_in_program(const KernelSpec& spec, const Hardware& hw) {
  const bool l1 = param_string(spec, "dest") == "l1";
  if (l1 && spec.partition == PartitionStyle::kPypto)
    throw Error(
        "copy_in: params.dest \"l1\" runs on the cube cores as an Ascend C kernel: use the "
        "ascendc or spmd partition",
        ErrorKind::kParams);
  if (l1 && spec.partition == PartitionStyle::kAscendC && spec.cores > hw.cores.aic)
    throw Error(fmt::format("copy_in: partition.cores {} exceeds the {} AIC cores of {} "
                            "(params.dest \"l1\" reads into the cube cores' L1)",
                            spec.cores, hw.cores.aic, hw.name),
                ErrorKind::kLimits);
  OneOpProgram b = one_op_program(spec, hw, find_op_record("load"));
  b.program.tensors.push_back({"in", spec.shape, spec.dtype, true, false});
  b.program.tensors.push_back({"on_chip", spec.shape, spec.dtype, false, false});
  b.op.in = {0};
  b.op.out = 1;
  b.op.dest = l1 ? MemSpace::kL1 : MemSpace::kUb;
  return b.finish();
}

}  // namespace

KernelFamily copy_in_kernels() {
  KernelFamily f;
  f.name = "copy_in";
  // Its value is the identity: the functional proof is that its tiles read every element once.
  f.spmd = true;
  f.ops = {KernelOp{"copy_in", "GM -> UB (or L1) reads, one DMA per tile (calibrates MTE2)", 1,
                    [](double x, double) { return x; }}};
  ParamDecl dest;
  dest.name = "dest";
  dest.type = ParamType::kString;
  dest.allowed = {"ub", "l1"};
  dest.fallback = "ub";
  dest.doc =
      "where the tiles land: \"ub\" (vector cores, DataCopy) or \"l1\" (cube cores, ND2NZ "
      "DataCopy into L1)";
  f.params = {dest};
  f.program = copy_in_program;
  return f;
}

}  // namespace tilesim
