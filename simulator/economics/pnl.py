"""The monthly income statement and cash flow of every path.

Months are calendar months (the first and last may be partial: the horizon's). Per month:

- revenue; COGS by component (inference compute and the capacity held for it, the
  external API, other infrastructure costs); gross margin = revenue − COGS;
- R&D compute by component (training, and all of a pool no model uses);
- operating expenses by ``opex`` line (:mod:`simulator.economics.opex`);
- EBITDA = gross margin − R&D compute − opex + D&A, where D&A is all depreciation (in COGS
  and R&D compute); EBIT = EBITDA − D&A (``operating_result_usd``); interest on the loans;
  EBT = EBIT − interest; tax = rate × EBT when positive; net income = EBT − tax
  (``net_result_usd``).

Cash: revenue and every cost but depreciation are paid as they accrue (so operating cash
flow = EBITDA − interest − tax), purchases are paid on delivery (capex); a share of each
month's capex is borrowed (in all at most the cap; past it purchases are paid from cash),
each loan repaid in equal monthly instalments (an annuity) from the month after. Net cash
flow = operating cash flow − capex + loans drawn − principal repaid; the cash balance
starts at ``opening_cash_usd``; the debt balance is the principal outstanding.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from simulator import group_sums
from simulator.group_sums import group_codes
from simulator.scenario.economics import Financing

_SUMMED = [
    "revenue_usd", "cost_usd", "cogs_usd", "rnd_compute_usd", "cost_depreciation_usd", "cost_cloud_usd",
    "cost_api_usd", "cost_energy_usd", "cost_facility_usd", "cost_other_usd", "rnd_depreciation_usd",
    "rnd_cloud_usd", "rnd_energy_usd", "rnd_facility_usd", "capex_usd", "demand_requests",
    "served_requests", "unserved_requests", "served_tokens",
]


def monthly_pnl(timeseries: pd.DataFrame | Mapping[str, np.ndarray], financing: Financing, step_s: float,
                opex: pd.DataFrame | None = None, tax_rate: float = 0.0) -> pd.DataFrame:
    """One row per (path, month): income statement, cash flow, cash and debt balances.

    ``opex``: USD per (month, line) (:func:`simulator.economics.opex.monthly_opex`).
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
    out["depreciation_amortization_usd"] = col["cost_depreciation_usd"]
    out["ebit_usd"] = out["gross_margin_usd"] - out["rnd_compute_usd"] - out["opex_usd"]
    out["ebitda_usd"] = out["ebit_usd"] + out["depreciation_amortization_usd"]
    out["operating_result_usd"] = out["ebit_usd"]
    out["capex_usd"] = col["capex_usd"]
    drawn, principal, interest = _financing(path, out["capex_usd"], financing)
    out["interest_usd"] = interest
    out["ebt_usd"] = out["ebit_usd"] - interest
    out["tax_usd"] = tax_rate * np.clip(out["ebt_usd"], 0.0, None)
    out["net_income_usd"] = out["ebt_usd"] - out["tax_usd"]
    out["net_result_usd"] = out["net_income_usd"]
    out["operating_cash_flow_usd"] = out["ebitda_usd"] - interest - out["tax_usd"]
    out["loan_drawn_usd"] = drawn
    out["loan_repaid_usd"] = principal
    out["cash_flow_usd"] = out["operating_cash_flow_usd"] - out["capex_usd"] + drawn - principal
    out["cumulative_cash_usd"] = _cumsum_by_path(path, out["cash_flow_usd"])
    out["cash_balance_usd"] = financing.opening_cash_usd + out["cumulative_cash_usd"]
    out["debt_balance_usd"] = _cumsum_by_path(path, out["loan_drawn_usd"] - out["loan_repaid_usd"])
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


def _cumsum_by_path(path: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sums within each path (pandas' grouped running sum: compensated, NaN skipped)."""
    return group_sums.running_sums(group_codes(path)[0], values)


def _financing(path: np.ndarray, capex_usd: np.ndarray, financing: Financing
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Loan drawn, principal repaid and interest per row, path by path."""
    n = len(path)
    drawn = np.zeros(n)
    principal = np.zeros(n)
    interest = np.zeros(n)
    if financing.share_of_capex <= 0:
        return drawn, principal, interest
    rate = financing.rate_per_year / 12.0
    months = max(1, round(financing.term_years * 12))
    cap = np.inf if financing.cap_usd is None else financing.cap_usd
    for _, rows in pd.Series(path).groupby(path).indices.items():
        capex = capex_usd[rows]
        wanted = financing.share_of_capex * capex
        # Draws in month order up to the cap; past it, purchases are paid from cash.
        loans = np.diff(np.minimum(np.cumsum(wanted), cap), prepend=0.0)
        balance = np.zeros(len(rows))  # outstanding balance of the loan drawn in month i
        paid = np.zeros(len(rows), dtype=np.int64)
        payment = loans * rate / (1 - (1 + rate) ** -months) if rate > 0 else loans / months
        for j in range(len(rows)):
            active = (np.arange(len(rows)) < j) & (paid < months) & (balance > 0)
            month_interest = balance[active] * rate
            month_principal = np.minimum(payment[active] - month_interest, balance[active])
            balance[active] -= month_principal
            paid[active] += 1
            interest[rows[j]] = month_interest.sum()
            principal[rows[j]] = month_principal.sum()
            balance[j] = loans[j]
            drawn[rows[j]] = loans[j]
    return drawn, principal, interest
