#pragma once
// On-chip capacity check for one task kind. Input and output buffers rotate through
// `depth` copies (multi-buffering); temporaries have one copy. Every allocation is rounded up to
// the memory's alignment. The largest depth <= the requested one that fits is used; if even one
// copy does not fit, the kind is rejected with "needs N B, has M B" and its buffer list.

#include <array>
#include <cstdint>
#include <string>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

struct BufferPlan {
  int depth = 1;                      // multi-buffering depth actually used
  std::array<int64_t, 5> used{};      // bytes per MemSpace at that depth
  std::array<int64_t, 5> capacity{};  // bytes per MemSpace
};

int64_t mem_capacity(MemSpace space, const Hardware& hw);
int64_t mem_align(MemSpace space, const Hardware& hw);
int64_t footprint(const TaskKind& kind, MemSpace space, int depth, const Hardware& hw);
// How many times the kind's body runs (its steps' repeats): a compiler-planned body that runs
// once is not multi-buffered.
int64_t body_iterations(const TaskKind& kind);
// Throws tilesim::Error on overflow.
BufferPlan plan_buffers(const TaskKind& kind, const Hardware& hw);

}  // namespace tilesim
