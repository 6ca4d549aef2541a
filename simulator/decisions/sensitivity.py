"""One-at-a-time sensitivity: each uncertain input at its P10 and P90, the others at medians.

For every entry of a scenario's ``uncertain`` inputs, two runs are made with that input set
to its 10th and 90th percentile and every other input at its median (the same seed and paths
each time, so the runs differ only by that input). The swing of an output is the difference
between the two; sorted by swing, they make the tornado chart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.fieldpath import parse_field_path
from simulator.scenario.labels import field_label, format_field_value
from simulator.scenario.uncertain import typed_value
from simulator.serving.resolve import load_scenario

OUTPUTS = {
    "gross_margin_usd": ("quantiles", "gross_margin_usd", "p50"),
    "unserved_share": ("quantiles", "share_served", "p50"),
    "shortfall_probability": ("first_shortfall_time", "probability"),
}


def _pick(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


#: Simulates named scenarios together (on one executor) and returns each one's summary.
SimulatePoints = Callable[[dict[Any, Scenario]], dict[Any, dict[str, Any]]]


def sensitivity_table(scenario: Scenario, simulate_point: Callable[[Scenario], Any] | None = None, *,
                      simulate_points: SimulatePoints | None = None) -> pd.DataFrame:
    """One row per uncertain input: its P10/P90 values and the outputs at each, and the swings.

    The runs are given either one at a time (``simulate_point(scenario)`` returns results) or
    all together (``simulate_points({key: scenario})`` returns each summary, e.g. from
    :func:`simulator.runs.batch.simulate_all`, so they share one executor).
    """
    if not scenario.uncertain:
        raise ScenarioError(("uncertain",), "the scenario has no uncertain inputs to vary "
                            "(write a field as {dist: lognormal, median: …, p90: …})")
    if (simulate_point is None) == (simulate_points is None):
        raise TypeError("give simulate_point or simulate_points")
    at_medians = scenario.model_dump(mode="json")
    at_medians["uncertain"] = {}
    at_medians["correlations"] = []
    at_medians["variants"] = {}
    points: dict[Any, Scenario] = {"base": load_scenario(at_medians)}
    values: dict[tuple[str, str], Any] = {}
    for field, spec in sorted(scenario.uncertain.items()):
        for label, q in (("p10", 0.1), ("p90", 0.9)):
            value = typed_value(Scenario, field, spec.quantile(q))
            points[(field, label)] = load_scenario(at_medians, {field: value})
            values[(field, label)] = point_value(points[(field, label)], field)
    if simulate_points is not None:
        summaries = simulate_points(points)
    else:
        summaries = {key: simulate_point(point).summary for key, point in points.items()}
    base = summaries["base"]
    rows = []
    for field, spec in sorted(scenario.uncertain.items()):
        row: dict[str, Any] = {"input": field, "label": field_label(scenario, field), "median": spec.center}
        for label in ("p10", "p90"):
            row[f"input_{label}"] = values[(field, label)]
            for name, path in OUTPUTS.items():
                row[f"{name}_{label}"] = _pick(summaries[(field, label)], path)
        for name, path in OUTPUTS.items():
            row[f"{name}_base"] = _pick(base, path)
            low, high = row[f"{name}_p10"], row[f"{name}_p90"]
            row[f"{name}_swing"] = None if low is None or high is None else abs(high - low)
        rows.append(row)
    table = pd.DataFrame(rows)
    if "unserved_share_p10" in table:  # reported as the share unserved
        for suffix in ("p10", "p90", "base"):
            table[f"unserved_share_{suffix}"] = 1.0 - table[f"unserved_share_{suffix}"]
    return table.sort_values("gross_margin_usd_swing", ascending=False, na_position="last").reset_index(drop=True)


def point_value(scenario: Scenario, field: str) -> Any:
    """The value a field has in a scenario (after validation and rounding)."""
    node: Any = scenario
    for part in parse_field_path(field):
        # A list entry by index, a mapping's entry (a model's per-pool ``replicas``) by key.
        node = node[part] if isinstance(part, int) or isinstance(node, Mapping) else getattr(node, part)
    return node


#: How the tornado shows an output: its axis title and the scale of its values.
AXES = {
    "gross_margin_usd": ("gross margin, $M (P50 over paths)", 1e-6),
    "unserved_share": ("share of requests unserved (P50 over paths)", 1.0),
    "shortfall_probability": ("probability of any shortfall", 1.0),
}


def tornado_png(table: pd.DataFrame, path: Path, output: str = "gross_margin_usd") -> None:
    """A tornado chart of the swing of ``output`` across inputs (largest at the top), each
    bar's end marked with the input's value there (durations in days, money in $)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table.dropna(subset=[f"{output}_p10", f"{output}_p90"]).iloc[::-1]
    title, scale = AXES.get(output, (f"{output.replace('_', ' ')} (P50 over paths)", 1.0))
    base = float(rows[f"{output}_base"].iloc[0]) * scale if len(rows) else 0.0
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 2.0), layout="constrained")
    for i, (_, row) in enumerate(rows.iterrows()):
        low, high = row[f"{output}_p10"] * scale, row[f"{output}_p90"] * scale
        ax.barh(i, low - base, left=base, color="#d95f02", label="input at P10" if i == 0 else None)
        ax.barh(i, high - base, left=base, color="#1b9e77", label="input at P90" if i == 0 else None)
        for end, value, outward in ((low, row["input_p10"], "right"), (high, row["input_p90"], "left")):
            away = (end <= base) if outward == "right" else (end >= base)
            ax.text(end, i, f" {format_field_value(row['input'], value)} ", va="center", fontsize=8,
                    ha=outward if away else ("left" if outward == "right" else "right"))
    ax.axvline(base, color="black", linewidth=1)
    labels = rows["label"] if "label" in rows else rows["input"]
    ax.set_yticks(range(len(rows)), [str(name) for name in labels])
    ax.margins(x=0.2)
    ax.set_xlabel(title)
    ax.set_title("Each input at its P10 and P90, the others at their medians", fontsize=10)
    # below the bars, never over them (a legend inside the axes covered the lowest bar's end)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_sensitivity(directory: Path, table: pd.DataFrame, scenario: Scenario) -> None:
    """``sensitivity.parquet``, ``sensitivity.csv``, ``tornado.png`` and ``summary.json``, atomically."""
    import json

    from simulator.output import staged_directory
    from simulator.scenario import dump_scenario

    with staged_directory(Path(directory)) as staging:
        table.to_parquet(staging / "sensitivity.parquet", index=False)
        table.to_csv(staging / "sensitivity.csv", index=False)
        tornado_png(table, staging / "tornado.png")
        (staging / "scenario.resolved.yaml").write_text(dump_scenario(scenario), encoding="utf-8")
        summary = {"scenario": scenario.name, "inputs": json.loads(table.to_json(orient="records"))}
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
