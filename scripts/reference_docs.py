#!/usr/bin/env python3
"""Checks that docs/reference/ is what the code declares today.

1. docs/reference/cli.md and configs.md are what ``reference_doc cli`` and ``reference_doc
   configs`` print (the commands' CLI11 declarations; the config key table).
2. Every object of the config table names the keys its reader accepts: each is given an unknown
   key in a small valid document of its kind, the matching tilesim command reads it, and the
   reader's "unknown key (allowed: ...)" list must equal the table's keys. Every object the table
   declares has a probe here, so a new object needs one.
3. docs/reference/schemas/KIND.schema.json are what ``reference_doc schema:KIND`` prints (JSON
   Schema from the same table), and every shipped config under configs/ validates against its
   kind's schema (python3-jsonschema) and names it: its "$schema" is the relative path from the
   file to that schema (installs keep configs/ and docs/reference/schemas/ side by side).
4. Every kind's reader accepts a top-level "$schema" (a document of each kind with one runs).

Usage: reference_docs.py REFERENCE_DOC TILESIM [--write]; --write regenerates the pages instead
of checking them (the key check still runs). Exit 1 with what differs.
"""
import copy
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PAGES = {"cli": "docs/reference/cli.md", "configs": "docs/reference/configs.md"}
PROBE_KEY = "zz_reference_probe"
ALLOWED = re.compile(r"zz_reference_probe: unknown key \(allowed: ([^)]*)\)")

RUN = {"op": "add", "shape": [64, 64], "tile": [8, 64], "hardware": "ascend910b1",
       "partition": {"style": "pypto"}, "runtime": {}}
PROGRAM = {"program": "probe",
           "inputs": [{"name": "x", "shape": [64, 64], "dtype": "fp32"}],
           "outputs": [{"name": "y"}],
           "body": [{"set_vec_tile_shapes": [8, 64], "name": "t"},
                    {"set_cube_tile_shapes": [16, 16, 16], "name": "c"},
                    {"loop": "l", "axis": 0, "loop_count": 1,
                     "body": [{"op": "exp", "inputs": ["x"], "out": "y"}]}]}
SWEEP = {"op": "add", "shape": [64, 64], "hardware": "ascend910b1", "zones": {},
         "candidates": {"tiles": [[8, 64]], "constraints": {}, "generate_tiles": {"max": [8, 64]},
                        "generate_loop_counts": {"to": 2}}}
SWEEP_SPMD = {"op": "add", "shape": [64, 64], "hardware": "ascend910b1",
              "partition": {"style": "spmd"},
              "candidates": {"tiles": [[8, 64]], "generate_grids": {"to": 4},
                             "generate_blocks": {"max": [8, 64]}}}
VALIDATION = {"hardware": "ascend910b1", "tolerances": {"min_rank_corr": 0.5},
              "sweeps": [{"name": "s", "known_miss": {"min_rank_corr": 0, "why": "probe"},
                          "points": [{"x": 1, "measured": 1.0, "mapping": "probe",
                                      "config": RUN}]}]}
MEASUREMENTS = {"hardware": "ascend910b1", "free": [{"key": "vector.issue_cycles"}],
                "measurements": [{"id": "a", "config": RUN, "metric": "gen_time_us",
                                  "measured": 1.0}]}
MSPROF_MAP = {"hardware": "ascend910b1",
              "kernels": [{"id": "k", "match": {"Op Name": "relu_kernel"}, "mapping": "probe",
                           "config": RUN}]}
HARDWARE = {"name": "probe", "base": "ascend910b1",
            "parameters": {"vector.issue_cycles": {"value": 10, "source": "probe"}}}
CSV = os.path.join(ROOT, "configs/measurements/board/relu_op_summary.csv")

