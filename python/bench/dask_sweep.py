"""Benchmark (not a test): a 200-point sweep in-process against the same
sweep on a Dask LocalCluster of two worker processes (one thread each:
this machine has two cores), with the rows checked equal. Writes
python/bench/results/dask-sweep-200.json.

    python3 python/bench/dask_sweep.py [--number-ios N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import storlab

VARY = {
    "bs": ["512", "4k", "16k", "64k", "256k"],
    "numjobs": [1, 2, 4, 8, 16],
    "pcie.controllers": [1, 2, 3, 4, 5, 6, 7, 8],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--number-ios", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "dask-sweep-200.json"))
    a = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    fio = {"rw": "randread", "number_ios": a.number_ios}
    points = 1
    for v in VARY.values():
        points *= len(v)
    assert points == 200

    def local():
        return storlab.sweep("moneta-spin", vary=VARY, fio=fio, progress=False)

    t_local = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        ref = local()
        t_local.append(time.perf_counter() - t0)

    runs = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(
        cluster
    ) as client:
        t0 = time.perf_counter()
        client.wait_for_workers(2)
        startup = time.perf_counter() - t0
        for batch in (1, None):
            ts = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                df = storlab.sweep("moneta-spin", vary=VARY, fio=fio, client=client, batch_size=batch, progress=False)
                ts.append(time.perf_counter() - t0)
                assert df.equals(ref), "the Dask sweep differs from the local one"
            runs["1 point per task" if batch == 1 else "auto batches (4 per worker thread)"] = ts

    res = {
        "what": "200-point sweep (bs x numjobs x pcie.controllers, randread) on moneta-spin: in-process vs Dask LocalCluster(n_workers=2, threads_per_worker=1, processes=True)",
        "number_ios_per_job": a.number_ios,
        "rows": len(ref),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "storlab": storlab.__version__},
        "in_process_s": t_local,
        "wait_for_workers_s": startup,
        "dask_s": runs,
        "ratio_dask_over_local_median": {k: statistics.median(v) / statistics.median(t_local) for k, v in runs.items()},
        "note": "the sweep tables were equal row for row in every run; the in-process sweep uses all cores (rayon)",
    }
    Path(a.out).write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
