"""PyPTO's compile and runtime options as tilesim reads them (pypto.jit's pass_options /
runtime_options / ..., pypto.set_pass_options): each key either sets what the model runs (the
run config's buffer_count, partition, runtime, or a hardware what-if) or is a note in the answer
saying why it does not change the work tilesim models. A key tilesim does not know, or a value of
the wrong form, is refused when the kernel is traced (never when the file is imported).

Facts from hicann/pypto (docs/api/config/pypto-set_pass_options.md and the graph-partition
passes under framework/src/passes/tile_graph_pass/graph_partition/):
- NBufferMerge merges isomorphic AIV subgraphs of a root function; vec_nbuffer_mode 0 turns it
  off, 1 (default) merges so that about mg_vec_parallel_lb (48) of each kind remain, 2 merges as
  many as vec_nbuffer_setting says ({structure: count}, -1 for every structure): the merged copies
  run in one task as ping-pong buffers of each other.
- L1ReuseMerge merges cube subgraphs that copy the same GM data into L1 (cube_l1_reuse_setting
  and cube_nbuffer_setting, bounded by mg_copyin_upper_bound bytes of copy-in per subgraph).
- sg_set_scope gives the ops that follow a scope id: neighbours with the same id are forced into
  one subgraph that merges with no other.
- pg_* bound the subgraph sizes of GraphPartition.
"""
from ._trace import refuse

# The run config's buffer_count range (tools/formats/program_file.cpp).
MAX_BUFFERS = 8

# Keys with no effect on what the model runs, and why.
_PARTITION_BOUNDS = ("graph partition bounds: tilesim cuts stages by its fusion rules (a run of "
                     "vector ops on one tile grid is one stage, a split reduction or a matmul "
                     "ends it), not by subgraph size")
_NOTE_ONLY = {
    "pg_skip_partition": _PARTITION_BOUNDS, "pg_upper_bound": _PARTITION_BOUNDS,
    "pg_lower_bound": _PARTITION_BOUNDS, "pg_parallel_lower_bound": _PARTITION_BOUNDS,
    "sg_cube_parallel_num": "the cube subgraphs' parallelism bound: tilesim packs cube tasks "
                            "as its default packing does",
    "copyout_resolve_coalescing": "how copy-outs are merged when dependencies resolve: tilesim "
                                  "copies each tile out itself",
}
_CUBE_KEYS = ("cube_l1_reuse_setting", "cube_l1_reuse_mode", "cube_nbuffer_setting",
              "cube_nbuffer_mode")
PASS_KEYS = sorted(["vec_nbuffer_setting", "vec_nbuffer_mode", "mg_vec_parallel_lb",
                    "mg_copyin_upper_bound", "sg_set_scope", *_CUBE_KEYS, *_NOTE_ONLY])

# PyPTO runtime_options: the ones the run config's "runtime" takes, and the notes of the others.
RUNTIME_MODELLED = ("stitch_function_max_num", "launch_sched_aicpu_num")
RUNTIME_NOTES = {
    "run_mode": "where PyPTO runs (tilesim models the NPU)",
    "device_sched_mode": "the device scheduling policy: tilesim's AICPU schedulers run mode "
                         "0's shared first-in first-out ready queue (the run config's ready_order "
                         "fifo); modes 1-3 (newest-ready first for L2 affinity, fairness across "
                         "scheduler threads) are not modelled, so the answer is mode 0's",
    "max_workspace_kb": "the GM workspace size: tilesim does not bound GM",
    "stitch_function_inner_memory": "stitch workspace memory: tilesim does not bound it",
    "stitch_function_outcast_memory": "stitch workspace memory: tilesim does not bound it",
    "stitch_function_num_initial": "the first device task's stitch count: tilesim stitches up "
                                   "to stitch_function_max_num from the start",
    "stitch_function_num_step": "the stitch count's growth: tilesim stitches up to "
                                "stitch_function_max_num from the start",
    "stitch_function_size": "the most call ops a stitched device task holds (a capacity check)",
    "stitch_cfgcache_size": "the control-flow cache size: tilesim's control AICPU builds every "
                            "root function",
}
# jit's other option groups: compile stages, checks and dumps, none of them the NPU's work.
GROUP_NOTES = {"host_options": "compile stages and monitoring",
               "codegen_options": "code generation details (the instructions' work is modelled "
                                  "from the ops)",
               "verify_options": "pass verification", "debug_options": "debug dumps"}


