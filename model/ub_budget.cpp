#include "model/ub_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "model/error.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

namespace {
constexpr MemSpace kSpaces[] = {MemSpace::kUb, MemSpace::kL1, MemSpace::kL0a, MemSpace::kL0b,
                                MemSpace::kL0c};

const Hardware::AlignedMemory& memory(MemSpace space, const Hardware& hw) {
  switch (space) {
    case MemSpace::kUb:
      return hw.ub;
    case MemSpace::kL1:
      return hw.l1;
    case MemSpace::kL0a:
      return hw.l0a;
    case MemSpace::kL0b:
      return hw.l0b;
    case MemSpace::kL0c:
      return hw.l0c;
  }
  throw InternalError("memory: unknown MemSpace");
}
}  // namespace

int64_t mem_capacity(MemSpace space, const Hardware& hw) {
  return memory(space, hw).bytes;
}

int64_t mem_align(MemSpace space, const Hardware& hw) {
  return memory(space, hw).align_bytes;
}

// How many copies of buffer `b` a plan at `depth` keeps. As written (Ascend C), inputs and
// outputs rotate and temporaries are single. The Triton-Ascend compiler multi-buffers what its
// copies fill and drain (Ascend/AscendNPU-IR bishengir/lib/Dialect/HIVM/Transforms/
// MarkMultiBuffer.cpp: MarkMultiBuffer<LoadOp> / <StoreOp> mark the UB side of a load or store,
// <ND2NZOp> the L1 side of a GM -> L1 copy, <FixpipeOp> the L0C side; only inside scf.for /
// scf.while). A UB temporary, the result of a vector op that no copy fills or drains, is not
// marked: one copy; L1 and L0C temporaries are what ND2NZ fills and Fixpipe drains.
int copies_of(const TaskKind& kind, const Buffer& b, int depth) {
  if (b.role == BufferRole::kResident) return 1;
  if (!kind.compiler_multibuffer) return b.role == BufferRole::kTemp ? 1 : depth;
  return b.role == BufferRole::kTemp && b.space == MemSpace::kUb ? 1 : depth;
}

int64_t footprint(const TaskKind& kind, MemSpace space, int depth, const Hardware& hw) {
  int64_t total = 0;
  for (const auto& b : kind.buffers) {
    if (b.space != space) continue;
    total += round_up(b.bytes, mem_align(space, hw)) * copies_of(kind, b, depth);
  }
  return total;
}

int64_t body_iterations(const TaskKind& kind) {
  int64_t n = 0;
  for (const auto& step : kind.steps) n += std::max<int64_t>(step.repeat, 0);
  return n;
}

BufferPlan plan_buffers(const TaskKind& kind, const Hardware& hw) {
  BufferPlan plan;
  for (MemSpace s : kSpaces) plan.capacity[static_cast<int>(s)] = mem_capacity(s, hw);
  // A compiler multi-buffers a loop's body only: a body that runs once has nothing to overlap.
  const bool looped = !kind.compiler_multibuffer || body_iterations(kind) > 1;
  const int requested = looped ? std::max(1, kind.buffer_count) : 1;
  for (int depth = requested; depth >= (kind.compiler_multibuffer ? requested : 1); --depth) {
    bool fits = true;
    for (MemSpace s : kSpaces) {
      const int64_t used = footprint(kind, s, depth, hw);
      plan.used[static_cast<int>(s)] = used;
      if (used > plan.capacity[static_cast<int>(s)]) fits = false;
    }
    if (fits) {
      plan.depth = depth;
      return plan;
    }
  }
  for (MemSpace s : kSpaces) {
    const int depth = kind.compiler_multibuffer ? requested : 1;
    const int64_t used = footprint(kind, s, depth, hw);
    if (used <= mem_capacity(s, hw)) continue;
    // Each buffer as it counts in `used`: its aligned size, times its copies. Past a dozen, the
    // largest dozen and what the rest add up to, so the message stays one readable line.
    struct Counted {
      const Buffer* buffer;
      int64_t bytes;
      int copies;
    };
    std::vector<Counted> counted;
    for (const auto& b : kind.buffers)
      if (b.space == s)
        counted.push_back({&b, round_up(b.bytes, mem_align(s, hw)), copies_of(kind, b, depth)});
    constexpr size_t kListed = 12;
    int64_t rest = 0;
    const size_t more = counted.size() > kListed ? counted.size() - kListed : 0;
    if (more > 0) {
      std::stable_sort(counted.begin(), counted.end(), [](const Counted& a, const Counted& b) {
        return a.bytes * a.copies > b.bytes * b.copies;
      });
      for (size_t i = kListed; i < counted.size(); ++i)
        rest += counted[i].bytes * counted[i].copies;
      counted.resize(kListed);
    }
    std::string list;
    for (const Counted& c : counted)
      list += fmt::format("{}{} {} B{}", list.empty() ? "" : ", ", c.buffer->name, c.bytes,
                          c.copies > 1 ? fmt::format(" x {}", c.copies) : "");
    if (more > 0) list += fmt::format(", and {} more of {} B in all", more, rest);
    throw Error(fmt::format("{} overflow in task '{}': needs {} B, has {} B (buffers: {})",
                            mem_space_name(s), kind.label, used, mem_capacity(s, hw), list),
                ErrorKind::kCapacity);
  }
  return plan;  // unreachable: depth 1 fits when no space overflows
}

}  // namespace tilesim
