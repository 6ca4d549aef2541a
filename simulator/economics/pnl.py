"""The monthly income statement and cash flow of every path.

Months are calendar months (the first and last may be partial: the horizon's). Per month:

- revenue; COGS by component (inference compute and the capacity held for it, the
  external API, other infrastructure costs); gross margin = revenue − COGS;
- R&D compute by component (training, and all of a pool no model uses);
- operating expenses by ``opex`` line (:mod:`simulator.economics.opex`);
- EBITDA = gross margin − R&D compute − opex + D&A, where D&A is all depreciation (in COGS
  and R&D compute); EBIT = EBITDA − D&A (``operating_result_usd``).

Below EBIT, and every balance, come from the path's books (:mod:`simulator.economics.books`):
EBT = EBIT + other income (late-delivery credits) + gains on GPUs sold − interest − financing
fees; tax as the scenario's ``taxes`` say; net income = EBT − tax (``net_result_usd``). The
balance sheet (cash, deposits, GPUs at cost less accumulated depreciation; debt by facility,
tax payable; paid-in capital, retained earnings) and the cash flow (operating, investing,
financing) are views of the path's ledger. Without purchase terms, GPU sales, facilities,
equity or loss carry-forward, these are as before: operating cash flow = EBITDA − interest −
tax, purchases paid on delivery, the ``share_of_capex`` loan drawn on each month's capex up to
its cap and repaid in equal monthly instalments from the month after.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from simulator import group_sums
from simulator.economics.books import BookTerms, PathAssets, month_bounds, path_books, site_months
from simulator.group_sums import group_codes
from simulator.scenario.economics import Financing, Taxes

_SUMMED = [
    "revenue_usd", "cost_usd", "cogs_usd", "rnd_compute_usd", "cost_depreciation_usd", "cost_cloud_usd",
    "cost_api_usd", "cost_energy_usd", "cost_facility_usd", "cost_other_usd", "rnd_depreciation_usd",
    "rnd_cloud_usd", "rnd_energy_usd", "rnd_facility_usd", "capex_usd", "demand_requests",
    "served_requests", "unserved_requests", "served_tokens",
]


def monthly_pnl(timeseries: pd.DataFrame | Mapping[str, np.ndarray], financing: Financing, step_s: float,
                opex: pd.DataFrame | None = None, tax_rate: float = 0.0, taxes: Taxes | None = None,
                terms: BookTerms | None = None, assets: Mapping[int, PathAssets] | None = None) -> pd.DataFrame:
    """One row per (path, month): income statement, balance sheet, cash flow, covenants.

    ``opex``: USD per (month, line) (:func:`simulator.economics.opex.monthly_opex`). ``terms``
    and ``assets`` (per path) give the books the pools, their GPUs' log and purchase terms
    (:mod:`simulator.economics.books`); without them every purchase is paid on delivery and no
    GPU is sold. ``taxes`` (default: ``tax_rate`` on each month's profit).
    """
    time = np.asarray(timeseries["time"])
    column = {name: np.asarray(timeseries[name]) for name in
              ("path", *_SUMMED, "utilization", "gpus_available", "subscribers")}
    codes, (paths, months) = group_codes(column["path"], time.astype("datetime64[M]"))
    # Each month's start as pandas writes it (its unit too), from the few months there are.
    months = pd.Series(months.astype(time.dtype)).dt.to_period("M").dt.start_time.to_numpy()
    monthly = pd.DataFrame(group_sums.sums(codes, len(paths), {
        **{name: column[name] for name in _SUMMED},
        "busy": column["utilization"] * column["gpus_available"],
        "gpus_available": column["gpus_available"],
        "subscriber_months": column["subscribers"] * step_s / (365.25 / 12 * 86400),
    }), index=pd.MultiIndex.from_arrays([paths, months], names=["path", "month"]))
    if opex is not None and len(opex.index):
        # Every calendar month of the horizon has a row, even one in which no step starts
        # (steps of a month or more): its opex is still paid.
        months = monthly.index.get_level_values("month").unique().union(opex.index)
        paths = monthly.index.get_level_values("path").unique()
        full = pd.MultiIndex.from_product([paths, months], names=["path", "month"])
        monthly = monthly.reindex(full, fill_value=0.0)
    monthly = monthly.reset_index()
    # Columns as arrays, assembled into the frame once (inserting ~45 columns one by one into a
    # DataFrame cost more than all the rest of a path's statements).
    col = {name: monthly[name].to_numpy() for name in monthly.columns}
    path = col["path"]
    out: dict[str, np.ndarray] = {"path": path, "month": col["month"]}
    out["revenue_usd"] = col["revenue_usd"]
    for name in ("depreciation", "cloud", "energy", "facility"):
        out[f"cogs_{name}_usd"] = col[f"cost_{name}_usd"] - col[f"rnd_{name}_usd"]
    out["cogs_api_usd"] = col["cost_api_usd"]  # part of cogs_cloud_usd
    out["cogs_other_usd"] = col["cost_other_usd"]
    out["cogs_usd"] = col["cogs_usd"]
    out["gross_margin_usd"] = out["revenue_usd"] - out["cogs_usd"]
    revenue = np.where(out["revenue_usd"] > 0, out["revenue_usd"], np.nan)
    with np.errstate(all="ignore"):  # ratios of tiny or missing parts: inf or NaN, as pandas gives
        out["gross_margin_pct"] = 100.0 * out["gross_margin_usd"] / revenue
    for name in ("depreciation", "cloud", "energy", "facility"):
        out[f"rnd_{name}_usd"] = col[f"rnd_{name}_usd"]
    out["rnd_compute_usd"] = col["rnd_compute_usd"]
    lines = opex if opex is not None else pd.DataFrame(index=pd.DatetimeIndex([], name="month"))
    months = pd.Series(col["month"])
    for name in lines.columns:
        out[f"opex_{name}_usd"] = months.map(lines[name]).fillna(0.0).to_numpy()
    out["opex_usd"] = (np.sum([out[f"opex_{name}_usd"] for name in lines.columns], axis=0)
                       if len(lines.columns) else np.zeros(len(path)))
    site_capex, site_depreciation = _site(path, col["month"], terms, assets)
    out["site_depreciation_usd"] = site_depreciation  # power upgrades: below gross margin, in D&A
    out["depreciation_amortization_usd"] = col["cost_depreciation_usd"] + site_depreciation
    out["ebit_usd"] = out["gross_margin_usd"] - out["rnd_compute_usd"] - out["opex_usd"] - site_depreciation
    out["ebitda_usd"] = out["ebit_usd"] + out["depreciation_amortization_usd"]
    out["operating_result_usd"] = out["ebit_usd"]
    out["capex_usd"] = col["capex_usd"] + site_capex
    out["site_capex_usd"] = site_capex
    booked = _books(path, col["month"], out, financing, taxes if taxes is not None else Taxes(rate=tax_rate),
                    terms, assets, time, step_s)
    out.update(booked)
    out["net_result_usd"] = out["net_income_usd"]
    out["cumulative_cash_usd"] = _cumsum_by_path(path, out["cash_flow_usd"])
    out["served_tokens"] = col["served_tokens"]
    tokens = np.where(out["served_tokens"] > 0, out["served_tokens"] / 1e6, np.nan)
    with np.errstate(all="ignore"):
        out["cost_per_1m_tokens_usd"] = out["cogs_usd"] / tokens
    out["subscriber_months"] = col["subscriber_months"]
    out["demand_requests"] = col["demand_requests"]
    out["unserved_requests"] = col["unserved_requests"]
    available = np.where(col["gpus_available"] > 0, col["gpus_available"], np.nan)
    with np.errstate(all="ignore"):
        utilization = col["busy"] / available
    out["utilization"] = np.where(np.isnan(utilization), 0.0, utilization)
    return pd.DataFrame(out)


def _site(path: np.ndarray, month: np.ndarray, terms: BookTerms | None,
          assets: Mapping[int, PathAssets] | None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's capex and depreciation of the site power upgrades energized on its path."""
    capex, depreciation = np.zeros(len(path)), np.zeros(len(path))
    if terms is None or not assets or not any(a.site for a in assets.values()):
        return capex, depreciation
    for p, rows in pd.Series(path).groupby(path, sort=False).indices.items():
        held = assets.get(int(p))
        if held is not None and held.site:
            starts_s, ends_s = month_bounds(month[rows], terms)
            capex[rows], depreciation[rows] = site_months(held.site, starts_s, ends_s)
    return capex, depreciation


def _cumsum_by_path(path: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sums within each path (pandas' grouped running sum: compensated, NaN skipped)."""
    return group_sums.running_sums(group_codes(path)[0], values)


def _books(path: np.ndarray, month: np.ndarray, out: dict[str, np.ndarray], financing: Financing, taxes: Taxes,
           terms: BookTerms | None, assets: Mapping[int, PathAssets] | None, time: np.ndarray,
           step_s: float) -> dict[str, np.ndarray]:
    """Each path's books (its rows are consecutive and in month order), as columns."""
    if terms is None:
        start = pd.Timestamp(time.min())
        horizon_s = (pd.Timestamp(time.max()) - start).total_seconds() + step_s
        terms = BookTerms(financing, taxes, start, horizon_s)
    columns: dict[str, np.ndarray] = {}
    for p, rows in pd.Series(path).groupby(path, sort=False).indices.items():
        part = {name: values[rows] for name, values in out.items() if name not in ("path", "month")}
        booked = path_books(part, month[rows], terms, None if assets is None else assets.get(int(p)))
        for name, values in booked.items():
            columns.setdefault(name, np.full(len(path), np.nan))[rows] = values
    return columns
