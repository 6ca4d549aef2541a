"""Renewal theory: the long-run availability of a pool with failures, and of a spot pool.

Blast radius 1. The pool fails at ``rate × working GPUs`` and each failure takes one working
GPU down, so (the exponential has no memory) this is the same as every GPU failing on its
own at ``rate`` while it works. Each GPU then alternates between up periods, exponential
with mean ``MTBF = 1 / rate``, and down periods drawn from the repair distribution, mean
``MTTR``. By the renewal-reward theorem (a cycle is one up period and the repair that
follows; the reward of a cycle is its up time) the long-run fraction of time a GPU is up is

    A = E[up] / (E[up] + E[down]) = MTBF / (MTBF + MTTR) = 1 / (1 + rate · MTTR),

for ANY repair distribution: only its mean enters. The pool's time-average
``gpus_available / gpus_installed`` is the average of its GPUs' fractions, so it tends to A.

Blast radius 8 on a pool of 64 GPUs. Every failure takes 8 GPUs down and every repair brings
8 back, so the number of working GPUs is always ``8 × (nodes up)``; the pool fails at
``rate × 8 × (nodes up)``, which is each up node failing on its own at ``8 · rate``. A node
alternates up (mean ``1 / (8 · rate)``) and down (mean MTTR), so

    A = 1 / (1 + 8 · rate · MTTR).

Spot. Preemptions are the same process with blast radius 1, the preemption rate and the
replacement delay: ``A = 1 / (1 + preemption_rate · replacement)``. Spot GPUs are billed only
while running, so each step costs ``price × gpus_available × step hours`` exactly.

Measurement. Steps are snapshots of the state at their start, i.e. the process sampled on
a regular grid, whose average estimates the time average without bias. The first
``WARMUP_DAYS`` are dropped (every pool starts with all GPUs up; the transient decays at
about ``rate + 1/MTTR`` per hour, i.e. within a day or two). Paths are independent
replications: the scatter of their per-path availabilities gives the standard error of
the pooled estimate, which is asserted to be well under the 1% tolerance (< 0.3%), so
that the 1% check has teeth. Rates are chosen high (a GPU fails every 100–500 hours) so
that a few hundred thousand failures and repairs in total settle the estimate.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

import simulator

WARMUP_DAYS = 20
TOLERANCE = 0.01  # relative, pooled estimate vs. theory
MAX_STANDARD_ERROR = 0.003  # relative standard error of the pooled estimate
SEED = 20260101


def _scenario(pool: dict, duration: str, step: str) -> dict:
    """One pool serving a small constant demand (the demand does not matter here)."""
    return {
        "name": "availability",
        "horizon": {"start": "2026-01-01", "duration": duration, "step": step},
        "fleet": {"pools": [{"name": "a", "gpu": "H100", **pool}]},
        "models": [
            {
                "name": "m",
                "pools": ["a"],
                "gpus_per_replica": 8,
                "capacity_rps": 10,
                "demand": {"base_rps": 10, "noise": "none"},
            }
        ],
    }


def _simulate(pool: dict, *, paths: int, duration: str, step: str):
    scenario = simulator.load_scenario(_scenario(pool, duration, step))
    return simulator.simulate(scenario, paths=paths, seed=SEED, executor="serial", keep_paths=None)


def _availability(timeseries, paths: int) -> tuple[float, float, np.ndarray]:
    """Pooled time-average availability after the warm-up, its relative standard error, per path."""
    start = timeseries["time"].min() + np.timedelta64(WARMUP_DAYS, "D")
    kept = timeseries[timeseries["time"] >= start]
    assert (kept["gpus_installed"] > 0).all()
    ratio = kept["gpus_available"] / kept["gpus_installed"]
    per_path = ratio.groupby(kept["path"]).mean().to_numpy()
    assert len(per_path) == paths
    pooled = float(ratio.mean())
    standard_error = per_path.std(ddof=1) / math.sqrt(paths) / pooled
    return pooled, standard_error, per_path


def _lognormal_mean_h(median_h: float, p90_h: float) -> float:
    sigma = math.log(p90_h / median_h) / NormalDist().inv_cdf(0.9)
    return median_h * math.exp(sigma**2 / 2)


# (id, pool, paths, duration, step, theory)
CASES = [
    pytest.param(
        {"count": 128, "failures": {"rate_per_gpu_hour": 0.01, "blast_radius": 1,
                                    "repair": {"dist": "exponential", "mean": "20h"}}},
        8, "300d", "1h", 1 / (1 + 0.01 * 20),  # 0.8333
        id="blast1-exponential-repair",
    ),
    pytest.param(
        {"count": 128, "failures": {"rate_per_gpu_hour": 0.01, "blast_radius": 1,
                                    "repair": {"dist": "lognormal", "median": "12h", "p90": "36h"}}},
        8, "300d", "1h", 1 / (1 + 0.01 * _lognormal_mean_h(12, 36)),  # MTTR 17.3 h: 0.852
        id="blast1-lognormal-repair",
    ),
    pytest.param(
        {"count": 128, "failures": {"rate_per_gpu_hour": 0.005, "blast_radius": 1, "repair": "24h"}},
        8, "300d", "15min", 1 / (1 + 0.005 * 24),  # fixed 24 h: 0.8929
        id="blast1-fixed-repair-15min",
    ),
    pytest.param(
        {"count": 64, "failures": {"rate_per_gpu_hour": 0.002, "blast_radius": 8,
                                   "repair": {"dist": "exponential", "mean": "12h"}}},
        48, "365d", "1h", 1 / (1 + 8 * 0.002 * 12),  # 0.8389
        id="blast8-64gpus-exponential-repair",
    ),
    pytest.param(
        {"count": 64, "failures": {"rate_per_gpu_hour": 0.002, "blast_radius": 8,
                                   "repair": {"dist": "uniform", "low": "4h", "high": "20h"}}},
        48, "365d", "1h", 1 / (1 + 8 * 0.002 * 12),  # uniform, mean 12 h: 0.8389
        id="blast8-64gpus-uniform-repair",
    ),
]


@pytest.mark.parametrize(("pool", "paths", "duration", "step", "theory"), CASES)
def test_long_run_availability_matches_renewal_theory(pool, paths, duration, step, theory):
    results = _simulate(pool, paths=paths, duration=duration, step=step)
    ts = results.timeseries
    # Failed GPUs stay installed: installed = available + failed at every step.
    np.testing.assert_array_equal(ts["gpus_installed"], ts["gpus_available"] + ts["gpus_failed"])
    assert (ts["gpus_installed"] == pool["count"]).all()
    if pool["failures"]["blast_radius"] == 8:
        # Whole nodes go down and come back.
        assert (ts["gpus_failed"] % 8 == 0).all()
    pooled, standard_error, _ = _availability(ts, paths)
    assert standard_error < MAX_STANDARD_ERROR, (pooled, standard_error)
    assert pooled == pytest.approx(theory, rel=TOLERANCE), (pooled, theory, standard_error)


def test_spot_pool_availability_and_billing_only_while_running():
    price, preemption, replacement_h = 1.0, 0.05, 2.0
    pool = {
        "count": 32,
        "acquisition": {"type": "spot", "usd_per_gpu_hour": price,
                        "preemption_rate_per_gpu_hour": preemption, "replacement": "2h"},
    }
    paths = 8
    results = _simulate(pool, paths=paths, duration="300d", step="1h")
    ts = results.timeseries
    pooled, standard_error, _ = _availability(ts, paths)
    theory = 1 / (1 + preemption * replacement_h)  # 0.9091
    assert standard_error < MAX_STANDARD_ERROR, (pooled, standard_error)
    assert pooled == pytest.approx(theory, rel=TOLERANCE), (pooled, theory, standard_error)

    # Billed only while running: $1 × available GPUs × 1 h per step, at every step.
    assert (ts["gpus_available"] < ts["gpus_installed"]).mean() > 0.5  # preemptions are common
    np.testing.assert_allclose(ts["cost_cloud_usd"], price * ts["gpus_available"] * 1.0, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ts["cost_cloud_spot_usd"], ts["cost_cloud_usd"], rtol=1e-12, atol=0)
    pools = results.pools
    np.testing.assert_allclose(pools["cost_cloud_usd"], price * pools["gpus_available"], rtol=1e-12, atol=0)


def test_spot_billing_at_15_minute_steps():
    pool = {
        "count": 32,
        "acquisition": {"type": "spot", "usd_per_gpu_hour": 2.5,
                        "preemption_rate_per_gpu_hour": 0.05, "replacement": "2h"},
    }
    ts = _simulate(pool, paths=2, duration="30d", step="15min").timeseries
    assert (ts["gpus_available"] < ts["gpus_installed"]).any()
    np.testing.assert_allclose(ts["cost_cloud_usd"], 2.5 * ts["gpus_available"] * 0.25, rtol=1e-12, atol=0)


def test_no_failures_section_means_no_failures():
    ts = _simulate({"count": 128}, paths=2, duration="60d", step="1h").timeseries
    assert (ts["gpus_failed"] == 0).all()
    assert (ts["gpus_available"] == 128).all()
