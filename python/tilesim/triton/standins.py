"""``import tilesim.triton.standins`` at the top of a Triton kernel file makes it run without an
NPU: ``import triton`` / ``triton.language`` give tilesim.triton and ``import torch`` /
``torch_npu`` tilesim's torch stand-in (shapes and dtypes, no data), for the rest of the process.
Each ``kernel[grid](...)`` is then traced (tilesim.triton.LAUNCHES). On a board, delete the
line. ``tilesim trace-triton`` needs no such line: it installs the stand-ins itself."""
import sys

from .. import torch_standin
from . import _MODULES

if "torch" not in sys.modules or getattr(sys.modules["torch"], "__version__", "").endswith(
        "tilesim.standin"):
    sys.modules.update(torch_standin.modules())
sys.modules["triton"] = sys.modules["tilesim.triton"]
sys.modules.update(_MODULES)
