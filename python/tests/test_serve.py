"""storlab.serve: a live NBD device in this process, torn down on leaving
the block, even on an exception."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import storlab


def test_serve_gives_a_uri_stats_and_a_power_cut():
    with storlab.serve("fusion-io", size="64M") as dev:
        assert dev.uri.startswith("nbd+unix:///")
        assert os.path.exists(dev.socket)
        s = dev.stats()
        assert s["size"] == 64 << 20
        dev.power_cut()
        if shutil.which("nbdinfo"):
            out = subprocess.run(["nbdinfo", "--size", dev.uri], capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert int(out.stdout) == 64 << 20
            assert dev.stats()["connections"] >= 1
    assert dev.report is not None and dev.report["size"] == 64 << 20
    assert not os.path.exists(dev.socket)
    with pytest.raises(storlab.StorlabError, match="stopped"):
        dev.stats()


def test_the_server_stops_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with storlab.serve("moneta-spin", size="1M") as dev:
            sock = dev.socket
            raise RuntimeError("boom")
    assert dev.report is not None
    assert not os.path.exists(sock)


def test_serve_errors_name_the_problem():
    with pytest.raises(storlab.StorlabError, match="nosuch"):
        storlab.serve("nosuch")
    with pytest.raises(storlab.StorlabError, match="at least one byte"):
        storlab.serve("moneta-spin", size="0")
