#pragma once
// The contiguous-bytes knee (rulebook Rule 1.1, "contiguous transfer must reach about 1 KB"),
// measured from the model rather than assumed: the copy_in kernel is lowered and simulated for a
// grid of contiguous run lengths, and the knee is the smallest run whose achieved bandwidth
// reaches 90% / 95% of the plateau (the bandwidth at the largest run of the grid).
//
// Each grid point streams tiles of a fixed size (kKneeTileBytes) whose rows are separate bursts of
// `c` bytes (the tensor is twice as wide as the tile, so rows never merge into one burst) under
// the Ascend C partition: every core streams kKneeTilesPerCore tiles of its own. Two scenarios:
// one core streaming on an otherwise idle machine, and every AIV core streaming at once (sharing
// HBM bandwidth).
//
// The knee isolates contiguity: by default every burst starts on a GM granule boundary, so no
// burst pays for granules it straddles (the separate 512 B-alignment mechanism). In a tensor two
// tiles wide the second tile's rows start `c` bytes into a granule; that layout (kPacked) is
// measurable too, and its curve is a sawtooth in `c` on top of the contiguity curve.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/dtype.hpp"
#include "model/hardware.hpp"

namespace tilesim {

inline constexpr int64_t kKneeTileBytes = 32768;  // bytes of one tile (rows x c)
inline constexpr int64_t kKneeTilesPerCore = 32;  // tiles each streaming core copies
inline constexpr int64_t kKneeMaxBytes = 32768;   // largest contiguous run of the grid

enum class KneeBursts {
  kGranuleAligned,  // every burst starts on a GM granule boundary (no straddled granules)
  kPacked,          // bursts start where the two-tiles-wide tensor puts them (straddles counted)
};

struct KneePoint {
  int64_t contiguous_bytes = 0;  // bytes of one burst (tile[-1] * dtype bytes)
  double gbps = 0;               // useful bytes moved by all streaming cores / gen_time
  double efficiency = 0;         // gbps / plateau_gbps
};

struct KneeCurve {
  std::string scenario;  // "idle core" or "all cores streaming"
  int cores = 0;         // cores streaming
  DType dtype = DType::kFp32;
  std::vector<KneePoint> points;  // ascending contiguous bytes
  double plateau_gbps = 0;        // bandwidth at the largest contiguous run of the grid
  // Smallest contiguous bytes whose efficiency reaches the level and stays there for every larger
  // run of the grid; empty when no run does. Elements of tile[-1] = bytes / dtype_bytes(dtype).
  std::optional<int64_t> knee90_bytes, knee95_bytes;
};

// The contiguous run lengths measured: every multiple of hw.ub.align_bytes up to 2048 B, 256 B
// steps up to 8 KiB, then powers of two up to kKneeMaxBytes.
std::vector<int64_t> knee_grid(const Hardware& hw);

// Smallest c of `points` (ascending) with efficiency >= level there and at every larger c.
std::optional<int64_t> knee_at(const std::vector<KneePoint>& points, double level);

// One curve: `cores` cores each streaming their own tiles of `dtype` (throws tilesim::Error when
// `cores` is not in 1..hw.cores.aiv).
KneeCurve measure_knee_curve(const Hardware& hw, DType dtype, int cores, int threads = 0,
                             KneeBursts bursts = KneeBursts::kGranuleAligned);

// Both scenarios (idle core, then all cores streaming) for each dtype, dtype-major, with
// granule-aligned bursts. Deterministic: the result does not depend on `threads` (0: every
// hardware thread).
std::vector<KneeCurve> measure_contiguity_knees(const Hardware& hw,
                                                const std::vector<DType>& dtypes, int threads = 0);

}  // namespace tilesim
