"""The `fleetcast` command as a user meets it: outputs of the contract, atomic writes, help."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main

ROOT = Path(__file__).parents[1]
LAUNCH = ROOT / "scenarios" / "launch.yaml"
SHORT = ["--set", "horizon.duration=14d"]

TIMESERIES_COLUMNS = [
    "path", "time", "demand_requests", "served_requests", "unserved_requests", "gpus_installed",
    "gpus_available", "gpus_inference", "gpus_training", "gpus_idle", "utilization",
    "slo_attainment", "shortfall_gpus", "cost_usd", "revenue_usd", "gross_margin_usd",
    "cost_depreciation_usd", "cost_cloud_usd", "cost_energy_usd", "cost_facility_usd",
    "cost_other_usd", "cogs_usd", "rnd_compute_usd", "training_jobs_queued", "training_jobs_running",
]


def _run(args, tmp_path=None):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_run_writes_the_contract_files(tmp_path):
    out = tmp_path / "run"
    result = _run(["run", str(LAUNCH), "--out", str(out), "--paths", "3", "--seed", "11", *SHORT])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} >= {
        "timeseries.parquet", "pools.parquet", "summary.json", "scenario.resolved.yaml"
    }
    ts = pd.read_parquet(out / "timeseries.parquet")
    assert set(TIMESERIES_COLUMNS) <= set(ts.columns)
    assert len(ts) == 3 * 14 * 24 and sorted(ts["path"].unique()) == [0, 1, 2]
    pools = pd.read_parquet(out / "pools.parquet")
    assert {"path", "time", "pool", "gpus_installed", "gpus_available", "utilization", "cost_usd"} <= set(pools.columns)
    assert len(pools) == 2 * len(ts)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paths"] == 3 and summary["seed"] == 11
    assert set(summary["first_shortfall_time"]) >= {"p10", "p50", "p90", "probability"}
    for metric in ("cost_usd", "revenue_usd", "gross_margin_usd"):
        assert set(summary["quantiles"][metric]) == {"p10", "p50", "p90"}
        assert summary["totals"][metric] == pytest.approx(
            ts.groupby("path")[metric].sum().mean(), rel=1e-9
        )
    # The headline table.
    for label in ("First shortfall", "Demand served", "Total cost", "Revenue", "Gross margin"):
        assert label in result.output


def test_resolved_scenario_reloads_to_the_same_scenario(tmp_path):
    out = tmp_path / "run"
    assert _run(["run", str(LAUNCH), "--out", str(out), *SHORT, "-q"]).exit_code == 0
    resolved_path = out / "scenario.resolved.yaml"
    resolved = yaml.safe_load(resolved_path.read_text())
    assert resolved["fleet"]["pools"][0]["acquisition"]["price_usd"] == 33000
    assert resolved["gpus"]["H100"]["tdp_w"] == 700  # catalog figures written out
    # A model without its own pricing uses the scenario's (kept there, so overriding it applies).
    assert resolved["models"][0]["pricing"] is None
    assert resolved["pricing"] == {"input_usd_per_1m": 0.9, "output_usd_per_1m": 2.5, "decline_per_year": 0.0}
    again = simulator.load_scenario(resolved_path)
    original = simulator.load_scenario(LAUNCH, {"horizon.duration": "14d"})
    assert again == original


def test_validate_prints_the_resolved_scenario():
    result = CliRunner().invoke(main, ["validate", str(LAUNCH)])
    assert result.exit_code == 0
    assert "server_power_factor: 1.8" in result.stdout and "ok: launch" in result.stderr


def test_validate_ends_the_scenario_before_its_verdict():
    # Issue 19 saw "variants: {}ok: …" (the verdict glued to the last line of the YAML).
    result = CliRunner().invoke(main, ["validate", str(LAUNCH.parent / "growth.yaml")])
    assert result.exit_code == 0 and result.stdout.endswith("variants: {}\n")
    assert "variants: {}\nok: growth: 17,520 steps of 1h" in result.output


def test_same_seed_gives_identical_outputs_with_one_and_two_workers(tmp_path):
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "7d"})
    serial = simulator.simulate(scenario, paths=4, seed=3, executor="serial")
    pooled = simulator.simulate(scenario, paths=4, seed=3, executor="local", workers=2)
    pd.testing.assert_frame_equal(serial.timeseries, pooled.timeseries)
    pd.testing.assert_frame_equal(serial.pools, pooled.pools)
    assert serial.summary == pooled.summary
    other = simulator.simulate(scenario, paths=4, seed=4, executor="serial")
    assert not serial.timeseries["demand_requests"].equals(other.timeseries["demand_requests"])


def test_a_second_run_replaces_the_first_whole(tmp_path):
    out = tmp_path / "run"
    assert _run(["run", str(LAUNCH), "--out", str(out), "--paths", "2", *SHORT, "-q"]).exit_code == 0
    (out / "stale.txt").write_text("from an older run")
    assert _run(["run", str(LAUNCH), "--out", str(out), "--paths", "1", *SHORT, "-q"]).exit_code == 0
    assert not (out / "stale.txt").exists()
    assert json.loads((out / "summary.json").read_text())["paths"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no staging directories left


def test_refuses_to_replace_a_directory_that_is_not_a_run(tmp_path):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(precious), *SHORT])
    assert result.exit_code == 2 and "not a Fleetcast run directory" in result.stderr
    assert (precious / "notes.txt").read_text() == "keep me"


def test_failed_write_leaves_the_earlier_run_untouched(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert _run(["run", str(LAUNCH), "--out", str(out), *SHORT, "-q"]).exit_code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def explode(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", explode)
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *SHORT, "-q"])
    assert result.exit_code == 1 and "disk full" in result.stderr
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupted_run_writes_nothing_and_keeps_the_earlier_run(tmp_path, sig):
    out = tmp_path / "run"
    assert _run(["run", str(LAUNCH), "--out", str(out), *SHORT, "-q", "--no-report"]).exit_code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "run", str(LAUNCH), "--out", str(out),
         "--paths", "400", "--workers", "1", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Signal once the child has done more work than loading takes (about 2 CPU-seconds), measured
    # in its own CPU time so that a busy machine does not move the moment into the loading.
    child = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    while sum(child.cpu_times()[:2]) < 5.0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["serving"]])
def test_help(command):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_run_options_of_the_contract_exist():
    text = CliRunner().invoke(main, ["run", "--help"]).output
    for option in ("--out", "--paths", "--seed", "--workers", "--scheduler"):
        assert option in text


def test_unreachable_scheduler_exits_2(tmp_path):
    result = CliRunner().invoke(
        main, ["run", str(LAUNCH), "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9", *SHORT, "-q"]
    )
    assert result.exit_code == 2 and "--scheduler" in result.stderr
    assert not (tmp_path / "o").exists()


def test_default_output_directory_is_named_after_the_scenario(tmp_path):
    env_cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert _run(["run", str(LAUNCH), *SHORT, "-q"]).exit_code == 0
        assert (tmp_path / "outputs" / "launch" / "summary.json").exists()
    finally:
        os.chdir(env_cwd)


def _files(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_signals_at_random_moments_leave_the_old_run_or_a_whole_new_one(tmp_path):
    # Interrupts land anywhere: while paths run on a pool, while tables and the report are
    # written, or after the end. The directory is then the earlier run, byte for byte, or a
    # complete new one; never a mixture, never a leftover staging folder.
    out = tmp_path / "run"
    args = [sys.executable, "-m", "simulator", "run", str(LAUNCH), "--out", str(out), "--paths", "6",
            "--workers", "2", "--set", "horizon.duration=45d", "-q"]
    started = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, timeout=300)
    whole_run_s = time.perf_counter() - started
    rng = np.random.default_rng(20261130)
    for delay, sig in zip(rng.uniform(0.2, 1.1 * whole_run_s, size=6), [signal.SIGINT, signal.SIGTERM] * 3,
                          strict=True):
        before = _files(out)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
        assert "Traceback" not in stderr, stderr
        # -sig: on a loaded machine the signal may come while the interpreter itself starts,
        # before any of our code (or handler) runs; the old run must then be untouched too.
        assert proc.returncode in (0, 130, -sig), (delay, proc.returncode, stderr)
        after = _files(out)
        if proc.returncode != 0:
            assert after == before, f"interrupted at {delay:.2f} s changed the earlier run"
        else:
            summary = json.loads((out / "summary.json").read_text())
            assert summary["paths"] == 6 and (out / "report.html").is_file() and (out / "bands.parquet").is_file()
        assert [p.name for p in tmp_path.iterdir()] == ["run"], (delay, list(tmp_path.iterdir()))


_SIGNAL_AT_THE_COMMIT = """
import os, signal, sys
from pathlib import Path
from simulator import output
from simulator.cli import entry

