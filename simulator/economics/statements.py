"""Financial statements by calendar month, quarter and year, across paths.

Each path's monthly P&L, balance sheet, cash flow and covenants (:mod:`simulator.economics.pnl`)
are rolled up to quarters and years: flows (revenue, costs, cash flows) are summed, balances
(cash, debt, the balance sheet, the DSCR and LTVs) are the period's last month, a covenant
breach is any month's (so its mean over paths is the probability of a breach in the period),
and the gross margin % is the period's gross margin over its revenue. Across paths,
each line gets its mean and P10/P50/P90 (for a margin %, the mean is the ratio of the sums
over every path, so it is weighted by revenue).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

#: (column of pnl.parquet, label, kind) in statement order; opex lines are inserted after "opex".
#: Kinds: ``flow`` (summed over a period), ``balance`` (the period's last month), ``ratio`` (a
#: margin %), ``multiple`` (DSCR, LTV: the period's last month, a ratio shown as 1.25×), ``any``
#: (1 if any month of the period, so its mean over paths is a probability).
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
    ("other_income_usd", "Other income (late-delivery credits, prepayments kept)", "flow"),
    ("late_credits_usd", "  of which late-delivery credits", "flow"),
    ("gain_on_sale_usd", "Gain (loss) on GPUs sold", "flow"),
    ("interest_usd", "Interest", "flow"),
    ("financing_fees_usd", "Financing fees", "flow"),
    ("ebt_usd", "Earnings before tax", "flow"),
    ("tax_usd", "Tax", "flow"),
    ("net_income_usd", "Net income", "flow"),
    ("tax_paid_usd", "Tax paid", "flow"),
    # Cash flow
    ("deferred_revenue_change_usd", "Contract prepayments less revenue recognised from them", "flow"),
    ("operating_cash_flow_usd", "Operating cash flow", "flow"),
    ("capex_usd", "Capex", "flow"),
    ("gpu_payments_usd", "GPUs paid (deposits and balances, net of credits)", "flow"),
    ("sale_proceeds_usd", "GPUs sold (proceeds)", "flow"),
    ("investing_cash_flow_usd", "Investing cash flow", "flow"),
    ("loan_drawn_usd", "Loans drawn", "flow"),
    ("loan_repaid_usd", "Principal repaid", "flow"),
    ("equity_raised_usd", "Equity raised", "flow"),
    ("financing_cash_flow_usd", "Financing cash flow", "flow"),
    ("cash_flow_usd", "Net cash flow", "flow"),
    # Balance sheet (period end)
    ("cash_balance_usd", "Cash balance (end)", "balance"),
    ("deposits_usd", "GPU deposits paid", "balance"),
    ("ppe_cost_usd", "GPUs at cost", "balance"),
    ("accumulated_depreciation_usd", "Accumulated depreciation", "balance"),
    ("ppe_net_usd", "GPUs, net book value", "balance"),
    ("total_assets_usd", "Total assets", "balance"),
    ("debt_balance_usd", "Debt balance (end)", "balance"),
    ("tax_payable_usd", "Income tax payable", "balance"),
    ("deferred_revenue_usd", "Deferred revenue", "balance"),
    ("total_liabilities_usd", "Total liabilities", "balance"),
    ("paid_in_capital_usd", "Paid-in capital", "balance"),
    ("retained_earnings_usd", "Retained earnings", "balance"),
    ("total_equity_usd", "Total equity", "balance"),
    ("fleet_market_value_usd", "GPUs at market value", "balance"),
    ("carried_loss_usd", "Tax losses carried forward", "balance"),
    # Covenants
    ("dscr", "DSCR (trailing, period end)", "multiple"),
    ("covenant_breach", "Covenant breached (any month)", "any"),
)
PERIODS = {"month": "M", "quarter": "Q", "year": "Y"}
QUANTILES = {"p10": 0.1, "p50": 0.5, "p90": 0.9}


def statement_lines(pnl: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The statement's lines for this P&L: :data:`LINES` with each opex line after the total,
    each facility's debt before the total debt, and each facility's LTV after the DSCR."""
    opex = [c for c in pnl.columns if c.startswith("opex_") and c != "opex_usd"]
    debt = [c for c in pnl.columns if c.startswith("debt_") and c != "debt_balance_usd"]
    ltv = [c for c in pnl.columns if c.startswith("ltv_")]
    lines = []
    for line in LINES:
        if line[0] == "debt_balance_usd":
            lines.extend((c, "  debt: " + c[len("debt_"):-len("_usd")].replace("_", " "), "balance") for c in debt)
        lines.append(line)
        if line[0] == "opex_usd":
            lines.extend((c, "  " + c[len("opex_"):-len("_usd")].replace("_", " "), "flow") for c in opex)
        if line[0] == "dscr":
            lines.extend((c, "LTV: " + c[len("ltv_"):].replace("_", " "), "multiple") for c in ltv)
    return [line for line in lines if line[0] in pnl.columns]


