"""Figures per calendar month, quarter and year: how likely a shortfall is in each, and what
each earns, with the Monte Carlo error of every figure.

Each path is reduced to one row per (period, start) by :func:`path_periods` (in the worker
that ran it); :func:`summarize_periods` pools the rows of every path into one row per period:

- ``p_short``: the share of paths with a material shortfall in the period (Wilson interval);
- ``gpu_hours_short`` and ``hours_short``: mean and P90 over paths (GPU-hours of missing
  replicas in short steps; hours of short steps);
- ``unserved_share``: requests unserved over requests asked for, pooled over paths (raw: every
  unserved request counts), and the P90 of the paths' own shares;
- ``revenue_usd``, ``cogs_usd``, ``gross_margin_usd``: P10/P50/P90 over paths; and
  ``gross_margin_pct``: each path's Σ gross margin / Σ revenue in the period (P10/P50/P90),
  and the pooled ratio of the sums over paths (``gross_margin_pct_pooled``).

A period cut by the horizon covers only its steps inside it (``hours``). Every quantile has a
distribution-free interval and every probability and mean an interval at ``LEVEL``
(:mod:`simulator.runs.intervals`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from simulator.runs.intervals import mean_interval, quantile_rank_bounds, wilson_interval

#: Calendar periods (pandas period codes).
PERIODS = {"year": "Y", "quarter": "Q", "month": "M"}
LEVEL = 0.9
_SUMS = ("demand_requests", "unserved_requests", "revenue_usd", "cogs_usd", "gross_margin_usd")
_MONEY = ("revenue_usd", "cogs_usd", "gross_margin_usd", "gross_margin_pct")
_QUANTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90}


def path_periods(timeseries: pd.DataFrame | Mapping[str, np.ndarray], step_s: float) -> pd.DataFrame:
    """One path's rows: ``period, start, hours, short, hours_short, gpu_hours_short`` and sums.

    Steps are in time order, so each period is a run of consecutive steps: every figure is
    one ``np.add.reduceat`` over the period boundaries (found once per horizon).
    """
    step_h = step_s / 3600.0
    short = np.asarray(timeseries["short"])
    values = np.column_stack([
        short.astype(np.float64),
        np.where(short, np.asarray(timeseries["shortfall_gpus"]), 0) * step_h,
        *(np.asarray(timeseries[name], dtype=np.float64) for name in _SUMS),
    ])
    times = np.asarray(timeseries["time"])
    labels, starts, firsts = _boundaries(times[0], len(times), times[1] - times[0] if len(times) > 1 else 0)
    sums = np.add.reduceat(np.tile(values, (len(PERIODS), 1)), firsts, axis=0)
    counts = np.diff(np.append(firsts, len(PERIODS) * len(times)))
    out = pd.DataFrame({
        "path": int(np.asarray(timeseries["path"])[0]),
        "period": labels,
        "start": starts,
        "hours": counts * step_h,
        "short": sums[:, 0] > 0,
        "hours_short": sums[:, 0] * step_h,
        "gpu_hours_short": sums[:, 1],
        **{name: sums[:, 2 + i] for i, name in enumerate(_SUMS)},
    })
    revenue = out["revenue_usd"].where(out["revenue_usd"] > 0)
    out["gross_margin_pct"] = 100.0 * out["gross_margin_usd"] / revenue
    return out


@lru_cache(maxsize=16)
def _boundaries(first: np.datetime64, n_steps: int, step: np.timedelta64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per period (years, then quarters, then months): its label, its calendar start, and the
    index of its first step in the steps' concatenation (one block of steps per kind)."""
    times = pd.DatetimeIndex(first + step * np.arange(n_steps))
    labels, starts, firsts = [], [], []
    for offset, (period, code) in enumerate(PERIODS.items()):
        begins = times.to_period(code).start_time
        change = np.flatnonzero(np.concatenate(([True], begins[1:] != begins[:-1])))
        labels += [period] * len(change)
        starts.append(begins[change].to_numpy())
        firsts.append(change + offset * n_steps)
    return np.array(labels), np.concatenate(starts), np.concatenate(firsts)


