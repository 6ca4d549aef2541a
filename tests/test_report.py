"""The report as a reader meets it: rendered in headless Chromium, escaped, re-rendered,
compared, and the scenario's JSON Schema."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.report.headline import money_text
from simulator.report.rundata import RunData
from simulator.scenario import dump_scenario
from tests import browser

ROOT = Path(__file__).parents[1]
SCENARIOS = ROOT / "scenarios"
SHORT = ["--set", "horizon.duration=60d", "--paths", "4"]
CHARTS = {"demand_capacity", "shortfall_slo", "gpus_by_use", "cost_stack", "revenue_margin", "training_queue",
          "cash_balance"}


def _invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def launch_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "launch"
    result = _invoke("run", str(SCENARIOS / "launch.yaml"), "--out", str(out), *SHORT, "-q")
    assert result.exit_code == 0, result.output
    return out


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_every_run_directory_gets_a_report_and_its_plots(launch_run):
    assert {p.stem for p in (launch_run / "plots").glob("*.png")} == CHARTS
    for variant in ("rent-headroom-only", "buy-more-early"):
        assert (launch_run / "variants" / variant / "report.html").is_file()
    html = (launch_run / "report.html").read_text()
    assert "http://" not in html and "https://" not in html  # nothing loaded from the network
    assert html.count('<img class="chart"') == len(CHARTS)
    assert "Key findings" in html and "Financial statements" in html and "Variants" in html
    assert "Unit economics per model" in html and "Monthly P&amp;L" not in html  # superseded by the statements


@pytest.mark.slow
def test_the_report_renders_in_chromium_without_console_errors(launch_run, tmp_path):
    page = browser.load(launch_run / "report.html")
    assert page.console == []
    assert page.body_attribute("data-rendered") == "true"
    assert page.body_attribute("data-charts") == page.body_attribute("data-expected-charts") == str(len(CHARTS))
    # headline, by year, the yearly, quarterly and monthly statements, unit economics, variants, assumptions
    assert page.body_attribute("data-tables") == page.body_attribute("data-expected-tables") == "8"
    dom = page.dom
    for element in ('id="statement-year"', 'id="statement-quarter"', 'id="statement-month"',
                    'id="unit-economics-table"', 'id="assumptions-table"', 'id="variants-table"'):
        assert element in dom, element
    assert re.search(r'<figure id="chart-cash_balance">\s*<img class="chart"', dom)
    assert dom.count("<details") >= 3  # quarterly, monthly, the resolved scenario

    # The yearly statement's figures are statements.parquet's P50s, formatted as money.
    statements = pd.read_parquet(launch_run / "statements.parquet")
    year = statements[statements["period_kind"] == "year"].set_index("line")
    assert len(year.index.unique()) == len(year)  # a 60-day run lies in one calendar year
    table = _element(dom, "table", "statement-year")
    for line in ("net_income_usd", "revenue_usd", "capex_usd", "interest_usd", "cash_balance_usd"):
        text, classes = _statement_cell(table, line)
        p50 = year.loc[line, "p50"]
        assert text == money_text(p50), line
        assert ("negative" in classes) == (p50 < 0), line
    assert _statement_cell(table, "interest_usd")[0] == "$0"  # zero is "$0", not "$0.000"
    assert "<th>2026 (2 mo)</th>" in table  # the part of the year the horizon covers

    # Unit economics: chat-70b's figures over the horizon, and the COGS no model carries.
    unit = pd.read_parquet(launch_run / "unit_economics.parquet")
    whole = unit[unit["month"].isna()].set_index("model")
    table = _element(dom, "table", "unit-economics-table")
    row = _row(table, "chat-70b")
    assert row[2] == money_text(whole.loc["chat-70b", "revenue_usd"])
    assert row[3] == money_text(whole.loc["chat-70b", "cogs_usd"])
    assert row[5] == f"{whole.loc['chat-70b', 'gross_margin_pct']:.1f}%"
    assert row[8].startswith("$0.000") and row[8] != "$0.000"  # a cost per request keeps 3 digits
    if "unallocated" in whole.index:
        assert _row(table, "unallocated (COGS no model carries)")[3] == money_text(whole.loc["unallocated", "cogs_usd"])
    assert "by the GPUs their replicas hold there" in dom

    # Every model's prices are listed in the assumptions; every card says its statistic.
    assumptions = _element(dom, "table", "assumptions-table")
    assert _row(assumptions, "Prices of chat-70b")[1] == "$0.90 per 1M input, $2.50 per 1M output (the scenario's)"
    cards = re.findall(r'<div class="finding">(.*?)</div></div>', dom)
    assert cards and all(re.search(r"P50|P10|mean|share|no path", card) for card in cards), cards
    assert "Largest cost (mean over paths)" in dom and "Lowest cash balance" in dom

    shot = tmp_path / "report.png"
    browser.screenshot(launch_run / "report.html", shot)
    width, height = _png_size(shot)
    assert (width, height) == (1100, 5200) and shot.stat().st_size > 100_000


def _element(dom: str, tag: str, element_id: str) -> str:
    start = dom.index(f'id="{element_id}"')
    return dom[start:dom.index(f"</{tag}>", start)]


def _cells(row: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]


def _row(table: str, first: str) -> list[str]:
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        cells = _cells(row)
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r}")


def _statement_cell(table: str, line: str) -> tuple[str, str]:
    """The P50 text of a statement line's first period, and the classes of its cell."""
    match = re.search(rf'<tr data-line="{line}"[^>]*><td[^>]*>[^<]*</td><td( class="([^"]*)")?[^>]*>([^<]*)', table)
    assert match, line
    return match.group(3), match.group(2) or ""


