"""The report's assumptions table: every section of the scenario, uncertain inputs as the
distributions they were written as, piecewise demand as its points, prices to their
significant digits; and the text helpers it is written with, on hand cases."""

from __future__ import annotations

import pytest
import yaml

import simulator
from simulator.report.assumptions import assumptions_table
from simulator.report.scenario_text import distribution_text, money_text, percent_text
from simulator.scenario import dump_scenario
from tests.helpers import base_scenario


@pytest.mark.parametrize(("value", "text"), [
    (0.0004, "$0.0004"), (0.00042, "$0.00042"), (0.000123456, "$0.000123"), (0.083, "$0.083"), (0.9, "$0.90"),
    (2.5, "$2.50"), (1.0, "$1.00"), (12.0, "$12.00"), (184.0, "$184"), (184.5, "$184.50"), (25_000.0, "$25,000"), (1234.56, "$1,235"), (0.0, "$0"), (-0.05, "−$0.05"),
])
def test_money_shows_its_significant_digits(value, text):
    assert money_text(value) == text


@pytest.mark.parametrize(("value", "text"), [(0.08, "8%"), (0.125, "12.5%"), (0.004, "0.4%"), (1.0, "100%"),
                                             (0.0544, "5.44%")])
def test_shares_show_as_percentages(value, text):
    assert percent_text(value) == text


@pytest.mark.parametrize(("spec", "kind", "text"), [
    ({"dist": "normal", "mean": 0.08, "sd": 0.02}, "percent", "normal(mean 8%, sd 2%)"),
    ({"dist": "uniform", "low": 0.05, "high": 0.12}, "usd", "uniform $0.05–$0.12"),
    ({"dist": "uniform", "low": 3.0, "high": 9.0}, "number", "uniform 3–9"),
    ({"dist": "lognormal", "median": "3w", "p90": "8w"}, "number", "lognormal(median 3w, p90 8w)"),
    ({"dist": "triangular", "low": 200, "mode": 256, "high": 256}, "number", "triangular(low 200, mode 256, high 256)"),
    ({"dist": "choice", "values": [1, 2, 4], "weights": [0.5, 0.25, 0.25]}, "number",
     "choice of 1, 2, 4 (weights 0.5, 0.25, 0.25)"),
    ({"dist": "exponential", "mean": "21d"}, "number", "exponential(mean 21d)"),
])
def test_distributions_read_as_written(spec, kind, text):
    assert distribution_text(spec, kind) == text


def _scenario() -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1h"})
    data["models"][0]["demand"]["growth"] = {"kind": "exponential",
                                             "rate_per_month": {"dist": "normal", "mean": 0.08, "sd": 0.02}}
    data["models"][0]["pricing"] = {"input_usd_per_1m": {"dist": "uniform", "low": 0.05, "high": 0.12},
                                    "output_usd_per_1m": 0.0004}
    data["models"].append({"name": "piecewise", "pools": ["a"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                           "demand": {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": [
                               {"at": "2026-01-01", "rps": 2.0}, {"at": "2026-02-01", "rps": 3.5}]}}})
    data["financing"] = {"opening_cash_usd": 2_000_000, "share_of_capex": 0.5, "rate_per_year": 0.09}
    data["opex"] = [{"name": "payroll", "usd_per_month": 150_000, "growth_per_month": 0.02}]
    data["taxes"] = {"rate": 0.21}
    data["fleet"]["pools"].append({"name": "r", "gpu": "H100", "count": 4,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.0}})
    data["markets"] = {"purchase": [{"pool": "a", "points": [{"at": "2026-02-01", "usd": 20_000}]}]}
    data["contracts"] = [{"name": "lab", "pool": "a", "gpus": 4, "usd_per_gpu_hour": 2.1, "start": "2026-01-01",
                          "term": "12mo"}]
    return yaml.safe_load(dump_scenario(simulator.load_scenario(data)))


@pytest.fixture(scope="module")
def rows() -> dict[str, str]:
    return {row[0]["text"]: row[1]["text"] for row in assumptions_table(_scenario())["rows"]}


def test_uncertain_inputs_show_their_distributions_not_their_medians(rows):
    assert "growth exponential (rate per month normal(mean 8%, sd 2%) (drawn per path))" in rows["Model m"]
    assert rows["Prices of m"].startswith("uniform $0.05–$0.12 (drawn per path) per 1M input, $0.0004 per 1M output")
    assert rows["Uncertain input models[0].demand.growth.rate_per_month"] == "normal(mean 8%, sd 2%) (drawn per path)"


def test_piecewise_demand_shows_its_points(rows):
    # It read "None requests/s at the start".
    assert rows["Model piecewise"].startswith("piecewise: requests/s 2 on 2026-01-01, 3.5 on 2026-02-01 (2 points), "
                                              "then hold")
    assert "None" not in " ".join(rows.values())


def test_every_section_of_the_scenario_has_a_row(rows):
    assert rows["Financing"] == "opening cash $2,000,000; 50% of capex borrowed at 9% a year over 3 years"
    assert rows["Operating expense payroll"] == "$150,000 per month, growing 2% a month"
    assert rows["Taxes"].startswith("21% of taxable income, computed monthly")
    assert rows["Contract lab"].startswith("4 GPUs of a at $2.10 per GPU-hour from 2026-01-01 for 12mo")
    assert rows["Markets"] == "purchase (pool a, points (at 2026-02-01, usd $20,000))"
    for label in ("Horizon", "Paths and seed", "Pool a", "Pool r", "GPU type H100", "Energy", "Facility",
                  "Other costs", "Failures (every pool)", "Power", "Contract pipeline", "Market value", "Alerts",
                  "A shortfall counts when", "Training", "Correlation", "Order plan", "Variant"):
        assert label in rows, label
    assert rows["Contract pipeline"] == rows["Training"] == rows["Variant"] == "none"


def test_a_scenario_without_money_sections_says_none():
    scenario = yaml.safe_load(dump_scenario(simulator.load_scenario(base_scenario())))
    rows = {row[0]["text"]: row[1]["text"] for row in assumptions_table(scenario)["rows"]}
    assert rows["Operating expenses"] == rows["Contracts"] == rows["Markets"] == "none"
    assert rows["Taxes"] == "none (rate 0%)" and rows["Uncertain inputs"] == "none"
