"""Shared fixtures: the repository, the `storlab` command (to compare the
package with), a LocalCluster of two worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def storlab_bin() -> Path:
    """The `storlab` command of this checkout: $STORLAB_BIN, else the
    debug build in target/ (built here if missing)."""
    env = os.environ.get("STORLAB_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "debug" / "storlab"
    subprocess.run(["cargo", "build", "-q", "-p", "storlab"], cwd=ROOT, check=True)
    assert exe.exists(), f"cargo build did not leave {exe}"
    return exe


def run_cli(exe: Path, *args: str, cwd: Path = ROOT, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    # `storlab lab sweep --dask` runs Python: the interpreter running these
    # tests (a virtual environment's under scripts/test), not the first
    # python3 on PATH, which need not have the package
    env = dict(os.environ if env is None else env)
    env.setdefault("STORLAB_PYTHON", sys.executable)
    p = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check:
        assert p.returncode == 0, f"storlab {' '.join(args)}: exit {p.returncode}: {p.stderr}"
    return p


@pytest.fixture(scope="module")
def cluster():
    """A real LocalCluster: two worker processes of one thread each."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    from dask.distributed import Client

    with Client(cluster) as c:
        yield c