def summarize_periods(rows: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """One row per (period, start) over every path's rows from :func:`path_periods`."""
    out = []
    for (period, start), group in rows.groupby(["period", "start"], sort=False):
        n = len(group)
        row: dict[str, Any] = {"period": period, "start": start, "hours": float(group["hours"].iloc[0]), "paths": n}
        hits = int(group["short"].sum())
        row["p_short"] = hits / n
        row["p_short_lo"], row["p_short_hi"] = wilson_interval(hits, n, level)
        for name in ("gpu_hours_short", "hours_short"):
            values = group[name].to_numpy(dtype=np.float64)
            row[f"{name}_mean"] = float(values.mean())
            row[f"{name}_mean_lo"], row[f"{name}_mean_hi"] = _pair(mean_interval(values, level))
            _add_quantiles(row, name, values, {"p90": 0.9}, level)
        demand = group["demand_requests"].to_numpy(dtype=np.float64)
        unserved = group["unserved_requests"].to_numpy(dtype=np.float64)
        row["unserved_share"] = float(unserved.sum() / demand.sum()) if demand.sum() > 0 else 0.0
        shares = np.divide(unserved, demand, out=np.zeros_like(unserved), where=demand > 0)
        _add_quantiles(row, "unserved_share", shares, {"p90": 0.9}, level)
        for name in _MONEY:
            _add_quantiles(row, name, group[name].to_numpy(dtype=np.float64), _QUANTILES, level)
        revenue = float(group["revenue_usd"].sum())
        row["gross_margin_pct_pooled"] = 100.0 * float(group["gross_margin_usd"].sum()) / revenue if revenue > 0 else None
        out.append(row)
    table = pd.DataFrame(out)
    order = {name: i for i, name in enumerate(PERIODS)}
    return table.sort_values(["period", "start"], key=lambda c: c.map(order) if c.name == "period" else c,
                             kind="stable", ignore_index=True)


def periods_json(table: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``summary.json``'s ``periods``: for each of year, quarter, month, one entry per period
    with each figure and its interval as ``[lo, hi]``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for period in PERIODS:
        entries = []
        for _, row in table[table["period"] == period].iterrows():
            entry: dict[str, Any] = {"start": pd.Timestamp(row["start"]).isoformat(), "hours": row["hours"],
                                     "p_short": _figure(row, "p_short")}
            for name in ("gpu_hours_short", "hours_short"):
                entry[name] = {"mean": _figure(row, f"{name}_mean"), "p90": _figure(row, f"{name}_p90")}
            entry["unserved_share"] = {"pooled": _number(row["unserved_share"]),
                                       "p90": _figure(row, "unserved_share_p90")}
            for name in _MONEY:
                entry[name] = {q: _figure(row, f"{name}_{q}") for q in _QUANTILES}
            entry["gross_margin_pct"]["pooled"] = _number(row["gross_margin_pct_pooled"])
            entries.append(entry)
        out[period] = entries
    return out


def _add_quantiles(row: dict[str, Any], name: str, values: np.ndarray, quantiles: dict[str, float],
                   level: float) -> None:
    finite = np.sort(values[np.isfinite(values)])
    for label, q in quantiles.items():
        if not len(finite):
            row[f"{name}_{label}"] = row[f"{name}_{label}_lo"] = row[f"{name}_{label}_hi"] = None
            continue
        row[f"{name}_{label}"] = float(np.quantile(finite, q))
        low, high = quantile_rank_bounds(len(finite), q, level)
        row[f"{name}_{label}_lo"] = float(finite[low - 1]) if 1 <= low <= len(finite) else None
        row[f"{name}_{label}_hi"] = float(finite[high - 1]) if 1 <= high <= len(finite) else None


def _pair(interval: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    return tuple(None if v is None or not np.isfinite(v) else float(v) for v in interval)  # type: ignore[return-value]


def _figure(row: pd.Series, name: str) -> dict[str, Any]:
    return {"value": _number(row[name]), "ci": [_number(row[f"{name}_lo"]), _number(row[f"{name}_hi"])]}


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if not np.isfinite(value) else value
