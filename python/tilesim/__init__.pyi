# Type stubs of the tilesim package (editors complete from these).
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from .results import JsonResult as JsonResult, Result as Result, SweepResult as SweepResult

Config = Union[Mapping[str, Any], str, os.PathLike[str]]
PathLike = Union[str, os.PathLike[str]]

__version__: str

class ConfigError(ValueError):
    key: Optional[str]
    kind: str

def run(config: Config, tile: Optional[Sequence[int]] = ..., loop: Optional[int] = ...,
        hardware: Optional[str] = ...) -> Result: ...
def sweep(config: Config, jobs: int = ..., client: Any = ..., hardware: Optional[str] = ...,
          chunks: Optional[int] = ..., results_dir: Optional[PathLike] = ...,
          retries: int = ..., objective: Optional[str] = ...,
          timeout: Optional[float] = ...) -> SweepResult: ...
def merge(shards: Union[PathLike, Iterable[PathLike]]) -> SweepResult: ...
def rules(hardware: str = ..., compare: Optional[Iterable[str]] = ...,
          only: Optional[Iterable[str]] = ..., jobs: int = ...) -> JsonResult: ...
def calibrate(measurements: PathLike, hardware: Optional[str] = ...,
              free: Optional[Iterable[str]] = ..., jobs: int = ..., max_iter: Optional[int] = ...,
              fd_step: Optional[float] = ..., digits: int = ...,
              fresh_lowering: bool = ...) -> JsonResult: ...
def validate(files: Optional[Iterable[PathLike]] = ..., hardware: Optional[str] = ...,
             jobs: int = ...) -> JsonResult: ...
def replay(graph: PathLike, hardware: Optional[str] = ...) -> Result: ...
def analyze(trace: PathLike, graph: Optional[PathLike] = ..., time_unit: str = ...,
            hardware: Optional[str] = ...) -> JsonResult: ...