class Options:
    """The options in force for one kernel: what they set and the notes they leave."""

    def __init__(self):
        self.buffer_count = None
        self.max_tasks_per_psg = None
        self.runtime = {}
        self.what_ifs = {}
        self.notes = []
        self.cube_keys = {}  # key -> value, judged once the kernel's ops are known
        self.scope = None  # sg_set_scope's current id (-1 / None: none)

    def copy(self):
        o = Options()
        o.__dict__.update({k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(
            v, list) else v) for k, v in self.__dict__.items()})
        return o

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def pass_options(self, options, call, where):
        """Applies pass option keys (pass_options= or set_pass_options(...))."""
        for key, value in options.items():
            if key not in PASS_KEYS:
                refuse(call, f"pass option {key!r} is not one tilesim knows",
                       f"the pass options are {', '.join(PASS_KEYS)}", where)
            if value is None:
                continue
            if key == "vec_nbuffer_setting":
                self._nbuffer(value, call, where)
            elif key == "vec_nbuffer_mode":
                mode = _int(value, key, call, where, 0, 2)
                if mode == 0:
                    self.max_tasks_per_psg = 0
                    self.note("pass_options vec_nbuffer_mode 0: each tile chain is a task of its "
                              "own (partition max_tasks_per_psg 0)")
            elif key == "mg_vec_parallel_lb":
                n = _int(value, key, call, where, 1, 1 << 31)
                self.max_tasks_per_psg = n
                self.note(f"pass_options mg_vec_parallel_lb {n}: at most {n} tasks per stage and "
                          f"root function (partition max_tasks_per_psg {n}; tilesim applies it "
                          "to cube stages too)")
            elif key == "mg_copyin_upper_bound":
                n = _int(value, key, call, where, 0, 1 << 31)
                self.what_ifs["control.cube_merge_copyin_bytes"] = n
                self.note(f"pass_options mg_copyin_upper_bound {n}: hardware what-if "
                          f"control.cube_merge_copyin_bytes={n}")
            elif key == "sg_set_scope":
                self.scope = _int(value, key, call, where, -1, 1 << 31)
            elif key in _CUBE_KEYS:
                if isinstance(value, dict):
                    _setting(value, key, call, where)
                else:
                    _int(value, key, call, where, 0, 1 << 31)
                self.cube_keys[key] = value
            else:
                self.note(f"pass_options {key}: not modelled, the answer is PyPTO's default "
                          f"for it ({_NOTE_ONLY[key]})")

    def _nbuffer(self, value, call, where):
        setting = _setting(value, "vec_nbuffer_setting", call, where)
        if not setting:
            return
        depth = setting.get(-1, max(setting.values()))
        if -1 not in setting:
            self.note("pass_options vec_nbuffer_setting names PyPTO subgraph structures "
                      f"{sorted(setting)}, which tilesim's stages do not carry: the largest "
                      f"count, {depth}, applies to every stage")
        elif len(set(setting.values())) > 1:
            self.note("pass_options vec_nbuffer_setting: the per-structure counts "
                      f"{ {k: v for k, v in setting.items() if k != -1} } name PyPTO subgraph "
                      f"structures tilesim's stages do not carry; the default {depth} applies")
        self.buffer_count = min(MAX_BUFFERS, depth)
        capped = f" (the model's buffers go up to {MAX_BUFFERS})" if depth > MAX_BUFFERS else ""
        self.note(f"pass_options vec_nbuffer_setting {depth}: {depth} isomorphic vector subgraphs "
                  f"merged into one task run as {depth}-deep buffering: run config buffer_count "
                  f"{self.buffer_count}{capped}")

    def runtime_options(self, options, call, where):
        for key, value in options.items():
            if key in RUNTIME_MODELLED:
                self.runtime[key] = value
            elif key in RUNTIME_NOTES:
                self.note(f"runtime_options {key} {value!r}: {RUNTIME_NOTES[key]}")
            else:
                refuse(call, f"runtime_options key {key!r} is not one tilesim knows",
                       f"it takes {', '.join(RUNTIME_MODELLED)} and notes "
                       f"{', '.join(RUNTIME_NOTES)}", where)

    def group(self, name, value):
        if value:
            self.note(f"{name} {sorted(value)}: not the NPU's work ({GROUP_NOTES[name]})")

    def judge_cube(self, has_matmul):
        """The cube merge keys, once the kernel's ops are known."""
        for key, value in self.cube_keys.items():
            if not has_matmul:
                self.note(f"pass_options {key}: the kernel has no matmul, so no cube subgraph "
                          "to merge (no effect)")
            else:
                self.note(f"pass_options {key} {value}: traced programs' matmuls load each C "
                          "tile's operands themselves (no L1 reuse across merged cube "
                          "subgraphs; the built-in matmul family models it as params.l1_reuse): "
                          "the answer's copy-in is the unmerged one")

    def run_config(self):
        """The run config keys these options set."""
        cfg = {}
        if self.buffer_count is not None:
            cfg["buffer_count"] = self.buffer_count
        if self.max_tasks_per_psg is not None:
            cfg["partition"] = {"style": "pypto", "max_tasks_per_psg": self.max_tasks_per_psg}
        if self.runtime:
            cfg["runtime"] = dict(self.runtime)
        return cfg


# The options set outside any kernel (pypto.set_pass_options at module level): every kernel
# traced after takes them as its defaults.
GLOBAL = [Options()]


def _int(value, key, call, where, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        refuse(call, f"pass option {key} = {value!r}: an integer in {lo}..{hi}", where=where)
    return value


def _setting(value, key, call, where):
    """A {structure: count} dict of a merge setting, checked."""
    if not isinstance(value, dict):
        refuse(call, f"pass option {key} = {value!r}: a dict {{structure: count}} "
               "(-1: every structure)", where=where)
    for k, v in value.items():
        if isinstance(k, bool) or not isinstance(k, (int, str)):
            refuse(call, f"pass option {key}: key {k!r} is not a structure id", where=where)
        _int(v, key, call, where, 1, 1 << 31)
    return {(-1 if k in ("DEFAULT", -1) else k): v for k, v in value.items()}
