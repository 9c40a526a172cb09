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
  one subgraph that merges with no other (see _SCOPE_NOTE for what tilesim models of it).
- cube_l1_reuse_setting: see Options._l1_reuse.
- pg_* bound the subgraph sizes of GraphPartition.
"""
from ._trace import refuse

# The run config's buffer_count range (tools/formats/program_file.cpp).
MAX_BUFFERS = 8
# cube_l1_reuse_setting's value is count + side * this (hicann/pypto python/pypto's
# _L1_REUSE_SIDE_BASE, which must match L1_REUSE_SIDE_BASE in its function.h).
_SIDE_BASE = 1000000

# Keys with no effect on what the model runs, and why.
_PARTITION_BOUNDS = ("graph partition bounds: tilesim cuts stages by its fusion rules (a run of "
                     "vector ops on one tile grid is one stage, a split reduction or a matmul "
                     "ends it), not by subgraph size")
_NOTE_ONLY = {
    "pg_skip_partition": _PARTITION_BOUNDS, "pg_upper_bound": _PARTITION_BOUNDS,
    "pg_lower_bound": _PARTITION_BOUNDS, "pg_parallel_lower_bound": _PARTITION_BOUNDS,
    "sg_cube_parallel_num": "the cube subgraphs' parallelism bound: tilesim packs cube tasks "
                            "as its default packing does",
    "enable_slice": "the IR's spelling of views and assembles (OP_SLICE / OP_CONTRACT in place "
                    "of OP_VIEW / OP_ASSEMBLE, hicann/pypto config_manager_ng.h "
                    "GetSliceOpcode): the same copies either way",
    "copyout_resolve_coalescing": "how copy-outs are merged when dependencies resolve: tilesim "
                                  "copies each tile out itself",
}
_CUBE_KEYS = ("cube_l1_reuse_setting", "cube_l1_reuse_mode", "cube_nbuffer_setting",
              "cube_nbuffer_mode")
PASS_KEYS = sorted(["vec_nbuffer_setting", "vec_nbuffer_mode", "mg_vec_parallel_lb",
                    "mg_copyin_upper_bound", "sg_set_scope", *_CUBE_KEYS, *_NOTE_ONLY])

# sg_set_scope as hicann/pypto means it: each op made after it carries the scope id
# (Operation::ScopeInfo: scopeId, allowParallelMerge, allowCrossScopeMerge), and the graph
# partition passes (framework/src/passes/tile_graph_pass/graph_partition/: a node holding an op
# of a scope is not merged across scopes unless allowCrossScopeMerge) keep a scope's ops in one
# subgraph of their own; PyPTO's guide has it wrap vector ops with direct data dependencies at
# one loop level, no matmul. What tilesim can and cannot do with that:
_SCOPE_NOTE = (
    "pass_options sg_set_scope: the stage a scope opens is named sg_scope<id>_... (its first "
    "op's psg), and a run of vector ops on one tile grid inside it is that one stage, as "
    "PyPTO's scope subgraph is. Where tilesim's stage plan cuts inside a scope (kernels/"
    "program/program.cpp plan_stages: a reduction over a split dim, a changed tile grid, a "
    "matmul, an op hoisted out of a loop), the scope's ops stay in separate stages: a "
    "program's psg names a stage and cannot join two, so PyPTO's merged stage is not modelled "
    "there")

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
                if self.scope >= 0:
                    self.note(_SCOPE_NOTE)
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

    def judge_cube(self, groups, aic_cores):
        """The cube merge keys, once the kernel's ops are known: `groups` holds, for the top
        level and each loop body (a root function each), [(matmul op entry, its cube tile
        [tm, tk, tn], the C shape of one root function, its site)] in program order;
        `aic_cores` the hardware's."""
        matmuls = [m for group in groups for m in group]
        for key, value in self.cube_keys.items():
            if not matmuls:
                self.note(f"pass_options {key}: the kernel has no matmul, so no cube subgraph "
                          "to merge (no effect)")
            elif key == "cube_l1_reuse_setting":
                self._l1_reuse(value, [g for g in groups if g], aic_cores)
            elif key == "cube_l1_reuse_mode":
                self.note(f"pass_options {key} {value}: PyPTO's L1 reuse switch; tilesim reads "
                          "the merge from cube_l1_reuse_setting alone")
            else:
                self.note(f"pass_options {key} {value}: PyPTO's cube n-buffer merge (isomorphic "
                          "cube subgraphs that share no L1 copy run in one task) is not modelled "
                          "for program matmuls: each C tile is a cube task of its own")

    def _l1_reuse(self, value, groups, aic_cores):
        """cube_l1_reuse_setting as hicann/pypto's L1CopyInReuseMerge reads it
        (framework/src/passes/tile_graph_pass/graph_partition/l1_copy_reuse.cpp):
        - a key is a hash order, the index of a class of isomorphic cube subgraphs in the order
          they first appear in the function (each function counts from 0: ApplyGlobalConfig
          fills the current function's hashOrder_); -1 (or "DEFAULT") is every class not
          named. Each C tile of one traced matmul is one such subgraph, so the k-th matmul of
          a root function (the top level or a loop body) is hash order k there (two matmuls of
          the same shapes and tiles would be one class in PyPTO);
        - a value packs count + side * 1000000 (DecodeL1ReuseSide; python/pypto's
          _L1_REUSE_SIDE_BASE): up to `count` subgraphs that copy the same GM data into L1 are
          merged into one, the shared copy made once (MergeDupL1CopyIn); side 1 is the left
          matrix (L0A: A), 2 the right (L0B: B), 0 either (FindMergeCandidate takes the first
          copy-in a merge anchor also made);
        - a count of 1 merges nothing ({-1: 1} turns the pass off, GetModeBySetting);
        - a class the setting leaves out gets the auto count, its subgraphs over 2 x the AIC
          cores (GetL1ReuseOpOrder);
        - the copy-in of a merged subgraph stays under mg_copyin_upper_bound (GetMergedL1).
        tilesim's matmul op has that merge: "l1_resident" a / b with "l1_reuse" count
        (kernels/lower/program/matmul_stage.cpp run_end: consecutive C tiles, n outer and m
        inner as PyPTO walks them, that share the resident operand's panel). Side 0 becomes
        a where the matmul has one m tile (every C tile shares A's rows, and neighbours in
        that walk share A) and b otherwise (neighbours in the walk share B's columns)."""
        raw, extra = {}, []
        for k, v in value.items():
            if k in (-1, "DEFAULT"):
                raw[-1] = v
            elif isinstance(k, int) and k >= 0:
                raw[k] = v
            else:
                extra.append(k)
        if extra:
            self.note(f"pass_options cube_l1_reuse_setting keys {extra}: they name PyPTO "
                      "functions (func<magic>_<order>) or semantic labels, which a trace does "
                      "not carry: ignored")
        most = max(len(g) for g in groups)
        unmatched = sorted(k for k in raw if k >= most)
        if unmatched:
            self.note(f"pass_options cube_l1_reuse_setting keys {unmatched}: the kernel's root "
                      f"functions have at most {most} matmul{'s' if most > 1 else ''} (hash "
                      f"orders 0..{most - 1}), so they name none (PyPTO ignores such a key "
                      "with a warning, ApplyGlobalConfig)")
        for i, (entry, tile, shape, where) in [(i, m) for g in groups
                                                for i, m in enumerate(g)]:
            site = f"{where[0]}:{where[1]}"
            if i in raw or -1 in raw:
                packed = raw.get(i, raw.get(-1))
                count, side = packed % _SIDE_BASE, packed // _SIDE_BASE
            elif not all(isinstance(d, int) for d in shape):
                self.note(f"pass_options cube_l1_reuse_setting names no count for the matmul "
                          f"at {site} (hash order {i}), and its C shape {shape} is not static: "
                          "PyPTO's auto count (C tiles over 2 x the AIC cores) is unknown, so "
                          "it merges nothing")
                continue
            else:
                tiles = _c_tiles(shape, tile)
                count, side = tiles // (2 * aic_cores), 0
                self.note(f"pass_options cube_l1_reuse_setting names no count for the matmul "
                          f"at {site} (hash order {i}): PyPTO's auto count, its {tiles} C tiles "
                          f"over 2 x {aic_cores} AIC cores, is {count}")
            if count <= 1:
                self.note(f"pass_options cube_l1_reuse_setting: the matmul at {site} (hash "
                          f"order {i}) merges no C tiles (count {count})")
                continue
            m_tiles = -(-shape[-2] // tile[0]) if isinstance(shape[-2], int) else 2
            resident = {1: "a", 2: "b"}.get(side, "a" if m_tiles == 1 else "b")
            entry["l1_resident"], entry["l1_reuse"] = resident, count
            how = {1: "side 1 (left matrix)", 2: "side 2 (right matrix)"}.get(
                side, f"side 0 (either operand): {m_tiles} m tile{'s' if m_tiles > 1 else ''}, "
                "so the C tiles next to each other in PyPTO's walk share "
                f"{'A' if resident == 'a' else 'B'}")
            if resident == "a" and m_tiles > 1:
                self.note(f"pass_options cube_l1_reuse_setting: the matmul at {site} keeps A "
                          f"resident over {m_tiles} m tiles: tilesim merges only C tiles next "
                          "to each other in the walk (n outer, m inner), none of which share "
                          "A, so nothing merges; PyPTO's greedy merge (FindMergeCandidate) "
                          "joins the tiles of one row across n")
            self.note(f"pass_options cube_l1_reuse_setting: the matmul at {site} (hash order "
                      f"{i}) merges up to {count} C tiles that share "
                      f"{'A' if resident == 'a' else 'B'}'s panel into one cube task, loaded "
                      f"into L1 once ({how}): its op's l1_resident \"{resident}\", l1_reuse "
                      f"{count}")

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


def hardware_file():
    """The default hardware file as the Python API loads it (tilesim --hardware's default, the
    one a traced kernel's run uses unless given another): name, description, parameters."""
    if not _HARDWARE:
        import json

        from .. import _jobs
        probe = {"op": "add", "shape": [1, 8], "dtype": "fp32",
                 "candidates": {"tiles": [[1, 8]]}}
        _HARDWARE.append(json.loads(_jobs.sweep_job(probe).doc)["hardware"])
    return _HARDWARE[0]


_HARDWARE = []


# The options set outside any kernel (pypto.set_pass_options at module level): every kernel
# traced after takes them as its defaults.
GLOBAL = [Options()]


def _int(value, key, call, where, lo, hi):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        refuse(call, f"pass option {key} = {value!r}: an integer in {lo}..{hi}", where=where)
    return value


def _c_tiles(shape, tile):
    """The C tiles of C `shape` under cube tile [tm, tk, tn]."""
    batch = 1
    for d in shape[:-2]:
        batch *= d
    return batch * -(-shape[-2] // tile[0]) * -(-shape[-1] // tile[2])


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