def test_the_browser_check_catches_a_broken_page(tmp_path):
    # The same check on a page with an undecodable chart and a script error must fail.
    broken = tmp_path / "broken.html"
    report = (ROOT / "simulator" / "report" / "templates" / "report.html.j2").read_text()
    script = report[report.index("<script>"):report.index("</script>") + len("</script>")]
    broken.write_text('<html><body data-expected-charts="1"><img class="chart" src="data:image/png;base64,AAAA">'
                      f"<table class='data'><tbody></tbody></table>{script}<script>undefined_call();</script>"
                      "</body></html>")
    page = browser.load(broken)
    assert page.body_attribute("data-charts") == "0" and page.body_attribute("data-tables") == "0"
    assert any("did not render" in line for line in page.console)
    assert any("undefined_call is not defined" in line for line in page.console)


@pytest.mark.slow
def test_scenario_text_is_escaped(tmp_path):
    out = tmp_path / "xss"
    name = "<script>alert(1)</script>"
    result = _invoke("run", str(SCENARIOS / "growth.yaml"), "--out", str(out), "--set", f"name={name}",
                     "--set", "horizon.duration=30d", "--paths", "2", "-q")
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = browser.load(out / "report.html")
    assert page.console == []
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in page.dom  # text, not an element


def test_report_rerenders_a_run_and_refuses_other_directories(launch_run, tmp_path):
    (launch_run / "report.html").unlink()
    result = _invoke("report", str(launch_run))
    assert result.exit_code == 0, result.output
    assert (launch_run / "report.html").is_file()
    assert not [p for p in launch_run.iterdir() if p.name.startswith(".report-")]  # no staging left
    result = _invoke("report", str(tmp_path))
    assert result.exit_code == 2 and "not a Fleetcast run directory" in result.output


