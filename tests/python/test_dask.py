"""Sweeps on a Dask LocalCluster (two worker processes on 127.0.0.1) equal local sweeps; a failed
chunk is retried; a results directory resumes; its chunk files are shard files the CLI merges."""
import json
import os

import pytest

import tilesim
import tilesim.dask
from conftest import source

distributed = pytest.importorskip("distributed")

SPMD = source("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json")
LOOPS = source("configs/sweeps/rule2_matmul_16384_loops.json")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_distributed_equals_local(client):
    local = tilesim.sweep(SPMD, jobs=2)
    res = tilesim.sweep(SPMD, client=client, chunks=5)
    assert res.to_json() == local.to_json()
    assert res.to_csv() == local.to_csv()
    assert res.to_svg() == local.to_svg()


def test_sweep_many_gives_one_result_per_config(client):
    results = tilesim.dask.sweep_many([SPMD, LOOPS], client)
    assert [r.to_json() for r in results] == [tilesim.sweep(c, jobs=2).to_json()
                                              for c in (SPMD, LOOPS)]


def flaky(marker_dir):
    """An evaluate hook whose first attempt at every chunk fails, as a lost worker's would."""
    def evaluate(doc, k, n, jobs):
        marker = os.path.join(marker_dir, f"{k}-of-{n}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError(f"chunk {k}/{n}: simulated worker failure")
        return tilesim.dask.evaluate_chunk(doc, k, n, jobs)
    return evaluate


def test_a_failed_chunk_is_retried(client, tmp_path):
    job = tilesim.api.sweep_job(LOOPS)
    [res] = tilesim.dask.sweep_jobs([job], client, chunks=3, retries=1,
                                    evaluate=flaky(str(tmp_path)))
    assert sorted(os.listdir(tmp_path)) == ["1-of-3", "2-of-3", "3-of-3"]  # each failed once
    assert res.to_json() == tilesim.sweep(LOOPS, jobs=2).to_json()


def recording(record_dir):
    def evaluate(doc, k, n, jobs):
        open(os.path.join(record_dir, f"{k}-of-{n}"), "w").close()
        return tilesim.dask.evaluate_chunk(doc, k, n, jobs)
    return evaluate


def test_resume_evaluates_only_the_chunks_not_done(client, tmp_path, cli):
    chunks, first, second = tmp_path / "chunks", tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    job = tilesim.api.sweep_job(SPMD)
    tilesim.dask.sweep_jobs([job], client, chunks=4, results_dir=str(chunks),
                            evaluate=recording(str(first)))
    assert len(os.listdir(first)) == 4
    os.remove(chunks / f"{job.hash}-3-of-4.json")  # as if the run had stopped before chunk 3
    [res] = tilesim.dask.sweep_jobs([job], client, chunks=4, results_dir=str(chunks),
                                    evaluate=recording(str(second)))
    assert os.listdir(second) == ["3-of-4"]
    local = tilesim.sweep(SPMD, jobs=2)
    assert res.to_json() == local.to_json()
    # The chunk files are the CLI's shard files.
    files = sorted(str(p) for p in chunks.iterdir())
    assert cli("merge", *files, "-q", "--json", "-").stdout == local.to_json()
    # Resuming without a client reads them all and evaluates nothing.
    assert tilesim.sweep(SPMD, chunks=4, results_dir=str(chunks)).to_json() == local.to_json()


def test_no_worker_is_an_error_not_a_hang():
    # A scheduler nobody works for: what a LocalCluster without the __main__ guard leaves.
    cluster = distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        with pytest.raises(tilesim.dask.NoWorkersError, match="no Dask worker joined .* within 1 s"):
            tilesim.sweep(SPMD, client=c, chunks=2, timeout=1)
    finally:
        c.close()
        cluster.close()


def test_binary_chunks_merge_as_shard_files_do():
    """Chunks travel as binary shards unless a results_dir keeps them as shard files: both, and
    a mix of both, merge into the local sweep's result."""
    job = tilesim.api.sweep_job(LOOPS)
    chunk = tilesim.dask.evaluate_chunk_bytes(job.doc, 1, 3, 1)
    assert isinstance(chunk, bytes)
    [binary] = tilesim.dask.sweep_jobs([job], None, chunks=3)
    [text] = tilesim.dask.sweep_jobs([job], None, chunks=3,
                                     evaluate=tilesim.dask.evaluate_chunk)
    mixed = tilesim.results.SweepResult(tilesim._core.merge(
        [chunk, tilesim.dask.evaluate_chunk(job.doc, 2, 3, 1),
         tilesim.dask.evaluate_chunk_bytes(job.doc, 3, 3, 1)], ["a", "b", "c"]))
    read = [tilesim._core.read_shard(chunk, "a"),
            tilesim._core.read_shard(tilesim.dask.evaluate_chunk(job.doc, 2, 3, 1), "b"),
            tilesim._core.read_shard(tilesim.dask.evaluate_chunk_bytes(job.doc, 3, 3, 1), "c")]
    ahead = tilesim.results.SweepResult(tilesim._core.merge_read(read))
    local = tilesim.sweep(LOOPS, jobs=2)
    for res in (binary, text, mixed, ahead):
        assert res.to_json() == local.to_json()
        assert res.to_csv() == local.to_csv()
    # A shard read ahead is merged once: a second merge of it is refused, not ranked empty.
    with pytest.raises(tilesim.ConfigError, match="already merged"):
        tilesim._core.merge_read(read)
