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
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "60d", "horizon.step": "1min", "training.streams": []})
    expected = simulator.simulate(scenario, paths=4, seed=4, executor="serial")
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
        result = simulator.simulate(scenario, paths=4, seed=4, executor=client,
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


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_the_readme_commands_start_a_cluster_that_runs_a_scenario(tmp_path):
    """The documentation's one-machine commands (docs/concepts/risk.md), as written (on a free port instead of 8786, and a short
    run): `dask scheduler`, `dask worker`, then `fleetcast run --scheduler`."""
    import re
    import shlex
    import socket
    import subprocess
    import sys

    readme = (Path(__file__).parents[1] / "docs" / "concepts" / "risk.md").read_text(encoding="utf-8")
    block = re.search(r"To try it on one machine:\n\n(?:<!--.*?-->\n)?```bash\n(.*?)```", readme, re.S)
    assert block, "docs/concepts/risk.md no longer shows how to start a scheduler and workers"
    commands = [line.rstrip(" &") for line in block.group(1).strip().splitlines()]
    assert [c.split()[:2] for c in commands] == [[".venv/bin/dask", "scheduler"], [".venv/bin/dask", "worker"],
                                                 [".venv/bin/fleetcast", "run"]]
    port = str(_free_port())
    bin_dir = Path(sys.executable).parent

    def argv(command: str) -> list[str]:
        words = shlex.split(command.replace("8786", port))
        return [str(bin_dir / Path(words[0]).name), *words[1:]]

    started = []
    try:
        for command in commands[:2]:
            started.append(subprocess.Popen(argv(command), cwd=tmp_path, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
            if len(started) == 1:  # the scheduler listens before the workers connect
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    with socket.socket() as probe:
                        if probe.connect_ex(("127.0.0.1", int(port))) == 0:
                            break
                    time.sleep(0.2)
        run = subprocess.run([*argv(commands[2]), "--set", "horizon.duration=10d", "--set", "variants={}",
                              "--paths", "3", "--out", str(tmp_path / "run"), "-q"],
                             cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert (tmp_path / "run" / "summary.json").exists()
    finally:
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.slow
def test_a_scheduler_that_dies_mid_run_ends_the_run_in_one_line_and_leaves_the_earlier_run(tmp_path):
    # Killing the scheduler printed 37 lines of the client's tracebacks and "internal error".
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    out = tmp_path / "run"
    short = ["--set", "horizon.duration=3d", "--set", "training.streams=[]", "--paths", "2", "-q", "--no-report"]
    assert CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *short]).exit_code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    address = f"tcp://127.0.0.1:{_free_port()}"
    scheduler = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                                  address.rsplit(":", 1)[1], "--no-dashboard"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([str(bin_dir / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with distributed.Client(address, timeout=60) as watcher:
            watcher.wait_for_workers(1, timeout=60)
            run = subprocess.Popen([sys.executable, "-m", "simulator", "run", str(LAUNCH), "--out", str(out),
                                    "--scheduler", address, "--set", "variants={}", "--set", "horizon.duration=60d",
                                    "--paths", "400", "-q", "--no-report"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(watcher.processing().values()):
                time.sleep(0.1)
        scheduler.kill()
        _, stderr = run.communicate(timeout=180)
    finally:
        for process in (worker, scheduler):
            process.kill()
            process.wait(timeout=30)
    assert run.returncode == 1, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert stderr.startswith("error: lost the connection to the Dask scheduler at " + address), stderr
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]
