"""Sweep throughput: local (-j 2) against a Dask LocalCluster on the same machine (two worker
processes, one thread each), local and Dask in turn, and the cost of one more chunk. Checks that
every Dask result equals the local one. Usage (from the repository root, after building):

    PYTHONPATH=build/python /usr/bin/python3 bench/dask_sweep_bench.py [config] [--repeat R]
        [--chunks 2 4 8 32]

Default config: configs/sweeps/softmax_16x16384_exhaustive.json (10,240 candidates).
"""
import argparse
import os
import statistics
import sys
import time

import tilesim


def timed(f, repeat):
    """min, median and max wall seconds of `repeat` calls, and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - start)
    return (min(times), statistics.median(times), max(times)), result


def spread(t):
    return f"{t[0]:6.2f} / {t[1]:6.2f} / {t[2]:6.2f} s"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("config", nargs="?",
                    default=os.path.join(root, "configs/sweeps/softmax_16x16384_exhaustive.json"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chunks", type=int, nargs="+", default=[2, 4, 8, 32])
    a = ap.parse_args()

    from distributed import Client, LocalCluster

    n = tilesim.api.sweep_job(a.config).candidates
    print(f"{a.config}: {n} candidates; min / median / max of {a.repeat} pairs, local -j 2 and "
          "Dask in turn (the ratio taken pair by pair, so the machine's drift cancels)")
    local = tilesim.sweep(a.config, jobs=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        tilesim.sweep(a.config, client=client, chunks=2)  # warm the workers (import, first job)
        points = []
        for chunks in a.chunks:
            t_local, t_dask, ratio = [], [], []
            for _ in range(a.repeat):
                t_local.append(timed(lambda: tilesim.sweep(a.config, jobs=2), 1)[0][1])
                (_, t, _), res = timed(
                    lambda: tilesim.sweep(a.config, client=client, chunks=chunks), 1)
                t_dask.append(t)
                ratio.append(t_local[-1] / t)
                same = res.to_json() == local.to_json() and res.to_csv() == local.to_csv()
                if not same:
                    print(f"  Dask, {chunks} chunks: DIFFERS FROM LOCAL")
                    sys.exit(1)
            points.append((chunks, statistics.median(t_dask)))
            three = lambda v: (min(v), statistics.median(v), max(v))  # noqa: E731
            r = three(ratio)
            print(f"  {chunks:4d} chunks: Dask {spread(three(t_dask))}, local -j 2 "
                  f"{spread(three(t_local))}, local/Dask {r[0]:.2f} / {r[1]:.2f} / {r[2]:.2f}; "
                  "identical to local")
    # Time grows with the chunk count by the per-chunk overhead: a least-squares slope.
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if len(set(xs)) < 2:
        return  # one chunk count: no slope
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    print(f"  per-chunk overhead (slope of time over chunks): {slope * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
