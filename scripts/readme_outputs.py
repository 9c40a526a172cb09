#!/usr/bin/env python3
"""Checks that the outputs README.md and docs/ show are what the commands print today.

A shown output is a fenced block right after a marker line naming its command:

    <!-- output of: tilesim sweep configs/sweeps/x.json -j 2 -->
    <!-- output of: python3 examples/pypto/softmax_16x16384.py -->

The command runs from the source tree: ``tilesim`` is the binary given, ``python3`` this script's
interpreter (the module comes from PYTHONPATH, which the ctest sets to the build tree). The
block's lines must appear in its output (stdout, then stderr) in order, each run of lines between
``...`` lines contiguous, trailing spaces ignored. Usage: readme_outputs.py BINARY [FILE...]
(default README.md and every page under docs/ but docs/design/); exit 1 with a diff of each block
that no longer matches. It also holds README.md to at most 300 lines and every relative link of
the files to an existing file.
"""
import difflib
import os
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"^<!-- output of: (.+) -->$")


def shown_outputs(text, name):
    """[(line number, command, [block lines])] of the marked blocks of file `name`."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"{name}:{i + 1}: a marker must be followed by a fenced block")
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        found.append((i + 1, m.group(1), lines[i + 2:end]))
    return found


def runs(block):
    """The block's runs of contiguous lines, split at "..." lines."""
    out, cur = [], []
    for line in block:
        if line.strip() == "...":
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(line.rstrip())
    if cur:
        out.append(cur)
    return out


def matches(block, output):
    """None when every run appears in order, else the first run that does not."""
    have = [line.rstrip() for line in output.split("\n")]
    at = 0
    for run in runs(block):
        for start in range(at, len(have) - len(run) + 1):
            if have[start:start + len(run)] == run:
                at = start + len(run)
                break
        else:
            return run
    return None


# README.md is the quick start: a newcomer reads it in ten minutes; the rest lives in docs/.
README_MAX_LINES = 300
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")
# Pages another change adds (linked ahead of it).
PENDING = {"docs/pypto-kernels-as-written.md"}


def broken_links(path, text, root):
    """The relative links of a page whose target does not exist."""
    out = []
    for target, _ in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        full = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if os.path.relpath(full, root) not in PENDING and not os.path.exists(full):
            out.append(target)
    return out


def default_files(root):
    """README.md and the docs pages (docs/design/ holds notes, not shown outputs)."""
    files = [os.path.join(root, "README.md")]
    for folder, dirs, names in os.walk(os.path.join(root, "docs")):
        dirs[:] = sorted(d for d in dirs if d != "design")
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".md")]
    return files


def command_line(binary, command, where):
    """The argv that runs a marker's command."""
    args = shlex.split(command)
    if args[0] == "tilesim":
        return [binary, *args[1:]]
    if args[0] == "python3":
        return [sys.executable, *args[1:]]
    raise SystemExit(f"{where}: the command must start with tilesim or python3: {command}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[1]
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = argv[2:] or default_files(root)
    failed = total = other = 0
    for path in files:
        name = os.path.relpath(path, root)
        with open(path) as f:
            text = f.read()
        blocks = shown_outputs(text, name)
        for target in broken_links(path, text, root):
            other += 1
            print(f"{name}: a link to {target}, which does not exist")
        if name == "README.md" and text.count("\n") > README_MAX_LINES:
            other += 1
            print(f"README.md: {text.count(chr(10))} lines, over {README_MAX_LINES}: move the "
                  "detail into a docs/ page and link it")
        for line, command, block in blocks:
            total += 1
            args = command_line(binary, command, f"{name}:{line}")
            p = subprocess.run(args, cwd=root, capture_output=True, text=True)
            output = p.stdout + p.stderr
            run = matches(block, output)
            if run is not None:
                failed += 1
                print(f"{name}:{line}: `{command}` (exit {p.returncode}) no longer prints:")
                print("\n".join(difflib.unified_diff(run, output.rstrip("\n").split("\n"),
                                                     "shown", "today", lineterm="", n=1)))
    print(f"{total - failed} of {total} shown outputs match ({len(files)} files)")
    return 1 if failed or other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
