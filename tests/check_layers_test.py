"""scripts/check_layers.py: the project's tree passes, and an include that climbs the stack (here
tools/formats including tools/cli, sim including kernels, and a floor of kernels/ including one
above it) is refused naming the file, the line
and the layers. Run by ctest as layers_check."""
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECK = [sys.executable, str(ROOT / "scripts" / "check_layers.py")]


def run(tree):
    return subprocess.run(CHECK + [str(tree)], capture_output=True, text=True)


def main():
    ok = run(ROOT)
    assert ok.returncode == 0, ok.stdout
    assert ok.stdout == "layers: every include points down the stack\n", ok.stdout
    with tempfile.TemporaryDirectory() as d:
        tree = pathlib.Path(d)
        for path, text in {
            "tools/formats/reader.hpp": '#pragma once\n#include "model/error.hpp"\n'
                                        '#include "tools/cli/options.hpp"\n',
            "sim/clock.cpp": '#include "kernels/lowering.hpp"\n',
            "kernels/ops/table.cpp": '#include "kernels/lower/graph.hpp"\n',  # a floor up
            "kernels/families/f.cpp": '#include "kernels/lower/graph.hpp"\n',  # down: allowed
            "tools/cli/cmd.cpp": '#include "tools/formats/reader.hpp"\n',  # down: allowed
        }.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text)
        bad = run(tree)
        assert bad.returncode == 1, bad.stdout
        assert bad.stdout.splitlines() == [
            "kernels/ops/table.cpp:1: kernels/ops includes kernels/lower/graph.hpp "
            "(kernels/lower is not below kernels/ops)",
            "sim/clock.cpp:1: sim includes kernels/lowering.hpp (kernels is not below sim)",
            "tools/formats/reader.hpp:3: tools/formats includes tools/cli/options.hpp "
            "(tools/cli is not below tools/formats)",
            "3 include(s) climb the stack (scripts/check_layers.py has the layers)",
        ], bad.stdout
    print("layers_check: the tree passes; climbing includes are refused")


if __name__ == "__main__":
    main()
