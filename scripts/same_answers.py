#!/usr/bin/env python3
"""Proves a change that should not move the model (issue 44) gives the same answers.

    same_answers.py record --tilesim BIN --out DIR [--source ROOT] [-j N] [--only REGEX]
    same_answers.py compare BEFORE_DIR AFTER_DIR [--tol-pct 0.5] [--show N]

record runs BIN from ROOT (default: this checkout; TILESIM_CONFIG_DIR=ROOT/configs) over every
run config in configs/{examples,experiments,programs,pypto}/ (N runs at a time), every sweep in
configs/sweeps/, `rules` and `validate configs/validation/*.json` (each with -j N), and keeps the
JSON results with index.json: each command, its exit code, stderr and time, the files skipped.
compare walks both records' JSON (lists of objects keyed by their id, e.g. candidates by index)
and lists, worst first: figures apart by more than --tol-pct (numbers inside texts too), texts,
sweep rankings and recommendations, rules verdicts, exit codes, stderr, files on one side only.
Build stamps (IGNORED_KEYS) and the index's times and paths are not compared. Exit 0 when the
records match, 1 when they do not, 2 on bad use.
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

RUN_DIRS = ("examples", "experiments", "programs", "pypto")
# Not answers: the version stamp. (Two records of one build are byte-identical, and no result
# holds a commit, a build path or a wall-clock time; the index's are not compared.)
IGNORED_KEYS = {"tilesim_version"}
# A sweep's ranks and indices are its ranking and recommendation, which compare_sweep checks.
SWEEP_IGNORED_KEYS = {"rank", "index"}
# What tells a list's objects apart: sweep candidates, checks, PSGs, points, datasets, cores.
ID_KEYS = ("index", "id", "name", "x", "file", "hardware", "resource", "core")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
STRUCTURAL = math.inf  # the severity of a difference that is not a figure's drift


def fail(message):
    """Bad use: the message on stderr, exit 2."""
    print(f"same_answers: {message}", file=sys.stderr)
    sys.exit(2)


def not_a_run_config(path):
    """None when `path` is something `tilesim run` takes, else why it is not."""
    doc = json.loads(path.read_text())
    if isinstance(doc, list):
        return "a fixed-latency task graph (tilesim replay input), not a run config"
    if "traceEvents" in doc:
        return "a board swimlane (tilesim analyze input), not a run config"
    if "op" in doc or "program" in doc:
        return None
    return "neither an op nor a program: not a run config"


def plan_jobs(root, jobs):
    """([(output file, argv after the binary, parallel?)], {skipped file: why})."""
    plan, skipped = [], {}
    for folder in RUN_DIRS:
        for cfg in sorted((root / "configs" / folder).glob("*.json")):
            rel, why = cfg.relative_to(root).as_posix(), not_a_run_config(cfg)
            if why:
                skipped[rel] = why
            else:
                plan.append((f"run/{folder}/{cfg.name}", ["run", rel], True))
    for cfg in sorted((root / "configs" / "sweeps").glob("*.json")):
        args = ["sweep", cfg.relative_to(root).as_posix(), "-j", str(jobs)]
        plan.append((f"sweep/{cfg.name}", args, False))
    plan.append(("rules.json", ["rules", "-j", str(jobs)], False))
    datasets = sorted(p.relative_to(root).as_posix()
                      for p in (root / "configs" / "validation").glob("*.json"))
    plan.append(("validate.json", ["validate", *datasets, "-j", str(jobs)], False))
    return plan, skipped


def run_job(tilesim, root, out, job):
    """Runs one planned command; its index entry."""
    name, args, _ = job
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    argv = [tilesim, *args, "--json", str(out / name), "-q"]
    env = dict(os.environ, TILESIM_CONFIG_DIR=str(root / "configs"))
    start = time.monotonic()
    done = subprocess.run(argv, cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace")
    return {"argv": ["tilesim", *argv[1:]], "exit": done.returncode, "stderr": done.stderr,
            "seconds": round(time.monotonic() - start, 3)}


def record(a):
    """The record subcommand: runs the plan, writes the results and index.json; exit 0."""
    tilesim, root, out = str(Path(a.tilesim).resolve()), Path(a.source).resolve(), Path(a.out)
    if not os.access(tilesim, os.X_OK):
        fail(f"{tilesim}: not an executable")
    if out.exists() and any(out.iterdir()):
        fail(f"{out} is not empty: record into a new folder")
    out.mkdir(parents=True, exist_ok=True)
    plan, skipped = plan_jobs(root, a.jobs)
    if a.only:  # a subset while iterating; the full record is the proof
        pattern = re.compile(a.only)
        plan = [j for j in plan if pattern.search(j[0])]
    start, entries = time.monotonic(), {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        runs = {j[0]: pool.submit(run_job, tilesim, root, out, j) for j in plan if j[2]}
        entries.update((n, f.result()) for n, f in runs.items())
    entries.update((j[0], run_job(tilesim, root, out, j)) for j in plan if not j[2])
    version = subprocess.run([tilesim, "--version"], capture_output=True, text=True).stdout
    index = {"tilesim": tilesim, "version": version.strip(), "source": str(root),
             "seconds": round(time.monotonic() - start, 1), "skipped": skipped,
             "jobs": dict(sorted(entries.items()))}
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    failed = [f"{n} (exit {e['exit']})" for n, e in sorted(entries.items()) if e["exit"]]
    print(f"same_answers: {len(entries)} commands in {index['seconds']} s into {out}; "
          f"{len(skipped)} files skipped; exit != 0: {', '.join(failed) or 'none'}")
    return 0


def identity_key(items):
    """The key whose values tell a list's objects apart, or None (then: by position)."""
    if not items or not all(isinstance(v, dict) for v in items):
        return None
    for key in ID_KEYS:
        if all(key in v for v in items):
            values = [json.dumps(v[key]) for v in items]
            if len(set(values)) == len(values):
                return key
    return None