out = Path({out!r})
real_rename, real_chmod = os.rename, os.chmod

def rename(source, target):  # the run directory is put in place, then the signal comes
    real_rename(source, target)
    if {after!r} and Path(target) == out:
        signal.raise_signal(signal.{sig})

def chmod(path, mode):  # the staged files are complete and about to be put in place
    if not {after!r} and Path(path).name.startswith(".run.partial-"):
        signal.raise_signal(signal.{sig})
    real_chmod(path, mode)

output.os.rename, output.os.chmod = rename, chmod
sys.argv = ["fleetcast", "run", {scenario!r}, "--out", str(out), "--paths", "1", "--no-report",
            "--set", "horizon.duration=14d", "-q"]
entry.main()
"""


@pytest.mark.parametrize("after", [False, True], ids=["as-it-is-put-in-place", "once-in-place"])
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_as_the_run_is_put_in_place_leaves_the_whole_run_and_exit_0(tmp_path, sig, after):
    # A signal (its handler runs inside raise_signal, so the moment is exact) once the files
    # are complete must not report "interrupted; nothing was written" (exit 130) over a new
    # run that is in place: the command has succeeded. Before, it did (or exited 1 through
    # click's "Aborted!" once the command had returned).
    out = tmp_path / "run"
    script = _SIGNAL_AT_THE_COMMIT.format(out=str(out), scenario=str(LAUNCH), sig=sig, after=after)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paths"] == 1 and (out / "timeseries.parquet").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


_INTERRUPT_IN_A_FINALIZER = """
import signal, threading, time, weakref
from simulator.cli import app

