"""storlab for Python: storlab's timing model of storage systems, its lab
and its emulator, from the same Rust crates as the ``storlab`` command
(through the ``storlab._native`` extension), with results as pandas
DataFrames.

>>> import storlab
>>> r = storlab.simulate("moneta-spin", fio={"name": "x", "rw": "randread", "bs": "4k", "number_ios": 1000})
>>> r.jobs[["jobname", "dir", "iops"]]          # doctest: +SKIP

Errors raise :class:`StorlabError` (a ``ValueError``) with the message the
``storlab`` command prints, and ``file`` and ``line`` when the error has a
place. Long calls show a tqdm bar on a terminal or in a notebook, and
release the GIL while they run.
"""

from __future__ import annotations

import json as _json
import os
import tempfile
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

import pandas as pd

from . import _native, _progress
from ._native import StorlabError

__all__ = [
    "StorlabError",
    "Result",
    "Device",
    "devices",
    "preset",
    "simulate",
    "sweep",
    "studies",
    "reproduce",
    "read_trace",
    "serve",
    "METRICS",
    "__version__",
]

__version__: str = _native.VERSION

#: The metrics of a sweep's rows, as ``storlab lab sweep`` writes them.
METRICS: list[str] = list(_native.METRICS)

#: The job ``storlab sim`` runs when given none (crates/storlab/src/sim.rs
#: DEFAULT_JOB): 4 KB random reads, QD1, 100,000 IOs over 1 GiB.
DEFAULT_JOB: list[str] = [
    "--name=randread-4k",
    "--rw=randread",
    "--bs=4k",
    "--iodepth=1",
    "--numjobs=1",
    "--size=1g",
    "--number_ios=100000",
]

FioOptions = Union[Mapping[str, Any], Sequence[str], None]
Settings = Union[Mapping[str, Any], Sequence[str], None]


def _fio_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _set_value(v: Any) -> str:
    # the value side of `--set key=value` (a TOML value, or a bare string)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _set_args(set: Settings) -> list[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{k}={_set_value(v)}" for k, v in set.items()]
    if isinstance(set, str):
        return [set]
    return [str(s) for s in set]


def _fio_args(job: str | os.PathLike[str] | None, fio: FioOptions, default_name: str = "job") -> list[str]:
    """fio's command-line arguments: options as ``--key=value`` (the job's
    name first; ``default_name`` when there is no job file and no name),
    then the job file. A list of strings is taken as fio arguments."""
    if fio is not None and not isinstance(fio, Mapping):
        args = [fio] if isinstance(fio, str) else [str(a) for a in fio]
    else:
        opts = dict(fio or {})
        name = opts.pop("name", None)
        args = []
        if name is None and job is None:
            if not opts:
                return list(DEFAULT_JOB)
            name = default_name
        if name is not None:
            args.append(f"--name={name}")
        args.extend(f"--{k}={_fio_value(v)}" for k, v in opts.items())
    if job is not None:
        args.append(os.fspath(job))
    return args


def _app_args(app: str, app_set: Any, fio: FioOptions) -> list[str]:
    """``storlab sim --app APP --app-set ...``'s job arguments, with any
    other fio options of the job (``runtime``...) after them."""
    if isinstance(app_set, Mapping):
        pairs = [f"{k}={_fio_value(v)}" for k, v in app_set.items()]
    elif isinstance(app_set, str):
        pairs = [app_set]
    else:
        pairs = [str(p) for p in (app_set or [])]
    args = [f"--name={app}", f"--app={app}", *(f"--app_set={p}" for p in pairs)]
    if isinstance(fio, Mapping):
        args.extend(f"--{k}={_fio_value(v)}" for k, v in fio.items() if k != "name")
    elif fio is not None:
        raise StorlabError("with app=, give fio as a dict of extra options (runtime...)")
    return args


# --------------------------------------------------------------------------
# presets


def devices() -> pd.DataFrame:
    """The device presets: one row each, columns ``name``, ``class``,
    ``description`` (as ``storlab devices``)."""
    rows = _native.devices()
    return pd.DataFrame(rows, columns=["name", "class", "description"])


