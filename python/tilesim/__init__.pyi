# Type stubs of the tilesim package (editors complete from these).
import os
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import dask as dask

from .results import JsonResult as JsonResult, Result as Result, SweepResult as SweepResult

Config = Union[Mapping[str, Any], str, os.PathLike[str]]
PathLike = Union[str, os.PathLike[str]]
# Hardware what-ifs (the CLI's --set): {key: value} or "key=value" strings.
Settings = Optional[Union[Mapping[str, Union[int, float]], Iterable[str]]]

__version__: str

class ConfigError(ValueError):
    key: Optional[str]
    kind: str

def run(config: Config, tile: Optional[Sequence[int]] = ..., loop: Optional[int] = ...,
        hardware: Optional[str] = ..., set: Settings = ...) -> Result: ...
def sweep(config: Config, jobs: int = ..., client: Any = ..., hardware: Optional[str] = ...,
          chunks: Optional[int] = ..., results_dir: Optional[PathLike] = ...,
          retries: int = ..., objective: Optional[str] = ...,
          timeout: Optional[float] = ..., set: Settings = ...,
          progress: Union[Callable[[int, int], Any], str, None] = ...) -> SweepResult: ...
def merge(shards: Union[PathLike, Iterable[PathLike]]) -> SweepResult: ...
def rules(hardware: str = ..., compare: Optional[Iterable[str]] = ...,
          only: Optional[Iterable[str]] = ..., jobs: int = ...,
          set: Settings = ...) -> JsonResult: ...
def calibrate(measurements: PathLike, hardware: Optional[str] = ...,
              free: Optional[Iterable[str]] = ..., jobs: int = ..., max_iter: Optional[int] = ...,
              fd_step: Optional[float] = ..., digits: int = ...,
              fresh_lowering: bool = ..., allow_degenerate: bool = ...) -> JsonResult: ...
def validate(files: Optional[Iterable[PathLike]] = ..., hardware: Optional[str] = ...,
             jobs: int = ..., sensitivity: bool = ...,
             sensitivity_keys: Optional[Iterable[str]] = ..., sensitivity_step: float = ...,
             set: Settings = ...) -> JsonResult: ...
def replay(graph: PathLike, hardware: Optional[str] = ..., set: Settings = ...) -> Result: ...
def analyze(trace: PathLike, graph: Optional[PathLike] = ..., time_unit: str = ...,
            hardware: Optional[str] = ...) -> JsonResult: ...
def compare(profile: PathLike, config: PathLike, hardware: Optional[str] = ...,
            set: Settings = ..., time_unit: str = ..., graph: Optional[PathLike] = ...,
            op_name: Optional[str] = ...,
            match: Optional[Union[Mapping[str, str], Iterable[str]]] = ...,
            skip_first: int = ...) -> JsonResult: ...
def measurements_from_msprof(csvs: Union[PathLike, Iterable[PathLike]], map: PathLike,
                             as_: str = ..., metrics: Optional[Iterable[str]] = ...,
                             output: Optional[PathLike] = ...) -> JsonResult: ...
def measurements_from_swimlane(traces: Union[PathLike, Iterable[PathLike]], config: PathLike,
                               graph: Optional[PathLike] = ..., time_unit: str = ...,
                               hardware: Optional[str] = ..., id: Optional[str] = ...,
                               as_: str = ..., metrics: Optional[Iterable[str]] = ...,
                               output: Optional[PathLike] = ...) -> JsonResult: ...
