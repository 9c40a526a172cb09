#pragma once
// How a task's shared-bandwidth delay shows in its DMA pipes' busy times.
//
// A task slowed by shared global memory runs `dur` cycles instead of its idle-machine `cycles`; the
// lost time is spent moving its reads and its writes (or their write-backs) through the binding
// stage, split by their shares of that traffic (TaskRecord::write_share). The slowdown is uniform
// over the run (one virtual clock, sim/shared_bandwidth.hpp), so a pipe counts the part of a
// delay that falls while it has work outstanding: its busy share of the idle run.
//
// Which delays a pipe sits through depends on how the task's loads and stores meet the memory
// (TaskCost::mixed_share). A load in flight when a store begins shares the memory with the store
// and waits for all traffic ("mixed reads and writes", Ascend C double buffering). A load issued
// with or after a store (one buffer: load i+1 and store i leave together once compute i ends)
// queues behind the store, which L2 absorbs, and its write-backs; it counts busy once its own
// reads move, so each pipe sits only through its own traffic's delay. On the 48-core Atlas A2
// add this is msprof's "serial pure read bandwidth" (one buffer: MTE2 184 us, reads at 1.46 TB/s)
// against "mixed read-write bandwidth" (double buffering: MTE2 251 us): add_high_performance,
// shared/data/calibration/add_8192_a2.json. The same one-buffer code overlaps load i+1 with store
// i on one core (case 1: MTE2 + MTE3 + V = 9583 us in a 6909 us run) but not on 48 saturating
// cores (case 3: 184 + 57 + 13 us in 262): the serialisation comes from the shared memory.

namespace tilesim {

struct TaskCost;

struct DmaBusy {
  double mte2 = 0;
  double mte3 = 0;
};

// The MTE2 and MTE3 busy cycles of a task of idle-machine cost `cost` that ran `dur` cycles, a
// `read_hit` share of its GM reads hitting L2 (its idle run and load pipe between the all-miss and
// all-hit ones, as the simulator runs it) and a `write_share` of its waited-on traffic being
// writes; never past the task.
DmaBusy shared_dma_busy(const TaskCost& cost, double dur, double read_hit, double write_share);

// A core's DMA busy time over its tasks, added in start order. A pipe's work outstanding includes
// the latency of its last copy, and a core that overlaps consecutive tasks (model/task_overlap.hpp)
// issues the next task's first copy once the previous one's last copy has issued, while that copy
// is still in flight: counted per task, the overlap would be counted twice and a pipe could be
// busy longer than the run. Each task's outstanding work spans its idle-machine window (first
// copy issued to last copy done, PipeStages) scaled to the time it ran; the part of it before the
// end of the windows already counted is not counted again.
class CoreDmaBusy {
 public:
  void add(const TaskCost& cost, double start, double dur, double read_hit, double write_share);
  DmaBusy total() const { return total_; }

 private:
  DmaBusy total_;
  double mte2_until_ = -1, mte3_until_ = -1;  // end of the windows counted so far
};

}  // namespace tilesim
