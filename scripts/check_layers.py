#!/usr/bin/env python3
"""The house's layers (DESIGN.md): each folder may include only its own headers and those of the
layers below it. Prints every include that climbs the stack and exits 1 if there is one.

    scripts/check_layers.py [SOURCE_DIR]

The stack, bottom first: model; kernels and sim (beside each other: neither includes the other);
then tools/ as formats -> analyses -> calibration -> reports -> cli; python/ (the bindings) on
top. bench/ and tests/ may include anything. kernels/ has floors of its own, bottom first: ops,
spec, tiling, program, cube, lower, families, functional, and the entry (kernels/lowering.*) on
top. A layer that may include a folder may include its floors."""
import pathlib
import re
import sys

# Each layer and the layers it may include (besides itself).
KERNEL_FLOORS = ["kernels/ops", "kernels/spec", "kernels/tiling", "kernels/program", "kernels/cube",
                 "kernels/lower", "kernels/families", "kernels/functional"]
ALLOWED = {
    "model": [],
    **{floor: ["model"] + KERNEL_FLOORS[:i] for i, floor in enumerate(KERNEL_FLOORS)},
    "kernels": ["model"] + KERNEL_FLOORS,
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


def allowed(layer, target):
    """`target` is one of the layers `layer` may include, or a floor of one."""
    return any(target == a or target.startswith(a + "/") for a in ALLOWED[layer])


def violations(root):
    found = []
    for layer in ALLOWED:
        for f in sorted((root / layer).rglob("*")):
            if f.suffix not in (".hpp", ".cpp", ".h", ".cc"):
                continue
            if layer_of(str(f.relative_to(root))) != layer:
                continue  # a file of a sub-layer (a floor of kernels/) is checked as that layer
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of(m.group(1))
                if target and target != layer and not allowed(layer, target):
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
