"""The package against the `storlab` command: the same documents, tables
and errors, since both call the same Rust crates."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import storlab
from conftest import run_cli

FIO = {"name": "x", "rw": "randrw", "bs": "4k", "numjobs": 2, "number_ios": 500}
FIO_ARGS = ["--name=x", "--rw=randrw", "--bs=4k", "--numjobs=2", "--number_ios=500"]


def test_devices_lists_the_presets_with_class_and_description(storlab_bin):
    df = storlab.devices()
    assert list(df.columns) == ["name", "class", "description"]
    cli = run_cli(storlab_bin, "devices").stdout.split("\n")
    names = [line.split()[0] for line in cli if line.strip()]
    assert list(df["name"]) == names
    row = df.set_index("name").loc["moneta-spin"]
    assert row["class"] == storlab.preset("moneta-spin")["device.class"]["value"] == "pcie-array"
    assert "Moneta" in row["description"]


def test_preset_resolves_keys_with_their_sources():
    p = storlab.preset("moneta-spin", set={"pcie.controllers": 4})
    assert p["pcie.controllers"]["value"] == 4
    assert p["pcie.controllers"]["set_in"] == "command line"
    # a preset's own value names the file and line that set it
    assert ":" in p["media.read_ns"]["set_in"]
    assert p["media.read_ns"]["source"]


@pytest.mark.parametrize(
    "kwargs,cli",
    [
        (dict(fio=FIO, set={"pcie.controllers": 4}, seed=3), ["--set", "pcie.controllers=4", "--seed", "3", *FIO_ARGS]),
        (dict(job="jobs/latency.fio"), ["jobs/latency.fio"]),
        (dict(device="fusion-io", fio=["--name=w", "--rw=write", "--bs=64k", "--number_ios=300"]),
         ["--name=w", "--rw=write", "--bs=64k", "--number_ios=300"]),
    ],
)
def test_json_is_the_document_the_command_writes_byte_for_byte(storlab_bin, root, monkeypatch, kwargs, cli):
    monkeypatch.chdir(root)
    device = kwargs.get("device", "moneta-spin")
    out = run_cli(storlab_bin, "sim", "--device", device, "--output-format=json", *cli).stdout
    r = storlab.simulate(**{"device": device, **{k: v for k, v in kwargs.items() if k != "device"}})
    assert r.json == out


def test_jobs_has_a_row_per_job_and_direction_with_fios_fields():
    r = storlab.simulate("moneta-spin", fio=FIO)
    df = r.jobs
    doc = r.doc
    # numjobs=2 makes two job threads, each reading and writing
    assert len(doc["jobs"]) == 2
    assert len(df) == 4
    assert set(df["dir"]) == {"read", "write"}
    for col in ["jobname", "iops", "bw_bytes", "total_ios", "clat_ns.mean", "clat_ns.percentile.99.000000", "lat_ns.max"]:
        assert col in df.columns, col
    first = df[(df["dir"] == "write")].iloc[0]
    assert first["iops"] == doc["jobs"][0]["write"]["iops"]
    assert df["total_ios"].sum() == sum(j[d]["total_ios"] for j in doc["jobs"] for d in ("read", "write"))


def test_breakdown_shares_sum_to_one_and_match_the_json():
    r = storlab.simulate("moneta-spin", fio={"rw": "randread", "number_ios": 300})
    b = r.breakdown
    assert {"component", "dir", "ns", "share"} <= set(b.columns)
    for (_, _), g in b.groupby(["jobname", "dir"]):
        assert g["share"].sum() == pytest.approx(1.0)
    media = b[(b["component"] == "media") & (b["dir"] == "read")]["ns"].iloc[0]
    assert media == r.doc["jobs"][0]["storlab"]["breakdown_ns"]["read"]["media"]
    assert media > 0


def test_errors_carry_the_commands_message_file_and_line(storlab_bin, tmp_path):
    bad = tmp_path / "bad.fio"
    bad.write_text("[global]\nbs=4k\n\n[j]\nrw=sideways\n")
    cli = run_cli(storlab_bin, "sim", str(bad), check=False)
    assert cli.returncode != 0
    with pytest.raises(storlab.StorlabError) as e:
        storlab.simulate(job=bad)
    assert cli.stderr.strip() == f"storlab: error: {e.value}"
    assert e.value.file == str(bad)
    assert e.value.line == 5
    assert isinstance(e.value, ValueError)

    cli = run_cli(storlab_bin, "sim", "--device", "nosuch", check=False)
    with pytest.raises(storlab.StorlabError) as e:
        storlab.simulate("nosuch")
    assert cli.stderr.strip() == f"storlab: error: {e.value}"
    assert "unknown device 'nosuch'" in str(e.value)
    assert e.value.file is None and e.value.line is None

    with pytest.raises(storlab.StorlabError, match="pcie.controllers"):
        storlab.simulate(fio=FIO, set={"pcie.controllers": 0})


def test_long_calls_release_the_gil():
    """The main thread keeps running while a simulation runs on another."""
    done = threading.Event()
    gaps = []

    def work():
        storlab.simulate("moneta-spin", fio={"rw": "randread", "number_ios": 300_000}, progress=False)
        done.set()

    t = threading.Thread(target=work)
    start = last = time.perf_counter()
    t.start()
    while not done.is_set():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - start
    assert elapsed > 0.2, "the simulation should take a while for this test to mean something"
    assert max(gaps) < 0.1, f"the main thread stalled {max(gaps):.3f} s during a {elapsed:.2f} s call"


def test_progress_bar_changes_nothing_but_the_terminal(capsys):
    quiet = storlab.simulate(fio={"rw": "randread", "number_ios": 2000}, progress=False)
    loud = storlab.simulate(fio={"rw": "randread", "number_ios": 2000}, progress=True)
    assert quiet.json == loud.json
    assert "simulating" in capsys.readouterr().err
    # quiet when not asked and not on a terminal
    storlab.simulate(fio={"rw": "randread", "number_ios": 200})
    assert capsys.readouterr().err == ""


VARY = {"bs": ["512", "4k", "64k"], "numjobs": [1, 4]}
SWEEP_FIO = {"rw": "randread", "number_ios": 300}


def test_a_local_sweep_is_the_commands_table(storlab_bin, tmp_path):
    df = storlab.sweep("moneta-spin", vary=VARY, fio=SWEEP_FIO)
    assert list(df.columns) == ["point", "bs", "numjobs", "dir", *storlab.METRICS]
    assert len(df) == 6
    out = tmp_path / "s.csv"
    run_cli(
        storlab_bin, "lab", "sweep", "--vary", "bs=512,4k,64k", "--vary", "numjobs=1,4",
        "--output", str(out), "--", "--name=job", "--rw=randread", "--number_ios=300",
    )
    # a plain CSV: pandas reads it with no options
    # exact decimal to double (pandas 3 reads so by default; 2 needs asking)
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    cli = pd.read_csv(out, dtype={"bs": str, "numjobs": str}, **exact)
    pd.testing.assert_frame_equal(df, cli)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["points"] == 6 and meta["shard"] is None
    assert meta["sweep"]["vary"] == [{"name": "bs", "values": ["512", "4k", "64k"]}, {"name": "numjobs", "values": ["1", "4"]}]
    # more threads, more IOPS at 4k
    four = df[df["bs"] == "4k"].set_index("numjobs")["iops"]
    assert four["4"] > four["1"]


def test_a_sweep_of_model_keys_over_a_job_file(root, monkeypatch):
    monkeypatch.chdir(root)
    df = storlab.sweep("moneta-spin", vary={"pcie.controllers": [1, 8]}, job_file="jobs/latency.fio", job="read-latency")
    assert list(df["pcie.controllers"]) == ["1", "8"]
    assert set(df["dir"]) == {"read"}


def test_bad_sweeps_raise_with_the_parameter_named():
    with pytest.raises(storlab.StorlabError, match="vary"):
        storlab.sweep(vary={})
    with pytest.raises(storlab.StorlabError, match="'4k' given twice"):
        storlab.sweep(vary={"bs": ["4k", "4k"]}, fio=SWEEP_FIO)


def test_reproduce_gives_the_commands_rows(storlab_bin, tmp_path):
    run_cli(storlab_bin, "lab", "reproduce", "haste-bus", "--out", str(tmp_path / "cli"))
    rep = json.loads((tmp_path / "cli" / "haste-bus.json").read_text())
    df = storlab.reproduce("haste-bus", out=tmp_path / "py")
    assert list(df.columns[:6]) == ["study", "what", "published", "model", "tolerance", "verdict"]
    assert list(df["what"]) == [r["what"] for r in rep["rows"]]
    assert list(df["model"]) == [r["model"] for r in rep["rows"]]
    assert all(v == "ok" or v.startswith("input") or v.startswith("MISS (known") for v in df["verdict"]), df["verdict"]
    within = df[df["published"].str.contains("±")]
    assert len(within) and all(t.startswith("±") for t in within["tolerance"])
    assert (tmp_path / "py" / "haste-bus.md").exists()
    assert any(f.endswith(".svg") for f in df.attrs["files"])
    with pytest.raises(storlab.StorlabError, match="nosuch"):
        storlab.reproduce("nosuch")


MSR = """\
128166372003061629,hm,0,Read,7014609920,24576,41286
128166372016382155,hm,0,Write,1317441536,8192,1963
128166372026382245,hm,0,Write,2436440064,4096,1835
128166372036382245,hm,1,Read,2436440064,4096,1835
128166372046382245,hm,0,Read,0,512,100
"""


def test_read_trace_whole_and_in_chunks(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(MSR)
    df = storlab.read_trace(p)
    assert list(df.columns) == ["time_ns", "op", "offset", "len", "device", "recorded_latency_ns", "stream"]
    assert len(df) == 5
    assert list(df["op"]) == ["read", "write", "write", "read", "read"]
    assert df["time_ns"].iloc[0] == 0 and df["time_ns"].is_monotonic_increasing
    assert df["len"].iloc[1] == 8192
    chunks = list(storlab.read_trace(p, chunksize=2))
    assert [len(c) for c in chunks] == [2, 2, 1]
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), df)
    assert len(storlab.read_trace(p, disk=1)) == 1
    assert list(storlab.read_trace(p, ops="write")["op"]) == ["write", "write"]
    bad = tmp_path / "bad.csv"
    bad.write_text(MSR.replace("Write,2436440064", "Sideways,2436440064"))
    with pytest.raises(storlab.StorlabError) as e:
        storlab.read_trace(bad, format="msr")
    assert e.value.file == str(bad) and e.value.line == 3


def test_a_sweep_with_a_progress_bar_is_the_same_sweep(capsys):
    quiet = storlab.sweep("moneta-spin", vary={"bs": ["4k", "64k"]}, fio=SWEEP_FIO, progress=False)
    loud = storlab.sweep("moneta-spin", vary={"bs": ["4k", "64k"]}, fio=SWEEP_FIO, progress=True)
    pd.testing.assert_frame_equal(quiet, loud)
    assert "sweep" in capsys.readouterr().err


def test_reproduce_checks_every_name_before_running_any():
    t0 = time.perf_counter()
    with pytest.raises(storlab.StorlabError, match="nosuch"):
        storlab.reproduce(["haste-bus", "nosuch"])
    assert time.perf_counter() - t0 < 1.0
    df = storlab.reproduce(["haste-bus", "haste-ddr"])
    assert list(dict.fromkeys(df["study"])) == ["haste-bus", "haste-ddr"]
    assert set(df.attrs["titles"]) == {"haste-bus", "haste-ddr"}


def test_no_panic_crosses_into_python():
    from storlab import _native

    with pytest.raises(storlab.StorlabError, match="internal error.*deliberate panic") as e:
        _native._panic_inside_guard()
    assert e.value.file is None


def test_reproduce_writes_the_html_report(tmp_path):
    df = storlab.reproduce(["haste-bus", "haste-ddr"], html=tmp_path / "report")
    index = tmp_path / "report" / "index.html"
    assert df.attrs["html"] == str(index)
    assert str(index) in df.attrs["files"]
    text = index.read_text()
    assert "haste-bus" in text and "haste-ddr" in text
    page = next(p for p in (tmp_path / "report").glob("*.html") if p.name != "index.html" and "bus" in p.name)
    html = page.read_text()
    assert "<table" in html and "<svg" in html
    # the page says how it was made: the Python call
    assert "storlab.reproduce(" in html
    # a row of the table is on the page
    assert html.count(df[df["study"] == "haste-bus"]["what"].iloc[0].split(" (")[0][:30]) >= 1


def test_simulate_runs_an_application_and_returns_its_frame():
    # issue 57 item 4: app= and app_set= as `storlab sim --app`; the
    # `app` object is a DataFrame beside the jobs
    r = storlab.simulate("raid-disk", app="bdb-btree", app_set={"transactions": 300}, progress=False)
    a = r.app
    assert list(a["name"]) == ["bdb-btree"]
    assert a["unit"][0] == "transactions/s"
    assert a["operations_counted"][0] == 300
    assert a["parameters.transactions"][0] == "300"
    assert a["metric"][0] > 0
    assert len(r.jobs) > 0
    # the device matters: the disk RAID is slower than Moneta
    m = storlab.simulate("moneta-balance", app="bdb-btree", app_set=["transactions=300"], progress=False)
    assert m.app["metric"][0] > a["metric"][0]
    # another study's configuration, and a wrong one named
    h = storlab.simulate("raid-disk", app="bdb-btree", app_set={"study": "haste", "transactions": 300}, progress=False)
    assert h.app["parameters.db"][0] == "2g"
    with pytest.raises(storlab.StorlabError, match="known studies"):
        storlab.simulate("raid-disk", app="bdb-btree", app_set={"study": "nope"}, progress=False)
    # a fio job has no app frame rows
    assert storlab.simulate("raid-disk", fio={"rw": "randread", "size": "1m"}, progress=False).app.empty


APP_SWEEP = dict(app="bdb-btree", app_set={"transactions": 300}, vary={"threads": [4, 16]}, progress=False)


def test_sweep_varies_an_applications_parameters_and_devices():
    # issue 57 item 4: a sweep names app= and varies app_set keys and
    # devices; one row per point with the app's metric and parameters
    df = storlab.sweep(["raid-disk", "moneta-balance"], **APP_SWEEP)
    assert len(df) == 4
    assert list(df.columns[:3]) == ["point", "device", "threads"]
    assert list(df["point"]) == [0, 1, 2, 3]
    # the last name varies fastest
    assert list(df["device"]) == ["raid-disk", "raid-disk", "moneta-balance", "moneta-balance"]
    assert list(df["threads"]) == ["4", "16", "4", "16"]
    assert list(df["parameters.threads"]) == ["4", "16", "4", "16"]
    assert set(df["parameters.transactions"]) == {"300"}
    assert set(df["unit"]) == {"transactions/s"} and set(df["name"]) == {"bdb-btree"}
    # each row is what simulate() gives for that point
    for _, row in df.iterrows():
        one = storlab.simulate(row["device"], app="bdb-btree", app_set={"transactions": 300, "threads": row["threads"]}, progress=False)
        assert one.app["metric"][0] == row["metric"], row["point"]
    # the device matters at each thread count: Moneta beats the disk RAID
    disk = df[df["device"] == "raid-disk"]["metric"].to_numpy()
    moneta = df[df["device"] == "moneta-balance"]["metric"].to_numpy()
    assert (moneta > disk).all(), df[["device", "threads", "metric"]]
    # the devices in vary instead (the device argument then the default),
    # app_set as name=value strings: the same point, the same result
    keyed = storlab.sweep(
        "moneta-spin", app="bdb-btree", app_set=["transactions=300"], vary={"device": ["raid-disk"], "threads": [16]}, progress=False
    )
    assert list(keyed["device"]) == ["raid-disk"] and keyed["metric"][0] == df["metric"][1]


def test_an_app_sweeps_wrong_input_names_the_point():
    with pytest.raises(storlab.StorlabError) as e:
        storlab.sweep("raid-disk", app="no-such-app", vary={"threads": [4]}, progress=False)
    assert "point 0 (threads=4)" in str(e.value) and "no-such-app" in str(e.value)
    with pytest.raises(storlab.StorlabError) as e:
        storlab.sweep(["raid-disk", "moneta-balance"], **{**APP_SWEEP, "vary": {"threads": [4], "nope": [1]}})
    msg = str(e.value)
    assert "point 0 (device=raid-disk, threads=4, nope=1)" in msg and "nope" in msg.split(":", 1)[1], msg
    assert e.value.point == 0
    # a wrong device names its point too, not the first
    with pytest.raises(storlab.StorlabError) as e:
        storlab.sweep(["raid-disk", "no-such-device"], **APP_SWEEP)
    assert "point 2 (device=no-such-device, threads=4)" in str(e.value), str(e.value)
    # a list of devices or app_set without app= is refused plainly
    with pytest.raises(storlab.StorlabError, match="app="):
        storlab.sweep(["raid-disk"], vary={"bs": ["4k"]})
