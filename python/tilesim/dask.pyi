import os
from typing import Any, Callable, List, Mapping, Optional, Sequence, Union

from .results import SweepResult

class NoWorkersError(RuntimeError): ...

def evaluate_chunk(doc: str, k: int, n: int, jobs: int) -> str: ...
def evaluate_chunk_bytes(doc: str, k: int, n: int, jobs: int) -> bytes: ...
def default_chunks(candidates: int, client: Any) -> int: ...
def sweep_jobs(jobs: Sequence[Any], client: Any, chunks: Optional[int] = ...,
               results_dir: Optional[Union[str, os.PathLike[str]]] = ..., retries: int = ...,
               threads: int = ...,
               evaluate: Optional[Callable[[str, int, int, int], Union[str, bytes]]] = ...,
               timeout: Optional[float] = ...,
               progress: Optional[Callable[[int, int], Any]] = ...) -> List[SweepResult]: ...
def sweep_job_on(job: Any, client: Any, chunks: Optional[int] = ...,
                 results_dir: Optional[Union[str, os.PathLike[str]]] = ..., retries: int = ...,
                 jobs: int = ..., timeout: Optional[float] = ...,
                 progress: Optional[Callable[[int, int], Any]] = ...) -> SweepResult: ...
def sweep_many(configs: Sequence[Union[Mapping[str, Any], str, os.PathLike[str]]], client: Any,
               chunks: Optional[int] = ...,
               results_dir: Optional[Union[str, os.PathLike[str]]] = ..., retries: int = ...,
               jobs: int = ..., hardware: Optional[str] = ...,
               timeout: Optional[float] = ...,
               progress: Optional[Callable[[int, int], Any]] = ...,
               set: Optional[Union[Mapping[str, Union[int, float]], Sequence[str]]] = ...
               ) -> List[SweepResult]: ...