@pytest.mark.slow
def test_compare_two_scenarios_and_the_variants_of_one(launch_run, tmp_path):
    growth = tmp_path / "growth"
    assert _invoke("run", str(SCENARIOS / "growth.yaml"), "--out", str(growth), *SHORT, "-q", "--no-report").exit_code == 0
    out = tmp_path / "cmp"
    result = _invoke("compare", str(growth), str(launch_run / "variants" / "buy-more-early"), "--out", str(out))
    assert result.exit_code == 0, result.output
    table = (out / "comparison.csv").read_text().splitlines()
    assert len(table) == 3 and table[1].startswith("growth,")
    page = browser.load(out / "report.html")
    assert page.console == [] and page.body_attribute("data-charts") == page.body_attribute("data-expected-charts")
    assert page.body_attribute("data-tables") == "2"

    variants = tmp_path / "variants"
    result = _invoke("compare", str(launch_run), "--out", str(variants))
    assert result.exit_code == 0, result.output
    rows = [line.split(",")[0] for line in (variants / "comparison.csv").read_text().splitlines()[1:]]
    assert rows == ["launch · base", "launch · buy-more-early", "launch · rent-headroom-only"]
    # the table's figures are the runs' own summaries
    summary = json.loads((launch_run / "variants" / "buy-more-early" / "summary.json").read_text())
    line = (variants / "comparison.csv").read_text().splitlines()[2].split(",")
    header = (variants / "comparison.csv").read_text().splitlines()[0].split(",")
    assert float(line[header.index("cost_usd_p50")]) == pytest.approx(summary["quantiles"]["cost_usd"]["p50"])

    result = _invoke("compare", str(growth), "--out", str(tmp_path / "one"))
    assert result.exit_code == 2 and "at least two runs" in result.output


