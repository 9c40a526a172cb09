"""Sweeps on a Dask cluster: the candidates of each sweep are split into chunks, the shards of
``tilesim sweep --shard K/N``; each chunk is evaluated on a worker through the same C++ path
(tilesim._core.shard_bytes) and the chunks are merged as ``tilesim merge`` merges shard files, so
the result equals a local sweep's. A chunk travels as a binary shard: the same records as the
shard file's JSON, with no JSON to build or parse (that cost the client more than the workers' own
evaluation), zstd-compressed to about a sixth of the JSON's size (3.5 MB for half of the
exhaustive softmax sweep, against 20 MB). A chunk whose task fails is retried (Dask ``retries``); with
``results_dir`` every finished chunk is kept there as a shard file (``<hash>-K-of-N.json``, the
CLI's format) and a rerun evaluates only the chunks not there yet.

    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")
    res = tilesim.sweep("cfg.json", client=client, results_dir="chunks/")
    results = tilesim.dask.sweep_many(["a.json", "b.json"], client)
"""
import concurrent.futures
import json
import os
import tempfile
import uuid

from . import _core
from ._jobs import sweep_job
from .results import SweepResult


_worker_job = None  # (doc text, SweepJob): the last sweep a worker rebuilt, replaced whole


def _job_of(doc):
    """The SweepJob of `doc`, rebuilt once per sweep on a worker, not once per chunk (expanding a
    large space costs a chunk's worth of time). The pair is read once, so a worker thread on
    another sweep's chunk cannot hand this one its job."""
    global _worker_job
    from tilesim import _core as core

    key = json.dumps(doc, sort_keys=True)
    cached = _worker_job
    if cached is None or cached[0] != key:
        cached = (key, core.job_from_doc(doc))
        _worker_job = cached
    return cached[1]


def evaluate_chunk(doc, k, n, jobs):
    """Shard k of n of the sweep `doc` (a SweepJob's doc), as shard-file text. Runs on a worker."""
    from tilesim import _core as core

    return core.shard(_job_of(doc), k, n, jobs)


def evaluate_chunk_bytes(doc, k, n, jobs):
    """The same shard in the binary form one tilesim build hands to itself (bytes, merged like
    shard-file text). Runs on a worker."""
    from tilesim import _core as core

    return core.shard_bytes(_job_of(doc), k, n, jobs)


def default_chunks(candidates, client):
    """Four chunks per worker thread (a slow chunk does not hold the rest), at most one per
    candidate."""
    threads = sum(client.nthreads().values()) if client is not None else 1
    return max(1, min(candidates, 4 * max(threads, 1)))


def _chunk_path(results_dir, job, k, n):
    return os.path.join(results_dir, f"{job.hash}-{k}-of-{n}.json")


def _write_atomically(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".part")
    with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
        f.write(text)
    os.replace(tmp, path)


class NoWorkersError(RuntimeError):
    """No Dask worker joined the client's cluster in time."""


def _wait_for_workers(client, timeout):
    if timeout is None:
        return
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception as e:  # distributed raises its own TimeoutError subclasses
        raise NoWorkersError(
            f"no Dask worker joined {client.scheduler.address if client.scheduler else client} "
            f"within {timeout} s: start workers (dask worker <scheduler address>), or, for a "
            "LocalCluster in a script, create it under `if __name__ == \"__main__\":` (its "
            "worker processes re-import the script)") from e


