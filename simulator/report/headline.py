"""The headline figures of a run, read from its summary: what the command prints, what the
report shows first, and the columns that compare variants and sweep points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

#: Columns of the table of headline figures: (label, path in the summary).
COMPARED = (
    ("share_served_p50", ("quantiles", "share_served", "p50")),
    # Pooled over every path and step (Σ served / Σ demanded): paths that run short carry the
    # most demand, so this is the share of all requests; the P50 is a typical path's.
    ("share_served_pooled", ("pooled", "share_served")),
    ("slo_attainment_pooled", ("pooled", "slo_attainment")),
    ("first_shortfall_p50", ("first_shortfall_time", "p50")),
    ("shortfall_probability", ("first_shortfall_time", "probability")),
    ("cost_usd_p50", ("quantiles", "cost_usd", "p50")),
    ("revenue_usd_p50", ("quantiles", "revenue_usd", "p50")),
    ("gross_margin_usd_p10", ("quantiles", "gross_margin_usd", "p10")),
    ("gross_margin_usd_p50", ("quantiles", "gross_margin_usd", "p50")),
    ("gross_margin_pct_p50", ("quantiles", "gross_margin_pct", "p50")),
    ("cost_per_1m_tokens_usd_p50", ("quantiles", "cost_per_1m_tokens_usd", "p50")),
    ("utilization_p50", ("quantiles", "utilization_mean", "p50")),
    ("payback_month_p50", ("break_even", "payback_month", "p50")),
    # By money and cash: what each option spends and leaves.
    ("capex_usd_p50", ("books", "capex_usd", "p50")),
    ("net_income_usd_p50", ("books", "net_income_usd", "p50")),
    ("lowest_cash_usd_p10", ("cash", "lowest_balance_usd", "p10")),
    ("lowest_cash_usd_p50", ("cash", "lowest_balance_usd", "p50")),
    ("cash_end_usd_p50", ("books", "cash_end_usd", "p50")),
    ("debt_end_usd_p50", ("books", "debt_end_usd", "p50")),
)


def headline(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The few figures ``fleetcast run`` prints, as (label, text) rows: :func:`headline_parts`
    joined with " · "."""
    return [(label, SEPARATOR.join(parts)) for label, parts in headline_parts(summary)]


#: Between two parts of a headline figure.
SEPARATOR = " · "

#: What each headline figure is, over the paths (the report's third column).
STATISTICS = {
    "First shortfall": "P10 · P50 · P90 over paths of each path's first shortfall",
    "Paths running short": "share of paths [90% interval]",
    "Hours short": "P50 (P90) over paths",
    "Demand served": "pooled: Σ served / Σ demanded over paths and steps [90% interval]; P10 · P50 · P90 of "
                     "each path's share",
    "SLO attainment": "pooled: Σ requests within the SLO / Σ demanded [90% interval]; P10 · P50 · P90 of each "
                      "path's share",
    "GPU utilization": "P50 (P10 – P90) over paths of each path's busy / available GPU-hours",
    "Total cost": "P50 [90% interval] (P10 – P90) over paths",
    "Revenue": "P50 [90% interval] (P10 – P90) over paths",
    "Gross margin": "P50 [90% interval] (P10 – P90) over paths of each path's margin %",
    "Lowest cash": "each path's lowest month-end cash: P50 and P10 over paths, with that path's month",
    "Runway": "months from the start until cash runs out: P50 and P10 over paths (past the horizon: closing "
              "cash / burn of the last months, extrapolated)",
}


