#pragma once
// The task-graph IR: what a kernel hands to the cost model and the simulator.
//
// A task is a sequence of tile steps on one core type. A tile step is one loop iteration of
// "DMA in -> compute -> DMA out", repeated `repeat` times; the cost model overlaps consecutive
// iterations through multi-buffering. Tasks that share the same work share a TaskKind, so a graph
// of a million tasks holds a handful of kinds.
//
// The IR expresses both runtime styles:
//  - kMpmd (PyPTO): one task per program subgraph instance, grouped into root functions (loop
//    bodies) that the control AICPU builds and stitches; scheduler AICPUs dispatch ready tasks.
//  - kSpmd (Ascend C / Triton): tasks looping over their tiles, either pinned to a core (the
//    ascendc partition; all cores start at kernel launch) or unpinned blocks of an spmd launch,
//    which the hardware places on the first free core of their type. A block may be a run of
//    consecutive tasks (continues_block), so each of its work items carries its own GM accesses.

#include <cstdint>
#include <string>
#include <vector>

#include "model/dtype.hpp"
#include "model/enum_names.hpp"
#include "model/recycling_allocator.hpp"

namespace tilesim {

enum class CoreType { kAiv, kAic };
inline constexpr std::array<EnumName<CoreType>, 2> kCoreTypeNames = {
    {{CoreType::kAiv, "AIV"}, {CoreType::kAic, "AIC"}}};
const char* core_type_name(CoreType t);

enum class DmaDir { kRead, kWrite };  // read: GM -> UB/L1 (MTE2); write: UB/L0C -> GM (MTE3/FixP)

// The engine path a DMA takes; each prices its bytes and bursts its own way (model/dma_cost.hpp).
enum class DmaPath : uint8_t {
  kUb,       // GM <-> UB on a vector core (MTE2 / MTE3)
  kL1Nd2nz,  // GM -> L1 on a cube core converting ND rows to the NZ fractal layout (DataCopy
             // with Nd2NzParams): every burst is one ND row, converted as it lands
  kL1,       // GM -> L1 on a cube core, a plain copy of contiguous blocks (an operand already
             // stored in the fractal layout, catlass zN / nZ)
  kFixpipe,  // L0C -> GM through the fixpipe (NZ -> ND, with the cast or quantisation)
};
inline constexpr std::array<EnumName<DmaPath>, 4> kDmaPathNames = {
    {{DmaPath::kUb, "ub"},
     {DmaPath::kL1Nd2nz, "l1_nd2nz"},
     {DmaPath::kL1, "l1"},
     {DmaPath::kFixpipe, "fixpipe"}}};
const char* dma_path_name(DmaPath p);

// One DMA instruction: `bursts` contiguous runs of `burst_bytes`, plus the extra GM granules its
// misaligned bursts touch.
struct DmaOp {
  DmaDir dir = DmaDir::kRead;
  int64_t bursts = 0;
  int64_t burst_bytes = 0;
  int64_t extra_granules = 0;
  // A padded copy (Ascend C DataCopyPad, a Triton masked load/store): each burst's UB row is
  // rounded up to ub.align_bytes; a burst that is not a multiple of it pays the padding.
  bool padded = false;
  DmaPath path = DmaPath::kUb;
  // kFixpipe: bytes read out of L0C (the fp32 / int32 accumulator; bytes() is what lands in GM).
  int64_t src_bytes = 0;
  // A store that adds into GM (an atomic accumulate through the fixpipe or MTE3).
  bool atomic = false;
  int64_t bytes() const { return bursts * burst_bytes; }
};

enum class VecClass {
  kSimple,         // add, sub, mul, max, min, relu, copy, broadcast: full-rate elementwise
  kComplex,        // sqrt, reciprocal, divs: slower elementwise, the rate of no measurement
  kExpLn,          // exp, ln: one source, pto-isa's 910B3 calibration (hardware.md vector.exp_ln)
  kDiv,            // div: two sources, pto-isa's 910B3 calibration (hardware.md vector.div)
  kRsqrt,          // rsqrt: one source, pto-isa's 910B3 calibration (hardware.md vector.rsqrt)
  kReduceLast,     // reduce each row along the last (contiguous) axis: in-row reduce instructions
  kReduceRows,     // combine `rows` rows elementwise (reduction along a non-last axis)
  kScan,           // `rows` dependent elementwise adds of `cols` elements each (a cumsum's steps)
  kScalarElement,  // element by element on the scalar unit (an integer compare the vector unit's
                   // Cmp does not take: hardware.md scalar.index_compare_cycles_per_element)
};
inline constexpr std::array<EnumName<VecClass>, 9> kVecClassNames = {
    {{VecClass::kSimple, "simple"},
     {VecClass::kComplex, "complex"},
     {VecClass::kExpLn, "exp_ln"},
     {VecClass::kDiv, "div"},
     {VecClass::kRsqrt, "rsqrt"},
     {VecClass::kReduceLast, "reduce_last"},
     {VecClass::kReduceRows, "reduce_rows"},
     {VecClass::kScan, "scan"},
     {VecClass::kScalarElement, "scalar_element"}}};
const char* vec_class_name(VecClass c);

// One vector operation on a tile: `batch` independent instances of a rows x cols block.
// Elementwise classes touch batch * rows * cols elements.
struct VecOp {
  VecClass cls = VecClass::kSimple;
  DType dtype = DType::kFp32;
  int64_t batch = 1;
  int64_t rows = 1;
  int64_t cols = 1;
  // A binary op whose two sources sit in one UB bank group, so each repeat reads them one after
  // the other (Ascend C best practices, "Avoiding Bank Conflicts in the UB": 16 bank groups, one
  // 32 B row per group per cycle). The default: buffers sized in multiples of 512 B and laid
  // out one after another start in the same group. A kernel that offsets them (the add study's
  // case 6) clears it.
  bool bank_conflict = true;
  // An instruction of the same operation as the VecOp before it (a broadcast binary issued row by
  // row): a compiled loop syncs once per operation (model/task_cost.cpp, compiled_loop_cycles).
  bool same_op = false;
  // kReduceLast only: the rows reduced by block reduces (vcgadd / vcgmax turn each 32 B block into
  // one value, pass after pass over the packed partials) instead of halving adds and a
  // WholeReduce per row (pto-isa TROWSUM / TROWMAX, include/pto/npu/a2a3/TRowReduceOps.hpp).
  bool block_reduce = false;
  // A scatter write (a vector Copy whose repeat lands its 32 B blocks dst_block_stride blocks
  // apart: the ND -> NZ rearrangement in UB); 0: its blocks are written one after another.
  int64_t dst_block_stride = 0;
};

// One cube mmad on an L0 tile: m x k times k x n, fed by the MTE1 loads L1 -> L0A of
// `l0a_bytes` and L1 -> L0B of `l0b_bytes` just before it (0: the operand is already in L0, as
// catlass keeps an L0A tile across the n parts of one k part).
struct CubeOp {
  DType dtype = DType::kFp16;
  int64_t m = 0, k = 0, n = 0;
  int64_t l0a_bytes = 0, l0b_bytes = 0;
  // L1 -> the bias table (BT) before the mmad that starts a C tile from a bias row (MTE1).
  int64_t bt_bytes = 0;
};

struct TileStep {
  std::vector<DmaOp> loads;
  // Vector work on the load buffers that the loads wait for: a Triton-Ascend masked load of a
  // partial tile first fills its whole UB buffer with the load's `other` (0 by default; hivm
  // vbrc, split from the load by LoadOp::decomposeOperation), then MTE2 copies the valid part,
  // so the copy waits for the vector pipe (triton-ascend docs performance_guidelines.md).
  std::vector<VecOp> load_fill;
  std::vector<VecOp> vec;
  std::vector<CubeOp> cube;
  std::vector<DmaOp> stores;
  int64_t repeat = 1;
  // Set when the step's last store adds its partial result into a GM block (an atomic
  // accumulate; the block is the task's last write Access), with the vector work that folds one
  // partial into another in UB. A task that runs consecutive such steps into the same block
  // keeps the running partial in UB and stores once (kernels/lower/task_packing.cpp).
  bool accumulates = false;
  std::vector<VecOp> fold;
  // Empty again, its vectors keeping their storage (a lowering's scratch step).
  void clear() {
    for (auto* ops : {&loads, &stores}) ops->clear();
    for (auto* ops : {&load_fill, &vec, &fold}) ops->clear();
    cube.clear();
    repeat = 1;
    accumulates = false;
  }
};

enum class MemSpace { kUb, kL1, kL0a, kL0b, kL0c };
inline constexpr std::array<EnumName<MemSpace>, 5> kMemSpaceNames = {{{MemSpace::kUb, "UB"},
                                                                      {MemSpace::kL1, "L1"},
                                                                      {MemSpace::kL0a, "L0A"},
                                                                      {MemSpace::kL0b, "L0B"},
                                                                      {MemSpace::kL0c, "L0C"}}};
const char* mem_space_name(MemSpace m);

// Inputs and outputs rotate with multi-buffering; a temporary is held once, and so is a resident
// input (loaded once, before the loop its task walks: nothing to overlap).
enum class BufferRole { kInput, kOutput, kTemp, kResident };

struct Buffer {
  std::string name;
  int64_t bytes = 0;
  BufferRole role = BufferRole::kTemp;
  MemSpace space = MemSpace::kUb;
};

struct TaskKind {
  std::string label;  // e.g. "add[64x1024]"
  CoreType core = CoreType::kAiv;
  int psg = 0;  // program subgraph kind (index into TaskGraph::psg_names)
  std::vector<TileStep> steps;
  std::vector<Buffer> buffers;
  int buffer_count = 2;  // requested multi-buffering depth; the model uses less if UB is short
  // How the kernel's source allocates UB. false (Ascend C as written): inputs and outputs rotate
  // through buffer_count copies, temporaries once, and a depth that does not fit falls back.
  // true (the Triton-Ascend compiler): every tensor live in the loop body is its own buffer (a
  // result written over a source dying at it shares it: the lowering's in-place reuse) and
  // multibuffer (on by default) doubles what the copies fill and drain, not the vector ops'
  // temporaries (AscendNPU-IR MarkMultiBuffer; model/ub_budget.cpp copies_of); a plan that
  // does not fit is a compile error ("ub overflow"), with no fallback (triton-lang/triton-ascend
  // issue 302). Only
  // a body inside a loop is multi-buffered (Ascend/AscendNPU-IR HIVM MarkMultiBuffer marks a
  // buffer only when every op around it is an scf.for / scf.while): a block of one sub-tile, a
  // program without a loop, plans every buffer once (model/ub_budget: body_iterations).
  bool compiler_multibuffer = false;
  // Cube kinds: copies of L0A / L0B the MTE1 loads rotate through (catlass splits each in two:
  // ping-pong). 1: a load waits for the mmad before it; >= 2: the next load overlaps the mmad.
  int l0_depth = 2;
  // A task of a loop that carries state from one iteration to the next (flash attention's running
  // max, sum and O): PyPTO merges independent isomorphic tile chains into one task, and these
  // depend on each other, so kernels/lower/task_packing.cpp leaves each its own task.
  bool carries_state = false;
  // Tasks of this kind a core may hold at once: a kernel that software-pipelines across its loop
  // (flash attention's key blocks) starts the next iteration's copy-in while this one computes
  // (model/task_overlap.hpp; sim/spmd_runtime.hpp's mixed blocks). 1: each task waits for the
  // one before it on its core to end.
  int overlap = 1;
};

// One GM block a task reads or writes, named by a key that is equal for the same block of the
// same tensor (model/tile_geometry.hpp block_key). The simulator's L2 model uses them to find
// re-reads and the kernel's footprint; tasks without accesses count all traffic against HBM.
struct Access {
  uint64_t block = 0;
  int64_t bytes = 0;
  bool write = false;
  // A read that does not allocate in L2 (Ascend C SetL2CacheHint(CACHE_MODE_DISABLE), for data
  // read once): it hits only what L2 already holds and takes no room there.
  bool bypass_l2 = false;
};

struct Task {
  int32_t kind = 0;
  int32_t root = 0;              // root function (loop body) it belongs to
  int32_t pinned_core = -1;      // kSpmd: the core it runs on (index among cores of its type);
                                 // -1: a block placed on the first free core
  int32_t launch = 0;            // kSpmd: the kernel launch it belongs to; launch k + 1 starts when
                                 // every task of launch k has finished (sim/spmd_runtime.hpp)
  bool continues_block = false;  // kSpmd, unpinned: the next iteration of the block that task
                                 // (index - 1) belongs to; it runs on that block's core right
                                 // after it (a block whose work items are tasks of their own)
  int8_t mix_lane = -1;          // kSpmd: a task of a mixed block (an AIC and its two AIVs on one
                                 // block, synchronised by cross-core flags), run by the block's
                                 // AIC (0) or its first or second AIV (1, 2). A mixed block's tasks
                                 // are consecutive (the first does not continue a block, the rest
                                 // do) and its edges stay inside it (sim/spmd_runtime.hpp)
};

enum class RuntimeStyle { kMpmd, kSpmd };

class TaskGraph {
 public:
  RuntimeStyle runtime = RuntimeStyle::kMpmd;
  std::vector<std::string> psg_names;
  std::vector<TaskKind> kinds;
  std::vector<Task> tasks;