def flatten(node, path, ignored, leaves):
    """Fills `leaves` with {key path: scalar} of a JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in ignored:
                flatten(v, f"{path}.{k}" if path else k, ignored, leaves)
    elif isinstance(node, list):
        key = identity_key(node)
        for i, v in enumerate(node):
            flatten(v, f"{path}[{key}={json.dumps(v[key])}]" if key else f"{path}[{i}]",
                    ignored, leaves)
    else:
        leaves[path] = node


def rel_pct(a, b):
    """|a - b| relative to the larger magnitude, in percent (0 when both are 0)."""
    return 0.0 if a == b else 100.0 * abs(a - b) / max(abs(a), abs(b))


class Diff:
    """The differences found and how much was compared."""

    def __init__(self, tol):
        self.tol, self.found, self.figures, self.texts = tol, [], 0, 0

    def add(self, severity, kind, where, what):
        self.found.append((severity, kind, where, what))

    def figure(self, where, a, b):
        self.figures += 1
        if rel_pct(a, b) > self.tol:
            self.add(rel_pct(a, b), "figure", where, f"{a!r} -> {b!r} ({rel_pct(a, b):.3g}%)")

    def text(self, where, a, b, kind="text"):
        """Texts match when their words do and their numbers are figures that match."""
        self.texts += 1
        if a == b:
            return
        if NUMBER.split(a) != NUMBER.split(b):
            self.add(STRUCTURAL, kind, where, f"{a[:100]!r} -> {b[:100]!r}")
            return
        for i, (x, y) in enumerate(zip(NUMBER.findall(a), NUMBER.findall(b))):
            self.figure(f"{where} (number {i + 1} in the text)", float(x), float(y))

    def leaf(self, where, a, b):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)):
            self.figure(where, a, b)
        elif isinstance(a, str) and isinstance(b, str):
            self.text(where, a, b, "verdict" if where.endswith(".verdict") else "text")
        elif a != b or type(a) is not type(b):
            self.add(STRUCTURAL, "value", where, f"{a!r} -> {b!r}")


def compare_document(diff, name, before, after):
    """Every leaf of two JSON results, and the leaves found on one side only."""
    ignored = IGNORED_KEYS | (SWEEP_IGNORED_KEYS if name.startswith("sweep/") else set())
    lb, la = {}, {}
    flatten(before, "", ignored, lb)
    flatten(after, "", ignored, la)
    for path in sorted(lb.keys() | la.keys()):
        if path not in la or path not in lb:
            side = "before" if path in lb else "after"
            diff.add(STRUCTURAL, "field", f"{name}: {path}", f"only {side}")
        else:
            diff.leaf(f"{name}: {path}", lb[path], la[path])


def ranking(sweep):
    return [c["index"] for c in sweep.get("candidates", []) if c.get("rank") is not None]


def recommendation(sweep):
    rec = sweep.get("recommended") or {}
    keys = ("index", "tile", "loop_count", "program_tiles", "params", "grid", "block")
    return {k: rec[k] for k in keys if k in rec}


def compare_sweep(diff, name, before, after):
    """A sweep's candidate order and its recommended candidate."""
    rb, ra = ranking(before), ranking(after)
    if rb != ra:
        at = next((i for i, (x, y) in enumerate(zip(rb, ra)) if x != y), min(len(rb), len(ra)))
        diff.add(STRUCTURAL, "ranking", name,
                 f"order differs from rank {at + 1}: index {rb[at:at + 5]} -> {ra[at:at + 5]}")
    if recommendation(before) != recommendation(after):
        diff.add(STRUCTURAL, "recommendation", name,
                 f"{json.dumps(recommendation(before))} -> {json.dumps(recommendation(after))}")