# (kind, path) -> (document, where the probe key goes: a list of keys and indices, the command
# with FILE for the document and RUN for a run config beside it).
PROBES = {
    ("run", ""): (RUN, [], ["run", "FILE"]),
    ("run", "partition"): (RUN, ["partition"], ["run", "FILE"]),
    ("run", "runtime"): (RUN, ["runtime"], ["run", "FILE"]),
    ("run-program", ""): ({"program": PROGRAM, "tile": [8, 64]}, [], ["run", "FILE"]),
    ("sweep", ""): (SWEEP, [], ["sweep", "FILE", "-j", "1"]),
    ("sweep-program", ""): ({"program": PROGRAM, "hardware": "ascend910b1",
                             "candidates": {"tiles": [[8, 64]]}}, [], ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates"): (SWEEP, ["candidates"], ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates.generate_tiles"): (SWEEP, ["candidates", "generate_tiles"],
                                             ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates.generate_blocks"): (SWEEP_SPMD, ["candidates", "generate_blocks"],
                                              ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates.generate_loop_counts"): (SWEEP, ["candidates", "generate_loop_counts"],
                                                   ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates.generate_grids"): (SWEEP_SPMD, ["candidates", "generate_grids"],
                                             ["sweep", "FILE", "-j", "1"]),
    ("sweep", "candidates.constraints"): (SWEEP, ["candidates", "constraints"],
                                          ["sweep", "FILE", "-j", "1"]),
    ("sweep", "zones"): (SWEEP, ["zones"], ["sweep", "FILE", "-j", "1"]),
    ("program", ""): (PROGRAM, [], ["run", "FILE", "--tile", "8,64"]),
    ("program", "inputs[]"): (PROGRAM, ["inputs", 0], ["run", "FILE"]),
    ("program", "outputs[]"): (PROGRAM, ["outputs", 0], ["run", "FILE"]),
    ("program", "body[] (op)"): (PROGRAM, ["body", 2, "body", 0], ["run", "FILE"]),
    ("program", "body[] (loop)"): (PROGRAM, ["body", 2], ["run", "FILE"]),
    ("program", "body[] (vector tile)"): (PROGRAM, ["body", 0], ["run", "FILE"]),
    ("program", "body[] (cube tile)"): (PROGRAM, ["body", 1], ["run", "FILE"]),
    ("validation", ""): (VALIDATION, [], ["validate", "FILE", "-j", "1"]),
    ("validation", "tolerances"): (VALIDATION, ["tolerances"], ["validate", "FILE", "-j", "1"]),
    ("validation", "sweeps[]"): (VALIDATION, ["sweeps", 0], ["validate", "FILE", "-j", "1"]),
    ("validation", "sweeps[].known_miss"): (VALIDATION, ["sweeps", 0, "known_miss"],
                                            ["validate", "FILE", "-j", "1"]),
    ("validation", "sweeps[].points[]"): (VALIDATION, ["sweeps", 0, "points", 0],
                                          ["validate", "FILE", "-j", "1"]),
    ("measurements", ""): (MEASUREMENTS, [], ["calibrate", "FILE", "-j", "1"]),
    ("measurements", "free[]"): (MEASUREMENTS, ["free", 0], ["calibrate", "FILE", "-j", "1"]),
    ("measurements", "measurements[]"): (MEASUREMENTS, ["measurements", 0],
                                         ["calibrate", "FILE", "-j", "1"]),
    ("msprof-map", ""): (MSPROF_MAP, [], ["measurements", "from-msprof", CSV, "--map", "FILE"]),
    ("msprof-map", "kernels[]"): (MSPROF_MAP, ["kernels", 0],
                                  ["measurements", "from-msprof", CSV, "--map", "FILE"]),
    ("hardware", ""): (HARDWARE, [], ["run", "RUN", "--hardware", "FILE"]),
    ("hardware", "parameters.*"): (HARDWARE, ["parameters", "vector.issue_cycles"],
                                   ["run", "RUN", "--hardware", "FILE"]),
}


def run_probe(tilesim, folder, kind, path, key):
    """Runs the command of (kind, path) on its document with `key` added where the probe goes."""
    doc, where, command = PROBES[(kind, path)]
    doc = copy.deepcopy(doc)
    target = doc
    for step in where:
        target = target[step]
    target[key] = "probe.schema.json" if key == "$schema" else 0
    files = {"FILE": os.path.join(folder, "probe.json"), "RUN": os.path.join(folder, "run.json")}
    with open(files["FILE"], "w") as f:
        json.dump(doc, f)
    with open(files["RUN"], "w") as f:
        json.dump(RUN, f)
    args = [tilesim] + [files.get(a, a) for a in command]
    return subprocess.run(args, cwd=folder, capture_output=True, text=True)


def probe(tilesim, folder, kind, path):
    """The keys the reader of (kind, path) allows, or the output when it names none."""
    p = run_probe(tilesim, folder, kind, path, PROBE_KEY)
    m = ALLOWED.search(p.stdout + p.stderr)
    if not m:
        return None, (p.stdout + p.stderr).strip()
    return {k.strip() for k in m.group(1).split(",")}, ""


SCHEMAS = "docs/reference/schemas"


def shipped_kind(rel):
    """The schema kind of a shipped file under configs/ (None: not a config: graphs, traces)."""
    folder, name = os.path.dirname(rel), os.path.basename(rel)
    if not name.endswith(".json") or folder == "configs/pypto" or name.endswith("_swimlane.json"):
        return None
    if folder == "configs/measurements/board":
        return "msprof-map" if name.endswith("_map.json") else "run"
    return {"configs/examples": "run", "configs/experiments": "run", "configs/sweeps": "sweep",
            "configs/programs": "program", "configs/validation": "validation",
            "configs/measurements": "measurements", "configs/hardware": "hardware"}.get(folder)


