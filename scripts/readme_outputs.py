#!/usr/bin/env python3
"""Checks that the outputs README.md shows are what the commands print today.

A shown output is a fenced block right after a marker line naming its command:

    <!-- output of: tilesim sweep configs/sweeps/x.json -j 2 -->

The command runs from the source tree (``tilesim`` is the binary given); the block's lines must
appear in its output (stdout, then stderr) in order, each run of lines between ``...`` lines
contiguous, trailing spaces ignored. Usage: readme_outputs.py BINARY [README]; exit 1 with a diff
of each block that no longer matches.
"""
import difflib
import os
import re
import shlex
import subprocess
import sys

MARKER = re.compile(r"^<!-- output of: (.+) -->$")


def shown_outputs(text):
    """[(line number, command, [block lines])] of the marked blocks."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        m = MARKER.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"README.md:{i + 1}: a marker must be followed by a fenced block")
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


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[1]
    readme = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(__file__), "..",
                                                         "README.md")
    root = os.path.dirname(os.path.abspath(readme))
    with open(readme) as f:
        blocks = shown_outputs(f.read())
    failed = 0
    for line, command, block in blocks:
        args = shlex.split(command)
        if args[0] != "tilesim":
            raise SystemExit(f"README.md:{line}: the command must start with tilesim: {command}")
        p = subprocess.run([binary, *args[1:]], cwd=root, capture_output=True, text=True)
        output = p.stdout + p.stderr
        run = matches(block, output)
        if run is not None:
            failed += 1
            print(f"README.md:{line}: `{command}` (exit {p.returncode}) no longer prints:")
            print("\n".join(difflib.unified_diff(run, output.rstrip("\n").split("\n"), "README",
                                                 "today", lineterm="", n=1)))
    print(f"{len(blocks) - failed} of {len(blocks)} README outputs match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
