"""The engine against 13 real vLLM v0.15.1 runs on H100 (issue 13's Done-when bars).

Reads ``../shared/data/vllm_h100_trainval/`` relative to the project root (CI keeps that copy
beside the clone), regenerates every run's workload as its client did and compares mean E2E,
TTFT and ITL (``simulator.serving.calibration``; ``benchmarks/bench_sim_to_real.py`` prints the
full table).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.serving.calibration import compare, default_data_dir, headline, load_experiments

DATA = default_data_dir(Path(__file__).parents[1])
pytestmark = pytest.mark.skipif(not (DATA / "measured.csv").exists(), reason=f"calibration data not at {DATA}")


@pytest.fixture(scope="module")
def rows():
    return compare(load_experiments(DATA), seed=0)


def test_the_13_runs_are_regenerated_with_their_request_counts():
    runs = load_experiments(DATA)
    assert len(runs) == 13
    assert sum(int(rate * seconds) for rate, seconds in runs[1].stages) == 9000


def test_median_errors_meet_the_bars(rows):
    summary = headline(rows)
    assert summary["e2e_mean_median_abs_error"] <= 0.15, summary
    assert summary["ttft_mean_median_abs_error"] <= 0.30, summary
    assert summary["itl_mean_median_abs_error"] <= 0.15, summary


def test_no_run_is_off_by_more_than_2x_on_mean_e2e(rows):
    assert headline(rows)["e2e_mean_worst_factor"] <= 2.0


def test_the_comparison_is_deterministic(rows):
    runs = load_experiments(DATA)[-1:]
    again = compare(runs, seed=0)
    first = [r for r in rows if r["experiment"] == runs[0].name]
    assert [r["simulated_s"] for r in again] == [r["simulated_s"] for r in first]
    assert np.isfinite([r["error"] for r in rows]).all()
