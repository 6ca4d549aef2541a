"""Headline figures of a run: per-path totals and their spread across paths.

Quantiles of totals use NumPy's default (linear interpolation). The first-shortfall time is
a first-passage time: paths that never run short count as "after the horizon", and its
quantiles are read off the empirical distribution (``inverted_cdf``), so P10 is the time by
which at least 10% of paths have run short; a quantile beyond the horizon is null.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from simulator import group_sums
from simulator.economics.alerts import summarize_alerts
from simulator.group_sums import group_codes
from simulator.runs.books_summary import books_summary, covenant_summary
from simulator.runs.cash_summary import cash_summary
from simulator.runs.intervals import (
    mean_interval,
    quantile_rank_bounds,
    ratio_interval,
    wilson_interval,
)
from simulator.runs.periods import LEVEL, periods_json
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
#: Ratios: (numerator, denominator, scale, value when the denominator is 0). Per path, the
#: ratio of the path's sums; over paths (``totals``), the ratio of the mean sums, so a margin
#: is weighted by revenue and a share by demand.
RATIOS = {
    "utilization_mean": ("gpu_hours_busy", "gpu_hours_available", 1.0, 0.0),
    "share_served": ("served_requests", "demand_requests", 1.0, 1.0),
    "unserved_share": ("unserved_requests", "demand_requests", 1.0, 0.0),
    "slo_attainment": ("slo_met_requests", "demand_requests", 1.0, 1.0),
    "gross_margin_pct": ("gross_margin_usd", "revenue_usd", 100.0, None),
    "cost_per_1m_tokens_usd": ("cogs_usd", "served_tokens", 1e6, None),
    "cost_per_subscriber_month_usd": ("cogs_usd", "subscriber_months", 1.0, None),
}


#: Sums per path that ratios divide (beside :data:`TOTALS`).
_PARTS = ("gpu_hours_busy", "gpu_hours_available", "slo_met_requests", "gpu_hours_short", "served_tokens",
          "subscriber_months")
#: Reserved commitments still owed after the horizon's end (USD), beside the billed totals.
COMMITMENT_AFTER_HORIZON = "reserved_commitment_after_horizon_usd"
#: Every column of a path's totals but the first-shortfall time.
TOTAL_COLUMNS = (*TOTALS, *_PARTS, "peak_shortfall_gpus", "shortfall_hours", "short_episodes", *RATIOS,
                 COMMITMENT_AFTER_HORIZON)
MONTH_S = 365.25 / 12 * 86400
#: What each block of ``summary.json`` holds: which statistic over the paths (``statistics``).
STATISTICS = {
    "totals": "mean over paths of each path's total; the ratios of RATIOS (share_served, slo_attainment, "
              "utilization_mean, gross_margin_pct, unit costs) are pooled, as in `pooled`",
    "totals_ci": "90% interval of each mean in `totals` (normal approximation)",
    "pooled": "each ratio pooled over every path and step: sum of its numerator / sum of its denominator",
    "pooled_ci": "90% interval of each pooled ratio (delta method of the ratio estimator)",
    "quantiles": "P10/P50/P90 over paths of each path's own total or ratio (linear interpolation)",
    "quantiles_ci": "90% distribution-free interval of each quantile",
    "first_shortfall_time": "P10/P50/P90 over paths of each path's first shortfall (inverted CDF; null: after "
                            "the horizon); probability: share of paths",
    "break_even": "P10/P50/P90 over paths of each path's first such month (as first_shortfall_time)",
    "cash.lowest_balance_usd": "P10/P50/P90 over paths of each path's lowest month-end cash",
    "cash.lowest_balance_month": "the month of the lowest cash of the path at that quantile of lowest cash "
                                 "(lowest_balance_at_quantile)",
    "cash.runway": "P10/P50/P90 over paths of the months from the start until cash runs out, each the path at "
                   "that rank; basis: within_horizon, extrapolated (closing cash / burn at the end) or not_burning",
    "books": "P10/P50/P90 over paths",
    "training.wait_s": "P50/P90/P99 and mean pooled over every started job of every path",
    "training.named_jobs.late_s": "P10/P50/P90, over the paths the job finished on, of its end less its "
                                  "uninterrupted finish (submission + work + checkpoint writes)",
    "per_path": "each path's own totals and ratios",
}


def path_totals(timeseries: pd.DataFrame | Mapping[str, np.ndarray], step_s: float) -> pd.DataFrame:
    """One row per path with its totals and derived ratios.

    ``timeseries`` carries the ``short`` column (:func:`simulator.runs.shortfall.short_steps`):
    first shortfall, hours and GPU-hours short and episodes count material shortfall only.
    Sums are pandas' grouped sums to the bit (:mod:`simulator.group_sums`).
    """
    step_h = step_s / 3600.0
    column = {name: np.asarray(timeseries[name]) for name in
              ("path", "time", "short", "shortfall_gpus", "utilization", "gpus_available", "slo_attainment",
               "demand_requests", "subscribers", *TOTALS, "served_tokens")}
    short, shortfall, path = column["short"], column["shortfall_gpus"], column["path"]
    shortfall_short = np.where(short, shortfall, 0)
    parts = {
        "gpu_hours_busy": column["utilization"] * column["gpus_available"] * step_h,
        "gpu_hours_available": column["gpus_available"] * step_h,
        "slo_met_requests": column["slo_attainment"] * column["demand_requests"],
        "gpu_hours_short": shortfall_short * step_h,
        "served_tokens": column["served_tokens"],
        "subscriber_months": column["subscribers"] * step_s / MONTH_S,
    }
    starts = np.concatenate(([True], path[1:] != path[:-1])) if len(path) else np.zeros(0, dtype=bool)
    episode_start = short & ~np.concatenate(([False], short[:-1])) | short & starts
    codes, (paths,) = group_codes(path)
    summed = group_sums.sums(codes, len(paths), {**{name: column[name] for name in TOTALS},
                                                 **{name: parts[name] for name in _PARTS},
                                                 "short": short, "episode_start": episode_start})
    out = {name: summed[name] for name in (*TOTALS, *_PARTS)}
    peak = np.zeros(len(paths), dtype=shortfall_short.dtype)
    np.maximum.at(peak, codes, shortfall_short)
    out["peak_shortfall_gpus"] = peak
    out["shortfall_hours"] = summed["short"] * step_h
    out["short_episodes"] = summed["episode_start"]
    time = column["time"]
    first = np.full(len(paths), np.iinfo(np.int64).max)
    np.minimum.at(first, codes[short], time[short].view(np.int64))
    out["first_shortfall_time"] = np.where(first == np.iinfo(np.int64).max, np.array("NaT", dtype=time.dtype),
                                           first.view(time.dtype))
    return add_ratios(pd.DataFrame(out, index=pd.Index(paths, name="path")))


def add_ratios(sums: pd.DataFrame) -> pd.DataFrame:
    """``sums`` with every ratio of :data:`RATIOS` whose parts it holds, row by row (a ratio
    already there is replaced in its place, new ones follow in the order of RATIOS)."""
    ratios = {}
    for name, (numerator, denominator, scale, empty) in RATIOS.items():
        if numerator in sums and denominator in sums:
            below = sums[denominator].to_numpy(dtype=float)
            with np.errstate(all="ignore"):  # a zero or tiny denominator: NaN or inf, as pandas gives
                ratio = scale * sums[numerator].to_numpy(dtype=float) / np.where(below > 0, below, np.nan)
            ratios[name] = ratio if empty is None else np.where(np.isnan(ratio), empty, ratio)
    columns = {name: (ratios[name] if name in ratios else sums[name]) for name in sums.columns}
    columns.update((name, values) for name, values in ratios.items() if name not in columns)
    return pd.DataFrame(columns, index=sums.index)


def pooled_ratios(totals: pd.DataFrame) -> dict[str, float | None]:
    """Each ratio over all paths: the ratio of the sums (weighted by its denominator)."""
    sums = add_ratios(totals[[c for c in totals.columns if c != "first_shortfall_time"]].sum().to_frame().T)
    return {name: _number(sums[name].iloc[0]) for name in RATIOS if name in sums}


def pooled_intervals(totals: pd.DataFrame) -> dict[str, list[float | None]]:
    """The 90% interval of each pooled ratio (:func:`~simulator.runs.intervals.ratio_interval`
    over the paths' sums), in the ratio's scale."""
    out = {}
    for name, (numerator, denominator, scale, _) in RATIOS.items():
        if numerator in totals and denominator in totals:
            low, high = ratio_interval(totals[numerator].to_numpy(dtype=float),
                                       totals[denominator].to_numpy(dtype=float), LEVEL)
            out[name] = [None if low is None else scale * low, None if high is None else scale * high]
    return out


def summarize(scenario: Scenario, totals: pd.DataFrame, pnl: pd.DataFrame,
              training: dict[str, Any] | None, periods: pd.DataFrame | None = None) -> dict[str, Any]:
    """The content of ``summary.json``, from per-path totals (one row per path, from
    :func:`path_totals`), every path's monthly P&L, the pooled training figures and the
    per-period table (:func:`simulator.runs.periods.summarize_periods`)."""
    horizon = scenario.horizon
    metrics = [c for c in totals.columns if c != "first_shortfall_time"]
    means = {name: _number(totals[name].mean()) for name in metrics} | pooled_ratios(totals)
    summary: dict[str, Any] = {
        "scenario": scenario.name,
        "paths": int(len(totals)),
        "seed": scenario.seed,
        "start": format_timestamp(horizon.start),
        "end": format_timestamp(horizon.end_time),
        "step": format_duration(horizon.step_s),
        "steps": horizon.n_steps,
        "confidence_level": LEVEL,
        "shortfall_definition": scenario.shortfall.model_dump(mode="json"),
        "statistics": STATISTICS,
        "totals": means,
        "pooled": pooled_ratios(totals),
        "pooled_ci": pooled_intervals(totals),
        "totals_ci": {name: [None if v is None else _number(v)
                             for v in mean_interval(totals[name].to_numpy(dtype=np.float64), LEVEL)]
                      for name in metrics if name not in RATIOS},
        "quantiles": {name: _quantiles(totals[name]) for name in metrics},
        "quantiles_ci": {name: _quantile_intervals(totals[name]) for name in metrics},
        "first_shortfall_time": first_shortfall_quantiles(totals["first_shortfall_time"]),
        "break_even": {
            name: first_shortfall_quantiles(_first_month(pnl, pnl[column] >= 0))
            for name, column in (("gross_margin_positive_month", "gross_margin_usd"),
                                 ("operating_result_positive_month", "operating_result_usd"))
        } | {"payback_month": first_shortfall_quantiles(_payback_month(pnl))},
        "alerts": summarize_alerts(pnl, scenario.alerts, first_shortfall_quantiles),
        "training": training,
        "per_path": _per_path(totals, metrics),
    }
    if periods is not None:
        summary["periods"] = periods_json(periods)
    summary["cash"] = cash_summary(pnl, scenario.financing.opening_cash_usd, _quantiles, first_shortfall_quantiles,
                                   scenario.horizon.start, scenario.horizon.end_time)
    summary["books"] = books_summary(pnl, _quantiles)
    if any(facility.covenants.min_dscr is not None or facility.covenants.max_ltv is not None
           for facility in scenario.financing.facilities):
        summary["covenants"] = covenant_summary(pnl, _quantiles)
    return summary


def input_quantiles(inputs: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """P10/P50/P90 of each uncertain input over the paths."""
    return {column: _quantiles(inputs[column]) for column in inputs.columns if column != "path"}


def input_rank_correlations(inputs: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Spearman rank correlation of every pair of uncertain inputs over the paths' draws."""
    drawn = inputs.drop(columns="path")
    matrix = drawn.rank().corr() if len(drawn) > 1 else pd.DataFrame(index=drawn.columns, columns=drawn.columns)
    return {a: {b: _number(matrix.loc[a, b]) for b in drawn.columns} for a in drawn.columns}


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
        "named_jobs": {name: _named_job(rows, name) for name in names},
    }


