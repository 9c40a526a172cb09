"""Sweep throughput: local (-j 2) against a Dask LocalCluster on the same machine (two worker
processes, one thread each), and the cost of one more chunk. Checks that the Dask result equals
the local one. Usage (from the repository root, after building):

    PYTHONPATH=build/python /usr/bin/python3 bench/dask_sweep_bench.py [config] [--repeat R]

Default config: configs/sweeps/softmax_16x16384_exhaustive.json (10,240 candidates).
"""
import argparse
import os
import statistics
import sys
import time

import tilesim


def timed(f, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("config", nargs="?",
                    default=os.path.join(root, "configs/sweeps/softmax_16x16384_exhaustive.json"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chunks", type=int, nargs="+", default=[2, 8, 32, 128])
    a = ap.parse_args()

    from distributed import Client, LocalCluster

    n = tilesim.api.sweep_job(a.config).candidates
    print(f"{a.config}: {n} candidates, median of {a.repeat}")
    t_local, local = timed(lambda: tilesim.sweep(a.config, jobs=2), a.repeat)
    print(f"  local -j 2:                 {t_local:7.2f} s  {n / t_local:8.0f} candidates/s")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        tilesim.sweep(a.config, client=client, chunks=2)  # warm the workers (import, first job)
        points = []
        for chunks in a.chunks:
            t, res = timed(lambda: tilesim.sweep(a.config, client=client, chunks=chunks),
                           a.repeat)
            same = res.to_json() == local.to_json() and res.to_csv() == local.to_csv()
            points.append((chunks, t))
            print(f"  Dask 2 workers, {chunks:4d} chunks: {t:7.2f} s  {n / t:8.0f} candidates/s"
                  f"  {'identical to local' if same else 'DIFFERS FROM LOCAL'}")
            if not same:
                sys.exit(1)
    # Time grows with the chunk count by the per-chunk overhead: a least-squares slope.
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    print(f"  per-chunk overhead (slope of time over chunks): {slope * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