def _chunk_size(total, k, n):
    """Candidates of chunk k of n: the indices i < total with i % n == k - 1."""
    return max(0, (total - k + n) // n)


def sweep_jobs(jobs, client, chunks=None, results_dir=None, retries=2, threads=1,
               evaluate=None, timeout=60, progress=None):
    """Evaluates every SweepJob of `jobs` in chunks (on `client`'s workers, or here when client
    is None) and returns one SweepResult per job, in order. `threads`: C++ threads per chunk.
    `evaluate(doc, k, n, threads)` evaluates one chunk (evaluate_chunk, evaluate_chunk_bytes, or a
    wrapper of either; None: the bytes, or the text where results_dir keeps the chunks).
    `timeout` (seconds, None: wait forever) bounds the wait for a first worker to join the
    client's cluster: none in time is a NoWorkersError, not a silent hang. `progress(done,
    total)` is called as chunks finish (and once for those a results_dir already holds), with
    candidates of every job counted."""
    total = sum(job.candidates for job in jobs)
    finished = [0]
    if evaluate is None:
        evaluate = evaluate_chunk if results_dir is not None else evaluate_chunk_bytes

    def advance(count):
        finished[0] += count
        if progress is not None:
            progress(finished[0], total)

    if results_dir is not None:
        os.makedirs(results_dir, exist_ok=True)
    if client is not None:
        _wait_for_workers(client, timeout)
    plans = []  # per job: n and {k: (text, origin)}, then {k: the future of its read_shard}
    pending = {}  # future -> (job index, k)
    # Keys unique per call: Dask would hand back a result it still holds for an equal key
    # instead of evaluating the chunk again.
    run_id = uuid.uuid4().hex[:8]
    for j, job in enumerate(jobs):
        # More chunks than candidates would be empty shards: at most one chunk per candidate.
        n = min(int(chunks) if chunks else default_chunks(job.candidates, client),
                max(1, job.candidates))
        if n < 1:
            raise ValueError(f"chunks: expected an integer >= 1, got {chunks}")
        done = {}
        for k in range(1, n + 1):
            path = _chunk_path(results_dir, job, k, n) if results_dir is not None else None
            if path is not None and os.path.exists(path):
                with open(path, "rb") as f:  # shard-file text, or the bytes an evaluate gave
                    done[k] = (f.read(), path)
                advance(_chunk_size(job.candidates, k, n))
                continue
            if client is None:
                done[k] = (evaluate(job.doc, k, n, threads), f"<chunk {k}/{n}>")
                if path is not None:
                    _write_atomically(path, done[k][0])
                advance(_chunk_size(job.candidates, k, n))
            else:
                future = client.submit(evaluate, job.doc, k, n, threads, pure=False,
                                       retries=retries, key=f"tilesim-{job.hash}-{k}-of-{n}-{run_id}")
                pending[future] = (j, k)
        plans.append((n, done))
    # Each chunk is read (parsed and checked) on a thread of its own as it arrives, while the
    # workers finish the rest: the merge at the end only ranks.
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as reader:
        for _, done in plans:
            for k, (text, origin) in done.items():
                done[k] = reader.submit(_core.read_shard, text, origin)
        if pending:
            from distributed import as_completed

            for future, text in as_completed(list(pending), with_results=True):
                j, k = pending[future]
                n, done = plans[j]
                origin = f"<chunk {k}/{n}>"
                if results_dir is not None:
                    origin = _chunk_path(results_dir, jobs[j], k, n)
                    _write_atomically(origin, text)
                done[k] = reader.submit(_core.read_shard, text, origin)
                advance(_chunk_size(jobs[j].candidates, k, n))
        # The first chunk's error by position, as tilesim merge gives it.
        return [SweepResult(_core.merge_read([done[k].result() for k in range(1, n + 1)]))
                for n, done in plans]


def sweep_job_on(job, client, chunks=None, results_dir=None, retries=2, jobs=0, timeout=60,
                 progress=None):
    """tilesim.sweep(config, client=...) for one prepared job."""
    return sweep_jobs([job], client, chunks=chunks, results_dir=results_dir, retries=retries,
                      threads=int(jobs) or 1, timeout=timeout, progress=progress)[0]


def sweep_many(configs, client, chunks=None, results_dir=None, retries=2, jobs=1, hardware=None,
               timeout=60, progress=None, set=None):
    """Sweeps every config (dicts or paths) on the cluster at once: one SweepResult per config,
    each identical to tilesim.sweep(config)."""
    return sweep_jobs([sweep_job(c, hardware, settings=set) for c in configs], client,
                      chunks=chunks, results_dir=results_dir, retries=retries,
                      threads=int(jobs) or 1, timeout=timeout, progress=progress)
