#pragma once
// DMA instruction cost. One instruction occupies its engine for
//   issue + bursts * burst + (bytes + extra_granules * granule + pad_bytes) / peak   cycles,
// and its data is usable `latency` cycles after that. Efficiency versus contiguous bytes follows
// from the per-burst term; no threshold is an input.
// A padded copy (Ascend C DataCopyPad, a Triton masked load) whose rows are not a multiple of
// ub.align_bytes moves each row's last UB block whole: the pad bytes cost engine time but no GM
// traffic. Its unaligned rows also straddle extra GM granules, which is what makes such copies
// slow: HARDWARE.md's 12287-wide fp16 read (-21.6% [M]) is 1.249x the aligned GM bytes here
// (tests/kernels_test.cpp UnalignedRowWidthCostsExtraGranules).
// The paths (DmaOp::path) differ in their rates and per-burst work:
//   GM -> L1 ND2NZ   issue + max(bursts * dma.l1.nd2nz_row_cycles, gm bytes / dma.l1.nd2nz)
//   GM -> L1 plain   issue + bursts * burst + gm bytes / dma.l1.peak
// An ND2NZ copy reads its ND rows one strided burst each, a plain one (zN column blocks, ND2ND)
// long contiguous bursts: from HBM each has its own per-core rate (dma.l1.nd2nz_bytes_per_cycle,
// dma.l1.peak_bytes_per_cycle); from L2 both stream at dma.l1.l2_hit_bytes_per_cycle.
//   L0C -> GM        issue + bursts * burst + max(L0C bytes / fixpipe L0C rate,
//                                                  out bytes / fixpipe out rate)
// A read that hits L2 streams at the path's L2-hit rate instead of its peak (model/task_cost).

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// The copy as a DataCopyPad: marks it padded (UB rows rounded up to ub.align_bytes).
DmaOp data_copy_pad(DmaOp op);
// UB pad bytes of a padded copy: each unaligned burst rounded up to ub.align_bytes.
int64_t dma_pad_bytes(const DmaOp& op, const Hardware& hw);
// The engine's streaming rate of the instruction's path (from HBM for reads).
double dma_peak_bytes_per_cycle(const DmaOp& op, const Hardware& hw);
// Engine occupancy of one instruction (cycles), on an otherwise idle memory system.
double dma_occupancy_cycles(const DmaOp& op, const Hardware& hw);
// Cycles from the end of occupancy until the data is usable (read) or committed (write).
double dma_latency_cycles(DmaDir dir, const Hardware& hw);
// Bytes the instruction moves through shared global memory, misaligned granules included.
double dma_gm_bytes(const DmaOp& op, const Hardware& hw);
// Line requests the instruction makes of L2: each burst's pieces within one GM granule (an L2
// line), a misaligned burst's straddled granule included.
double dma_gm_requests(const DmaOp& op, const Hardware& hw);
// Useful bytes per engine cycle of a lone instruction divided by the engine peak (0..1].
double dma_efficiency(const DmaOp& op, const Hardware& hw);

}  // namespace tilesim
