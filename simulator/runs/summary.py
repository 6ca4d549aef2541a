"""Headline figures of a run: per-path totals and their spread across paths.

Quantiles of totals use NumPy's default (linear interpolation). The first-shortfall time is
a first-passage time: paths that never run short count as "after the horizon", and its
quantiles are read off the empirical distribution (``inverted_cdf``), so P10 is the time by
which at least 10% of paths have run short; a quantile beyond the horizon is null.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from simulator.economics.alerts import summarize_alerts
from simulator.scenario import Scenario
from simulator.units import format_duration, format_timestamp

QUANTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90}

TOTALS = (
    "demand_requests",
    "served_requests",
    "unserved_requests",
    "cost_usd",
    "cost_depreciation_usd",
    "cost_cloud_usd",
    "cost_energy_usd",
    "cost_facility_usd",
    "cost_other_usd",
    "cogs_usd",
    "rnd_compute_usd",
    "revenue_usd",
    "gross_margin_usd",
    "energy_kwh",
)


def path_totals(timeseries: pd.DataFrame, step_s: float) -> pd.DataFrame:
    """One row per path with its totals and derived ratios."""
    frame = timeseries.assign(
        busy=timeseries["utilization"] * timeseries["gpus_available"],
        slo_met=timeseries["slo_attainment"] * timeseries["demand_requests"],
        short=timeseries["unserved_requests"] > 0,
    )
    grouped = frame.groupby("path", sort=True)
    totals = grouped[list(TOTALS)].sum()
    busy = grouped["busy"].sum()
    available = grouped["gpus_available"].sum()
    totals["utilization_mean"] = (busy / available.where(available > 0)).fillna(0.0)
    totals["share_served"] = (totals["served_requests"] / totals["demand_requests"].where(totals["demand_requests"] > 0)).fillna(1.0)
    totals["slo_attainment"] = (grouped["slo_met"].sum() / totals["demand_requests"].where(totals["demand_requests"] > 0)).fillna(1.0)
    revenue = totals["revenue_usd"]
    totals["gross_margin_pct"] = 100.0 * totals["gross_margin_usd"] / revenue.where(revenue > 0)
    totals["peak_shortfall_gpus"] = grouped["shortfall_gpus"].max()
    totals["shortfall_hours"] = grouped["short"].sum() * step_s / 3600.0
    first = frame.loc[frame["short"]].groupby("path")["time"].min()
    totals["first_shortfall_time"] = first.reindex(totals.index)
    return totals


def summarize(scenario: Scenario, totals: pd.DataFrame, pnl: pd.DataFrame,
              training: dict[str, Any] | None) -> dict[str, Any]:
    """The content of ``summary.json``, from per-path totals (one row per path, from
    :func:`path_totals`), every path's monthly P&L and the pooled training figures."""
    horizon = scenario.horizon
    totals = totals.join(_unit_economics(pnl))
    metrics = [c for c in totals.columns if c != "first_shortfall_time"]
    summary: dict[str, Any] = {
        "scenario": scenario.name,
        "paths": int(len(totals)),
        "seed": scenario.seed,
        "start": format_timestamp(horizon.start),
        "end": format_timestamp(horizon.start + pd.Timedelta(seconds=horizon.length_s)),
        "step": format_duration(horizon.step_s),
        "steps": horizon.n_steps,
        "totals": {name: _number(totals[name].mean()) for name in metrics},
        "quantiles": {name: _quantiles(totals[name]) for name in metrics},
        "first_shortfall_time": first_shortfall_quantiles(totals["first_shortfall_time"]),
        "break_even": {
            name: first_shortfall_quantiles(_first_month(pnl, pnl[column] >= 0))
            for name, column in (("gross_margin_positive_month", "gross_margin_usd"),
                                 ("operating_result_positive_month", "operating_result_usd"))
        } | {"payback_month": first_shortfall_quantiles(_payback_month(pnl))},
        "alerts": summarize_alerts(pnl, scenario.alerts, first_shortfall_quantiles),
        "training": training,
        "per_path": [
            {
                "path": int(path),
                **{name: _number(row[name]) for name in metrics},
                "first_shortfall_time": _stamp(row["first_shortfall_time"]),
            }
            for path, row in totals.iterrows()
        ],
    }
    return summary