def _named_job(rows: list[Any], name: str) -> dict[str, Any]:
    """One named job over paths: the share of paths it finished on, how late it finished
    (past an uninterrupted run from its submission, over those paths) and its preemptions."""
    late = np.array([d.named_late_s.get(name, np.nan) for d in rows], dtype=float)
    preempted = np.array([d.named_preemptions.get(name, 0) for d in rows], dtype=float)
    lost = np.array([d.named_lost_gpu_hours.get(name, 0.0) for d in rows], dtype=float)
    price = max((d.named_usd_per_day_late.get(name, 0.0) for d in rows), default=0.0)
    finished = ~np.isnan(late)
    figures = {
        "finished_share": float(finished.mean()),
        "late_s": _quantiles(pd.Series(late[finished])),
        "preemptions": _quantiles(pd.Series(preempted)),
        "lost_gpu_hours": _quantiles(pd.Series(lost)),
    }
    if price > 0:  # what its lateness costs at its price per day late, over the paths it finished on
        figures["delay_cost_usd"] = _quantiles(pd.Series(late[finished] / 86_400.0 * price))
    return figures


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


def _quantile_intervals(values: pd.Series) -> dict[str, list[float | None]]:
    """The distribution-free interval of each quantile (``[lo, hi]``, null: too few paths)."""
    finite = values.to_numpy(dtype=np.float64)
    finite = np.sort(finite[np.isfinite(finite)])
    out = {}
    for name, p in QUANTILES.items():
        low, high = quantile_rank_bounds(len(finite), p, LEVEL)
        out[name] = [_number(finite[low - 1]) if 1 <= low <= len(finite) else None,
                     _number(finite[high - 1]) if 1 <= high <= len(finite) else None]
    return out