def check_schemas(reference_doc, write):
    """Problems: stale schema files, shipped configs their schema refuses."""
    import jsonschema

    problems = 0
    kinds = subprocess.run([reference_doc, "schema-kinds"], check=True, capture_output=True,
                           text=True).stdout.split()
    schemas = {}
    os.makedirs(os.path.join(ROOT, SCHEMAS), exist_ok=True)
    for kind in kinds:
        text = subprocess.run([reference_doc, "schema:" + kind], check=True, capture_output=True,
                              text=True).stdout
        path = os.path.join(ROOT, SCHEMAS, kind + ".schema.json")
        schemas[kind] = json.loads(text)
        if write:
            with open(path, "w") as f:
                f.write(text)
        elif not os.path.exists(path) or open(path).read() != text:
            problems += 1
            print(f"{SCHEMAS}/{kind}.schema.json is stale: regenerate with --write")
    checked = 0
    for folder, _, names in os.walk(os.path.join(ROOT, "configs")):
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(folder, name), ROOT)
            kind = shipped_kind(rel)
            if kind is None:
                continue
            with open(os.path.join(ROOT, rel)) as f:
                doc = json.load(f)
            errors = list(jsonschema.Draft7Validator(schemas[kind]).iter_errors(doc))
            checked += 1
            want = os.path.relpath(os.path.join(ROOT, SCHEMAS, kind + ".schema.json"), folder)
            if doc.get("$schema") != want:
                problems += 1
                print(f'{rel}: "$schema" is {doc.get("$schema")!r}, not {want!r} (its kind\'s '
                      "schema, relative to the file)")
            if errors:
                problems += 1
                best = jsonschema.exceptions.best_match(errors)
                print(f"{rel}: refused by {SCHEMAS}/{kind}.schema.json at "
                      f"{'/'.join(str(p) for p in best.absolute_path)}: {best.message[:200]}")
    print(f"{len(kinds)} schemas, {checked} shipped configs validated")
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    reference_doc, tilesim = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    write = "--write" in argv[3:]
    failed = 0
    for page, rel in PAGES.items():
        text = subprocess.run([reference_doc, page], check=True, capture_output=True,
                              text=True).stdout
        path = os.path.join(ROOT, rel)
        if write:
            with open(path, "w") as f:
                f.write(text)
            continue
        have = open(path).read() if os.path.exists(path) else ""
        if have != text:
            failed += 1
            print(f"{rel} is stale: regenerate with {reference_doc} {page} > {rel} "
                  f"(or scripts/reference_docs.py ... --write)")
            print("\n".join(difflib.unified_diff(have.split("\n"), text.split("\n"), rel,
                                                 "today", lineterm="", n=1)))
    objects = json.loads(subprocess.run([reference_doc, "configs-json"], check=True,
                                        capture_output=True, text=True).stdout)
    declared = {(o["kind"], o["path"]) for o in objects}
    for extra in sorted(set(PROBES) - declared):
        failed += 1
        print(f"probe {extra} matches no object of the config table")
    with tempfile.TemporaryDirectory() as folder:
        for o in objects:
            key = (o["kind"], o["path"])
            if key not in PROBES:
                failed += 1
                print(f"{key}: no probe in scripts/reference_docs.py: add one")
                continue
            allowed, output = probe(tilesim, folder, *key)
            if allowed is None:
                failed += 1
                print(f"{key}: the reader named no allowed keys; it printed:\n  {output}")
            elif allowed != set(o["keys"]):
                failed += 1
                print(f"{key}: the table says {sorted(o['keys'])}, the reader allows "
                      f"{sorted(allowed)} (missing from the table: "
                      f"{sorted(allowed - set(o['keys']))}; not read: "
                      f"{sorted(set(o['keys']) - allowed)})")
        # A top level's "$schema" is the one key no table lists: every reader takes it.
        for kind, path in sorted(k for k in PROBES if k[1] == ""):
            p = run_probe(tilesim, folder, kind, path, "$schema")
            if "$schema" in p.stdout + p.stderr:
                failed += 1
                print(f'{kind}: a top-level "$schema" is refused (exit {p.returncode}): '
                      f"{(p.stdout + p.stderr).strip()[:300]}")
    failed += check_schemas(reference_doc, write)
    print(f"{len(PAGES)} pages, {len(objects)} config objects checked; {failed} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
