#include "sim/l2_residency.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "model/error.hpp"
#include "model/stop.hpp"

namespace tilesim {

const char* l2_start_name(L2Start s) {
  return enum_name(kL2StartNames, s);
}

L2Blocks::L2Blocks(const TaskGraph& graph) {
  if (!graph.has_accesses()) {
    read_off_.assign(1, 0);
    return;
  }
  const auto tasks = static_cast<int32_t>(graph.tasks.size());
  const Access* first = graph.access_begin(0);
  ids_.resize(static_cast<size_t>(graph.access_end(tasks - 1) - first));
  shares_.assign(ids_.size(), 0.0F);
  // The one lookup per access: an open-addressing table (linear probing, kept at most half full
  // of distinct blocks, doubled as they come), indexed by Fibonacci hashing (the key's top bits
  // after a multiply), so keys that are not mixed (a hand-made graph's 1, 2, 3) spread too.
  int bits = 6;
  RecycledVector<uint64_t> slot_key;
  RecycledVector<int32_t> slot_id;  // -1: empty
  const auto home = [&bits](uint64_t key) {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
  };
  const auto place = [&](uint64_t key, int32_t id) {
    size_t i = home(key);
    while (slot_id[i] >= 0) i = (i + 1) & (slot_id.size() - 1);
    slot_key[i] = key;
    slot_id[i] = id;
  };
  const auto rehash = [&](int new_bits) {
    RecycledVector<uint64_t> keys = std::move(slot_key);
    RecycledVector<int32_t> ids = std::move(slot_id);
    bits = new_bits;
    slot_key.assign(size_t{1} << bits, 0);
    slot_id.assign(size_t{1} << bits, -1);
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] >= 0) place(keys[i], ids[i]);
  };
  rehash(bits);
  struct Seen {
    int64_t bytes = -1;   // largest allocating touch (-1: none yet)
    int32_t reader = -1;  // first reading task
    int32_t reads = 0;
  };
  RecycledVector<Seen> seen;
  for (int32_t t = 0; t < tasks; ++t) {
    check_stop();
    double task_read = 0, before = 0;
    for (const Access* a = graph.access_begin(t); a != graph.access_end(t); ++a)
      if (!a->write) task_read += static_cast<double>(a->bytes);
    for (const Access* a = graph.access_begin(t); a != graph.access_end(t); ++a) {
      if (!a->write && task_read > 0) {
        shares_[static_cast<size_t>(a - first)] = static_cast<float>(before / task_read);
        before += static_cast<double>(a->bytes);
      }
      size_t i = home(a->block);
      while (slot_id[i] >= 0 && slot_key[i] != a->block) i = (i + 1) & (slot_id.size() - 1);
      int32_t b = slot_id[i];
      if (b < 0) {
        b = static_cast<int32_t>(seen.size());
        seen.emplace_back();
        if (2 * seen.size() > slot_id.size()) rehash(bits + 1);
        place(a->block, b);  // at slot i, unless the table grew
      }
      ids_[static_cast<size_t>(a - first)] = b;
      Seen& s = seen[static_cast<size_t>(b)];
      if (!a->write) {
        ++s.reads;
        if (s.reader < 0)
          s.reader = t;
        else
          shared_ = shared_ || s.reader != t;
      }
      if (a->bypass_l2) continue;  // takes no room in L2
      ++touches_;
      if (s.bytes < 0 && !a->write) inputs_.push_back({b, a->bytes});
      s.bytes = std::max(s.bytes, a->bytes);
    }
  }
  read_off_.resize(seen.size() + 1);
  read_off_[0] = 0;
  for (size_t b = 0; b < seen.size(); ++b) {
    if (seen[b].bytes > 0) footprint_ += static_cast<double>(seen[b].bytes);
    read_off_[b + 1] = read_off_[b] + seen[b].reads;
  }
}

L2Residency::L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start)
    : L2Residency(graph, std::make_shared<const L2Blocks>(graph), capacity_bytes, start) {}