def first_shortfall_quantiles(first: pd.Series) -> dict[str, Any]:
    """P10/P50/P90 of the first-shortfall time across paths (null past the horizon), the
    share of paths with one, and the intervals of both (``ci``, ``probability_ci``)."""
    nanos = first.astype("datetime64[ns]").to_numpy().astype("int64").astype(np.float64)
    nanos[first.isna().to_numpy()] = np.inf
    ordered = np.sort(nanos)
    out: dict[str, Any] = {}
    ci: dict[str, list[str | None]] = {}
    for name, p in QUANTILES.items():
        with np.errstate(invalid="ignore"):
            value = np.quantile(nanos, p, method="inverted_cdf") if len(nanos) else np.inf
        out[name] = _instant(value)
        low, high = quantile_rank_bounds(len(ordered), p, LEVEL)
        ci[name] = [_instant(ordered[low - 1]) if 1 <= low <= len(ordered) else None,
                    _instant(ordered[high - 1]) if 1 <= high <= len(ordered) else None]
    hits = int(first.notna().sum())
    out["probability"] = hits / len(first) if len(first) else 0.0
    out["probability_ci"] = list(wilson_interval(hits, len(first), LEVEL))
    out["ci"] = ci
    return out


def _instant(nanos: float) -> str | None:
    return None if not np.isfinite(nanos) else _stamp(pd.Timestamp(int(nanos)))


def _per_path(totals: pd.DataFrame, metrics: list[str]) -> list[dict[str, Any]]:
    """One entry per path: its figures (read as columns: a row at a time costs a Series)."""
    columns = {name: totals[name].to_numpy(dtype=np.float64) for name in metrics}
    firsts = totals["first_shortfall_time"].to_numpy()
    return [{"path": int(path), **{name: _number(columns[name][i]) for name in metrics},
             "first_shortfall_time": _stamp(firsts[i])} for i, path in enumerate(totals.index)]


def _number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _stamp(value: Any) -> str | None:
    if value is None or pd.isna(value):
        return None
    return pd.Timestamp(value).isoformat()
