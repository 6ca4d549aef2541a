"""Extreme but valid inputs either run, or are refused up front with the memory they would
need and a way to make them fit — never by running out of memory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.path.fleet.outages import OutageChannels
from simulator.runs import montecarlo
from simulator.runs.resources import estimate_run
from simulator.scenario.distributions import FixedDuration
from tests.helpers import base_scenario, run

LAUNCH = Path(__file__).parents[1] / "scenarios" / "launch.yaml"


def _fortnight(**changes):
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "14d", "step": "1h"})
    data["models"][0]["demand"]["noise"] = "poisson"
    for key, value in changes.items():
        simulator_path = key.split(".")
        node = data
        for part in simulator_path[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        node[simulator_path[-1]] = value
    return data


def test_zero_gpus_serves_nothing_and_says_how_short_it_is():
    result = run(_fortnight(**{"fleet.pools.0.count": 0}), paths=2)
    ts = result.timeseries
    assert (ts["served_requests"] == 0).all() and (ts["unserved_requests"] == ts["demand_requests"]).all()
    # 4 req/s at 1 req/s per one-GPU replica: 4 GPUs short, to the GPU, whenever demand arrives
    assert ts["shortfall_gpus"].max() >= 4 and result.summary["first_shortfall_time"]["probability"] == 1.0
    assert result.summary["totals"]["cost_usd"] == 0.0


def test_zero_demand_costs_the_fleet_and_earns_nothing():
    data = _fortnight(**{"models.0.demand.base_rps": 0.0})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 2.0}
    result = run(data, paths=2)
    ts = result.timeseries
    assert (ts["demand_requests"] == 0).all() and (ts["utilization"] == 0).all()
    assert result.summary["totals"]["revenue_usd"] == 0.0
    assert result.summary["totals"]["cost_usd"] == pytest.approx(8 * 2.0 * 14 * 24)  # 8 idle rented GPUs
    assert result.summary["first_shortfall_time"]["probability"] == 0.0


def test_a_hundred_thousand_gpus_with_failures():
    data = _fortnight(**{"fleet.pools.0.count": 100_000, "models.0.demand.base_rps": 50_000.0})
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 2e-5, "repair": "4h"}
    result = run(data, paths=1)
    ts = result.timeseries
    # about 100,000 × 2e-5 × 4 h = 8 GPUs down at a time
    assert 0 < (ts["gpus_installed"] - ts["gpus_available"]).mean() < 30
    assert (ts["unserved_requests"] == 0).all()


def test_ten_million_gpus_without_failures_hold_no_repair_heap_for_them():
    # A pool whose failures never strike has no repairs pending: its heap stays small however
    # many GPUs it holds (it was sized by the GPUs, and 10^12 of them ran out of memory).
    data = _fortnight(**{"fleet.pools.0.count": 10_000_000, "models.0.demand.base_rps": 1.0})
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 0.0, "repair": "4h"}
    ts = run(data, paths=1).timeseries
    assert (ts["gpus_available"] == 10_000_000).all()
    channels = OutageChannels([(0, 0.0, 1, FixedDuration(value="4h"), np.random.default_rng(0))], 1344, 900.0)
    channels.prepare(0, 1344, np.array([10_000_000]))
    assert channels.heap_time.shape[1] <= 64  # 32 + 10σ of a Poisson of mean 0, not 10^7
    data["fleet"]["pools"][0]["changes"] = [{"at": "1d", "add": 10_000_001}]
    with pytest.raises(simulator.ScenarioError, match=r"fleet\.pools\[0\]\.changes\[0\]\.add.*10000000"):
        simulator.load_scenario(data)


def test_ten_million_requests_per_second():
    data = _fortnight(**{"models.0.demand.base_rps": 1e7, "models.0.capacity_rps": 1000.0,
                         "fleet.pools.0.count": 12_000})
    result = run(data, paths=1)
    ts = result.timeseries
    np.testing.assert_allclose(ts["demand_requests"].mean(), 1e7 * 3600, rtol=1e-3)
    assert (ts["served_requests"] + ts["unserved_requests"] == ts["demand_requests"]).all()
    assert ts["shortfall_gpus"].max() == 0


def test_ten_years_at_one_minute_is_refused_up_front_with_a_way_to_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETCAST_MEMORY_LIMIT", "12GB")

    def compiled_anyway(scenario):  # up front: before the 5-million-step arrays are made
        raise AssertionError("the scenario was compiled before the run was refused")

    monkeypatch.setattr(montecarlo, "compile_scenario", compiled_anyway)
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--set", "horizon.duration=10y", "--set", "horizon.step=1min",
                                       "--out", str(tmp_path / "o"), "-q"], catch_exceptions=False)
    assert result.exit_code == 2
    message = result.stderr.strip()
    # Ten calendar years from 2026-03-01 to 2036-03-01: 3,650 days and 3 leap days (2028, 2032,
    # 2036) = 3,653 days × 1,440 minutes.
    assert "\n" not in message and "5,260,320 steps" in message and "more than the 12.0 GB available" in message
    assert "even in one process" in message
    assert not (tmp_path / "o").exists()
    # The suggested step fits.
    step = re.search(r"--set horizon.step=(\w+) \(about ([0-9.]+) GB\)", message)
    assert step, message
    coarser = simulator.load_scenario(LAUNCH, {"horizon.duration": "10y", "horizon.step": step.group(1)})
    assert estimate_run(coarser, 20, 20, 0).memory_bytes == pytest.approx(float(step.group(2)) * 1e9, rel=0.01)
    assert estimate_run(coarser, 20, 20, 0).memory_bytes < 12e9


def test_workers_beyond_the_memory_are_dropped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEETCAST_MEMORY_LIMIT", "3GB")
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "7d", "variants": {}})
    fits = max(n for n in range(2, 17) if estimate_run(scenario, 20, 20, n).memory_bytes <= 3e9)
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--set", "horizon.duration=7d", "--set", "variants={}",
                                       "--paths", "20", "--workers", "16", "--out", str(tmp_path / "o"), "-q",
                                       "--no-report"])
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == (f"note: running on {fits} processes instead of 16: 16 would need about "
                                     f"{estimate_run(scenario, 20, 20, 16).memory_bytes / 1e9:,.1f} GB, more than "
                                     "the 3.0 GB available")
    serial = simulator.simulate(scenario, paths=20, executor="serial")
    assert json.loads((tmp_path / "o" / "summary.json").read_text()) == json.loads(json.dumps(serial.summary))


@pytest.mark.parametrize("limit", ["lots", "-1GB", "0", "nanGB"])
def test_an_impossible_memory_limit_is_an_input_error(tmp_path, monkeypatch, limit):
    monkeypatch.setenv("FLEETCAST_MEMORY_LIMIT", limit)
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--set", "horizon.duration=2d", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "FLEETCAST_MEMORY_LIMIT" in result.stderr


# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking parent (here the
# test process, gigabytes into the suite), while VmHWM is this process's own peak.
_PROBE = """
import json, sys
import simulator

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

scenario = simulator.load_scenario(sys.argv[1], {"horizon.duration": "60d", "horizon.step": "1min",
                                                "variants": {}, "training.streams": []})
simulator.simulate(scenario, paths=2, executor="serial", keep_paths=int(sys.argv[2]))
print(json.dumps({"peak": peak()}))
"""


@pytest.fixture(scope="module")
def fresh_numba_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("numba-cache")


@pytest.mark.slow
@pytest.mark.parametrize("kept", [0, 2])
def test_the_memory_estimate_bounds_the_measured_peak(kept, fresh_numba_cache):
    # The first probe starts from a cold numba cache (as on a fresh install): the kernels and
    # the training loop compile in it, the worst case. The second finds them cached.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(fresh_numba_cache)}
    done = subprocess.run([sys.executable, "-c", _PROBE, str(LAUNCH), str(kept)], capture_output=True, text=True,
                          timeout=600, check=True, env=env)
    measured = json.loads(done.stdout.strip().splitlines()[-1])["peak"]
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "60d", "horizon.step": "1min",
                                                "variants": {}, "training.streams": []})
    estimate = estimate_run(scenario, 2, kept, 0).memory_bytes
    assert measured <= estimate <= 2.5 * measured, (measured / 1e6, estimate / 1e6)
