"""The headline figures of a run, read from its summary: what the command prints, what the
report shows first, and the columns that compare variants and sweep points.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: Columns of the table of headline figures: (label, path in the summary).
COMPARED = (
    ("share_served_p50", ("quantiles", "share_served", "p50")),
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
)


def headline(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The few figures ``fleetcast run`` prints, as (label, text) rows."""
    first = summary["first_shortfall_time"]
    q = summary["quantiles"]

    def when(value: str | None) -> str:
        return "none" if value is None else value[:10]

    def money(name: str) -> str:
        band = q[name]
        return f"${band['p50']:,.0f}  (P10 ${band['p10']:,.0f} – P90 ${band['p90']:,.0f})"

    if first["probability"] == 0:
        shortfall = "none in any path"
    else:
        shortfall = f"P10 {when(first['p10'])} · P50 {when(first['p50'])} · P90 {when(first['p90'])}"
    margin = q["gross_margin_pct"]
    margin_text = (
        "n/a (no revenue)"
        if margin["p50"] is None
        else f"{margin['p50']:.1f}%  (P10 {margin['p10']:.1f}% – P90 {margin['p90']:.1f}%)"
    )
    return [
        ("First shortfall", shortfall),
        ("Paths running short", f"{first['probability']:.0%}"),
        ("Demand served", f"{q['share_served']['p50']:.2%}  (P10 {q['share_served']['p10']:.2%})"),
        ("GPU utilization", f"{q['utilization_mean']['p50']:.1%}"),
        ("Total cost", money("cost_usd")),
        ("Revenue", money("revenue_usd")),
        ("Gross margin", margin_text),
    ]


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