L2Residency::L2Residency(const TaskGraph& graph, std::shared_ptr<const L2Blocks> blocks,
                         double capacity_bytes, L2Start start)
    : graph_(graph), blocks_(std::move(blocks)), capacity_(capacity_bytes) {
  if (start == L2Start::kDirty) dirty_left_ = capacity_bytes;
  if (!graph.has_accesses()) return;
  const L2Blocks& b = *blocks_;
  absorb_writes_ = b.footprint() <= capacity_;
  // A block's stack distance is at most the footprint less its own bytes: below capacity, every
  // block touched before is resident, and the distances need no tree.
  distances_ = b.footprint() >= capacity_;
  const auto n = static_cast<size_t>(b.count());
  last_touch_.assign(n, Last{});
  fetched_.assign(n, Read{});
  reads_.resize(static_cast<size_t>(b.read_offsets().back()));
  head_.assign(b.read_offsets().begin(), b.read_offsets().end() - 1);
  tail_ = head_;
  double input_bytes = 0;
  for (const auto& in : b.inputs()) input_bytes += static_cast<double>(in.bytes);
  const bool warm = start == L2Start::kWarm && input_bytes <= capacity_;
  if (distances_) tree_.assign(b.touches() + (warm ? b.inputs().size() : 0) + 1, 0.0);
  if (!warm) return;
  for (const auto& in : b.inputs()) touch(in.block, static_cast<double>(in.bytes));
}

void L2Residency::add(int64_t pos, double bytes) {
  for (auto i = static_cast<size_t>(pos) + 1; i < tree_.size(); i += i & (~i + 1))
    tree_[i] += bytes;
  live_ += bytes;
}

double L2Residency::bytes_after(int64_t pos) const {
  double upto = 0;  // bytes at touches 0..pos
  for (auto i = static_cast<size_t>(pos) + 1; i > 0; i -= i & (~i + 1)) upto += tree_[i];
  return live_ - upto;
}

void L2Residency::touch(int32_t block, double bytes) {
  Last& last = last_touch_[static_cast<size_t>(block)];
  if (!distances_) {
    last = Last{next_++, bytes};
    return;
  }
  if (last.pos >= 0) add(last.pos, -last.bytes);
  last = Last{next_, bytes};
  add(next_++, bytes);
}

void L2Residency::use_prior_starts(const std::vector<double>& starts,
                                   const std::vector<double>& kind_runs) {
  if (starts.size() != graph_.tasks.size())
    throw InternalError("L2 residency: prior starts and the graph's tasks differ in count");
  prior_.assign(starts.begin(), starts.end());
  // Each block's slice holds one entry per read access (a task's reads of it at one time once).
  const auto& off = blocks_->read_offsets();
  prior_readers_.resize(static_cast<size_t>(off.back()));
  prior_end_.assign(off.begin(), off.end() - 1);
  if (!graph_.has_accesses()) return;
  for (int32_t t = 0; t < static_cast<int32_t>(graph_.tasks.size()); ++t)
    for (const Access* a = graph_.access_begin(t); a != graph_.access_end(t); ++a)
      if (!a->write) {
        const auto b = static_cast<size_t>(blocks_->id(graph_, a));
        const double run =
            kind_runs.at(static_cast<size_t>(graph_.tasks[static_cast<size_t>(t)].kind));
        prior_readers_[static_cast<size_t>(prior_end_[b]++)] = {
            prior_[static_cast<size_t>(t)] + blocks_->read_share(graph_, a) * run, t};
      }
  for (size_t b = 0; b < prior_end_.size(); ++b) {
    const auto lo = prior_readers_.begin() + off[b], hi = prior_readers_.begin() + prior_end_[b];
    std::sort(lo, hi);
    prior_end_[b] = static_cast<int32_t>(std::unique(lo, hi) - prior_readers_.begin());
  }
}

int64_t L2Residency::prior_co_readers(int32_t block, int32_t task, double at, double window) const {
  const auto b = static_cast<size_t>(block);
  const auto first = prior_readers_.begin() + blocks_->read_offsets()[b];
  const auto last = prior_readers_.begin() + prior_end_[b];
  // Strictly inside (at - window, at + window), itself excluded.
  const auto lo =
      std::upper_bound(first, last, std::pair{at - window, std::numeric_limits<int32_t>::max()});
  const auto hi =
      std::lower_bound(first, last, std::pair{at + window, std::numeric_limits<int32_t>::min()});
  return std::count_if(lo, hi, [&](const auto& r) { return r.second != task; });
}

