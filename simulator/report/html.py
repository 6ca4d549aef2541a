"""``report.html`` and ``plots/*.png`` of a run directory.

The page is self-contained: charts are embedded as PNG data, styles inline, nothing loaded
from the network. Every text that comes from a scenario goes through Jinja2's autoescaping
(tables included: they are rendered by the template, not pasted in as HTML). A short inline
script checks on load that every chart decoded and every table has rows, and says so in
attributes of ``<body>`` (and on the console if not): the browser test reads them.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from simulator.errors import RunConfigurationError
from simulator.report.assumptions import assumptions_table
from simulator.report.figures import run_figures
from simulator.report.model_latency import latency_finding, model_latency_table
from simulator.report.plan_tables import plan_summary, plan_tables
from simulator.report.rundata import RunData, load_run
from simulator.report.statements import (
    ATTRIBUTION,
    PERIOD_NAMES,
    cash_finding,
    contract_finding,
    covenant_finding,
    statement_tables,
    unit_economics_table,
)
from simulator.report.tables import (
    comparison_table,
    forecast_table,
    headline_table,
    key_findings,
    years_table,
)

_TEMPLATES = Path(__file__).with_name("templates")
_ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@dataclass
class Chart:
    caption: str
    png: bytes

    @property
    def png_base64(self) -> str:
        return base64.b64encode(self.png).decode("ascii")


def png_bytes(figure: Any, dpi: int = 96) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _version() -> str:
    try:
        return version("fleetcast")
    except PackageNotFoundError:
        return "dev"


def render_page(template: str, **context: Any) -> str:
    return _ENVIRONMENT.get_template(template).render(version=_version(),
                                                      generated=pd.Timestamp.now().strftime("%Y-%m-%d %H:%M"),
                                                      **context)


def write_report_files(directory: Path, html: str, charts: dict[str, Chart]) -> None:
    """``report.html`` and ``plots/`` into ``directory``. ``report.html`` (which embeds every
    chart) is replaced in one rename; ``plots/`` is swapped right after, and put back (the new
    one, or else the old) if the swap is interrupted, so the folder is never lost."""
    directory = Path(directory)
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=directory))
    plots, new, old = directory / "plots", staging / "plots", staging / "plots.old"
    replaced = False  # report.html is the new one: plots/ must be too
    try:
        new.mkdir()
        for name, chart in charts.items():
            (new / f"{name}.png").write_bytes(chart.png)
        (staging / "report.html").write_text(html, encoding="utf-8")
        os.replace(staging / "report.html", directory / "report.html")
        replaced = True
        if plots.exists():
            os.rename(plots, old)
        os.rename(new, plots)
    finally:
        if not plots.exists():  # never new charts beside the old report (a write that failed)
            for candidate in ((new, old) if replaced else (old,)):
                if candidate.exists():
                    os.rename(candidate, plots)
                    break
        shutil.rmtree(staging, ignore_errors=True)


def render_report(directory: str | Path, *, variants: bool = True) -> Path:
    """Render ``report.html`` and ``plots/`` of the run in ``directory`` (and of each of its
    variants when ``variants``); returns the report's path. Every run is read and rendered
    before any file is written: a variant that cannot be read leaves every report as it was."""
    run = load_run(directory)
    runs = [run, *(load_run(child) for child in run.variant_directories().values())] if variants else [run]
    for each in runs:
        target = each.directory / "report.html"
        if target.exists() and not target.is_file():
            raise RunConfigurationError(f"{target}: exists and is not a file; refusing to replace it")
    pages = [_page(each) for each in runs]
    for each, (html, charts) in zip(runs, pages, strict=True):
        write_report_files(each.directory, html, charts)
    return run.directory / "report.html"


def _page(run: RunData) -> tuple[str, dict[str, Chart]]:
    """One run's report page and its charts."""
    charts = {name: Chart(caption, png_bytes(figure)) for name, (caption, figure) in run_figures(run).items()}
    tables = {
        "headline": headline_table(run.summary),
        "years": years_table(run.summary),
        "model_latency": model_latency_table(run.summary),
        "unit_economics": unit_economics_table(run.unit_economics, run.summary),
        "comparison": transposed(comparison_table(run.comparison)) if run.comparison is not None else None,
        "forecast": forecast_table(run.scenario),
        "assumptions": assumptions_table(run.scenario),
        **plan_tables(run.plan),
    }
    statements = statement_tables(run.statements, run.summary)
    findings = key_findings(run.summary)
    latency = latency_finding(run.summary)
    if latency is not None:  # beside the first shortfall: how the worst-served model fares
        findings.insert(1, latency)
    for finding in (cash_finding(run.summary), covenant_finding(run.summary), contract_finding(run.summary)):
        if finding is not None:  # before the training cards
            training = next((i for i, f in enumerate(findings) if f["label"].startswith("Training")), len(findings))
            findings.insert(training, finding)
    html = render_page(
        "report.html.j2",
        title=run.name,
        meta=_meta(run),
        findings=findings,
        charts=charts,
        tables=tables,
        statements=statements,
        period_names=PERIOD_NAMES,
        attribution=ATTRIBUTION,
        expected_tables=sum(table is not None for table in tables.values()) + len(statements),
        resolved_yaml=run.resolved_yaml,
        paths=f"{run.summary.get('paths', 0):,}",
        plan_text=plan_summary(run.plan),
    )
    return html, charts


def transposed(table: dict[str, Any], corner: str = "Figure") -> dict[str, Any]:
    """A table of one row per run turned to one column per run (named by the row's first cell),
    one row per figure: many figures of a few runs fit a page's width."""
    columns = [corner, *(row[0]["text"] for row in table["rows"])]
    rows = [[{"text": name, "negative": False}, *(row[i] for row in table["rows"])]
            for i, name in enumerate(table["columns"][1:], start=1)]
    return {"columns": columns, "rows": rows}


def _meta(run: RunData) -> str:
    s = run.summary
    kept = s.get("kept_paths", s["paths"])
    kept_text = "" if kept >= s["paths"] else f"; per-path series kept for {kept}"
    return (f"{s['paths']:,} Monte Carlo paths (seed {s['seed']}){kept_text} · {s['start'][:10]} to {s['end'][:10]} "
            f"in steps of {s['step']} · bands over every path")
