"""Unit economics per served model and calendar month: what serving it costs and earns.

Attribution (done step by step by the step kernel): each pool's COGS goes to the
models by the GPUs their replicas hold there, idle GPUs of the pool included, so a model
carries the capacity it is served from; other infrastructure costs go by the GPUs held
fleet-wide; a model's external-API spend is its own. COGS of a serving pool in a step where
no replica is placed on it stays ``unallocated``.

A model's cost is split between its input and output tokens in proportion to what they
sell for (``input_tokens × input price : output_tokens × output price``, the model's own
prices if it has them), by token count when both prices are zero. Figures across paths are
the means of each path's sums, and every ratio is the ratio of those means (weighted by
volume): cost per 1M input tokens, per 1M output tokens, per request; gross margin and %.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.scenario import Scenario

UNALLOCATED = "unallocated"
_SUMS = ("served_requests", "input_tokens", "output_tokens", "revenue_usd", "cogs_usd", "api_cost_usd", "gpu_hours")


def input_cost_shares(scenario: Scenario) -> dict[str, float]:
    """Per model, the share of its cost its input tokens carry."""
    shares = {}
    for model in scenario.models:
        price = scenario.pricing_of(model)
        tokens_in, tokens_out = model.demand.input_tokens, model.demand.output_tokens
        w_in, w_out = tokens_in * price.input_usd_per_1m, tokens_out * price.output_usd_per_1m
        if w_in + w_out <= 0:
            w_in, w_out = tokens_in, tokens_out
        shares[model.name] = w_in / (w_in + w_out) if w_in + w_out > 0 else 0.0
    return shares


def path_unit_economics(path: int, per_step: dict[str, np.ndarray], times: pd.DatetimeIndex, scenario: Scenario,
                        step_s: float) -> pd.DataFrame:
    """One row per (month, model) of one path: the sums the ratios are made of.

    ``per_step`` holds (n_steps, n_models) arrays ``served_requests, revenue_usd, cogs_usd,
    api_cost_usd, gpus_held``.
    """
    months, codes = np.unique(times.to_period("M").start_time.values, return_inverse=True)
    rows = []
    for m, model in enumerate(scenario.models):

        def monthly(name: str, m: int = m) -> np.ndarray:
            return np.bincount(codes, weights=per_step[name][:, m], minlength=len(months))

        served = monthly("served_requests")
        rows.append(pd.DataFrame({
            "path": path, "month": months, "model": model.name, "served_requests": served,
            "input_tokens": served * model.demand.input_tokens, "output_tokens": served * model.demand.output_tokens,
            "revenue_usd": monthly("revenue_usd"), "cogs_usd": monthly("cogs_usd"),
            "api_cost_usd": monthly("api_cost_usd"), "gpu_hours": monthly("gpus_held") * step_s / 3600.0,
        }))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["path", "month", "model", *_SUMS])


def unit_economics(per_path: pd.DataFrame, pnl: pd.DataFrame, shares: dict[str, float]) -> pd.DataFrame:
    """One row per (month, model), and per model over the whole horizon (``month`` NaT):
    means over paths and the ratios of those means; a row ``unallocated`` per month holds the
    COGS no model carries, so the rows add up to the P&L's COGS."""
    if not len(per_path):
        return pd.DataFrame()
    paths = max(per_path["path"].nunique(), 1)
    allocated = per_path.groupby(["path", "month"])["cogs_usd"].sum()
    total = pnl.set_index(["path", "month"])["cogs_usd"]
    left = (total - allocated.reindex(total.index, fill_value=0.0)).groupby(level="month").sum() / paths
    left = left.where(left.abs() > 1e-9 * max(float(total.abs().max()), 1.0), 0.0)  # rounding, not cost
    monthly = per_path.groupby(["month", "model"], sort=True)[list(_SUMS)].sum() / paths
    horizon = per_path.groupby("model", sort=False)[list(_SUMS)].sum() / paths
    table = pd.concat([monthly.reset_index(), horizon.reset_index().assign(month=pd.NaT)], ignore_index=True)
    share_in = table["model"].map(shares)
    table["cost_per_1m_input_tokens_usd"] = _ratio(table["cogs_usd"] * share_in, table["input_tokens"] / 1e6)
    table["cost_per_1m_output_tokens_usd"] = _ratio(table["cogs_usd"] * (1 - share_in), table["output_tokens"] / 1e6)
    table["cost_per_request_usd"] = _ratio(table["cogs_usd"], table["served_requests"])
    table["gross_margin_usd"] = table["revenue_usd"] - table["cogs_usd"]
    table["gross_margin_pct"] = 100.0 * _ratio(table["gross_margin_usd"], table["revenue_usd"])
    idle = pd.DataFrame({"month": left.index, "model": UNALLOCATED, "cogs_usd": left.to_numpy()})
    idle = pd.concat([idle, pd.DataFrame({"month": [pd.NaT], "model": [UNALLOCATED], "cogs_usd": [left.sum()]})])
    table = pd.concat([table, idle], ignore_index=True)
    return table[["month", "model", *_SUMS, "cost_per_1m_input_tokens_usd", "cost_per_1m_output_tokens_usd",
                  "cost_per_request_usd", "gross_margin_usd", "gross_margin_pct"]]


def _ratio(numerator: pd.Series, denominator: pd.Series) -> pd.Series:
    return numerator / denominator.where(denominator > 0)


def unit_economics_json(table: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """Per model (and ``unallocated``), its figures over the whole horizon, for ``summary.json``."""
    if not len(table):
        return {}
    whole = table[table["month"].isna()]
    columns = [c for c in table.columns if c not in ("month", "model")]
    return {row["model"]: {c: (float(row[c]) if np.isfinite(row[c]) else None) for c in columns}
            for _, row in whole.iterrows()}
