"""Builds tilesim._core and the tilesim command with CMake for meson-python (meson.build) and
copies them to meson's outputs.

    build_core.py <source dir> <cmake build dir> <python3> <module output> <command output>

The CMake tree is configured once (Release, the Python module on, no benches) for the
python3 that meson-python runs, then built incrementally: `pip install .` twice builds once.
"""
import os
import shutil
import subprocess
import sys


def main(source, build, python, output, command):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", source, "-B", build, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DTILESIM_PYTHON=ON",
                        f"-DPython3_EXECUTABLE={python}",
                        "-DTILESIM_BUILD_BENCH=OFF"], check=True)
    subprocess.run(["cmake", "--build", build, "--target", "tilesim_python", "tilesim",
                    "--parallel", str(os.cpu_count() or 1)], check=True)
    module = os.path.join(build, "python", "tilesim", os.path.basename(output))
    if not os.path.exists(module):
        sys.exit(f"build_core.py: CMake built no {module} (is {build} configured for {python}?)")
    shutil.copy2(module, output)
    shutil.copy2(os.path.join(build, "tools", "tilesim"), command)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