def headline_parts(summary: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The headline figures as (label, parts): each part a phrase that names its statistic
    (P10/P50/P90 over paths, pooled, a share of paths) and that a narrow terminal keeps on one
    line; each quantile and probability with its 90% Monte Carlo interval in brackets where
    the summary has one."""
    first = summary["first_shortfall_time"]
    q = summary["quantiles"]
    ci = summary.get("quantiles_ci", {})

    def when(value: str | None) -> str:
        return "none" if value is None else value[:10]

    def money(name: str) -> list[str]:
        band = q[name]
        return [f"P50 {money_text(band['p50'])}{_interval(ci.get(name, {}).get('p50'), _in_unit_of(band['p50']))}",
                f"P10 {money_text(band['p10'])} – P90 {money_text(band['p90'])}"]

    if first["probability"] == 0:
        shortfall = ["none in any path"]
    else:
        shortfall = [f"P10 {when(first['p10'])}", f"P50 {when(first['p50'])}", f"P90 {when(first['p90'])}"]
    margin = q["gross_margin_pct"]
    margin_parts = (
        ["n/a (no revenue)"]
        if margin["p50"] is None
        else [f"P50 {margin['p50']:.1f}%{_interval(ci.get('gross_margin_pct', {}).get('p50'), lambda v: f'{v:.1f}')}",
              f"P10 {margin['p10']:.1f}% – P90 {margin['p90']:.1f}%"]
    )
    short = [f"{first['probability']:.0%}{_interval(first.get('probability_ci'), percent)} of paths"]
    definition = summary.get("shortfall_definition")
    if definition:
        text = f"short: over {100 * definition['min_unserved_share']:g}% unserved"
        if definition.get("min_slo_attainment") is not None:
            text += f" or under {100 * definition['min_slo_attainment']:g}% in SLO"
        if definition.get("min_duration") not in (None, "0s", 0):
            text += f", for {definition['min_duration']} or more"
        short.append(text)
    rows = [("First shortfall", shortfall), ("Paths running short", short)]
    hours, gpu_hours = q.get("shortfall_hours"), q.get("gpu_hours_short")
    if hours and gpu_hours and first["probability"] > 0:  # (runs of earlier versions have no GPU-hours)
        rows.append(("Hours short", [f"P50 {hours['p50']:,.0f} h (P90 {hours['p90']:,.0f} h)",
                                     f"P50 {gpu_hours['p50']:,.0f} GPU-h (P90 {gpu_hours['p90']:,.0f})"]))
    rows.append(("Demand served", _pooled_share(summary, "share_served")))
    if "slo_attainment" in q:
        rows.append(("SLO attainment", _pooled_share(summary, "slo_attainment", " of demand")))
    use = q["utilization_mean"]
    rows.append(("GPU utilization", [f"P50 {use['p50']:.1%}", f"P10 {use['p10']:.1%} – P90 {use['p90']:.1%}"]))
    rows += [("Total cost", money("cost_usd")), ("Revenue", money("revenue_usd")), ("Gross margin", margin_parts)]
    rows += cash_rows(summary.get("cash") or {})
    return rows


def _pooled_share(summary: dict[str, Any], name: str, of: str = "") -> list[str]:
    """A ratio pooled over paths and steps (with its interval) first, then each path's own
    share at P10, P50 and P90; the P50 alone where the run predates pooled figures."""
    band = summary["quantiles"][name]
    pooled = (summary.get("pooled") or {}).get(name)
    parts = []
    if pooled is not None:
        interval = (summary.get("pooled_ci") or {}).get(name)
        parts.append(f"pooled {pooled:.2%}{_interval(interval, lambda v: f'{100 * v:.2f}')}{of}")
    parts.append(f"per path P10 {band['p10']:.2%} · P50 {band['p50']:.2%} · P90 {band['p90']:.2%}")
    return parts


def cash_rows(cash: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The lowest month-end cash and the runway, each at P50 and P10 over paths (the path at
    that rank: its own month); none for a run without them."""
    lowest, runway = cash.get("lowest_balance_at_quantile"), cash.get("runway")
    rows = []
    if lowest:
        rows.append(("Lowest cash", [f"{name.upper()} {money_text(lowest[name]['usd'])}"
                                     + (f" in {lowest[name]['month'][:7]}" if lowest[name]["month"] else "")
                                     for name in ("p50", "p10")]))
    if runway:
        rows.append(("Runway", [part for name in ("p50", "p10") for part in runway_text(name.upper(), runway[name])]))
    return rows


def runway_text(statistic: str, entry: dict[str, Any]) -> list[str]:
    """One quantile of the runway in words: within the horizon, extrapolated past it (saying
    so, with the burn it assumes), or none while cash is not falling."""
    if entry["basis"] == "within_horizon":
        month = f" {entry['month'][:7]}" if entry.get("month") else ""
        return [f"{statistic} first negative month{month} (after {entry['months']:,.0f} months)"]
    if entry["basis"] == "extrapolated":
        return [f"{statistic} ~{entry['months_past_horizon']:,.0f} months past the horizon",
                f"extrapolated at {money_text(entry['burn_end_usd_per_month'])}/month burn"]
    return [f"{statistic} none: cash not falling at the end"]


def _interval(pair: list[float | None] | None, show: Callable[[float], str], sep: str = ", ") -> str:
    """`` [lo, hi]`` (a missing side as ``…``: too few paths to bound it); empty without one."""
    if not pair:
        return ""
    return " [" + sep.join("…" if v is None else show(v) for v in pair) + "]"


def money_text(value: float | None, digits: int = 2, thousands_from: float = 1e4) -> str:
    """Dollars in the unit a reader takes in at a glance: $12.34M, $450k, −$80 (``digits``
    decimals for millions and billions; thousands as ``k`` from ``thousands_from``)."""
    if value is None:
        return "—"
    size, sign = abs(value), "−" if value < 0 else ""
    if size >= 1e9:
        return f"{sign}${size / 1e9:,.{digits}f}B"
    if size >= 1e6:
        return f"{sign}${size / 1e6:,.{digits}f}M"
    if size >= thousands_from:
        return f"{sign}${size / 1e3:,.0f}k"
    return f"{sign}${size:,.0f}"


def percent(share: float) -> str:
    """A share in whole percent, with a decimal below 1% (an upper bound of 0.5% is not "0")."""
    value = 100 * share
    return f"{value:.1f}" if 0 < value < 1 or 99 < value < 100 else f"{value:.0f}"


def _in_unit_of(reference: float | None) -> Callable[[float], str]:
    """A formatter of amounts in the unit :func:`money_text` gives ``reference`` ("8.41" for
    $8.41M), for the bounds of its interval."""
    text = money_text(reference)
    scale = {"B": 1e9, "M": 1e6, "k": 1e3}.get(text[-1], 1.0)
    digits = 0 if scale in (1e3, 1.0) else 2
    return lambda value: f"{value / scale:,.{digits}f}"


def _millions(value: float) -> str:
    return f"{value / 1e6:,.2f}"


def period_rows(summary: dict[str, Any], period: str = "year") -> list[dict[str, str]]:
    """One row of text per calendar period (``year``, ``quarter``, ``month``): P(short) and
    its interval, mean GPU-hours short, P50 revenue and gross margin, and P50 margin % with
    its interval (the summary holds every interval)."""
    rows = []
    for entry in summary.get("periods", {}).get(period, []):
        start = entry["start"][:4] if period == "year" else entry["start"][:7]
        p_short = entry["p_short"]
        hours = entry["hours"]
        begin = pd.Timestamp(entry["start"])
        full = (begin + _PERIOD_LENGTH[period] - begin) / pd.Timedelta(hours=1)
        part = "" if hours >= full else (f" ({hours / 24:,.0f} d)" if hours >= 24 else f" ({hours:g} h)")
        rows.append({
            period: start + part,
            "P(short) %": f"{100 * p_short['value']:.0f}" + _interval(p_short["ci"], percent, "–"),
            "GPU-h short": _plain(entry["gpu_hours_short"]["mean"]["value"]),
            "revenue $M": _median(entry["revenue_usd"], _millions, interval=False),
            "margin $M": _median(entry["gross_margin_usd"], _millions, interval=False),
            "margin %": _median(entry["gross_margin_pct"], lambda v: f"{v:.1f}", "–"),
        })
    return rows


_PERIOD_LENGTH = {"year": pd.DateOffset(years=1), "quarter": pd.DateOffset(months=3), "month": pd.DateOffset(months=1)}


def _median(figure: dict[str, Any], show: Callable[[float], str], sep: str = ", ", interval: bool = True) -> str:
    p50 = figure["p50"]
    if p50["value"] is None:
        return "—"
    return show(p50["value"]) + (_interval(p50["ci"], show, sep) if interval else "")


def _plain(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def auto_paths_note(summary: dict[str, Any]) -> str | None:
    """What ``--paths auto`` reached: met at N paths, or the cap and what is still short."""
    auto = summary.get("paths_auto")
    if not auto:
        return None
    reached = ", ".join(f"{name} ±{entry['half_width']:.3g} (asked ±{entry['target_half_width']:.3g})"
                        if entry["half_width"] is not None else f"{name} unbounded"
                        for name, entry in auto["targets"].items())
    batches = " → ".join(f"{n:,}" for n in auto["batches"])
    if auto["met"]:
        return f"--paths auto: precision met at {summary['paths']:,} paths ({batches}): {reached}"
    return (f"--paths auto: stopped at the cap of {auto['max_paths']:,} paths ({batches}) before the precision "
            f"was met: {reached}")


def headline_figures(summaries: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per run (a variant, a sweep point) with its headline figures, keyed by name."""
    rows = {}
    for name, summary in summaries.items():
        row = {}
        for label, path in COMPARED:
            value: Any = summary
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            row[label] = value
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("variant")