def path_statements(pnl: pd.DataFrame) -> pd.DataFrame:
    """One row per (period kind, period, path): every statement line of that path."""
    lines = statement_lines(pnl)
    flows = [c for c, _, kind in lines if kind == "flow"]
    balances = [c for c, _, kind in lines if kind in ("balance", "multiple")]
    anys = [c for c, _, kind in lines if kind == "any"]
    frames = []
    for kind, freq in PERIODS.items():
        period = pnl["month"].dt.to_period(freq).dt.start_time
        grouped = pnl.assign(period=period).sort_values(["path", "month"]).groupby(["path", "period"], sort=True)
        rolled = grouped[flows].sum().join(grouped[balances].last()).join(grouped[anys].max())
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


def recurring_cash_flow(pnl: pd.DataFrame) -> np.ndarray:
    """Each row's cash flow before new money and one-off investing flows: the operating and
    financing cash flows less loans drawn and equity raised (the whole cash flow less those,
    for books without sections)."""
    if "operating_cash_flow_usd" in pnl and "financing_cash_flow_usd" in pnl:
        flow = pnl["operating_cash_flow_usd"].to_numpy(dtype=float) + pnl["financing_cash_flow_usd"].to_numpy(dtype=float)
    else:
        flow = pnl["cash_flow_usd"].to_numpy(dtype=float)
    for raised in ("loan_drawn_usd", "equity_raised_usd"):
        if raised in pnl:
            flow = flow - pnl[raised].to_numpy(dtype=float)
    return flow


def month_fractions(months: np.ndarray, start: pd.Timestamp | None, end: pd.Timestamp | None) -> np.ndarray:
    """The share of each calendar month (given by its first day) inside [start, end)."""
    first = pd.DatetimeIndex(months)
    following = first + pd.offsets.MonthBegin(1)
    low = first if start is None else first.where(first >= _naive(start), _naive(start))
    high = following if end is None else following.where(following <= _naive(end), _naive(end))
    return np.clip((high - low) / (following - first), 0.0, 1.0)


def _naive(instant: pd.Timestamp) -> pd.Timestamp:
    """``instant`` as the pnl's months are written (UTC, without a zone)."""
    instant = pd.Timestamp(instant)
    return instant.tz_convert("UTC").tz_localize(None) if instant.tzinfo is not None else instant


#: Months whose burn rate runway past the horizon is extrapolated at.
BURN_MONTHS = 3
MAX_RUNWAY_MONTHS = 1200


def cash_figures(pnl: pd.DataFrame, start: pd.Timestamp | None = None,
                 end: pd.Timestamp | None = None) -> pd.DataFrame:
    """Per path: the lowest month-end cash balance, its month, and the first month that ends
    with negative cash (NaT: none) with the months of runway before it.

    Past the horizon, an extrapolation at the *burn* of the last three months: what the
    business spends month after month, debt service included, before new money and before
    purchases (the operating and financing cash flows, less loans drawn and equity raised;
    GPU purchases, deposits and sales are one-off investing flows a burn rate does not repeat),
    per month of the horizon those months cover (a last month the horizon holds for 10 days
    counts as a third of one; ``start`` and ``end`` are the horizon's, when given). From it:
    the months the closing cash lasts (``runway_past_horizon_months``: NaN if cash was not
    falling, else 0 if cash ended at or below zero) and the month it would run out; that burn
    (``burn_end_usd_per_month``, negative: cash rising), the closing cash and the months."""
    ordered = pnl.sort_values(["path", "month"])
    rows = []
    for path, group in ordered.groupby("path", sort=True):
        cash = group["cash_balance_usd"].to_numpy()
        months = group["month"].to_numpy()
        low = int(np.argmin(cash))
        negative = np.flatnonzero(cash < 0)
        spent = recurring_cash_flow(group)
        covered = month_fractions(months, start, end)
        burn = -float(np.sum(spent[-BURN_MONTHS:]) / max(np.sum(covered[-BURN_MONTHS:]), 1e-9))
        past = np.nan if burn <= 0 else (0.0 if cash[-1] <= 0 else cash[-1] / burn)  # not falling: no runway
        past = past if past <= MAX_RUNWAY_MONTHS else np.nan  # a burn too small to run out within a century
        out_month = pd.NaT if not np.isfinite(past) else (
            pd.Timestamp(months[-1]).to_period("M") + 1 + int(np.floor(past))).start_time
        rows.append({"path": path, "lowest_cash_usd": float(cash[low]), "lowest_cash_month": months[low],
                     "first_negative_month": months[negative[0]] if len(negative) else pd.NaT,
                     "runway_months": float(negative[0]) if len(negative) else np.nan,
                     "runway_past_horizon_months": past, "cash_out_month_extrapolated": out_month,
                     "burn_end_usd_per_month": burn, "cash_end_usd": float(cash[-1]), "months": len(cash)})
    return pd.DataFrame(rows)
