"""The report as a reader sees it on a wide and on a narrow screen: in headless Chromium at
1,400 and 800 px, no page runs off sideways and every value can be seen; and in every chart,
no title or legend covers the data.

The browser check (``tests/layout_check.js``) is injected into a copy of each report, reads
the page's geometry after load and writes what it found into ``<body data-layout>``. It is
itself checked on a page built to fail it.
"""

from __future__ import annotations

import html as html_text
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulator.cli import main
from tests import browser

ROOT = Path(__file__).parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
CHECK = (Path(__file__).parent / "layout_check.js").read_text()
WIDTHS = (1400, 800)


def layout(page: Path, width: int, tmp_path: Path) -> dict:
    """The layout check's findings on ``page`` in a window ``width`` px wide."""
    checked = tmp_path / f"{page.parent.name}-{width}.html"
    checked.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{CHECK}</script></body>"),
                       encoding="utf-8")
    found = browser.load(checked, width=width)
    text = found.body_attribute("data-layout")
    assert text is not None, f"the layout check did not run: {found.console}"
    return json.loads(html_text.unescape(text))


def test_the_layout_check_finds_overflow_and_hidden_values(tmp_path):
    wide = "".join(f"<td>{i:,} GPU-hours of something</td>" for i in range(40))
    page = tmp_path / "broken.html"
    page.write_text(
        "<html><body style='margin:0'>"
        f"<div id='a'><table id='page-wide'><tr>{wide}</tr></table></div>"
        f"<div style='overflow-x:auto'><table id='scrolled'><tr>{wide}</tr></table></div>"
        f"<div style='overflow-x:auto' data-scrolls><table id='allowed'><tr>{wide}</tr></table></div>"
        "<div style='overflow:hidden;width:120px'><p style='white-space:nowrap'>a value cut off at 120 px wide</p></div>"
        "<table id='fits'><tr><td>fits</td></tr></table>"
        "</body></html>")
    found = layout(page, 800, tmp_path)
    problems = found["problems"]
    assert found["width"] == 800 and found["scrollWidth"] > 800
    assert any(p.startswith("the page is") for p in problems)
    assert any(p.startswith('#page-wide "39') and "window" in p for p in problems)  # past the right edge
    assert any(p.startswith('#scrolled "') and "container" in p for p in problems)  # reachable only by scrolling
    assert any(p.startswith('p "a value cut off') for p in problems)  # clipped by overflow: hidden
    assert any(p.startswith('#allowed "0 GPU-hours') and "line name" in p for p in problems)  # not sticky
    assert not any(p.startswith('#allowed "1 GPU-hours') for p in problems)  # may scroll: marked so
    assert not any(p.startswith("#fits") for p in problems)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """Every shipped scenario's report, over its whole horizon (the statements' columns are
    the horizon's periods), on two paths."""
    out = {}
    for scenario in SCENARIOS:
        directory = tmp_path_factory.mktemp("layout") / scenario.stem
        result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(directory), "--paths", "2",
                                           "--workers", "1", "-q"])
        assert result.exit_code == 0, result.output
        out[scenario.stem] = directory / "report.html"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_every_shipped_report_fits_the_window_and_shows_every_value(reports, width, tmp_path):
    for name, page in reports.items():
        found = layout(page, width, tmp_path)
        assert found["width"] == width
        assert found["checked"] > 200, name  # the tables, cards and charts were measured
        assert found["problems"] == [], (name, width, found["problems"][:10])


def chart_problems(figure) -> list[str]:
    """Legends and titles that cover a panel (its data area) or are cut by the figure's edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = [ax for ax in figure.axes if ax.get_visible()]
    legends = [legend for legend in (*(ax.get_legend() for ax in panels), *figure.legends) if legend is not None]
    titles = [text for ax in panels for text in (ax.title, ax._left_title, ax._right_title) if text.get_text()]
    if figure._suptitle is not None:
        titles.append(figure._suptitle)
    edge = figure.bbox
    problems = []

    def covers(a, b) -> bool:
        both = Bbox.intersection(a, b)
        return both is not None and both.width > 1 and both.height > 1

    for kind, artists in (("legend", legends), ("title", titles)):
        for artist in artists:
            box = artist.get_window_extent(renderer)
            name = artist.get_text()[:40] if kind == "title" else ", ".join(t.get_text() for t in artist.get_texts())[:40]
            if box.x0 < edge.x0 - 1 or box.x1 > edge.x1 + 1 or box.y0 < edge.y0 - 1 or box.y1 > edge.y1 + 1:
                problems.append(f"{kind} {name!r} is cut by the figure's edge")
            problems += [f"{kind} {name!r} covers a panel" for ax in panels if covers(box, ax.get_window_extent(renderer))]
            if kind == "title":
                problems += [f"title {name!r} runs into a legend" for legend in legends
                             if covers(box, legend.get_window_extent(renderer))]
    return problems


def test_the_chart_check_finds_a_legend_over_the_data():
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4, 3), layout="constrained")
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], label="a series")
    ax.legend(loc="upper left")
    ax.set_title("A title far too long to fit a figure four inches wide, so it is cut at both edges")
    problems = chart_problems(figure)
    assert "legend 'a series' covers a panel" in problems
    assert any(p.startswith("title 'A title far too long") and "cut" in p for p in problems)


def test_no_chart_title_or_legend_covers_data_or_is_cut(tmp_path):
    import pandas as pd

    from simulator.decisions.variance_sensitivity import sobol_figure
    from simulator.report.figures import overlaid, run_figures
    from simulator.report.rundata import load_run

    out = tmp_path / "launch"
    result = CliRunner().invoke(main, ["run", str(ROOT / "scenarios" / "launch.yaml"), "--out", str(out), "--set",
                                       "horizon.duration=60d", "--paths", "2", "--workers", "1", "-q", "--no-report"])
    assert result.exit_code == 0, result.output
    run = load_run(out)
    figures = {name: figure for name, (_, figure) in run_figures(run).items()}
    figures["overlaid"] = overlaid({"base": run, "a variant with a long name": run}, "demand_requests", "Demand",
                                   "requests/s", "/s")
    label = "models[0].demand.growth.rate_per_month (growth of chat-70b per month)"
    indices = pd.DataFrame([{"output": "gross_margin_usd", "input": name, "label": name, "first_order": s1,
                             "first_order_lo": s1 - 0.05, "first_order_hi": s1 + 0.05, "total": st, "total_lo": st - 0.06,
                             "total_hi": st + 0.06, "level": 0.9, "output_variance": 1.0, "output_mean": 0.0,
                             "samples": 256, "runs": 1280}
                            for name, s1, st in ((label, 0.55, 0.62), ("pricing.input_usd_per_1m", 0.05, 0.04))])
    figures["sobol"] = sobol_figure(indices)
    assert len(figures) >= 8
    for name, figure in figures.items():
        assert chart_problems(figure) == [], name
    # estimator noise is not called interactions: the difference is named as what it is
    title = figures["sobol"]._suptitle.get_text().replace("\n", " ").replace("\u00a0", " ")
    assert "total − first order" in title and "estimator noise" in title