def test_schema_accepts_the_shipped_scenarios_and_flags_mistakes(tmp_path):
    out = tmp_path / "scenario.schema.json"
    result = _invoke("schema", "--out", str(out))
    assert result.exit_code == 0, result.output
    schema = json.loads(out.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(SCENARIOS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        assert not list(validator.iter_errors(json.loads(json.dumps(data, default=str)))), path.name
        resolved = simulator.load_scenario(path)
        assert not list(validator.iter_errors(json.loads(json.dumps(yaml.safe_load(dump_scenario(resolved)),
                                                                      default=str)))), path.name
    launch = json.loads(json.dumps(yaml.safe_load((SCENARIOS / "launch.yaml").read_text()), default=str))
    launch["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 200, "mode": 256, "high": 256}
    launch["fleet"]["pools"][0]["changes"][0]["at"] = {"dist": "uniform", "low": "180d", "high": "240d"}
    launch["gpus"] = {"H100": {"price_usd": 28000}}  # a catalog type in part
    launch["training"]["review_every"] = "7200s"
    launch["training"]["jobs"][0]["restart_time"] = 0  # zero needs no unit
    assert not list(validator.iter_errors(launch))
    bare = json.loads(json.dumps(launch))
    bare["training"]["review_every"] = 7200  # a bare number is refused, as the loader refuses it
    assert [list(e.path) for e in validator.iter_errors(bare)] == [["training", "review_every"]]
    assert simulator.load_scenario(launch, base_dir=SCENARIOS)  # the loader agrees
    typo = json.loads(json.dumps(launch))
    typo["fleet"]["pools"][0]["cuont"] = 3
    assert [list(e.path) for e in validator.iter_errors(typo)] == [["fleet", "pools", 0]]
    assert "'cuont' was unexpected" in next(validator.iter_errors(typo)).message
    drawn_seed = json.loads(json.dumps(launch))
    drawn_seed["seed"] = {"dist": "uniform", "low": 1, "high": 2}  # the seed shapes the run: never drawn
    assert [list(e.path) for e in validator.iter_errors(drawn_seed)] == [["seed"]]


def test_compare_never_replaces_a_run_and_keeps_labels_whole(launch_run, tmp_path):
    result = _invoke("compare", str(launch_run), "--out", str(launch_run))
    assert result.exit_code == 2 and "overlaps the run" in result.output
    assert (launch_run / "bands.parquet").is_file()
    result = _invoke("compare", str(launch_run), "--out", str(launch_run / "variants" / "buy-more-early"))
    assert result.exit_code == 2 and "overlaps the run" in result.output
    other = tmp_path / "other-run"
    assert _invoke("run", str(SCENARIOS / "growth.yaml"), "--out", str(other), "--set", "horizon.duration=30d",
                   "--set", "name=2026-03-01 plan $5 vs $10", "--paths", "2", "-q", "--no-report").exit_code == 0
    result = _invoke("compare", str(launch_run), "--out", str(other))
    assert result.exit_code == 2 and "not an earlier comparison" in result.output
    out = tmp_path / "cmp"
    result = _invoke("compare", str(other), str(launch_run / "variants" / "rent-headroom-only"), "--out", str(out))
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "<td>2026-03-01 plan $5 vs $10</td>" in html  # not cut to a date, no mathtext
    assert _invoke("compare", str(other), str(launch_run / "variants" / "rent-headroom-only"),
                   "--out", str(out)).exit_code == 0  # an earlier comparison is replaced


def test_unit_costs_keep_their_cents():
    from simulator.report.tables import comparison_table

    table = comparison_table(pd.DataFrame({"variant": ["NA"], "cost_per_1m_tokens_usd_p50": [0.42],
                                           "cost_usd_p50": [1234567.0], "gross_margin_usd_p10": [-5e4]}))
    # amounts as a reader takes them in (narrow enough for many variant columns); unit costs keep cents
    assert [cell["text"] for cell in table["rows"][0]] == ["NA", "$0.420", "$1.23M", "−$50k"]
    assert table["rows"][0][3]["negative"]


def test_an_interrupted_rerender_keeps_the_plots_folder(launch_run, monkeypatch):
    import os

    from simulator.report import html

    real_rename, calls = os.rename, []

    def rename_then_interrupt(src, dst):
        real_rename(src, dst)
        calls.append(dst)
        if len(calls) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(html.os, "rename", rename_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        html.render_report(launch_run, variants=False)
    monkeypatch.undo()
    assert {p.stem for p in (launch_run / "plots").glob("*.png")} == CHARTS
    assert not [p for p in launch_run.iterdir() if p.name.startswith(".report-")]


def test_schema_file_is_readable_by_others_and_the_module_entry_has_every_command(tmp_path):
    import os
    import subprocess
    import sys

    out = tmp_path / "schema.json"
    old = os.umask(0o022)
    try:
        assert _invoke("schema", "--out", str(out)).exit_code == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    done = subprocess.run([sys.executable, "-m", "simulator.cli", "--help"], capture_output=True, text=True, timeout=60)
    assert all(command in done.stdout for command in ("report", "compare", "schema"))
    result = _invoke("run", str(SCENARIOS / "growth.yaml"), "--keep-paths", "²", "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and not (tmp_path / "o").exists()


def test_the_assumptions_list_every_models_own_prices():
    from simulator.report.assumptions import assumptions_table

    growth = yaml.safe_load(dump_scenario(simulator.load_scenario(SCENARIOS / "growth.yaml")))
    rows = {row[0]["text"]: row[1]["text"] for row in assumptions_table(growth)["rows"]}
    own = {model["name"]: model["pricing"] for model in growth["models"]}
    assert len(own) == 2 and all(own.values())
    for name, price in own.items():
        assert rows[f"Prices of {name}"] == (f"${price['input_usd_per_1m']:.2f} per 1M input, "
                                             f"${price['output_usd_per_1m']:.2f} per 1M output (its own)")
    assert rows["Prices of assistant-70b"].startswith("$1.00 per 1M input, $4.00 per 1M output")


@pytest.mark.parametrize(("horizon", "text"), [
    ({"start": "2026-03-01", "end": "2027-01-01", "step": "1h"}, "2026-03-01 to 2027-01-01 in steps of 1h"),
    ({"start": "2026-03-01", "duration": "10mo", "step": "1d"}, "2026-03-01 for 10mo in steps of 1d"),
])
def test_the_assumptions_show_a_horizon_given_by_its_end_or_its_length(horizon, text):
    # A horizon with `end:` read "2026-03-01 for None".
    from simulator.report.assumptions import assumptions_table

    scenario = yaml.safe_load(dump_scenario(simulator.load_scenario(SCENARIOS / "growth.yaml", {"horizon": horizon})))
    rows = {row[0]["text"]: row[1]["text"] for row in assumptions_table(scenario)["rows"]}
    assert rows["Horizon"] == text


def test_statement_cells_format_money_signs_bands_and_partial_periods():
    from simulator.report.statements import statement_tables

    def line(period, name, label, kind, p10, p50, p90):
        return {"period_kind": "year", "period": pd.Timestamp(period), "line": name, "label": label, "kind": kind,
                "mean": p50, "p10": p10, "p50": p50, "p90": p90}

    frame = pd.DataFrame([
        line("2026-01-01", "revenue_usd", "Revenue", "flow", 9e5, 1.25e6, 1.5e6),
        line("2026-01-01", "opex_usd", "Operating expenses", "flow", 2e5, 2e5, 2e5),
        line("2026-01-01", "opex_payroll_usd", "  payroll", "flow", 2e5, 2e5, 2e5),
        line("2026-01-01", "gross_margin_pct", "Gross margin %", "ratio", -12.0, -5.25, 3.0),
        line("2026-01-01", "interest_usd", "Interest", "flow", 0.0, 0.0, 0.0),
        line("2026-01-01", "net_income_usd", "Net income", "flow", -3.4e6, -2.5e6, -1e5),
    ])
    summary = {"start": "2026-07-01T00:00:00", "end": "2027-01-01T00:00:00"}
    table = statement_tables(frame, summary)["year"]
    assert table["columns"] == ["Line", "2026 (6 mo)"]
    rows = {row["line"]: row for row in table["rows"]}
    revenue = rows["revenue_usd"]["cells"][1]
    assert (revenue["text"], revenue["band"], revenue["negative"]) == ("$1.25M", "$900k – $1.50M", False)
    assert "band" not in rows["opex_usd"]["cells"][1]  # every path agrees: no band
    assert rows["opex_payroll_usd"]["cells"][0] == {"text": "payroll", "negative": False, "indent": True}
    assert rows["gross_margin_pct"]["cells"][1]["text"] == "−5.2%" and "ratio" in rows["gross_margin_pct"]["classes"]
    assert rows["interest_usd"]["cells"][1]["text"] == "$0"
    net = rows["net_income_usd"]["cells"][1]
    assert (net["text"], net["negative"], net["band"]) == ("−$2.50M", True, "−$3.40M – −$100k")
    assert net["title"] == "P10 −$3.40M · P50 −$2.50M · P90 −$100k · mean −$2.50M"
    assert "total" in rows["net_income_usd"]["classes"]


def test_unit_economics_table_shows_unallocated_cogs_and_the_total():
    from simulator.report.statements import unit_economics_table

    unit = pd.DataFrame([
        {"month": pd.NaT, "model": "chat", "served_requests": 2e6, "revenue_usd": 1000.0, "cogs_usd": 400.0,
         "gross_margin_usd": 600.0, "gross_margin_pct": 60.0, "cost_per_1m_input_tokens_usd": 0.0894,
         "cost_per_1m_output_tokens_usd": 1.5, "cost_per_request_usd": 0.0002, "gpu_hours": 12.5},
        {"month": pd.NaT, "model": "unallocated", "cogs_usd": 100.0},
        {"month": pd.Timestamp("2026-01-01"), "model": "chat", "served_requests": 1.0, "revenue_usd": 5.0},
    ])
    table = unit_economics_table(unit, {})
    rows = [[cell["text"] for cell in row] for row in table["rows"]]
    assert rows[0] == ["chat", "2.00M", "$1,000", "$400", "$600", "60.0%", "$0.0894", "$1.50", "$0.000200", "12"]
    assert rows[1][:4] == ["unallocated (COGS no model carries)", "–", "–", "$100"]
    assert rows[2][:6] == ["All models", "2.00M", "$1,000", "$500", "$500", "50.0%"]
    # without the parquet file, summary.json's per-model figures serve
    assert unit_economics_table(None, {"unit_economics": {"chat": {"revenue_usd": 1.0}}})["rows"][0][2]["text"] == "$1"


def test_a_run_without_statements_parquet_rolls_them_up_from_the_pnl(launch_run, tmp_path):
    import shutil

    from simulator.report.rundata import load_run

    copy = tmp_path / "run"
    shutil.copytree(launch_run, copy, ignore=shutil.ignore_patterns("variants", "timeseries.parquet"))
    (copy / "statements.parquet").unlink()
    rolled = load_run(copy).statements
    written = pd.read_parquet(launch_run / "statements.parquet")
    assert list(rolled["line"]) == list(written["line"])
    assert rolled["p50"].to_numpy() == pytest.approx(written["p50"].to_numpy(), nan_ok=True)


def test_the_demand_chart_is_in_requests_per_second(launch_run):
    # It was in requests per step (an hourly run's axis read "×1e7"): the same curve over the
    # step's seconds.
    from simulator.report.figures import daily, demand_capacity
    from simulator.report.rundata import load_run

    run = load_run(launch_run)
    top = demand_capacity(run).axes[0]
    assert top.get_ylabel().startswith("requests/s")
    median = next(line for line in top.get_lines() if line.get_label() == "demand: P50")
    expected = daily(run.band("demand_requests"), "max")["p50"].to_numpy() / 3600.0  # launch steps are 1h
    np.testing.assert_allclose(median.get_ydata(), expected, rtol=1e-12)


def test_each_variant_run_names_its_variant_in_its_summary_and_report_title(launch_run):
    # Every run directory of a scenario with variants read as if it were the base.
    import html as html_text
    import json

    for folder, variant in ((launch_run, "base"), (launch_run / "variants" / "buy-more-early", "buy-more-early"),
                            (launch_run / "variants" / "rent-headroom-only", "rent-headroom-only")):
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["variant"] == variant
        page = html_text.unescape((folder / "report.html").read_text(encoding="utf-8"))
        assert f"<title>launch · {variant} · Fleetcast</title>" in page
        assert f"<h1>launch · {variant}</h1>" in page


def _hourly_run(bands: dict[str, np.ndarray], days: int) -> RunData:
    times = pd.date_range("2027-01-01", periods=24 * days, freq="h")
    frames = [pd.DataFrame({"metric": metric, "time": times, **{q: values for q in ("mean", "p5", "p10", "p50", "p90", "p95")}})
              for metric, values in bands.items()]
    return RunData(directory=Path("run"), summary={"scenario": "autoscaled", "step": "1h"},
                   bands=pd.concat(frames, ignore_index=True), pnl=pd.DataFrame(), resolved_yaml="", scenario={},
                   comparison=None)


def _p50_line(ax, label: str) -> np.ndarray:
    return next(line for line in ax.get_lines() if line.get_label() == label).get_ydata()


def test_an_autoscaled_fleet_is_charted_against_its_need_at_the_same_hour():
    # The fleet follows the daily cycle of need with 5 GPUs to spare at every hour. Drawn one
    # point a day, available at the day's low (night) against needed at the day's peak
    # (evening) made it look 95 GPUs short every day; at the hour of the peak it has 5 spare.
    from simulator.report.figures import demand_capacity

    days = 60
    hour = np.arange(24 * days) % 24
    needed = 100 + 50 * np.sin(2 * np.pi * (hour - 11) / 24)  # peaks at 17:00
    run = _hourly_run({"gpus_needed": needed, "gpus_available": needed + 5, "demand_requests": needed * 3600,
                       "served_requests": needed * 3600}, days)
    figure = demand_capacity(run)
    bottom = figure.axes[1]
    drawn_needed, drawn_available = _p50_line(bottom, "GPUs needed: P50"), _p50_line(bottom, "GPUs available: P50")
    assert len(drawn_needed) == len(drawn_available) == days
    np.testing.assert_allclose(drawn_needed, 150.0)
    np.testing.assert_allclose(drawn_available, 155.0)
    np.testing.assert_allclose(_p50_line(figure.axes[0], "demand: P50"), 150.0)  # requests/s at the daily peak


def test_compare_charts_rates_per_second_whatever_each_run_step():
    # Demand per step drawn as is made an hourly run 3,600 times a per-second one ("requests
    # per step ×1e7"); the comparison draws requests/s and USD per hour.
    from simulator.report.figures import overlaid

    hourly = _hourly_run({"demand_requests": np.full(24 * 10, 7200.0), "gpus_needed": np.full(24 * 10, 1.0)}, 10)
    figure = overlaid({"a": hourly}, "demand_requests", "Demand", "requests/s", "/s")
    np.testing.assert_allclose(_p50_line(figure.axes[0], "a: P50"), 2.0)
