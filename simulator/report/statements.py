"""The report's financial statements, cash and unit economics, as rows of text.

Statements come from ``statements.parquet`` (one row per period kind, period and line, with
the mean and P10/P50/P90 over paths, :mod:`simulator.economics.statements`); unit economics
from ``unit_economics.parquet`` (per model over the horizon: means over paths and ratios of
those means, :mod:`simulator.economics.unit_economics`). Money is shown with
:func:`~simulator.report.headline.money_text`; a negative figure starts with a minus sign and
is drawn in red.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simulator.report.headline import money_text, percent, runway_text
from simulator.report.tables import _cell, _table

#: Totals and subtotals, set in bold.
TOTAL_LINES = {"cogs_usd", "gross_margin_usd", "ebitda_usd", "ebit_usd", "ebt_usd", "net_income_usd",
               "operating_cash_flow_usd", "investing_cash_flow_usd", "financing_cash_flow_usd", "cash_flow_usd",
               "total_assets_usd", "total_liabilities_usd", "total_equity_usd"}
#: Lines that open a part of the statement (a rule above them).
SECTION_LINES = {"rnd_compute_usd", "operating_cash_flow_usd", "cash_balance_usd", "dscr"}
PERIOD_NAMES = {"year": "Yearly", "quarter": "Quarterly", "month": "Monthly"}
_LENGTH = {"year": pd.DateOffset(years=1), "quarter": pd.DateOffset(months=3), "month": pd.DateOffset(months=1)}

#: How unit costs are attributed to models (``simulator.economics.unit_economics``).
ATTRIBUTION = (
    "Attribution: each pool's COGS goes to the models by the GPUs their replicas hold there, the pool's idle "
    "GPUs included, so a model carries the capacity it is served from; other infrastructure costs go by the "
    "GPUs each model holds fleet-wide; a model's external-API spend is its own. A model's cost is split "
    "between its input and output tokens in the ratio of what they sell for (input tokens × input price : "
    "output tokens × output price, the model's own prices if it has them). COGS of a pool in a step where no "
    "replica is placed on it is shown as unallocated.")


def _value_text(value: float | None, kind: str) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    if kind == "ratio":
        return f"{value:.1f}%".replace("-", "−")
    if kind == "multiple":
        return f"{value:.2f}×".replace("-", "−")
    if kind == "any":
        return f"{100 * value:.0f}% of paths"
    return money_text(value)


def period_label(kind: str, start: pd.Timestamp, begin: pd.Timestamp | None, end: pd.Timestamp | None) -> str:
    """``2026``, ``2026 Q2``, ``2026-03``; a period the horizon covers in part says how much."""
    start = pd.Timestamp(start)
    label = {"year": f"{start.year}", "quarter": f"{start.year} Q{start.quarter}"}.get(kind, start.strftime("%Y-%m"))
    if begin is None or end is None:
        return label
    stop = start + _LENGTH[kind]
    covered = min(stop, end) - max(start, begin)
    if covered >= stop - start:
        return label
    days = covered / pd.Timedelta(days=1)
    if kind == "month" or days < 59:
        return label + f" ({days:,.0f} d)"
    return label + f" ({round(days / 30.44)} mo)"


def _horizon(summary: dict[str, Any]) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    try:
        return pd.Timestamp(summary["start"]), pd.Timestamp(summary["end"])
    except (KeyError, ValueError, TypeError):
        return None, None


def statement_table(statements: pd.DataFrame, kind: str, summary: dict[str, Any], *,
                    bands: bool) -> dict[str, Any] | None:
    """One statement: rows the lines, columns the periods of ``kind``; each cell the P50 over
    paths, its P10–P90 below it when ``bands`` (and the paths differ), and every statistic in
    its title. None when the run has no statement of that kind."""
    rows = statements[statements["period_kind"] == kind]
    if not len(rows):
        return None
    periods = sorted(rows["period"].unique())
    begin, end = _horizon(summary)
    columns = ["Line", *(period_label(kind, p, begin, end) for p in periods)]
    lines = list(dict.fromkeys(rows["line"]))  # in statement order
    by_line = {line: group.set_index("period") for line, group in rows.groupby("line", sort=False)}
    out = []
    for line in lines:
        group = by_line[line]
        label, line_kind = str(group["label"].iloc[0]), str(group["kind"].iloc[0])
        classes = []
        if line in TOTAL_LINES:
            classes.append("total")
        if line in SECTION_LINES:
            classes.append("section")
        if line_kind == "ratio":
            classes.append("ratio")
        indent = label.startswith("  ") or label.startswith("COGS: ")
        cells = [{"text": label.strip(), "negative": False, "indent": indent}]
        for period in periods:
            if period not in group.index:
                cells.append(_cell(None))
                continue
            entry = group.loc[period]
            p50, p10, p90, mean = (float(entry[name]) for name in ("p50", "p10", "p90", "mean"))
            if line_kind == "any":  # a share of paths: the mean is the figure, no band
                cells.append({"text": _value_text(mean, line_kind), "negative": mean > 0,
                              "title": "share of paths with a covenant breach in some month of the period"})
                continue
            low, high = _value_text(p10, line_kind), _value_text(p90, line_kind)
            cell = {"text": _value_text(p50, line_kind), "negative": math.isfinite(p50) and p50 < 0,
                    "title": f"P10 {low} · P50 {_value_text(p50, line_kind)} · P90 {high} · mean "
                             f"{_value_text(mean, line_kind)}"}
            if bands and low != high:
                cell["band"] = f"{low} – {high}"
            cells.append(cell)
        out.append({"line": line, "classes": " ".join(classes), "cells": cells})
    return {"id": f"statement-{kind}", "columns": columns, "rows": out}


def statement_tables(statements: pd.DataFrame | None, summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The yearly statement (with P10–P90 under each P50) and the quarterly and monthly ones
    (P50, the rest in each cell's title), by period kind."""
    if statements is None or not len(statements):
        return {}
    tables = {kind: statement_table(statements, kind, summary, bands=kind == "year")
              for kind in ("year", "quarter", "month")}
    return {kind: table for kind, table in tables.items() if table is not None}


