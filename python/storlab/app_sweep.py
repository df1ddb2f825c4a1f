"""Sweeps of an application model (``storlab apps``): one simulation per
point of the varied application parameters (``app_set`` keys such as
``threads``), model keys (with a dot) and devices, each run as
``storlab.simulate(device, app=NAME, app_set=...)`` runs it, one row per
point with the application's result (the ``app`` object of ``storlab sim
--app``'s JSON: ``metric``, ``unit``, ``parameters.NAME``...).

The spec is the fio sweep's shape (``vary`` a list of ``{"name",
"values"}``, the last varying fastest) with ``app`` naming the
application, so that :mod:`storlab.dask_sweep` runs its batches on a Dask
cluster the same way.
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Mapping

import pandas as pd

from . import _native, _progress

#: The varied name that picks the device of a point.
DEVICE = "device"


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _pairs(app_set: Any) -> dict[str, str]:
    """``app_set`` (a dict, a ``name=value`` string or a list of them) as
    a dict, in order."""
    if app_set is None:
        return {}
    if isinstance(app_set, Mapping):
        return {str(k): _value(v) for k, v in app_set.items()}
    items = [app_set] if isinstance(app_set, str) else list(app_set)
    out: dict[str, str] = {}
    for p in items:
        k, eq, v = str(p).partition("=")
        if not eq:
            raise _native.StorlabError(f"app_set '{p}': give name=value")
        out[k.strip()] = v.strip()
    return out


def make_spec(
    device: str | Iterable[str],
    vary: Mapping[str, Iterable[Any]],
    app: str,
    app_set: Any,
    fio: Any,
    set: list[str],
    seed: int,
) -> dict[str, Any]:
    """The sweep's definition. ``device`` may be a list of devices (varied
    first, slowest); ``vary`` maps ``device``, a model key with a dot or
    an application parameter to its values."""
    if not isinstance(app, str) or not app:
        raise _native.StorlabError("app: give an application's name (storlab.simulate's app=, `storlab apps`)")
    if fio is not None and not isinstance(fio, Mapping):
        raise _native.StorlabError("with app=, give fio as a dict of extra options (runtime...)")
    vs: list[dict[str, Any]] = []
    if isinstance(device, str):
        base_device = device
    else:
        devices = [str(d) for d in device]
        if not devices:
            raise _native.StorlabError("device: an empty list of devices")
        if DEVICE in vary:
            raise _native.StorlabError("give the devices either as device=[...] or in vary, not both")
        base_device = devices[0]
        vs.append({"name": DEVICE, "values": devices})
    for name, values in vary.items():
        if isinstance(values, (str, bytes)):
            values = [values]
        values = [_value(v) for v in values]
        if not values:
            raise _native.StorlabError(f"vary {name}: no values")
        vs.append({"name": str(name), "values": values})
    if not vs:
        raise _native.StorlabError(
            "give at least one parameter to vary: vary={'threads': [4, 16]} or device=['raid-disk', 'moneta-balance']"
        )
    extra = {str(k): _value(v) for k, v in (fio or {}).items() if k != "name"}
    return {
        "app": app,
        "device": base_device,
        "app_set": _pairs(app_set),
        "fio": extra,
        "set": list(set),
        "seed": int(seed),
        "vary": vs,
    }


def points(spec: Mapping[str, Any]) -> int:
    return math.prod(len(v["values"]) for v in spec["vary"])


def values(spec: Mapping[str, Any], point: int) -> list[str]:
    """The point's value of each varied name (the last varies fastest)."""
    out = []
    i = point
    for v in reversed(spec["vary"]):
        out.append(v["values"][i % len(v["values"])])
        i //= len(v["values"])
    return list(reversed(out))


def run_point(spec: Mapping[str, Any], point: int) -> tuple[int, list[str], dict[str, Any]]:
    """Simulate one point: (point, its values, the application's result
    flattened with dots). A wrong input raises StorlabError as
    ``storlab.simulate`` does (the caller names the point)."""
    vals = values(spec, point)
    device = spec["device"]
    set_args = list(spec["set"])
    app_set = dict(spec["app_set"])
    for v, val in zip(spec["vary"], vals):
        name = v["name"]
        if name == DEVICE:
            device = val
        elif "." in name:
            set_args.append(f"{name}={val}")
        else:
            app_set[name] = val
    app = spec["app"]
    args = [f"--name={app}", f"--app={app}", *(f"--app_set={k}={v}" for k, v in app_set.items())]
    args.extend(f"--{k}={v}" for k, v in spec["fio"].items())
    doc, _notes, failed = _native.simulate(device, set_args, args, int(spec["seed"]), None)
    if failed:
        raise _native.StorlabError(f"{len(failed)} job(s) failed: " + "; ".join(failed))
    for job in json.loads(doc)["jobs"]:
        a = job.get("app")
        if a:
            a = {k: x for k, x in a.items() if k != "operations"}
            return point, vals, _flat(a)
    raise _native.StorlabError(f"application '{app}' gave no result")


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects flattened with dots (as pandas' json_normalize),
    plain Python values so that the rows pickle and serialise as JSON."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def describe(spec: Mapping[str, Any], point: int) -> str:
    """``point 3 (device=raid-disk, threads=16)``."""
    vals = values(spec, point)
    pairs = ", ".join(f"{v['name']}={x}" for v, x in zip(spec["vary"], vals))
    return f"point {point} ({pairs})"


def named(spec: Mapping[str, Any], point: int, e: BaseException) -> _native.StorlabError:
    """``e`` as a StorlabError naming the point's parameters."""
    err = _native.StorlabError(f"sweep {describe(spec, point)}: {e}")
    err.file = getattr(e, "file", None)
    err.line = getattr(e, "line", None)
    err.point = point
    return err


def run_points(spec: Mapping[str, Any], pts: list[int] | None, progress: bool | None = False) -> list:
    """Rows of ``pts`` (all points when None), in point order, the points
    run in parallel on this machine's cores (the simulation releases the
    GIL). The first failing point, in point order, raises naming it."""
    todo = list(range(points(spec))) if pts is None else list(pts)
    bar = None
    if _progress.enabled(progress):
        bar = _progress.bar_class()(total=len(todo), desc="sweep", unit="point", leave=False)

    def one(p: int) -> Any:
        try:
            return run_point(spec, p)
        except _native.StorlabError as e:
            return named(spec, p, e)
        finally:
            if bar is not None:
                bar.update(1)

    workers = max(1, min(len(todo), os.cpu_count() or 1))
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            out = list(pool.map(one, todo))
    finally:
        if bar is not None:
            bar.close()
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return out


def frame(spec: Mapping[str, Any], rows: list) -> pd.DataFrame:
    """One row per point: ``point``, the varied names, then the
    application's result (``name``, ``metric``, ``unit``, ``elapsed_ns``,
    ``operations_counted``, ``parameters.NAME``, ``time_by_layer...``)."""
    names = [v["name"] for v in spec["vary"]]
    records = []
    for point, vals, app in rows:
        rec: dict[str, Any] = {"point": point}
        rec.update(zip(names, vals))
        rec.update({k: x for k, x in app.items() if k not in rec})
        records.append(rec)
    df = pd.DataFrame(records)
    return df.astype({"point": "int64"}) if len(df) else df
