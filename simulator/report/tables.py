"""The report's tables and key findings, as plain rows of text (the template escapes them;
the assumptions are :mod:`simulator.report.assumptions`).

A table is ``{"columns": [...], "rows": [[{"text": ..., "negative": bool}, ...], ...]}``.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simulator.path.tables import COST_COMPONENTS
from simulator.report.headline import STATISTICS, headline, money_text, period_rows

#: The contract's cost components (``simulator.path.tables.COST_COMPONENTS``) as a reader names them.
COST_LABELS = dict(zip(COST_COMPONENTS, ("depreciation", "cloud and API", "energy", "facility", "other costs"),
                       strict=True))


def _cell(value: Any, kind: str = "text") -> dict[str, Any]:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return {"text": "–", "negative": False}
    if kind == "usd":
        size = abs(value)
        digits = 0 if size >= 1000 else 2 if size >= 10 else 3  # unit costs are cents apart
        text = f"${size:,.{digits}f}"
        return {"text": text if value >= 0 else "−" + text, "negative": value < 0}
    if kind == "pct":
        return {"text": f"{value:.1f}%", "negative": value < 0}
    if kind == "share":
        return {"text": f"{value:.1%}", "negative": False}
    if kind == "number":
        return {"text": f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}", "negative": value < 0}
    return {"text": str(value), "negative": False}


def _table(columns: list[str], rows: list[list[dict[str, Any]]]) -> dict[str, Any]:
    return {"columns": columns, "rows": rows}


def headline_table(summary: dict[str, Any]) -> dict[str, Any]:
    return _table(["Figure", "Value", "Statistic"],
                  [[_cell(label), _cell(text), _cell(STATISTICS.get(label, ""))] for label, text in headline(summary)])


#: The by-year columns with the statistic each shows.
YEAR_COLUMNS = {"P(short) %": "P(short) % [90% interval]", "GPU-h short": "GPU-h short (mean)",
                "revenue $M": "revenue $M (P50)", "margin $M": "gross margin $M (P50)",
                "margin %": "margin % (P50) [90% interval]"}


def years_table(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The run's figures per calendar year (None for a run without periods)."""
    rows = period_rows(summary, "year")
    if not rows:
        return None
    return _table([YEAR_COLUMNS.get(c, c) for c in rows[0]], [[_cell(text) for text in row.values()] for row in rows])


def comparison_table(comparison: pd.DataFrame) -> dict[str, Any]:
    """Headline figures side by side: one row per variant or run."""
    kinds = {"share_served_p50": "share", "share_served_pooled": "share", "slo_attainment_pooled": "share",
             "shortfall_probability": "share", "utilization_p50": "share",
             "gross_margin_pct_p50": "pct"}
    rows = []
    for _, row in comparison.iterrows():
        cells = []
        for column in comparison.columns:
            value = row[column]
            if isinstance(value, str):
                cells.append(_cell(value[:10] if column in DATE_COLUMNS and _is_timestamp(value) else value))
            elif pd.isna(value):
                cells.append(_cell(None))
            elif "_usd_" in column and "_per_" in column:
                cells.append(_cell(float(value), "usd"))  # a unit cost keeps its cents
            elif "_usd_" in column:
                cells.append({"text": money_text(float(value)), "negative": float(value) < 0})
            else:
                cells.append(_cell(float(value), kinds.get(column, "number")))
        rows.append(cells)
    return _table([str(column).replace("_", " ") for column in comparison.columns], rows)


#: Comparison columns holding timestamps, shown as dates.
DATE_COLUMNS = ("first_shortfall_p50", "payback_month_p50")


def _is_timestamp(text: str) -> bool:
    return len(text) >= 10 and text[4:5] == "-" and text[7:8] == "-" and text[:4].isdigit()