class Held:
    pass

def interrupted_while_{how}():
    app.install_interrupt_handlers()  # as each command does
    held = Held()
    watch = weakref.ref(held, lambda _: signal.raise_signal(signal.{sig}))
    started = time.monotonic()
    try:
        del held
        if "{how}" == "busy":
            for _ in range(10_000_000):
                pass
        else:
            threading.Event().wait(30)  # as the CLI waits for a path on a pool
        return "ran on"
    except KeyboardInterrupt as exc:  # in milliseconds, or only once the wait ran out
        return type(exc).__name__ + ("" if time.monotonic() - started < 15 else "-after-the-wait")
    finally:
        app.remove_unraisable_hook()

print(interrupted_while_{how}(), interrupted_while_{how}())  # the second as a next command in one process
"""


@pytest.mark.parametrize("how", ["busy", "waiting"])
@pytest.mark.parametrize(("sig", "raised"), [("SIGINT", "KeyboardInterrupt"), ("SIGTERM", "_Terminated")])
def test_an_interrupt_landing_in_a_finalizer_is_raised_again_quietly(sig, raised, how):
    # Python cannot raise out of a weakref callback: it prints "Exception ignored" with a
    # traceback and runs on. The interrupt must reach the main flow, without that print,
    # also when the main thread is blocked in a wait, and again in a next command.
    done = subprocess.run([sys.executable, "-c", _INTERRUPT_IN_A_FINALIZER.format(sig=sig, how=how)],
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == [raised, raised], (done.stdout, done.stderr)
    assert done.stderr == ""
