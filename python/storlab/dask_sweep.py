"""Sweeps on a Dask cluster: one task per batch of points, each running
the points through the same Rust sweep as a local run
(``storlab_lab::sweep::Sweep::run_points``), gathered into the rows of
the whole sweep in point order, row for row what the local sweep gives.

Also the back end of ``storlab lab sweep --dask ADDRESS``::

    python3 -m storlab.dask_sweep --address tcp://host:8786 --spec SPEC.json --result ROWS.json

reads the sweep's definition (the ``sweep`` member of a table's metadata)
and writes the rows as JSON ``[[point, [values...], dir, [metrics...]], ...]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Mapping

from . import _native, _progress


def _describe(spec: Mapping[str, Any], point: int) -> str:
    """``point 3 (bs=64k, numjobs=16)``: the point's parameters, the last
    varying fastest (as ``Sweep::values``)."""
    vals = []
    i = point
    for v in reversed(spec["vary"]):
        vals.append(f"{v['name']}={v['values'][i % len(v['values'])]}")
        i //= len(v["values"])
    return f"point {point} ({', '.join(reversed(vals))})"


def run_batch(spec: Mapping[str, Any], points: list[int]) -> dict:
    """Run ``points`` of the sweep (a Dask task): ``{"rows": [...]}``, or,
    when a point's input is wrong, ``{"error": ...}`` naming the point's
    parameters. An input error is returned, not raised: Dask retries a task
    that raises, and a wrong input fails the same way every time (only a
    lost worker or a crash is worth retrying)."""
    if "app" in spec:
        from . import app_sweep

        rows = []
        for p in points:
            try:
                rows.append(app_sweep.run_point(spec, p))
            except _native.StorlabError as e:
                return {
                    "error": str(app_sweep.named(spec, p, e)),
                    "file": getattr(e, "file", None),
                    "line": getattr(e, "line", None),
                    "point": p,
                }
        return {"rows": rows}
    from . import _run_points

    try:
        return {"rows": _run_points(spec, points)[1]}
    except _native.StorlabError:
        pass
    # find the failing point and name it
    rows: list = []
    for p in points:
        try:
            rows.extend(_run_points(spec, [p])[1])
        except _native.StorlabError as e:
            return {
                "error": f"sweep {_describe(spec, p)}: {e}",
                "file": getattr(e, "file", None),
                "line": getattr(e, "line", None),
                "point": p,
            }
    return {"rows": rows}


def _raise(failed: Mapping[str, Any]) -> None:
    """The StorlabError a worker's ``run_batch`` described."""
    err = _native.StorlabError(failed["error"])
    err.file = failed["file"]
    err.line = failed["line"]
    err.point = failed["point"]
    raise err


def _points(spec: Mapping[str, Any]) -> int:
    return math.prod(len(v["values"]) for v in spec["vary"])


def dask_rows(
    client: Any,
    spec: Mapping[str, Any],
    batch_size: int | None = None,
    retries: int = 2,
    progress: bool | None = None,
) -> list:
    """The rows of the whole sweep run on ``client``'s cluster. A task is
    retried ``retries`` times when its worker is lost or it crashes; a
    point with a wrong input fails the sweep at once, with one error."""
    from dask.distributed import as_completed

    n = _points(spec)
    if batch_size is None:
        threads = max(1, sum(client.nthreads().values()))
        batch_size = max(1, math.ceil(n / (4 * threads)))
    if batch_size < 1:
        raise _native.StorlabError(f"batch_size {batch_size}: at least 1")
    batches = [list(range(i, min(n, i + batch_size))) for i in range(0, n, batch_size)]
    spec = dict(spec)
    futures = client.map(run_batch, [spec] * len(batches), batches, retries=retries, pure=False)
    results: dict[int, list] = {}
    index = {f.key: i for i, f in enumerate(futures)}
    bar = None
    if _progress.enabled(progress):
        bar = _progress.bar_class()(total=n, desc="sweep (dask)", unit="point", leave=False)
    try:
        for fut in as_completed(futures):
            i = index[fut.key]
            out = fut.result()  # raises what a lost worker or a crash left
            if "error" in out:
                _raise(out)
            results[i] = out["rows"]
            if bar is not None:
                bar.update(len(batches[i]))
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.close()
    rows: list = []
    for i in range(len(batches)):
        rows.extend(results[i])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m storlab.dask_sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--address", required=True, help="the Dask scheduler (tcp://host:8786)")
    ap.add_argument("--spec", required=True, help="the sweep's definition (JSON)")
    ap.add_argument("--result", required=True, help="where to write the rows (JSON)")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument(
        "--timeout",
        default=os.environ.get("STORLAB_DASK_TIMEOUT", "30s"),
        help="how long to try to reach the scheduler ($STORLAB_DASK_TIMEOUT, default 30s)",
    )
    a = ap.parse_args(argv)
    try:
        from dask.distributed import Client
    except ImportError as e:
        print(
            f"storlab.dask_sweep: dask.distributed is not installed ({e}); pip install 'dask[distributed]'",
            file=sys.stderr,
        )
        return 2
    with open(a.spec) as f:
        spec = json.load(f)
    try:
        with Client(a.address, timeout=a.timeout) as client:
            rows = dask_rows(client, spec, batch_size=a.batch_size)
    except _native.StorlabError as e:
        print(f"storlab: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"storlab.dask_sweep: cannot reach the Dask scheduler at {a.address}: {e}", file=sys.stderr)
        return 1
    with open(a.result, "w") as f:
        json.dump(rows, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
