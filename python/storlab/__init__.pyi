"""Types of the storlab package (see the docstrings in __init__.py)."""

import os
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union, overload

import pandas as pd

FioOptions = Union[Mapping[str, Any], Sequence[str], None]
Settings = Union[Mapping[str, Any], Sequence[str], None]
PathLike = Union[str, os.PathLike[str]]

__version__: str
METRICS: list[str]
DEFAULT_JOB: list[str]

class StorlabError(ValueError):
    """An error from storlab: the message `storlab` prints; `file` and
    `line` when the error has a place (else None)."""

    file: str | None
    line: int | None

class Result:
    """One simulation's results."""

    json: str
    notes: list[str]
    failed: list[str]
    @property
    def doc(self) -> dict[str, Any]:
        """`json` parsed."""
    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job and direction: jobname, groupid, dir, fio's fields flattened with dots."""
    @property
    def breakdown(self) -> pd.DataFrame:
        """jobname, dir, component, ns, share: the mean latency per request by model component."""
    @property
    def app(self) -> pd.DataFrame:
        """One row per application job: jobname, name, metric, unit, parameters.*, time_by_layer.*."""

def devices() -> pd.DataFrame:
    """The presets: name, class, description."""

def preset(name: str, set: Settings = None) -> dict[str, dict[str, Any]]:
    """Every resolved key: {"value", "source", "set_in"}."""

def simulate(
    device: str = "moneta-spin",
    job: PathLike | None = None,
    fio: FioOptions = None,
    set: Settings = None,
    seed: int = 1,
    progress: bool | None = None,
    app: str | None = None,
    app_set: Mapping[str, Any] | Sequence[str] | str | None = None,
) -> Result:
    """Simulate fio jobs on a device in virtual time, as `storlab sim`;
    `app` runs an application model with `app_set` its parameters."""

def sweep(
    device: str | Sequence[str] = "moneta-spin",
    vary: Mapping[str, Iterable[Any]] | None = None,
    fio: FioOptions = None,
    set: Settings = None,
    seed: int = 1,
    job: str | None = None,
    job_file: PathLike | None = None,
    client: Any = None,
    batch_size: int | None = None,
    retries: int = 2,
    progress: bool | None = None,
    app: str | None = None,
    app_set: Mapping[str, Any] | Sequence[str] | str | None = None,
) -> pd.DataFrame:
    """One simulation per point, locally or on a Dask client: point, parameters, dir, METRICS;
    with `app`, one row per point of the application's parameters and devices and its result."""

def studies() -> pd.DataFrame:
    """The studies: name, what."""

def reproduce(
    study: str | Sequence[str] | None = None,
    out: PathLike | None = None,
    html: PathLike | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """study, what, published, model, tolerance, verdict, value, target, error; html=DIR writes the HTML report."""

@overload
def read_trace(
    path: PathLike,
    chunksize: None = None,
    format: str | None = None,
    skip_bad_lines: bool = False,
    ops: str | None = None,
    disk: int | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> pd.DataFrame: ...
@overload
def read_trace(
    path: PathLike,
    chunksize: int,
    format: str | None = None,
    skip_bad_lines: bool = False,
    ops: str | None = None,
    disk: int | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> Iterator[pd.DataFrame]: ...

class Device:
    """A live emulated device over NBD (a context manager)."""

    device: str
    socket: str
    report: dict[str, Any] | None
    def __init__(self, device: str, size: str | int | None = None, set: Settings = None, read_only: bool = False) -> None: ...
    @property
    def uri(self) -> str:
        """nbd+unix:///?socket=..."""
    def power_cut(self) -> None:
        """Cut the power now."""
    def stats(self) -> dict[str, Any]:
        """The server's report so far."""
    def close(self) -> dict[str, Any] | None:
        """Stop serving; the final report."""
    def __enter__(self) -> Device: ...
    def __exit__(self, *exc: Any) -> None: ...

def serve(device: str = "moneta-spin", size: str | int | None = None, set: Settings = None, read_only: bool = False) -> Device:
    """Serve a device over NBD until the block ends."""
