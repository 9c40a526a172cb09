#include "model/dma_cost.hpp"

#include <algorithm>

namespace tilesim {

double dma_gm_bytes(const DmaOp& op, const Hardware& hw) {
  return static_cast<double>(op.bytes()) +
         static_cast<double>(op.extra_granules) * static_cast<double>(hw.dma.gm_granule_bytes);
}

double dma_gm_requests(const DmaOp& op, const Hardware& hw) {
  const int64_t g = hw.dma.gm_granule_bytes;
  return static_cast<double>(op.bursts * ((op.burst_bytes + g - 1) / g) + op.extra_granules);
}

DmaOp data_copy_pad(DmaOp op) {
  op.padded = true;
  return op;
}

int64_t dma_pad_bytes(const DmaOp& op, const Hardware& hw) {
  if (!op.padded) return 0;
  const int64_t a = hw.ub.align_bytes;
  return op.bursts * ((op.burst_bytes + a - 1) / a * a - op.burst_bytes);
}

double dma_peak_bytes_per_cycle(const DmaOp& op, const Hardware& hw) {
  if (op.dir == DmaDir::kWrite) return hw.dma.write.peak_bytes_per_cycle;
  switch (op.path) {
    case DmaPath::kUb:
      return hw.dma.read.peak_bytes_per_cycle;
    case DmaPath::kL1Nd2nz:
      return hw.dma.l1.nd2nz_bytes_per_cycle;
    case DmaPath::kL1:
    case DmaPath::kFixpipe:
      break;
  }
  return hw.dma.l1.peak_bytes_per_cycle;
}

double dma_occupancy_cycles(const DmaOp& op, const Hardware& hw) {
  const bool read = op.dir == DmaDir::kRead;
  const double issue = read ? hw.dma.read.issue_cycles : hw.dma.write.issue_cycles;
  const double burst = read ? hw.dma.read.burst_cycles : hw.dma.write.burst_cycles;
  const auto bursts = static_cast<double>(op.bursts);
  const double gm = dma_gm_bytes(op, hw);
  switch (op.path) {
    case DmaPath::kL1Nd2nz:
      // The AIC's engine converts each ND row to NZ as it lands, a stage in the copy's pipeline:
      // the slower of the conversion and the transfer sets the pace (hicann/pypto
      // simulation_ca/A2A3/model/pipe.cpp CalcNdNzOutL1 takes the max of the GM read and the L1
      // write per row), so rows cost nothing beyond the bytes once the bytes are the slower.
      return issue +
             std::max(bursts * hw.dma.l1.nd2nz_row_cycles, gm / dma_peak_bytes_per_cycle(op, hw));
    case DmaPath::kFixpipe:
      // Reads the accumulator out of L0C, converts and writes the rows into GM, a stage each in
      // one pipeline: the slowest sets the pace, with no per-row constant (hicann/pypto
      // simulation_ca/A2A3/model/pipe.cpp CalcFixL0cOut: per row the max of the GM write and
      // the L0C read).
      return issue +
             std::max({static_cast<double>(op.src_bytes) / hw.cube.fixpipe_l0c_bytes_per_cycle,
                       gm / hw.cube.fixpipe_out_bytes_per_cycle,
                       gm / hw.cube.fixpipe_gm_bytes_per_cycle});
    case DmaPath::kUb:
    case DmaPath::kL1:
      break;
  }
  return issue + bursts * burst +
         (gm + static_cast<double>(dma_pad_bytes(op, hw))) / dma_peak_bytes_per_cycle(op, hw);
}

double dma_latency_cycles(DmaDir dir, const Hardware& hw) {
  return dir == DmaDir::kRead ? hw.dma.read.latency_cycles : hw.dma.write.latency_cycles;
}

double dma_efficiency(const DmaOp& op, const Hardware& hw) {
  const double peak = dma_peak_bytes_per_cycle(op, hw);
  return static_cast<double>(op.bytes()) / peak / dma_occupancy_cycles(op, hw);
}

}  // namespace tilesim