def forecast_table(scenario: dict[str, Any]) -> dict[str, Any] | None:
    """Each demand forecast fitted from a history: the model chosen, its growth, the change found,
    its bands and its backtest (the lines ``fleetcast fit-demand`` prints), one row each."""
    rows = []
    for model in scenario.get("models", []):
        forecast = (model.get("demand") or {}).get("forecast")
        if not forecast:
            continue
        for line in forecast.get("notes") or [f"{forecast.get('model', 'ETS')} (written in the scenario)"]:
            rows.append([_cell(model.get("name")), _cell(line)])
    return _table(["Model", "Forecast fitted to its history"], rows) if rows else None


def key_findings(summary: dict[str, Any]) -> list[dict[str, str]]:
    """The few sentences a reader wants first: when it runs short, when margin turns, what costs most."""
    findings = []
    first = summary["first_shortfall_time"]
    if not first["probability"]:
        findings.append({"label": "First shortfall", "value": "none within the horizon",
                         "note": f"no path of {summary['paths']:,} runs short"})
    else:
        def day(value: str | None) -> str:
            return "after the horizon" if value is None else value[:10]

        findings.append({"label": "First shortfall", "value": f"P50 {day(first['p50'])}",
                         "note": f"P10 {day(first['p10'])} – P90 {day(first['p90'])}; "
                                 f"{first['probability']:.0%} of paths run short"})
    positive = summary["break_even"]["gross_margin_positive_month"]
    if not positive["probability"]:
        findings.append({"label": "Gross margin turns positive", "value": "not within the horizon",
                         "note": "in no path"})
    else:
        month = f"P50 {positive['p50'][:7]}" if positive["p50"] else "P50 after the horizon"
        findings.append({"label": "Gross margin turns positive", "value": month,
                         "note": f"in {positive['probability']:.0%} of paths within the horizon"})
    totals = summary["totals"]
    costs = {label: totals.get(column) or 0.0 for column, label in COST_LABELS.items()}
    total = totals.get("cost_usd") or 0.0
    largest = max(costs, key=costs.get)
    if total > 0:
        findings.append({"label": "Largest cost (mean over paths)", "value": largest,
                         "note": f"mean {money_text(costs[largest])}, {costs[largest] / total:.0%} of the mean "
                                 f"total cost of {money_text(total)} (the P50 is in the headline figures)"})
    else:
        findings.append({"label": "Largest cost", "value": "no cost", "note": "every cost component is zero"})
    margin = summary["quantiles"]["gross_margin_usd"]
    findings.append({"label": "Gross margin over the horizon", "value": "P50 " + money_text(margin["p50"]),
                     "note": f"P10 {money_text(margin['p10'])} – P90 {money_text(margin['p90'])} over paths"})
    training = summary.get("training")
    if training:
        wait = training["wait_s"]["p50"]
        findings.append({"label": "Training", "value": f"{training['jobs_completed_share']:.0%} of jobs finished",
                         "note": "share of every path's jobs; P50 wait over those jobs "
                                 + ("–" if wait is None else f"{wait / 3600:.1f} h")})
        findings.extend(_named_job_finding(name, job) for name, job in (training.get("named_jobs") or {}).items())
    return findings


def _days(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds / 86_400:.1f}"


def _named_job_finding(name: str, job: dict[str, Any]) -> dict[str, str]:
    """A named job (a fine-tune, a pretraining run): a pool of many short jobs can finish
    100% with no wait while the one run that matters was preempted all month."""
    late, preempted = job["late_s"], job["preemptions"]
    if job["finished_share"] == 0:
        value = "not finished within the horizon on any path"
    else:
        value = f"{_days(late['p50'])} days late (P50)" + (
            "" if job["finished_share"] == 1 else f", finished on {job['finished_share']:.0%} of paths")
    return {"label": f"Training job {name}", "value": value,
            "note": f"past an uninterrupted run from its submission: P10 {_days(late['p10'])} – P90 {_days(late['p90'])} "
                    f"days over the paths it finished on; preempted {preempted['p50']:.0f} times (P50; P10 "
                    f"{preempted['p10']:.0f} – P90 {preempted['p90']:.0f})"}
