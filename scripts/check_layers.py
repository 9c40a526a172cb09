#!/usr/bin/env python3
"""The house's layers (DESIGN.md): each folder may include only its own headers and those of the
layers below it. Prints every include that climbs the stack and exits 1 if there is one.

    scripts/check_layers.py [SOURCE_DIR]

The stack, bottom first: model; kernels and sim (beside each other: neither includes the other);
then tools/ as formats -> analyses -> calibration -> reports -> cli; python/ (the bindings) on
top. bench/ and tests/ may include anything."""
import pathlib
import re
import sys

# Each layer and the layers it may include (besides itself).
ALLOWED = {
    "model": [],
    "kernels": ["model"],
    "sim": ["model"],
    "tools/formats": ["model", "kernels", "sim"],
    "tools/analyses": ["model", "kernels", "sim", "tools/formats"],
    "tools/calibration": ["model", "kernels", "sim", "tools/formats", "tools/analyses"],
    "tools/reports": ["model", "kernels", "sim", "tools/formats", "tools/analyses",
                      "tools/calibration"],
    "tools/cli": ["model", "kernels", "sim", "tools/formats", "tools/analyses",
                  "tools/calibration", "tools/reports"],
    "python": ["model", "kernels", "sim", "tools/formats", "tools/analyses", "tools/calibration",
               "tools/reports"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """The layer a project path ("tools/cli/x.cpp", "model/y.hpp") belongs to, or None."""
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if path == layer or path.startswith(layer + "/"):
            return layer
    return None


def violations(root):
    found = []
    for layer in ALLOWED:
        for f in sorted((root / layer).rglob("*")):
            if f.suffix not in (".hpp", ".cpp", ".h", ".cc"):
                continue
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of(m.group(1))
                if target and target != layer and target not in ALLOWED[layer]:
                    found.append(f"{f.relative_to(root)}:{n}: {layer} includes {m.group(1)} "
                                 f"({target} is not below {layer})")
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found = violations(root)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) climb the stack (scripts/check_layers.py has the layers)")
        return 1
    print("layers: every include points down the stack")
    return 0


if __name__ == "__main__":
    sys.exit(main())
