#include "model/dma_cost.hpp"

namespace tilesim {

double dma_gm_bytes(const DmaOp& op, const Hardware& hw) {
  return static_cast<double>(op.bytes()) +
         static_cast<double>(op.extra_granules) * static_cast<double>(hw.dma.gm_granule_bytes);
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

double dma_occupancy_cycles(const DmaOp& op, const Hardware& hw) {
  const bool read = op.dir == DmaDir::kRead;
  const double issue = read ? hw.dma.read.issue_cycles : hw.dma.write.issue_cycles;
  const double burst = read ? hw.dma.read.burst_cycles : hw.dma.write.burst_cycles;
  const double peak = read ? hw.dma.read.peak_bytes_per_cycle : hw.dma.write.peak_bytes_per_cycle;
  return issue + static_cast<double>(op.bursts) * burst +
         (dma_gm_bytes(op, hw) + static_cast<double>(dma_pad_bytes(op, hw))) / peak;
}

double dma_latency_cycles(DmaDir dir, const Hardware& hw) {
  return dir == DmaDir::kRead ? hw.dma.read.latency_cycles : hw.dma.write.latency_cycles;
}

double dma_efficiency(const DmaOp& op, const Hardware& hw) {
  const double peak = op.dir == DmaDir::kRead ? hw.dma.read.peak_bytes_per_cycle
                                              : hw.dma.write.peak_bytes_per_cycle;
  return static_cast<double>(op.bytes()) / peak / dma_occupancy_cycles(op, hw);
}

}  // namespace tilesim
