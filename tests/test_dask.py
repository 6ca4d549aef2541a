"""Paths on a Dask cluster (a real LocalCluster on loopback) give the same results as locally."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main

distributed = pytest.importorskip("distributed")

LAUNCH = Path(__file__).parents[1] / "scenarios" / "launch.yaml"
SHORT = {"horizon.duration": "30d", "training.streams": []}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0", silence_logs=40) as local:
        yield local


@pytest.mark.slow
def test_same_seed_same_timeseries_with_one_worker_two_workers_and_dask(cluster):
    scenario = simulator.load_scenario(LAUNCH, SHORT)
    one = simulator.simulate(scenario, paths=4, seed=9, executor="serial")
    two = simulator.simulate(scenario, paths=4, seed=9, executor="local", workers=2)
    with distributed.Client(cluster) as client:
        dask = simulator.simulate(scenario, paths=4, seed=9, executor=client)
    pd.testing.assert_frame_equal(one.timeseries, two.timeseries)
    pd.testing.assert_frame_equal(one.timeseries, dask.timeseries)
    pd.testing.assert_frame_equal(one.bands, dask.bands)
    assert one.summary == dask.summary


@pytest.mark.slow
def test_fleetcast_run_on_a_scheduler_address(cluster, tmp_path):
    out = tmp_path / "run"
    args = ["run", str(LAUNCH), "--out", str(out), "--paths", "3", "--scheduler", cluster.scheduler_address, "-q",
            "--set", "horizon.duration=30d", "--set", "training.streams=[]"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    local = simulator.simulate(simulator.load_scenario(LAUNCH, SHORT), paths=3, executor="serial")
    pd.testing.assert_frame_equal(pd.read_parquet(out / "timeseries.parquet"), local.timeseries)


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_retried_and_the_result_is_unchanged():
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "120d", "horizon.step": "1min", "training.streams": []})
    expected = simulator.simulate(scenario, paths=6, seed=4, executor="serial")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=":0", silence_logs=50) as local, distributed.Client(local) as client:
        done: list[int] = []
        pids = client.run(os.getpid)  # worker address -> process id

        def kill_a_worker_after_the_first_path():
            while not done:
                time.sleep(0.05)
            # Kill (SIGKILL) the process of a worker that is busy with a path; its nanny
            # restarts it and the scheduler reschedules the lost task elsewhere.
            processing = client.processing()
            busy = [address for address, tasks in processing.items() if tasks] or list(pids)
            os.kill(pids[busy[0]], signal.SIGKILL)
            done.append(-1)

        killer = threading.Thread(target=kill_a_worker_after_the_first_path, daemon=True)
        killer.start()
        result = simulator.simulate(scenario, paths=6, seed=4, executor=client,
                                    progress=lambda finished, total: done.append(finished))
        killer.join(timeout=30)
        assert -1 in done  # a worker was killed during the run
    pd.testing.assert_frame_equal(result.timeseries, expected.timeseries)
    pd.testing.assert_frame_equal(result.bands, expected.bands)
    assert result.summary == expected.summary


@pytest.mark.slow
def test_a_run_whose_workers_keep_dying_fails_cleanly_and_leaves_the_earlier_run(tmp_path):
    import dask

    out = tmp_path / "run"
    short = ["--set", "horizon.duration=3d", "--set", "training.streams=[]", "--paths", "2", "-q", "--no-report"]
    assert CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *short]).exit_code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=":0", silence_logs=50) as local, \
            distributed.Client(local) as client:
        pids = list(client.run(os.getpid).values())

        def kill_the_worker_once_it_is_busy():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(client.processing().values()):
                time.sleep(0.05)
            time.sleep(0.5)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_the_worker_once_it_is_busy, daemon=True)
        killer.start()
        result = CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), "--scheduler",
                                           local.scheduler_address, "--set", "horizon.duration=120d",
                                           "--set", "horizon.step=1min", "--set", "training.streams=[]",
                                           "--paths", "4", "-q", "--no-report"])
        killer.join(timeout=60)
    assert result.exit_code == 1, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Dask workers running a path died" in message and "Traceback" not in message
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
