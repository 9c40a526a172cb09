#pragma once
// DMA instruction cost. One instruction occupies its engine for
//   issue + bursts * burst + (bytes + extra_granules * granule) / peak   cycles,
// and its data is usable `latency` cycles after that. Efficiency versus contiguous bytes follows
// from the per-burst term; no threshold is an input.

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// The copy as a DataCopyPad: marks it padded (UB rows rounded up to ub.align_bytes).
DmaOp data_copy_pad(DmaOp op);
// UB pad bytes of a padded copy: each unaligned burst rounded up to ub.align_bytes.
int64_t dma_pad_bytes(const DmaOp& op, const Hardware& hw);
// Engine occupancy of one instruction (cycles), on an otherwise idle memory system.
double dma_occupancy_cycles(const DmaOp& op, const Hardware& hw);
// Cycles from the end of occupancy until the data is usable (read) or committed (write).
double dma_latency_cycles(DmaDir dir, const Hardware& hw);
// Bytes the instruction moves through shared global memory, misaligned granules included.
double dma_gm_bytes(const DmaOp& op, const Hardware& hw);
// Useful bytes per engine cycle of a lone instruction divided by the engine peak (0..1].
double dma_efficiency(const DmaOp& op, const Hardware& hw);

}  // namespace tilesim