def compare_index(diff, before, after):
    """Commands run on one side only, their exit codes and stderr, the files skipped."""
    jb, ja = before["jobs"], after["jobs"]
    for name in sorted(jb.keys() | ja.keys()):
        if name not in ja or name not in jb:
            diff.add(STRUCTURAL, "command", name, "only " + ("before" if name in jb else "after"))
        elif jb[name]["exit"] != ja[name]["exit"]:
            diff.add(STRUCTURAL, "exit", name, f"{jb[name]['exit']} -> {ja[name]['exit']}")
        else:
            diff.text(f"{name}: stderr", jb[name]["stderr"], ja[name]["stderr"], "stderr")
    if before["skipped"] != after["skipped"]:
        diff.add(STRUCTURAL, "skipped", "index.json",
                 f"{sorted(before['skipped'])} -> {sorted(after['skipped'])}")


def results(folder):
    """{relative name: file} of a record's JSON results (the index aside)."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.json"))
            if p.name != "index.json" or p.parent != folder}


def compare(a):
    """The compare subcommand: prints the summary; exit 0 when the records match, else 1."""
    before, after, diff = Path(a.before), Path(a.after), Diff(a.tol_pct)
    for folder in (before, after):
        if not (folder / "index.json").is_file():
            fail(f"{folder}: no index.json (not a record)")
    load = lambda path: json.loads(path.read_text())  # noqa: E731
    compare_index(diff, load(before / "index.json"), load(after / "index.json"))
    rb, ra = results(before), results(after)
    for name in sorted(rb.keys() | ra.keys()):
        if name not in ra or name not in rb:
            diff.add(STRUCTURAL, "file", name, "only in " + str(before if name in rb else after))
            continue
        db, da = load(rb[name]), load(ra[name])
        compare_document(diff, name, db, da)
        if name.startswith("sweep/"):
            compare_sweep(diff, name, db, da)
    print(f"same_answers: compared {diff.figures} figures and {diff.texts} texts in "
          f"{len(rb.keys() & ra.keys())} files (tolerance {a.tol_pct}%)")
    found = sorted(diff.found, key=lambda d: (-d[0], d[2]))
    if not found:
        print("same answers: no differences")
        return 0
    print(f"{len(found)} differences, worst first:")
    for _, kind, where, what in found[:a.show]:
        print(f"  [{kind}] {where}: {what}")
    if len(found) > a.show:
        print(f"  ... and {len(found) - a.show} more (--show N lists more)")
    return 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="run tilesim over the shipped configs into a folder")
    r.add_argument("--tilesim", required=True, help="the tilesim binary")
    r.add_argument("--out", required=True, help="a new folder for the results")
    r.add_argument("--source", default=str(Path(__file__).resolve().parent.parent),
                   help="the source tree whose configs run (default: this checkout)")
    r.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    r.add_argument("--only", help="record only the commands whose output name matches this "
                   "regular expression (e.g. 'sum|amax|rule1'), to iterate on a subset")
    c = sub.add_parser("compare", help="compare two records; exit 1 on any difference")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--tol-pct", type=float, default=0.5, help="relative tolerance, percent")
    c.add_argument("--show", type=int, default=50, help="differences listed (default 50)")
    a = p.parse_args()
    return record(a) if a.command == "record" else compare(a)


if __name__ == "__main__":
    sys.exit(main())
