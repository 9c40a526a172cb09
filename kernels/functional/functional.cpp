#include "kernels/functional/functional.hpp"

#include <algorithm>
#include <random>

#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

int64_t NdArray::offset(const Dims& at) const {
  int64_t o = 0;
  for (size_t i = 0; i < shape.size(); ++i) o = o * shape[i] + at[i];
  return o;
}

NdArray random_array(const Dims& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  NdArray a{shape, Eigen::ArrayXd(product(shape))};
  for (Eigen::Index i = 0; i < a.data.size(); ++i) a.data[i] = u(rng);
  return a;
}

NdArray reshaped(NdArray a, const Dims& shape) {
  if (product(shape) != a.data.size()) throw InternalError("reshape: element counts differ");
  a.shape = shape;
  return a;
}

namespace {

struct PhaseOutput {
  NdArray reduced;
  NdArray applied;
};

PhaseOutput run_phase(const Phase& ph, const std::vector<NdArray>& in) {
  const ReductionPlan& p = ph.plan;
  const ReduceFamily& f = ph.fam;
  Dims out_shape = p.shape;
  double count = 1;
  for (int d : p.dims) {
    out_shape[static_cast<size_t>(d)] = 1;
    count *= static_cast<double>(p.shape[static_cast<size_t>(d)]);
  }
  PhaseOutput out{NdArray{out_shape, Eigen::ArrayXd::Zero(product(out_shape))},
                  NdArray{p.shape, Eigen::ArrayXd::Zero(f.second_pass ? product(p.shape) : 0)}};
  // spmd: each chain's parts, in block order (a part folds its segments as its block does).
  std::vector<std::vector<ReductionPlan::Part>> parts_of(p.chains.size());
  for (const auto& parts : p.blocks)
    for (const auto& part : parts) parts_of[static_cast<size_t>(part.chain)].push_back(part);
  std::vector<size_t> order;
  if (p.grid > 0) {
    for (const auto& parts : p.blocks)
      for (const auto& part : parts)
        if (part.s0 == 0) order.push_back(static_cast<size_t>(part.chain));
  } else {
    for (size_t ci = 0; ci < p.chains.size(); ++ci) order.push_back(ci);
  }
  for (const size_t ci : order) {
    const ReduceChain& chain = p.chains[ci];
    for_each_position(chain.out, [&](const Dims& o) {
      // Partials per segment, then merges in the plan's order.
      std::vector<Stats> partial;
      for (const auto& seg : chain.segments) {
        Block red = seg;  // this output element's slice of the segment
        for (size_t d = 0; d < o.size(); ++d)
          if (!is_reduced(p.dims, d)) {
            red.origin[d] = o[d];
            red.extent[d] = 1;
          }
        std::vector<Eigen::ArrayXd> values(in.size(), Eigen::ArrayXd(product(red.extent)));
        int64_t i = 0;
        for_each_position(red, [&](const Dims& at) {
          for (size_t t = 0; t < in.size(); ++t) values[t][i] = in[t][at];
          ++i;
        });
        partial.push_back(f.partial(values));
      }
      if (p.grid > 0) {
        // Each block folds the segments of this row it holds; the blocks' partials combine.
        std::vector<Stats> held;
        for (const auto& part : parts_of[ci]) {
          Stats acc = partial[static_cast<size_t>(part.s0)];
          for (int64_t s = part.s0 + 1; s < part.s1; ++s)
            acc = f.combine(acc, partial[static_cast<size_t>(s)]);
          held.push_back(acc);
        }
        partial[0] = held.at(0);
        for (size_t i = 1; i < held.size(); ++i) partial[0] = f.combine(partial[0], held[i]);
      } else {
        for (const auto& level : merge_levels(static_cast<int>(partial.size()), p.merge))
          for (const auto& m : level)
            partial[static_cast<size_t>(m.a)] =
                f.combine(partial[static_cast<size_t>(m.a)], partial[static_cast<size_t>(m.b)]);
      }
      const Stats fin = f.finalize(partial[0], count);
      out.reduced[o] = fin[0];
      if (!f.second_pass) return;
      for (const auto& seg : chain.segments) {
        Block red = seg;
        for (size_t d = 0; d < o.size(); ++d)
          if (!is_reduced(p.dims, d)) {
            red.origin[d] = o[d];
            red.extent[d] = 1;
          }
        for_each_position(red, [&](const Dims& at) {
          std::vector<double> x;
          for (size_t t = 0; t < static_cast<size_t>(f.inputs); ++t) x.push_back(in[t][at]);
          out.applied[at] = f.second(x, fin);
        });
      }
    });
  }
  return out;
}

}  // namespace

ProgramResult execute_program(const ReductionProgram& prog, const std::vector<NdArray>& inputs) {
  ProgramResult res;
  std::vector<NdArray> in;
  for (const auto& a : inputs) in.push_back(reshaped(a, prog.phases.at(0).plan.shape));
  for (size_t i = 0; i < prog.phases.size(); ++i) {
    const auto& ph = prog.phases[i];
    if (i > 0) in = {reshaped(res.reduced, ph.plan.shape)};
    PhaseOutput o = run_phase(ph, in);
    res.reduced = std::move(o.reduced);
    if (i == 0) res.applied = std::move(o.applied);
  }
  return res;
}

TilesResult execute_independent_tiles(const KernelSpec& spec, const std::vector<NdArray>& inputs) {
  const KernelOp* op = find_op(spec.op);
  if (!op || !op->value) throw InternalError(spec.op + " has no elementwise value");
  const size_t operands = op->record && op->record->n_ary
                              ? static_cast<size_t>(param_int(spec, "operands"))
                              : static_cast<size_t>(op->inputs);
  if (inputs.size() != operands) throw InternalError(spec.op + ": wrong number of inputs");
  const int64_t n = product(spec.shape);
  TilesResult r{NdArray{spec.shape, Eigen::ArrayXd::Zero(n)},
                NdArray{spec.shape, Eigen::ArrayXd::Zero(n)}};
  // A broadcast second operand (params.broadcast) is read at index 0 of its size-1 dims.
  auto y = [&](Dims at) {
    for (size_t d = 0; d < at.size(); ++d)
      if (inputs[1].shape[d] == 1) at[d] = 0;
    return inputs[1][at];
  };
  auto tile = [&](const Dims& origin, const Dims& extent) {
    for_each_position(Block{origin, extent}, [&](const Dims& at) {
      double v = op->value(inputs[0][at], op->inputs > 1 ? y(at) : 0.0);
      for (size_t i = 2; i < operands; ++i) v = op->value(v, inputs[i][at]);  // n-ary: left fold
      r.out[at] = v;
      r.covered[at] += 1;
    });
  };
  if (spec.partition == PartitionStyle::kSpmd) {
    // Block by block, each walking its run of regions sub-tile by sub-tile.
    const BlockTiling cut(spec.shape, spec.block, spec.tile);
    for (int64_t b = 0; b < spec.grid; ++b) {
      const BlockRange br = block_range(cut.regions(), spec.grid, b);
      for (int64_t i = br.begin; i < br.end; ++i)
        cut.for_each_subtile(i, [&](const Block& t) { tile(t.origin, t.extent); });
    }
    return r;
  }
  for_each_loop_tile(
      spec, [&](const Dims& origin, const Dims& extent, int32_t) { tile(origin, extent); });
  return r;
}

}  // namespace tilesim