def preset(name: str, set: Settings = None) -> dict[str, dict[str, Any]]:
    """A preset (or TOML file) resolved, with ``set`` overrides: a dict of
    every key (``pcie.controllers``...) to ``{"value", "source", "set_in"}``
    (the source comment, and the file and line that set it), as
    ``storlab devices show`` prints them."""
    doc = _json.loads(_native.preset(name, _set_args(set)))
    return doc["parameters"]


# --------------------------------------------------------------------------
# simulate


class Result:
    """One simulation's results.

    ``json`` is the document ``storlab sim --output-format=json`` writes
    (fio's JSON layout), byte for byte; ``jobs`` and ``breakdown`` are
    DataFrames read off it; ``notes`` are what the command prints on
    standard error (queue-depth notes, unmapped reads)."""

    def __init__(self, json: str, notes: list[str], failed: list[str]):
        self.json: str = json
        self.notes: list[str] = notes
        self.failed: list[str] = failed
        self._doc: dict[str, Any] | None = None

    @property
    def doc(self) -> dict[str, Any]:
        """``json`` parsed."""
        if self._doc is None:
            self._doc = _json.loads(self.json)
        return self._doc

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job and direction that did IO: ``jobname``,
        ``groupid``, ``dir`` (read, write, trim), then fio's fields of that
        direction flattened with dots (``iops``, ``bw_bytes``,
        ``clat_ns.mean``, ``clat_ns.percentile.99.000000``...)."""
        rows = []
        for job in self.doc["jobs"]:
            for d in ("read", "write", "trim"):
                st = job.get(d)
                if not st or not st.get("total_ios"):
                    continue
                flat = pd.json_normalize(st, sep=".").iloc[0].to_dict()
                rows.append({"jobname": job["jobname"], "groupid": job["groupid"], "dir": d, **flat})
        return pd.DataFrame(rows)

    @property
    def breakdown(self) -> pd.DataFrame:
        """The mean latency per request by model component: one row per
        job, direction and component, ``ns`` and ``share`` (of the
        direction's total)."""
        rows = []
        for job in self.doc["jobs"]:
            per_dir = (job.get("storlab") or {}).get("breakdown_ns") or {}
            for d, comps in per_dir.items():
                total = sum(v for v in comps.values() if v is not None)
                for comp, ns in comps.items():
                    share = (ns / total) if total and ns is not None else float("nan")
                    rows.append({"jobname": job["jobname"], "dir": d, "component": comp, "ns": ns, "share": share})
        return pd.DataFrame(rows, columns=["jobname", "dir", "component", "ns", "share"])

    @property
    def app(self) -> pd.DataFrame:
        """The application jobs' results (the ``app`` object of ``storlab
        sim --app``'s JSON): one row per application job, ``jobname``,
        ``name``, ``metric``, ``unit``, ``elapsed_ns``,
        ``operations_counted``, then its parameters (``parameters.NAME``)
        and time by layer (``time_by_layer.LAYER.share``...) flattened with
        dots. Empty for jobs without an application."""
        rows = []
        for job in self.doc["jobs"]:
            a = job.get("app")
            if not a:
                continue
            a = {k: v for k, v in a.items() if k != "operations"}
            flat = pd.json_normalize(a, sep=".").iloc[0].to_dict()
            rows.append({"jobname": job["jobname"], **flat})
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        names = ", ".join(j["jobname"] for j in self.doc["jobs"])
        return f"<storlab.Result jobs: {names}>"


def simulate(
    device: str = "moneta-spin",
    job: str | os.PathLike[str] | None = None,
    fio: FioOptions = None,
    set: Settings = None,
    seed: int = 1,
    progress: bool | None = None,
    app: str | None = None,
    app_set: Mapping[str, Any] | Sequence[str] | str | None = None,
) -> Result:
    """Simulate fio jobs on ``device`` (a preset name or TOML file) in
    virtual time, as ``storlab sim`` does.

    ``job`` is a fio job file; ``fio`` fio's options as a dict
    (``{"name": "x", "rw": "randread", "bs": "4k"}``; the job is called
    ``job`` without a name) or a list of fio arguments
    (``["--name=x", "--rw=randread"]``). Neither: ``storlab sim``'s
    default job. ``set`` overrides configuration keys
    (``{"pcie.controllers": 4}``). A job past its ``max_latency`` raises
    StorlabError with the result as its ``result`` attribute.

    ``app`` runs an application model (``storlab apps``) as
    ``storlab sim --app`` does, with ``app_set`` its parameters (a dict
    ``{"transactions": 2000}``, or ``name=value`` strings;
    ``{"study": "haste"}`` picks another study's configuration); the
    result's ``app`` is then its DataFrame beside ``jobs``."""
    args = _fio_args(job, fio) if app is None else _app_args(app, app_set, fio)
    json, notes, failed = _progress.run(
        lambda c: _native.simulate(device, _set_args(set), args, seed, c), "simulating", "IO", progress
    )
    res = Result(json, notes, failed)
    if notes:
        import warnings

        for n in notes:
            warnings.warn(n, stacklevel=2)
    if failed:
        err = StorlabError(f"{len(failed)} job(s) failed: " + "; ".join(failed))
        err.file = None
        err.line = None
        err.result = res
        raise err
    return res


# --------------------------------------------------------------------------
# sweep


def _sweep_spec(
    device: str,
    vary: Mapping[str, Iterable[Any]],
    fio: FioOptions,
    set: Settings,
    seed: int,
    job: str | None,
    job_file: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    """A sweep's definition as the Rust side takes it (and as the metadata
    of `storlab lab sweep` records it)."""
    if not vary:
        raise StorlabError("give at least one parameter to vary: vary={'bs': ['4k', '64k']}")
    vs = []
    for name, values in vary.items():
        conv = _set_value if "." in name else _fio_value
        if isinstance(values, (str, bytes)):
            values = [values]
        vs.append({"name": name, "values": [conv(v) for v in values]})
    fio_args = _fio_args(job_file, fio) if (fio is not None or job_file is not None) else list(DEFAULT_JOB)
    return {"device": device, "set": _set_args(set), "vary": vs, "seed": int(seed), "job": job, "fio": fio_args}


def _run_points(spec: Mapping[str, Any], points: list[int] | None, counter: Any = None) -> tuple[int, list]:
    return _native.sweep(
        spec["device"],
        list(spec["set"]),
        [(v["name"], list(v["values"])) for v in spec["vary"]],
        list(spec["fio"]),
        int(spec["seed"]),
        spec.get("job"),
        points,
        counter,
    )


def _sweep_frame(spec: Mapping[str, Any], rows: list) -> pd.DataFrame:
    """The DataFrame of a sweep's rows (point, parameters..., dir, metrics),
    built the same way for a local and a Dask sweep."""
    names = [v["name"] for v in spec["vary"]]
    records = []
    for point, values, d, metrics in rows:
        rec: dict[str, Any] = {"point": point}
        rec.update(zip(names, values))
        rec["dir"] = d
        for m, v in zip(METRICS, metrics):
            rec[m] = int(v) if m == "ios" else float(v)
        records.append(rec)
    df = pd.DataFrame(records, columns=["point", *names, "dir", *METRICS])
    return df.astype({"point": "int64", "ios": "int64"})


def sweep(
    device: str | Sequence[str] = "moneta-spin",
    vary: Mapping[str, Iterable[Any]] | None = None,
    fio: FioOptions = None,
    set: Settings = None,
    seed: int = 1,
    job: str | None = None,
    job_file: str | os.PathLike[str] | None = None,
    client: Any = None,
    batch_size: int | None = None,
    retries: int = 2,
    progress: bool | None = None,
    app: str | None = None,
    app_set: Mapping[str, Any] | Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """One simulation per point of the varied parameters (the last varies
    fastest), as ``storlab lab sweep``: one row per point and direction,
    columns ``point``, the parameters, ``dir``, then :data:`METRICS`.

    ``vary`` maps a fio option (``bs``, ``numjobs``...) or a model key with
    a dot (``pcie.controllers``) to its values. ``fio`` is the job's
    options (dict or fio arguments); ``job`` measures only the jobs of that
    name; ``job_file`` varies model keys over a job file.

    Without ``client`` the points run in parallel on this machine's cores.
    With a ``dask.distributed.Client`` they run on its cluster, one task
    per batch of ``batch_size`` points (default: about four batches per
    worker thread), each task retried ``retries`` times on an error, and
    a lost worker's tasks rerun (Dask's ``allowed-failures``); the rows
    are the local sweep's, row for row. A point that fails raises
    StorlabError naming its parameters.

    ``app`` sweeps an application model (``storlab apps``) instead: each
    point runs as ``simulate(device, app=app, app_set=...)`` does, with
    ``app_set`` the parameters every point shares, ``vary`` mapping an
    application parameter (``{"threads": [4, 16]}``), a model key with a
    dot or ``device`` to its values, and ``device`` a name or a list of
    devices (varied first). One row per point: ``point``, the varied
    names, then the application's result as ``Result.app`` has it
    (``metric``, ``unit``, ``parameters.NAME``...). ``fio`` may add job
    options (``{"runtime": 5}``); an unknown application or parameter
    raises StorlabError naming the point, and is not retried on Dask."""
    if app is not None:
        from . import app_sweep

        if job is not None or job_file is not None:
            raise StorlabError("with app=, give no job or job_file (the application makes the job)")
        spec = app_sweep.make_spec(device, vary or {}, app, app_set, fio, _set_args(set), seed)
        if client is None:
            rows = app_sweep.run_points(spec, None, progress)
        else:
            from .dask_sweep import dask_rows

            rows = dask_rows(client, spec, batch_size=batch_size, retries=retries, progress=progress)
        return app_sweep.frame(spec, rows)
    if not isinstance(device, str):
        raise StorlabError("a list of devices sweeps an application (app=); for fio jobs give one device")
    if app_set is not None:
        raise StorlabError("app_set= needs app= (the application it sets)")
    spec = _sweep_spec(device, vary or {}, fio, set, seed, job, job_file)
    if client is None:
        _, rows = _progress.run(lambda c: _run_points(spec, None, c), "sweep", "point", progress)
    else:
        from .dask_sweep import dask_rows

        rows = dask_rows(client, spec, batch_size=batch_size, retries=retries, progress=progress)
    return _sweep_frame(spec, rows)


# --------------------------------------------------------------------------
# reproduce


def studies() -> pd.DataFrame:
    """The studies ``reproduce`` can run: ``name``, ``what``."""
    return pd.DataFrame(_native.studies_list(), columns=["name", "what"])


def reproduce(
    study: str | Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    html: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Reproduce published studies (all without ``study``), as ``storlab
    lab reproduce``: one row per published figure, ``study``, ``what``,
    ``published``, ``model``, ``tolerance``, ``verdict`` (ok, MISS, input,
    MISS (known: ...)), and the numbers behind them (``value``,
    ``target``, ``error``). With ``out``, each study's .md, .json and
    figures (SVG, CSV) are written there. With ``html``, the HTML report
    (as ``storlab lab reproduce --html``) is written there: ``index.html``
    and one self-contained page per study, opening from disk with no
    server (``df.attrs["html"]`` is the index). ``df.attrs["files"]``
    lists every file written and ``df.attrs["titles"]`` the studies'
    titles."""
    names = [n for n, _ in _native.studies_list()] if study is None else ([study] if isinstance(study, str) else list(study))
    cols = ["study", "what", "published", "model", "tolerance", "verdict", "value", "target", "error"]
    call = [repr(study)] if study is not None else []
    call += [f"{k}={os.fspath(v)!r}" for k, v in (("out", out), ("html", html)) if v is not None]
    command = f"storlab.reproduce({', '.join(call)})  # Python, storlab {__version__}"
    reps, files = _progress.run(
        lambda c: _native.reproduce(
            names, None if out is None else os.fspath(out), None if html is None else os.fspath(html), command, c
        ),
        "reproduce",
        "run",
        progress,
    )
    frames = [pd.DataFrame([(name, *r) for r in rows], columns=cols) for name, _, rows in reps]
    titles = {name: title for name, title, _ in reps}
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    df.attrs["files"] = files
    df.attrs["titles"] = titles
    if html is not None:
        df.attrs["html"] = os.path.join(os.fspath(html), "index.html")
    return df


# --------------------------------------------------------------------------
# traces

_TRACE_COLUMNS = ["time_ns", "op", "offset", "len", "device", "recorded_latency_ns", "stream"]


def _trace_frame(chunk: tuple) -> pd.DataFrame:
    df = pd.DataFrame(dict(zip(_TRACE_COLUMNS, chunk)), columns=_TRACE_COLUMNS)
    df = df.astype(
        {"time_ns": "uint64", "offset": "uint64", "len": "uint64", "device": "uint32", "stream": "uint32",
         "recorded_latency_ns": "UInt64"}
    )
    return df


def read_trace(
    path: str | os.PathLike[str],
    chunksize: int | None = None,
    format: str | None = None,
    skip_bad_lines: bool = False,
    ops: str | None = None,
    disk: int | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> pd.DataFrame | Iterator[pd.DataFrame]:
    """A block trace (fio2, fio3/iolog, blkparse, blktrace, msr, disksim,
    or a closed-loop recording of ``storlab app run --record``; detected
    from the content when ``format`` is None) as a DataFrame:
    ``time_ns`` (since the first record), ``op``, ``offset``, ``len``,
    ``device``, ``recorded_latency_ns`` (nullable), ``stream``. With
    ``chunksize``, an iterator of DataFrames of at most that many records,
    for traces bigger than memory. The filters are ``storlab trace``'s
    (``--trace-ops``, ``--trace-disk``, ``--trace-start-ns``...)."""
    reader = _native.TraceReader(os.fspath(path), format, skip_bad_lines, ops, disk, start_ns, end_ns)
    if chunksize is not None:
        if chunksize < 1:
            raise StorlabError(f"chunksize {chunksize}: at least 1")

        def chunks() -> Iterator[pd.DataFrame]:
            while True:
                c = reader.read(chunksize)
                if c is None:
                    return
                yield _trace_frame(c)

        return chunks()
    parts = []
    while True:
        c = reader.read(1 << 20)
        if c is None:
            break
        parts.append(_trace_frame(c))
    if not parts:
        return _trace_frame(tuple([] for _ in _TRACE_COLUMNS))
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


# --------------------------------------------------------------------------
# serve


class Device:
    """A live emulated device served over NBD on a unix socket, on a thread
    of this process, each reply timed by the model (``storlab serve``).
    Use as a context manager: the server stops on leaving the block, even
    on an exception."""

    def __init__(self, device: str, size: str | int | None = None, set: Settings = None, read_only: bool = False):
        self._dir = tempfile.TemporaryDirectory(prefix="storlab-serve-")
        sock = os.path.join(self._dir.name, "nbd.sock")
        try:
            self._server = _native.Server(device, sock, None if size is None else str(size), _set_args(set), read_only)
        except BaseException:
            self._dir.cleanup()
            raise
        self.device = device
        self.socket = sock
        #: The final report (a dict) once stopped.
        self.report: dict[str, Any] | None = None

    @property
    def uri(self) -> str:
        """``nbd+unix:///?socket=...``: what nbdinfo, qemu-img, nbd-client take."""
        return self._server.uri

    def power_cut(self) -> None:
        """Cut the power now: acknowledged writes the device would lose are
        gone, requests in flight fail; it serves the post-crash image."""
        self._server.power_cut()

    def stats(self) -> dict[str, Any]:
        """The server's report so far (requests per operation, latency,
        lateness, the model's components...), as ``storlab serve`` prints
        it at exit."""
        return _json.loads(self._server.stats())

    def close(self) -> dict[str, Any] | None:
        """Stop serving (again: nothing); the final report."""
        text = self._server.stop()
        if text is not None:
            self.report = _json.loads(text)
        self._dir.cleanup()
        return self.report

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<storlab.Device {self.device} at {self.uri}>"


def serve(device: str = "moneta-spin", size: str | int | None = None, set: Settings = None, read_only: bool = False) -> Device:
    """Serve ``device`` over NBD (a context manager): ``size`` like
    ``storlab serve --size`` (``"1G"``; default the device's capacity)."""
    return Device(device, size=size, set=set, read_only=read_only)