bool L2Residency::saw_co_readers() const {
  if (co_read_) return true;
  const auto& off = blocks_->read_offsets();
  // A read's co-readers are the block's reads within its window: in the order of when they read
  // (a later task may read a block before an earlier one that reads it late in its run), the
  // neighbours on either side.
  std::vector<Read> block_reads;
  for (size_t b = 0; b + 1 < off.size(); ++b) {
    block_reads.assign(reads_.begin() + off[b], reads_.begin() + tail_[b]);
    std::sort(block_reads.begin(), block_reads.end(),
              [](const Read& x, const Read& y) { return x.at < y.at; });
    const size_t hi = block_reads.size();
    for (size_t i = 0; i < hi; ++i) {
      const Read& r = block_reads[i];
      for (size_t j = i + 1; j < hi && block_reads[j].at - r.at < r.window; ++j)
        if (block_reads[j].task != r.task) return true;
      for (size_t j = i; j-- > 0 && r.at - block_reads[j].at < r.window;)
        if (block_reads[j].task != r.task) return true;
    }
  }
  return false;
}

std::optional<Traffic> L2Residency::on_start(int32_t task, double now, double run, double hit_run) {
  if (hit_run < 0) hit_run = run;
  if (graph_.access_begin(task) == graph_.access_end(task)) return std::nullopt;
  check_stop();  // a task's accesses are the simulation's work: a cancelled sweep stops here
  double moved = 0, read = 0, read_miss = 0, write_hbm = 0, shared = 0, queued = 0, in_flight = 0;
  double task_read = 0;
  for (const Access* a = graph_.access_begin(task); a != graph_.access_end(task); ++a)
    if (!a->write) task_read += static_cast<double>(a->bytes);
  for (const Access* a = graph_.access_begin(task); a != graph_.access_end(task); ++a) {
    double window = 0, at = now;
    const int32_t block = blocks_->id(graph_, a);
    const auto bi = static_cast<size_t>(block);
    const Last& last = last_touch_[bi];
    const bool resident = last.pos >= 0 && (!distances_ || bytes_after(last.pos) < capacity_);
    if (!a->write && run <= 0) co_read_ = true;  // not in reads_: saw_co_readers cannot tell
    if (!a->write && run > 0) {
      int32_t& head = head_[bi];
      int32_t& tail = tail_[bi];
      window = (resident ? hit_run : run) * static_cast<double>(a->bytes) / task_read;
      // When the task reads the block: its blocks in the order it records them, on the time base
      // every task of its kind shares (its idle-machine run), so tasks reading in step meet.
      const double share = blocks_->read_share(graph_, a);
      at = now + share * run;
      while (head < tail && reads_[static_cast<size_t>(head)].at <= now - window) ++head;
      // Other tasks only: a task reading one block twice does not wait for itself.
      const auto others =
          prior_.empty()
              ? std::count_if(
                    reads_.begin() + head, reads_.begin() + tail,
                    [&](const Read& x) { return x.task != task && std::abs(x.at - at) < window; })
              : prior_co_readers(block, task, prior_[static_cast<size_t>(task)] + share * run,
                                 window);
      if (others > 0) {
        co_read_ = true;
        shared += static_cast<double>(a->bytes);
        queued += static_cast<double>(a->bytes) * static_cast<double>(others + 1);
      }
      if (tail == blocks_->read_offsets()[bi + 1])
        throw InternalError("L2 residency: a task started twice");
      reads_[static_cast<size_t>(tail++)] = {at, task, window};
    }
    const auto b = static_cast<double>(a->bytes);
    moved += b;
    if (a->bypass_l2) {  // read past L2: no allocation, so nothing evicted and nothing kept
      read += b;
      if (!resident) read_miss += b;
      continue;
    }
    if (!resident) {
      const double evicted = std::min(b, dirty_left_);
      dirty_left_ -= evicted;
      write_hbm += evicted;
    }
    if (a->write) {
      if (!absorb_writes_) write_hbm += b;
    } else {
      read += b;
      if (!resident) {
        read_miss += b;
        if (run > 0) fetched_[bi] = {at, task};
      } else if (run > 0) {
        const Read& f = fetched_[bi];
        if (f.task >= 0 && f.task != task && std::abs(at - f.at) < window) in_flight += b;
      }
    }
    touch(block, b);
  }
  if (moved <= 0) return Traffic{};
  return Traffic{read_miss / moved, write_hbm / moved,
                 read > 0 ? 1 - (read_miss + in_flight) / read : 0, read > 0 ? shared / read : 0,
                 read > 0 ? queued / read : 0};
}

}  // namespace tilesim
