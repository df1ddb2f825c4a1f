"""Sweeps on a real Dask LocalCluster (two worker processes): the same
rows as the local sweep, a failing point named, a lost worker's points
rerun; and `storlab lab sweep --dask` from the command line."""

from __future__ import annotations

import os
import threading
import time

import pandas as pd
import pytest

import storlab
from conftest import run_cli

pytest.importorskip("dask.distributed", reason="pip install 'dask[distributed]' (scripts/test does)")

VARY = {"bs": ["512", "4k", "64k"], "numjobs": [1, 4], "pcie.controllers": [1, 8]}
FIO = {"rw": "randrw", "number_ios": 300}


@pytest.fixture(scope="module")
def local():
    return storlab.sweep("moneta-spin", vary=VARY, fio=FIO, seed=5)


@pytest.mark.parametrize("batch_size", [None, 1, 5])
def test_a_dask_sweep_is_the_local_sweep_row_for_row(client, local, batch_size):
    df = storlab.sweep("moneta-spin", vary=VARY, fio=FIO, seed=5, client=client, batch_size=batch_size)
    assert len(df) == 12 * 2
    pd.testing.assert_frame_equal(df, local)


def test_the_workers_are_other_processes(client):
    pids = client.run(os.getpid)
    assert len(pids) == 2 and os.getpid() not in pids.values()


def test_a_failing_point_raises_with_its_parameters_named(client):
    with pytest.raises(storlab.StorlabError) as e:
        storlab.sweep("moneta-spin", vary={"bs": ["4k", "3x"], "numjobs": [1, 2]}, fio=FIO, client=client, batch_size=4)
    msg = str(e.value)
    assert "point 2 (bs=3x, numjobs=1)" in msg, msg
    assert "bs" in msg
    assert e.value.point == 2


def test_a_wrong_input_is_not_retried(client):
    # Dask retries a task that raises: an input error ran (and printed an
    # error block) three times over; now it runs once and fails the sweep
    from dask.distributed import get_task_stream

    with get_task_stream(client) as ts:
        with pytest.raises(storlab.StorlabError) as e:
            storlab.sweep("moneta-spin", vary={"bs": ["3x"]}, fio=FIO, client=client, batch_size=1, retries=2)
    assert "point 0 (bs=3x)" in str(e.value)
    runs = [t for t in ts.data if "run_batch" in t["key"]]
    assert len(runs) == 1 and runs[0].get("status", "OK") != "error", runs


def test_a_lost_worker_loses_no_point(client):
    """Kill a worker process (SIGKILL, as a crash) while the sweep runs:
    its tasks run again elsewhere (the nanny restarts it), and the table
    is whole, row for row the local one."""
    import signal

    fio = {"rw": "randrw", "number_ios": 4000}
    local = storlab.sweep("moneta-spin", vary=VARY, fio=fio, seed=5)
    addr, pid = next(iter(client.run(os.getpid).items()))
    finished = threading.Event()
    killed_while_running = []

    def kill_one():
        # kill the worker as soon as it runs one of the sweep's points (not
        # after a fixed time: a faster simulator ended the sweep first)
        deadline = time.monotonic() + 60
        while not finished.is_set() and time.monotonic() < deadline:
            if client.processing(workers=[addr]).get(addr):
                break
            time.sleep(0.005)
        killed_while_running.append(not finished.is_set())
        os.kill(pid, signal.SIGKILL)

    t = threading.Thread(target=kill_one)
    t.start()
    df = storlab.sweep("moneta-spin", vary=VARY, fio=fio, seed=5, client=client, batch_size=1)
    finished.set()
    t.join()
    assert killed_while_running == [True], "the sweep ended before the worker was killed: make it longer"
    pd.testing.assert_frame_equal(df, local)
    client.wait_for_workers(2, timeout=60)


def test_lab_sweep_dask_writes_the_local_table(storlab_bin, cluster, tmp_path):
    args = ["lab", "sweep", "--vary", "bs=4k,64k", "--vary", "pcie.controllers=1,4"]
    job = ["--", "--name=x", "--rw=randread", "--number_ios=200"]
    run_cli(storlab_bin, *args, "--output", str(tmp_path / "local.csv"), *job)
    run_cli(storlab_bin, *args, "--dask", cluster.scheduler_address, "--output", str(tmp_path / "dask.csv"), *job)
    assert (tmp_path / "dask.csv").read_text() == (tmp_path / "local.csv").read_text()
    assert (tmp_path / "dask.json").read_text() == (tmp_path / "local.json").read_text()


def test_lab_sweep_dask_fails_clearly_without_python(storlab_bin, tmp_path):
    env = dict(os.environ, STORLAB_PYTHON=str(tmp_path / "no-python"))
    p = run_cli(
        storlab_bin, "lab", "sweep", "--vary", "bs=4k,8k", "--dask", "tcp://127.0.0.1:1",
        "--", "--name=x", "--rw=read", "--number_ios=10", env=env, check=False,
    )
    assert p.returncode != 0
    assert "--dask needs Python 3 with the storlab package" in p.stderr, p.stderr


def test_lab_sweep_dask_fails_clearly_without_a_scheduler(storlab_bin):
    env = dict(os.environ, STORLAB_DASK_TIMEOUT="2s")
    p = run_cli(
        storlab_bin, "lab", "sweep", "--vary", "bs=4k,8k", "--dask", "tcp://127.0.0.1:9",
        "--", "--name=x", "--rw=read", "--number_ios=10", env=env, check=False,
    )
    assert p.returncode != 0
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in p.stderr, p.stderr


APP = dict(app="bdb-btree", app_set={"transactions": 300}, vary={"threads": [4, 16]}, progress=False)


@pytest.mark.parametrize("batch_size", [None, 3])
def test_an_app_sweep_on_dask_is_the_local_app_sweep(client, batch_size):
    # issue 57 item 4: an application's parameters and devices on Dask
    devices = ["raid-disk", "moneta-balance"]
    local = storlab.sweep(devices, **APP)
    df = storlab.sweep(devices, client=client, batch_size=batch_size, **APP)
    assert len(df) == 4 and list(df["threads"]) == ["4", "16", "4", "16"]
    pd.testing.assert_frame_equal(df, local)


def test_an_app_sweeps_wrong_parameter_fails_once_on_dask(client):
    from dask.distributed import get_task_stream

    with get_task_stream(client) as ts:
        with pytest.raises(storlab.StorlabError) as e:
            storlab.sweep("raid-disk", client=client, batch_size=1, retries=2, **{**APP, "vary": {"nope": [1, 2]}})
    assert "point 0 (nope=1)" in str(e.value) or "point 1 (nope=2)" in str(e.value), str(e.value)
    runs = [t for t in ts.data if "run_batch" in t["key"]]
    assert all(t.get("status", "OK") != "error" for t in runs), runs
    assert len(runs) <= 2, runs
