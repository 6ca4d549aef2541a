"""``fleetcast compare DIR…``: runs side by side, as overlaid fan charts and a table.

The runs may be of different scenarios or variants of one; a run directory that holds
variants brings them all (its base first). Labels are the scenario names, or
``scenario · variant`` for variants, made unique when two runs share a name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from simulator.errors import RunConfigurationError
from simulator.output import staged_directory
from simulator.report.figures import overlaid
from simulator.report.headline import headline_figures
from simulator.report.html import Chart, png_bytes, render_page, transposed
from simulator.report.rundata import RunData, load_run
from simulator.report.tables import comparison_table

#: metric, title, axis label, unit (``/s`` and ``/h``: per second or per hour of a step's
#: total, whatever each run's step), and what a long hourly run draws of each day.
CHARTS = (
    ("demand_requests", "Demand", "requests/s", "/s", "max"),
    ("gpus_available", "GPUs available", "GPUs", "", "at_peak"),
    ("shortfall_gpus", "Capacity shortfall", "GPUs short", "", "max"),
    ("slo_attainment", "SLO attainment", "% of requests within SLO", "%", "min"),
    ("cost_usd", "Cost", "USD per hour", "/h", "max"),
    ("gross_margin_usd", "Gross margin", "USD per hour", "/h", "max"),
)


def collect_runs(directories: list[str | Path]) -> dict[str, RunData]:
    """Label → run, variants of a run directory included."""
    runs: dict[str, RunData] = {}

    def add(label: str, run: RunData) -> None:
        unique, n = label, 2
        while unique in runs:
            unique, n = f"{label} ({n})", n + 1
        runs[unique] = run

    for directory in directories:
        run = load_run(directory)
        variants = run.variant_directories()
        add(f"{run.scenario_name} · base" if variants else run.name, run)
        for name, child in variants.items():
            add(f"{run.scenario_name} · {name}", load_run(child))
    if len(runs) < 2:
        raise RunConfigurationError("compare needs at least two runs (or one run with variants)")
    return runs


def _check_output(out: Path, directories: list[str | Path]) -> None:
    """``--out`` may be new, empty, or an earlier comparison; never a run or inside one."""
    target = out.resolve()
    for directory in directories:
        source = Path(directory).resolve()
        if target == source or source in target.parents or target in source.parents:
            raise RunConfigurationError(f"--out {out}: overlaps the run {directory}; choose another directory")
    if out.is_dir() and any(out.iterdir()):
        try:
            earlier = json.loads((out / "summary.json").read_text())
        except (OSError, ValueError):
            earlier = None
        if not isinstance(earlier, dict) or "comparison" not in earlier:
            raise RunConfigurationError(f"--out {out}: exists and is not an earlier comparison; refusing to replace it")


def render_comparison(directories: list[str | Path], out: str | Path) -> Path:
    """Write ``report.html``, ``comparison.csv`` and ``plots/`` of the comparison into ``out``
    (atomically); returns the report's path."""
    out = Path(out)
    _check_output(out, directories)
    runs = collect_runs(directories)
    charts = {
        metric: Chart(f"{title}: P10–P90 over paths, per run.", png_bytes(overlaid(runs, metric, title, ylabel, unit, how)))
        for metric, title, ylabel, unit, how in CHARTS
    }
    differences = headline_figures({label: run.summary for label, run in runs.items()})
    table = differences.reset_index().rename(columns={"variant": "run"})
    sources = pd.DataFrame({"run": list(runs), "directory": [str(run.directory) for run in runs.values()],
                            "paths": [run.summary["paths"] for run in runs.values()],
                            "start": [run.summary["start"][:10] for run in runs.values()],
                            "end": [run.summary["end"][:10] for run in runs.values()]})
    html = render_page(
        "compare.html.j2",
        title="Comparison: " + ", ".join(runs),
        charts=charts,
        differences=transposed(comparison_table(table)),
        sources=comparison_table(sources),
        expected_tables=2,
    )
    with staged_directory(out) as staging:
        (staging / "plots").mkdir()
        for name, chart in charts.items():
            (staging / "plots" / f"{name}.png").write_bytes(chart.png)
        table.to_csv(staging / "comparison.csv", index=False)
        (staging / "report.html").write_text(html, encoding="utf-8")
        # summary.json marks a directory Fleetcast may replace (a later comparison).
        (staging / "summary.json").write_text(json.dumps(
            {"comparison": {label: str(run.directory) for label, run in runs.items()}}, indent=2) + "\n")
    return out / "report.html"
