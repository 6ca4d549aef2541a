"""The report as a reader meets it: rendered in headless Chromium, escaped, re-rendered,
compared, and the scenario's JSON Schema."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario import dump_scenario
from tests import browser

ROOT = Path(__file__).parents[1]
SCENARIOS = ROOT / "scenarios"
SHORT = ["--set", "horizon.duration=60d", "--paths", "4"]
CHARTS = {"demand_capacity", "shortfall_slo", "gpus_by_use", "cost_stack", "revenue_margin", "training_queue"}


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
    assert "Key findings" in html and "Monthly P&amp;L" in html and "Variants" in html


@pytest.mark.slow
def test_the_report_renders_in_chromium_without_console_errors(launch_run, tmp_path):
    page = browser.load(launch_run / "report.html")
    assert page.console == []
    assert page.body_attribute("data-rendered") == "true"
    assert page.body_attribute("data-charts") == page.body_attribute("data-expected-charts") == str(len(CHARTS))
    # headline, by year, monthly P&L, variants, assumptions
    assert page.body_attribute("data-tables") == page.body_attribute("data-expected-tables") == "5"
    shot = tmp_path / "report.png"
    browser.screenshot(launch_run / "report.html", shot)
    width, height = _png_size(shot)
    assert (width, height) == (1100, 5200) and shot.stat().st_size > 100_000


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
    launch["training"]["review_every"] = 7200  # plain seconds
    assert not list(validator.iter_errors(launch))
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
    import pandas as pd

    from simulator.report.tables import comparison_table

    table = comparison_table(pd.DataFrame({"variant": ["NA"], "cost_per_1m_tokens_usd_p50": [0.42],
                                           "cost_usd_p50": [1234567.0]}))
    assert [cell["text"] for cell in table["rows"][0]] == ["NA", "$0.420", "$1,234,567"]


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