def input_quantiles(inputs: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """P10/P50/P90 of each uncertain input over the paths."""
    return {column: _quantiles(inputs[column]) for column in inputs.columns if column != "path"}


def training_summary(digests: dict[int, Any], waits_s: np.ndarray) -> dict[str, Any] | None:
    """Training figures over paths: ``digests`` maps each path to its
    :class:`~simulator.runs.digest.TrainingDigest`; ``waits_s`` pools every started job's wait
    (it may be reordered in place)."""
    if not digests:
        return None
    paths = sorted(digests)
    rows = [digests[path] for path in paths]
    jobs = sum(d.jobs for d in rows)
    held = np.array([d.held_gpu_hours for d in rows])
    useful = np.array([d.useful_gpu_hours for d in rows])
    goodput = pd.Series(np.divide(useful, held, out=np.full(len(rows), np.nan), where=held > 0))
    names = sorted(rows[0].completion)
    completion = {
        name: first_shortfall_quantiles(pd.Series([d.completion[name] for d in rows], index=paths,
                                                  dtype="datetime64[ns]"))
        for name in names
    }
    if len(waits_s):  # quantiles are order-free; the mean adds per-path sums in path order
        wait = dict(zip(("p50", "p90", "p99"),
                        (float(v) for v in np.percentile(waits_s, (50, 90, 99), overwrite_input=True)), strict=True))
        wait["mean"] = math.fsum(d.wait_sum_s for d in rows) / len(waits_s)
    else:
        wait = dict.fromkeys(("p50", "p90", "p99", "mean"))
    return {
        "jobs": int(jobs),
        "jobs_started_share": sum(d.started for d in rows) / jobs,
        "jobs_completed_share": sum(d.completed for d in rows) / jobs,
        "wait_s": wait,
        "goodput": _quantiles(goodput),
        "preemptions_per_job": sum(d.preemptions for d in rows) / jobs,
        "interruptions_per_job": sum(d.interruptions for d in rows) / jobs,
        "completion_time": completion,
    }


def _unit_economics(pnl: pd.DataFrame) -> pd.DataFrame:
    grouped = pnl.groupby("path")[["cogs_usd", "served_tokens", "subscriber_months"]].sum()
    tokens = grouped["served_tokens"].where(grouped["served_tokens"] > 0)
    subscribers = grouped["subscriber_months"].where(grouped["subscriber_months"] > 0)
    return pd.DataFrame({
        "cost_per_1m_tokens_usd": grouped["cogs_usd"] / (tokens / 1e6),
        "cost_per_subscriber_month_usd": grouped["cogs_usd"] / subscribers,
    })


def _first_month(pnl: pd.DataFrame, condition: pd.Series) -> pd.Series:
    paths = pnl["path"].unique()
    return pnl.loc[condition.to_numpy()].groupby("path")["month"].min().reindex(paths)


def _payback_month(pnl: pd.DataFrame) -> pd.Series:
    """First month from which cumulative cash stays at or above zero to the end (null: never)."""
    months = {}
    for path, rows in pnl.groupby("path"):
        cash = rows["cumulative_cash_usd"].to_numpy()
        below = cash < 0
        if not below.any():
            months[path] = rows["month"].iloc[0]
        elif below[-1]:
            months[path] = pd.NaT
        else:
            last_negative = len(below) - 1 - int(np.argmax(below[::-1]))
            months[path] = rows["month"].iloc[last_negative + 1]
    return pd.Series(months, dtype="datetime64[ns]")


def _quantiles(values: pd.Series) -> dict[str, float | None]:
    finite = values.to_numpy(dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if not len(finite):
        return dict.fromkeys(QUANTILES)
    return {name: _number(np.quantile(finite, p)) for name, p in QUANTILES.items()}


def first_shortfall_quantiles(first: pd.Series) -> dict[str, Any]:
    """P10/P50/P90 of the first-shortfall time across paths (null past the horizon)."""
    nanos = first.astype("datetime64[ns]").to_numpy().astype("int64").astype(np.float64)
    nanos[first.isna().to_numpy()] = np.inf
    out: dict[str, Any] = {}
    for name, p in QUANTILES.items():
        with np.errstate(invalid="ignore"):
            value = np.quantile(nanos, p, method="inverted_cdf") if len(nanos) else np.inf
        out[name] = None if not np.isfinite(value) else _stamp(pd.Timestamp(int(value)))
    out["probability"] = float(first.notna().mean()) if len(first) else 0.0
    return out


def _number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _stamp(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).isoformat()