  int add_psg(const std::string& name);
  int add_kind(TaskKind kind);
  int32_t add_task(int32_t kind, int32_t root, int32_t pinned_core = -1, int32_t launch = 0,
                   bool continues_block = false);
  // A bool in the launch's place is a continues_block flag missing its launch: refuse it.
  int32_t add_task(int32_t kind, int32_t root, int32_t pinned_core, bool launch) = delete;
  void add_edge(int32_t from, int32_t to);  // `to` depends on `from`
  // Room for this many tasks and edges (a graph read from a file knows its size).
  void reserve(size_t num_tasks, size_t num_edges);
  void add_access(int32_t task, Access a);
  // Builds the successor lists and in-degrees; call once after the last add_edge.
  void finalize();
  // The same from successor lists already built (no add_edge): task a's successors are
  // succ[succ_off[a] .. succ_off[a + 1]), each list increasing (a graph read from a file).
  void finalize(std::vector<int64_t> succ_off, std::vector<int32_t> succ);

  int32_t num_roots() const { return num_roots_; }
  int32_t num_launches() const { return num_launches_; }
  int64_t num_edges() const { return static_cast<int64_t>(succ_.size()); }
  const int32_t* succ_begin(int32_t t) const { return succ_.data() + succ_off_[t]; }
  const int32_t* succ_end(int32_t t) const { return succ_.data() + succ_off_[t + 1]; }
  // Asks for task t's successor offsets ahead of succ_begin(t) (a simulator's hint: the task
  // that ends next is known well before its successors are resolved).
  void prefetch_succ_off(int32_t t) const { __builtin_prefetch(succ_off_.data() + t); }
  int32_t indegree(int32_t t) const { return indeg_[t]; }
  bool has_accesses() const { return !access_.empty(); }
  // A graph without accesses keeps no offsets (8 B a task a replayed graph does not need).
  const Access* access_begin(int32_t t) const {
    return access_off_.empty() ? access_.data() : access_.data() + access_off_[t];
  }
  const Access* access_end(int32_t t) const {
    return access_off_.empty() ? access_.data() : access_.data() + access_off_[t + 1];
  }
  bool finalized() const { return finalized_; }

 private:
  void finish();  // in-degrees and accesses, once the successor lists are built

  std::vector<std::pair<int32_t, int32_t>> edges_;
  std::vector<int64_t> succ_off_;
  std::vector<int32_t> succ_;
  std::vector<int32_t> indeg_;
  std::vector<std::pair<int32_t, Access>> pending_access_;
  RecycledVector<int64_t> access_off_;
  RecycledVector<Access> access_;
  int32_t num_roots_ = 0;
  int32_t num_launches_ = 1;
  bool finalized_ = false;
};

}  // namespace tilesim
