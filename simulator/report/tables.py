"""The report's tables and key findings, as plain rows of text (the template escapes them).

A table is ``{"columns": [...], "rows": [[{"text": ..., "negative": bool}, ...], ...]}``.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from simulator.path.tables import COST_COMPONENTS
from simulator.report.headline import headline, money_text, period_rows
from simulator.scenario.served import ServedModel
from simulator.scenario.serving_policy import Headroom, describe

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


#: What each headline figure is, over the paths (the table's third column).
STATISTICS = {
    "First shortfall": "P10 · P50 · P90 over paths",
    "Paths running short": "share of paths [90% interval]",
    "Hours short": "P50 (P90) over paths",
    "Demand served": "P50 (P10) over paths",
    "GPU utilization": "P50 over paths",
    "Total cost": "P50 [90% interval] (P10 – P90)",
    "Revenue": "P50 [90% interval] (P10 – P90)",
    "Gross margin": "P50 [90% interval] (P10 – P90)",
}


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
    kinds = {"share_served_p50": "share", "shortfall_probability": "share", "utilization_p50": "share",
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


def assumptions_table(scenario: dict[str, Any]) -> dict[str, Any]:
    """What the run assumed, one row per setting that shapes the answer most."""
    rows: list[list[dict[str, Any]]] = []

    def add(what: str, value: Any) -> None:
        rows.append([_cell(what), _cell(value)])

    horizon = scenario.get("horizon", {})
    span = f"for {horizon.get('duration')}" if horizon.get("duration") is not None else f"to {horizon.get('end')}"
    add("Horizon", f"{horizon.get('start')} {span} in steps of {horizon.get('step')}")
    add("Paths and seed", f"{scenario.get('paths')} paths, seed {scenario.get('seed')}")
    for pool in scenario.get("fleet", {}).get("pools", []):
        acquisition = pool.get("acquisition") or {}
        orders = pool.get("orders") or []
        ordered = sum(order.get("count", 0) for order in orders)
        add(f"Pool {pool.get('name')}",
            f"{pool.get('count')} × {pool.get('gpu')}, {acquisition.get('type', 'owned')}"
            + (f"; {ordered} more ordered in {len(orders)} orders" if orders else "")
            + f"; serving policy: {_serving_policy(pool.get('serving_policy', 'all'))}")
    for model in scenario.get("models", []):
        demand = model.get("demand") or {}
        growth = demand.get("growth") or {}
        add(f"Model {model.get('name')}",
            f"{demand.get('base_rps')} requests/s at the start, growth {growth.get('kind', 'constant')}, "
            f"on {', '.join(model.get('pools') or [])}")
        shapes = _replica_shapes(model)
        if shapes:
            add(f"Replicas of {model.get('name')}", "; ".join(shapes))
        own = {pool: entry["serving_policy"] for pool, entry in (model.get("replicas") or {}).items()
               if isinstance(entry, dict) and entry.get("serving_policy") is not None}
        if own:
            add(f"Serving policy of {model.get('name')}",
                "; ".join(f"{_serving_policy(policy)} on {pool}" for pool, policy in own.items()))
        if model.get("preempt_after"):
            after = model["preempt_after"]
            add(f"Before preempting training, {model.get('name')} uses",
                "every rented pool it lists" if after == "rented" else ", ".join(after))
    pricing = scenario.get("pricing") or {}
    if pricing:
        add("Token prices (scenario)", _prices(pricing))
    for model in scenario.get("models", []):
        add(f"Prices of {model.get('name')}", _model_prices(model, pricing))
    training = scenario.get("training") or {}
    if training.get("jobs") or training.get("streams"):
        add("Training", f"{len(training.get('jobs') or [])} jobs, {len(training.get('streams') or [])} streams")
    if scenario.get("uncertain"):
        add("Uncertain inputs", ", ".join(sorted(scenario["uncertain"])))
    return _table(["Assumption", "Value"], rows)


def _serving_policy(value: Any) -> str:
    """A serving policy as the resolved scenario writes it, in words."""
    return describe(Headroom(**value) if isinstance(value, dict) else value)


def _usd(value: Any) -> str:
    try:
        return f"${float(value):,.2f}"
    except (TypeError, ValueError):
        return str(value)


def _prices(pricing: dict[str, Any]) -> str:
    text = f"{_usd(pricing.get('input_usd_per_1m', 0))} per 1M input, {_usd(pricing.get('output_usd_per_1m', 0))} per 1M output"
    decline = pricing.get("decline_per_year") or 0
    return text + (f", falling {decline:.0%} a year" if decline else "")


def _model_prices(model: dict[str, Any], default: dict[str, Any]) -> str:
    """A model's own token prices (else the scenario's, said so), subscription and external API."""
    own = model.get("pricing")
    text = (_prices(own) + " (its own)") if own else (_prices(default) + " (the scenario's)")
    subscription = model.get("subscription")
    if subscription:
        text += (f"; subscription {_usd(subscription.get('usd_per_month'))} per month for "
                 f"{subscription.get('requests_per_day')} requests/day")
    api = model.get("api")
    if api:
        text += (f"; external API ({api.get('mode', 'overflow')}) {_usd(api.get('input_usd_per_1m'))} per 1M input, "
                 f"{_usd(api.get('output_usd_per_1m'))} per 1M output")
    return text


def _replica_shapes(model: dict[str, Any]) -> list[str]:
    """Per pool: GPUs per replica and the requests/s one sustains (and the GPU it was derived on)."""
    try:
        served = ServedModel.model_validate(model)
    except ValueError:  # a run directory written by another version: leave the row out
        return []
    out = []
    for pool in served.pools:
        shape = served.shape_on(pool)
        if shape.capacity_rps is None:
            continue
        gpus = shape.gpus_per_replica
        derived = f", derived on {shape.derived_on}" if shape.derived_on else ""
        own = served.replicas.get(pool)
        features = [part for part in ((own.derived_workload or "").split("; ") if own is not None else [])
                    if part.startswith(("P:D", "speculative decoding", "host KV tier"))]
        unit = " per disaggregated unit" if any(part.startswith("P:D") for part in features) else ""
        extra = "".join(f"; {part}" for part in features)
        out.append(f"{pool}: {gpus} GPU{'' if gpus == 1 else 's'}{unit}, {shape.capacity_rps:,.3g} req/s"
                   f"{derived}{extra}")
    return out


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
