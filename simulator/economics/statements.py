"""Financial statements by calendar month, quarter and year, across paths.

Each path's monthly P&L (:mod:`simulator.economics.pnl`) is rolled up to quarters and years:
flows (revenue, costs, cash flows) are summed, balances (cash, debt) are the period's last
month, and the gross margin % is the period's gross margin over its revenue. Across paths,
each line gets its mean and P10/P50/P90 (for a margin %, the mean is the ratio of the sums
over every path, so it is weighted by revenue).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

#: (column of pnl.parquet, label, kind) in statement order; opex lines are inserted after "opex".
LINES: tuple[tuple[str, str, str], ...] = (
    ("revenue_usd", "Revenue", "flow"),
    ("cogs_depreciation_usd", "COGS: depreciation", "flow"),
    ("cogs_cloud_usd", "COGS: cloud and API", "flow"),
    ("cogs_energy_usd", "COGS: energy", "flow"),
    ("cogs_facility_usd", "COGS: facility", "flow"),
    ("cogs_other_usd", "COGS: other infrastructure", "flow"),
    ("cogs_usd", "COGS", "flow"),
    ("gross_margin_usd", "Gross profit", "flow"),
    ("gross_margin_pct", "Gross margin %", "ratio"),
    ("rnd_compute_usd", "R&D compute (training)", "flow"),
    ("opex_usd", "Operating expenses", "flow"),
    ("ebitda_usd", "EBITDA", "flow"),
    ("depreciation_amortization_usd", "Depreciation and amortisation", "flow"),
    ("ebit_usd", "EBIT", "flow"),
    ("interest_usd", "Interest", "flow"),
    ("ebt_usd", "Earnings before tax", "flow"),
    ("tax_usd", "Tax", "flow"),
    ("net_income_usd", "Net income", "flow"),
    ("operating_cash_flow_usd", "Operating cash flow", "flow"),
    ("capex_usd", "Capex", "flow"),
    ("loan_drawn_usd", "Loans drawn", "flow"),
    ("loan_repaid_usd", "Principal repaid", "flow"),
    ("cash_flow_usd", "Net cash flow", "flow"),
    ("cash_balance_usd", "Cash balance (end)", "balance"),
    ("debt_balance_usd", "Debt balance (end)", "balance"),
)
PERIODS = {"month": "M", "quarter": "Q", "year": "Y"}
QUANTILES = {"p10": 0.1, "p50": 0.5, "p90": 0.9}


def statement_lines(pnl: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The statement's lines for this P&L: :data:`LINES` with each opex line after the total."""
    opex = [c for c in pnl.columns if c.startswith("opex_") and c != "opex_usd"]
    lines = []
    for line in LINES:
        lines.append(line)
        if line[0] == "opex_usd":
            lines.extend((c, "  " + c[len("opex_"):-len("_usd")].replace("_", " "), "flow") for c in opex)
    return [line for line in lines if line[0] in pnl.columns]


def path_statements(pnl: pd.DataFrame) -> pd.DataFrame:
    """One row per (period kind, period, path): every statement line of that path."""
    lines = statement_lines(pnl)
    flows = [c for c, _, kind in lines if kind == "flow"]
    balances = [c for c, _, kind in lines if kind == "balance"]
    frames = []
    for kind, freq in PERIODS.items():
        period = pnl["month"].dt.to_period(freq).dt.start_time
        grouped = pnl.assign(period=period).sort_values(["path", "month"]).groupby(["path", "period"], sort=True)
        rolled = grouped[flows].sum().join(grouped[balances].last())
        revenue = rolled["revenue_usd"].where(rolled["revenue_usd"] > 0)
        rolled["gross_margin_pct"] = 100.0 * rolled["gross_margin_usd"] / revenue
        frames.append(rolled.reset_index().assign(period_kind=kind))
    return pd.concat(frames, ignore_index=True)


def statements(pnl: pd.DataFrame) -> pd.DataFrame:
    """One row per (period kind, period, line): ``mean, p10, p50, p90`` across paths."""
    per_path = path_statements(pnl)
    lines = statement_lines(pnl)
    columns = [column for column, _, _ in lines]
    rows = []
    for (kind, period), group in per_path.groupby(["period_kind", "period"], sort=False):
        values = group[columns].to_numpy(dtype=float)  # paths × lines
        values[~np.isfinite(values)] = np.nan
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a line with no finite value: NaN
            quantiles = np.nanquantile(values, list(QUANTILES.values()), axis=0)
            means = np.nanmean(values, axis=0)
            revenue = group["revenue_usd"].sum()
            # A margin's mean is the ratio of the sums (a vanishing revenue gives ±inf).
            ratio_mean = 100.0 * group["gross_margin_usd"].sum() / revenue if revenue > 0 else np.nan
        for j, (column, label, line_kind) in enumerate(lines):
            rows.append({"period_kind": kind, "period": period, "line": column, "label": label, "kind": line_kind,
                         "mean": ratio_mean if line_kind == "ratio" else float(means[j]),
                         **{name: float(quantiles[i, j]) for i, name in enumerate(QUANTILES)}})
    return pd.DataFrame(rows)  # months, then quarters, then years; periods in order; lines in order


def cash_figures(pnl: pd.DataFrame) -> pd.DataFrame:
    """Per path: the lowest month-end cash balance, its month, and the first month that ends
    with negative cash (NaT: none) with the months of runway before it."""
    ordered = pnl.sort_values(["path", "month"])
    rows = []
    for path, group in ordered.groupby("path", sort=True):
        cash = group["cash_balance_usd"].to_numpy()
        months = group["month"].to_numpy()
        low = int(np.argmin(cash))
        negative = np.flatnonzero(cash < 0)
        rows.append({"path": path, "lowest_cash_usd": float(cash[low]), "lowest_cash_month": months[low],
                     "first_negative_month": months[negative[0]] if len(negative) else pd.NaT,
                     "runway_months": float(negative[0]) if len(negative) else np.nan})
    return pd.DataFrame(rows)
