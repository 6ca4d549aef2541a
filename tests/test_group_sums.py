"""The compiled grouped sums against pandas' groupby, bit for bit.

A path's digest reduces its table with :mod:`simulator.group_sums` instead of
``DataFrame.groupby``; the totals and the monthly P&L must be what pandas gave. The
references below are the pandas formulations the digest used before.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.economics.pnl import monthly_pnl
from simulator.group_sums import group_codes, running_sums, sums
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path
from simulator.path.tables import job_columns, jobs_table
from simulator.runs.digest import path_timeseries, training_digest
from simulator.runs.summary import _PARTS, MONTH_S, TOTALS, add_ratios, path_totals
from simulator.scenario.economics import Financing

LAUNCH = Path(__file__).resolve().parents[1] / "scenarios" / "launch.yaml"


@pytest.mark.skipif(tuple(int(p) for p in pd.__version__.split(".")[:2]) < (3, 1),
                    reason="pandas before 3.1 sums rows that come group by group compensated too")
@pytest.mark.parametrize("order", ["shuffled", "group by group"])
def test_sums_and_running_sums_are_pandas_to_the_bit(order):
    # Rows in random group order are summed compensated; rows group by group, pairwise
    # (without NaN) or compensated (with NaN): the three ways pandas takes.
    rng = np.random.default_rng(20261202)
    for trial in range(200):
        n = int(rng.integers(1, 3000))
        path, month = rng.integers(0, 5, n), rng.integers(0, 7, n)
        floats = rng.lognormal(0.0, 3.0, n) * rng.choice([-1.0, 1.0], n)  # wide range: compensation matters
        if trial % 2:
            floats[rng.random(n) < 0.05] = np.nan
        if trial % 10 == 0:
            floats[rng.integers(n)] = np.inf
        if trial % 7 == 0:
            floats[:] = 191.36  # one repeated price: pairwise and compensated sums differ
        ints, flags = rng.integers(-1000, 1000, n), rng.random(n) < 0.3
        if order != "shuffled":
            rows = np.lexsort((month, path))
            path, month, floats, ints, flags = path[rows], month[rows], floats[rows], ints[rows], flags[rows]
        frame = pd.DataFrame({"path": path, "month": month, "f": floats, "i": ints, "b": flags})
        expected = frame.groupby(["path", "month"], sort=True)[["f", "i", "b"]].sum()
        codes, (paths, months) = group_codes(path, month)
        got = sums(codes, len(paths), {"f": floats, "i": ints, "b": flags})
        assert np.array_equal(paths, expected.index.get_level_values("path"))
        assert np.array_equal(months, expected.index.get_level_values("month"))
        for name in ("f", "i", "b"):
            assert got[name].dtype == expected[name].dtype
            assert np.array_equal(got[name], expected[name].to_numpy(), equal_nan=True), (trial, name)
        running = pd.Series(floats).groupby(path).cumsum().to_numpy()
        assert np.array_equal(running_sums(group_codes(path)[0], floats), running, equal_nan=True), trial


def test_compensated_and_pairwise_sums_by_hand():
    # The check above could pass with any sum that happens to agree: these cannot. Shuffled
    # rows are summed compensated: the four ones survive 1e16; a naive sum loses them.
    values = np.array([1e16, 1.0, 5.0, 1.0, 1.0, 1.0, -1e16])
    codes = np.array([0, 0, 1, 0, 0, 0, 0])
    assert sums(codes, 2, {"v": values})["v"].tolist() == [4.0, 5.0]
    assert sum(values[codes == 0].tolist()) == 0.0
    # Group by group, without NaN: NumPy's pairwise sum, not the compensated one.
    price = np.full(100, 191.36)
    assert sums(np.zeros(100, dtype=np.int64), 1, {"v": price})["v"][0] == np.sum(price) == 19136.000000000007


def _pandas_path_totals(timeseries: pd.DataFrame, step_s: float) -> pd.DataFrame:
    step_h = step_s / 3600.0
    short = timeseries["short"].to_numpy()
    path = timeseries["path"].to_numpy()
    frame = timeseries.assign(
        gpu_hours_busy=timeseries["utilization"] * timeseries["gpus_available"] * step_h,
        gpu_hours_available=timeseries["gpus_available"] * step_h,
        slo_met_requests=timeseries["slo_attainment"] * timeseries["demand_requests"],
        gpu_hours_short=np.where(short, timeseries["shortfall_gpus"].to_numpy(), 0) * step_h,
        shortfall_gpus_short=np.where(short, timeseries["shortfall_gpus"].to_numpy(), 0),
        episode_start=short & ~np.concatenate(([False], short[:-1]))
        | short & np.concatenate(([True], path[1:] != path[:-1])),
        subscriber_months=timeseries["subscribers"] * step_s / MONTH_S,
    )
    grouped = frame.groupby("path", sort=True)
    totals = grouped[[*TOTALS, *_PARTS]].sum()
    totals["peak_shortfall_gpus"] = grouped["shortfall_gpus_short"].max()
    totals["shortfall_hours"] = grouped["short"].sum() * step_h
    totals["short_episodes"] = grouped["episode_start"].sum()
    totals["first_shortfall_time"] = frame.loc[short].groupby("path")["time"].min().reindex(totals.index)
    return add_ratios(totals)


def _pandas_monthly_sums(timeseries: pd.DataFrame, step_s: float) -> pd.DataFrame:
    frame = timeseries.assign(
        month=timeseries["time"].dt.to_period("M").dt.start_time,
        busy=timeseries["utilization"] * timeseries["gpus_available"],
        subscriber_months=timeseries["subscribers"] * step_s / (365.25 / 12 * 86400),
    )
    summed = ["revenue_usd", "cost_usd", "cogs_usd", "capex_usd", "served_tokens", "demand_requests"]
    return frame.groupby(["path", "month"], sort=True)[[*summed, "busy", "gpus_available",
                                                        "subscriber_months"]].sum().reset_index()


@pytest.fixture(scope="module")
def launch_paths():
    """Three paths of the launch scenario over 75 days, in the order 2, 0, 1, with shortfall
    marked on random steps besides the material ones (so every shortfall column is exercised)."""
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "75d", "variants": {}})
    plan = compile_scenario(scenario)
    rng = np.random.default_rng(7)
    tables, results = [], []
    for path in (2, 0, 1):
        results.append(run_path(plan, scenario.seed, path))
        table = path_timeseries(results[-1], scenario, plan)
        if path != 1:  # path 1 keeps its own marks (it may have none: first shortfall NaT)
            table["short"] = table["short"].to_numpy() | (rng.random(len(table)) < 0.02)
            table["shortfall_gpus"] = np.where(table["short"], rng.integers(1, 40, len(table)), 0)
        tables.append(table)
    return scenario, pd.concat(tables, ignore_index=True), plan, results


def test_path_totals_are_the_pandas_ones(launch_paths):
    scenario, timeseries, _, _ = launch_paths
    for table in (timeseries, timeseries[timeseries["path"] == 1].reset_index(drop=True)):
        pd.testing.assert_frame_equal(path_totals(table, scenario.horizon.step_s),
                                      _pandas_path_totals(table, scenario.horizon.step_s), check_exact=True)


def test_monthly_pnl_sums_are_the_pandas_ones(launch_paths):
    scenario, timeseries, _, _ = launch_paths
    pnl = monthly_pnl(timeseries, Financing(), scenario.horizon.step_s)
    expected = _pandas_monthly_sums(timeseries, scenario.horizon.step_s)
    assert pnl["path"].tolist() == expected["path"].tolist() == sorted(expected["path"].tolist())
    for name in ("month", "revenue_usd", "cogs_usd", "capex_usd", "served_tokens", "demand_requests",
                 "subscriber_months"):
        pd.testing.assert_series_equal(pnl[name], expected[name], check_exact=True)  # values and dtype
    with np.errstate(all="ignore"):
        utilization = expected["busy"].to_numpy() / expected["gpus_available"].to_numpy()
    assert np.array_equal(pnl["utilization"].to_numpy(), np.nan_to_num(utilization, nan=0.0))
    cash = pnl["cash_flow_usd"].to_numpy()
    running = pd.Series(cash).groupby(pnl["path"].to_numpy()).cumsum().to_numpy()
    assert np.array_equal(pnl["cumulative_cash_usd"].to_numpy(), running)


def _pandas_training_digest(jobs: pd.DataFrame, named: set[str]) -> dict:
    ends = jobs.drop_duplicates("job").set_index("job")["end_time"]
    waits = jobs["wait_s"].dropna().to_numpy(dtype=np.float64)
    return {"jobs": len(jobs), "started": int(jobs["start_time"].notna().sum()),
            "completed": int(jobs["end_time"].notna().sum()), "preemptions": int(jobs["preemptions"].sum()),
            "interruptions": int(jobs["interruptions"].sum()),
            "useful_gpu_hours": float(jobs["useful_gpu_hours"].sum()),
            "held_gpu_hours": float(jobs["held_gpu_hours"].sum()), "waits_s": waits, "wait_sum_s": math.fsum(waits),
            "completion": {name: ends.get(name, pd.NaT) for name in sorted(named)}}


def test_training_digest_is_the_jobs_tables(launch_paths):
    scenario, _, plan, results = launch_paths
    named = {job.name for job in scenario.training.jobs} | {"no-such-job"}
    for result in results:
        got = training_digest(job_columns(result.path, result.jobs, plan), scenario.horizon.start, named)
        expected = _pandas_training_digest(jobs_table([result], scenario.horizon.start, plan), named)
        assert got.jobs > 100 and got.started > 0 and set(got.completion) == named
        assert pd.isna(got.completion["no-such-job"]) and not pd.isna(got.completion["finetune-v2"])
        for name, value in expected.items():
            if name == "waits_s":
                assert np.array_equal(got.waits_s, value)
            elif name == "completion":
                assert {k: str(v) for k, v in got.completion.items()} == {k: str(v) for k, v in value.items()}
            else:
                assert getattr(got, name) == value, name