def _count(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= scale:
            return f"{value / scale:,.2f}{unit}"
    return f"{value:,.0f}"


def unit_cost(value: float | None) -> dict[str, Any]:
    """A unit cost with three significant digits: $0.0894, $0.000182, $1.50."""
    if value is None or not math.isfinite(value):
        return _cell(None)
    size = abs(value)
    digits = 2 if size == 0 or size >= 1 else min(8, 2 - math.floor(math.log10(size)))
    text = f"${size:,.{digits}f}"
    return {"text": text if value >= 0 else "−" + text, "negative": value < 0}


def _money(value: float | None) -> dict[str, Any]:
    if value is None or not math.isfinite(value):
        return _cell(None)
    return {"text": money_text(value), "negative": value < 0}


UNIT_COLUMNS = ["Model", "Requests served", "Revenue", "COGS attributed", "Gross margin", "Margin %",
                "Cost per 1M input tokens", "Cost per 1M output tokens", "Cost per request", "GPU-hours"]
UNALLOCATED = "unallocated"


def _horizon_rows(unit: pd.DataFrame | None, summary: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per model (and ``unallocated``), its figures over the whole horizon."""
    if unit is not None and len(unit) and "month" in unit:
        whole = unit[unit["month"].isna()]
        return {str(row["model"]): {c: (None if pd.isna(row[c]) else float(row[c]))
                                    for c in unit.columns if c not in ("month", "model")}
                for _, row in whole.iterrows()}
    return dict(summary.get("unit_economics") or {})


def unit_economics_table(unit: pd.DataFrame | None, summary: dict[str, Any]) -> dict[str, Any] | None:
    """Per model over the horizon: volume, revenue, attributed COGS, margin and unit costs
    (means over paths; every ratio the ratio of those means); COGS no model carries as its own
    row, and the total of them all (whose COGS is the P&L's)."""
    figures = _horizon_rows(unit, summary)
    if not figures:
        return None

    def value(entry: dict[str, Any], name: str) -> float | None:
        v = entry.get(name)
        return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)

    rows = []
    for model, entry in figures.items():
        if model == UNALLOCATED:
            continue
        margin_pct = value(entry, "gross_margin_pct")
        rows.append([_cell(model), _cell(_count(value(entry, "served_requests"))), _money(value(entry, "revenue_usd")),
                     _money(value(entry, "cogs_usd")), _money(value(entry, "gross_margin_usd")),
                     _cell(margin_pct, "pct"), unit_cost(value(entry, "cost_per_1m_input_tokens_usd")),
                     unit_cost(value(entry, "cost_per_1m_output_tokens_usd")),
                     unit_cost(value(entry, "cost_per_request_usd")), _cell(_count(value(entry, "gpu_hours")))])
    models = [entry for model, entry in figures.items() if model != UNALLOCATED]
    left = value(figures.get(UNALLOCATED, {}), "cogs_usd")
    if left is not None:
        rows.append([_cell("unallocated (COGS no model carries)"), _cell(None), _cell(None), _money(left),
                     *(_cell(None) for _ in range(6))])
    if len(models) > 1 or left:
        requests = sum(value(e, "served_requests") or 0.0 for e in models)
        revenue = sum(value(e, "revenue_usd") or 0.0 for e in models)
        cogs = sum(value(e, "cogs_usd") or 0.0 for e in models) + (left or 0.0)
        rows.append([_cell("All models"), _cell(_count(requests)), _money(revenue), _money(cogs),
                     _money(revenue - cogs), _cell(100 * (revenue - cogs) / revenue if revenue > 0 else None, "pct"),
                     _cell(None), _cell(None), unit_cost(cogs / requests if requests > 0 else None),
                     _cell(_count(sum(value(e, "gpu_hours") or 0.0 for e in models)))])
    return _table(UNIT_COLUMNS, rows)


def cash_finding(summary: dict[str, Any]) -> dict[str, str] | None:
    """The key finding on cash: the lowest month-end balance and how likely it goes negative."""
    cash = summary.get("cash") or {}
    low = cash.get("lowest_balance_usd")
    if not low or low.get("p50") is None:
        return None
    at = cash.get("lowest_balance_at_quantile")
    if at:  # each quantile is a path's own lowest balance, in that path's month
        value = f"P50 {_cash_at(at['p50'])}"
        note = (f"each path's lowest month-end balance over paths; P10 {_cash_at(at['p10'])} – "
                f"P90 {_cash_at(at['p90'])}")
    else:  # (a run of an earlier version)
        value = f"P50 {money_text(low['p50'])}"
        note = f"lowest month-end balance; P10 {money_text(low['p10'])} – P90 {money_text(low['p90'])}"
    share = cash.get("negative_probability")
    if share:
        first = (cash.get("first_negative_month") or {}).get("p50")
        interval = cash.get("negative_probability_ci")
        bounds = f" [{percent(interval[0])}–{percent(interval[1])}%]" if interval else ""
        note += (f"; {percent(share)}%{bounds} of paths end a month with negative cash"
                 + (f", first (P50) in {first[:7]}" if first else ""))
    elif share == 0:
        note += "; no path ends a month with negative cash"
    runway = cash.get("runway")
    if runway:
        note += "; runway " + ", ".join(" ".join(runway_text(name.upper(), runway[name])) for name in ("p50", "p10"))
    else:  # (a run of an earlier version)
        past = (cash.get("runway_past_horizon_months") or {}).get("p50")
        out_month = (cash.get("cash_out_month_extrapolated") or {}).get("p50")
        if past is not None and out_month:
            note += (f"; extrapolated at the last three months' burn, cash (P50) would run out in {out_month[:7]}, "
                     f"{past:,.0f} months past the horizon")
    return {"label": "Lowest cash balance", "value": value, "note": note}


def _cash_at(entry: dict[str, Any]) -> str:
    return money_text(entry["usd"]) + (f" in {entry['month'][:7]}" if entry.get("month") else "")


def covenant_finding(summary: dict[str, Any]) -> dict[str, str] | None:
    """The key finding on debt covenants: how likely a breach is, and when it is likeliest."""
    covenants = summary.get("covenants") or {}
    share = covenants.get("breach_probability")
    if share is None:
        return None
    low, high = covenants.get("breach_probability_ci") or (None, None)
    value = f"{percent(share)}%" + (f" [{percent(low)}–{percent(high)}%]" if low is not None else "")
    note = "of paths breach a covenant (DSCR or LTV) in some month"
    quarters = covenants.get("breach_by_quarter") or []
    if quarters:
        worst = max(quarters, key=lambda q: q["probability"])
        if worst["probability"] > 0:
            note += f"; likeliest in the quarter from {worst['quarter'][:7]} ({percent(worst['probability'])}%)"
    dscr = (covenants.get("worst_dscr") or {}).get("p50")
    if dscr is not None:
        note += f"; worst month's DSCR P50 {dscr:.2f}×".replace("-", "−")
    return {"label": "Covenant breach", "value": value, "note": note}


def contract_finding(summary: dict[str, Any]) -> dict[str, str] | None:
    """The key finding on capacity sold on contracts: what it brings and how much is delivered."""
    contracts = summary.get("contracts") or {}
    if not contracts:
        return None
    revenue = sum((entry["revenue_usd"]["p50"] or 0.0) for entry in contracts.values())
    parts = []
    for name, entry in contracts.items():
        delivered = entry.get("delivered_share")
        text = f"{name}: P50 {money_text(entry['revenue_usd']['p50'])}"
        if delivered is not None and delivered < 0.9995:
            text += f", {100 * delivered:.1f}% of contracted GPU-hours delivered"
        if entry.get("default_probability"):
            text += f", defaults on {percent(entry['default_probability'])}% of paths"
        parts.append(text)
    return {"label": "Contract book", "value": f"P50 {money_text(revenue)}",
            "note": "revenue from GPU-hours sold on contracts (sum of each contract's P50); " + "; ".join(parts)}
