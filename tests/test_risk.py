"""Risk figures that mean what they say: material shortfall, figures per calendar period,
revenue-weighted margins, and ``--paths auto``. Expected values are worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.runs.adaptive import Precision, parse_targets
from simulator.runs.shortfall import episodes_at_least
from tests.helpers import base_scenario, run

MONTH_S = 365.25 * 86400 / 12


def _blip(**shortfall):
    """2,000 GPUs serving 1 req/s each against 1,999 req/s; two GPUs are out from 05:00 to
    06:00, so that hour serves 1,998 req/s and leaves 1 / 1,999 = 0.05% of its demand unserved."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "12h", "step": "1h"})
    data["fleet"]["pools"][0]["count"] = 2000
    data["fleet"]["pools"][0]["changes"] = [{"at": "5h", "remove": 2}, {"at": "6h", "add": 2}]
    data["models"][0]["demand"]["base_rps"] = 1999.0
    if shortfall:
        data["shortfall"] = shortfall
    return data


def test_a_one_hour_blip_of_005_percent_is_not_short_by_default():
    result = run(_blip())
    ts = result.timeseries
    assert ts["unserved_requests"].tolist() == [0] * 5 + [3600.0] + [0] * 6  # raw unserved stays
    assert not ts["short"].any()
    first = result.summary["first_shortfall_time"]
    assert first["probability"] == 0.0 and first["p50"] is None
    assert result.summary["quantiles"]["shortfall_hours"]["p50"] == 0.0


def test_the_same_blip_is_short_when_any_unserved_request_counts():
    result = run(_blip(min_unserved_share=0))
    assert result.timeseries["short"].tolist() == [False] * 5 + [True] + [False] * 6
    summary = result.summary
    assert summary["first_shortfall_time"]["p50"] == "2026-01-01T05:00:00"
    assert summary["quantiles"]["shortfall_hours"]["p50"] == 1.0
    # One replica (GPU) missing for one hour: 1 GPU-hour short, one episode.
    assert summary["quantiles"]["gpu_hours_short"]["p50"] == 1.0
    assert summary["quantiles"]["short_episodes"]["p50"] == 1.0


def test_an_episode_shorter_than_min_duration_does_not_count():
    assert run(_blip(min_unserved_share=0, min_duration="2h")).summary["first_shortfall_time"]["probability"] == 0.0
    short = np.array([0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=bool)
    assert episodes_at_least(short, 2).astype(int).tolist() == [0, 1, 1, 0, 0, 0, 1, 1, 1]
    assert episodes_at_least(short, 3).astype(int).tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1]


def test_slo_attainment_below_its_target_is_short():
    # A flat SLO curve at 90% attainment: short when at least 95% must meet the SLO, not at 85%.
    data = base_scenario()
    data["models"][0]["slo_curve"] = {"load": [0.0, 1.0], "attainment": [0.9, 0.9]}
    data["shortfall"] = {"min_slo_attainment": 0.95}
    assert run(data).timeseries["short"].all()
    data["shortfall"] = {"min_slo_attainment": 0.85}
    assert not run(data).timeseries["short"].any()


def _growing():
    # Capacity 8 req/s against 4 req/s growing 10% a month: short once more than 0.1% of the
    # demand d goes unserved, d > 8 / 0.999, after log(2 / 0.999) / log(1.1) = 7.29 months,
    # i.e. 2026-08-10; demand only grows, so every step after is short too.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "12mo", "step": "1h"})
    data["models"][0]["demand"]["growth"] = {"kind": "exponential", "rate_per_month": 0.1}
    return data


def test_probability_of_a_shortfall_per_month_quarter_and_year_of_a_deterministic_scenario():
    result = run(_growing())
    periods = result.periods.set_index(["period", "start"])["p_short"]
    months = periods.loc["month"]
    assert months.index[0] == pd.Timestamp("2026-01-01") and len(months) == 12  # 12mo: the calendar year
    assert months.iloc[:7].tolist() == [0.0] * 7 and months.iloc[7:].tolist() == [1.0] * 5
    assert periods.loc["quarter"].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert periods.loc["year"].tolist() == [1.0]
    first = pd.Timestamp("2026-01-01") + pd.Timedelta(seconds=np.log(2 / 0.999) / np.log(1.1) * MONTH_S)
    periods_table = result.periods
    august = periods_table[(periods_table["period"] == "month")
                           & (periods_table["start"] == pd.Timestamp("2026-08-01"))].iloc[0]
    expected_hours = (pd.Timestamp("2026-09-01") - first) / pd.Timedelta(hours=1)
    assert abs(august["hours_short_mean"] - expected_hours) <= 1.0
    assert august["hours"] == 31 * 24
    # One path: a probability of 0 or 1 has a Wilson interval of [0, 0.73] or [0.27, 1].
    assert august["p_short_lo"] == pytest.approx(1 - 2.705543454095404 / 3.705543454095404)
    summary = result.summary["periods"]
    assert [entry["p_short"]["value"] for entry in summary["quarter"]] == [0.0, 0.0, 1.0, 1.0]


def test_margin_percent_is_a_ratio_of_sums_per_path_and_revenue_weighted_over_paths():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "60d", "step": "1h"})
    data["pricing"] = {"output_usd_per_1m": {"dist": "choice", "values": [0.5, 4.0]}}
    data["energy"] = {"usd_per_kwh": 0.5}
    result = run(data, paths=12)
    pnl = result.pnl
    summary = result.summary
    per_path = pd.DataFrame(summary["per_path"]).set_index("path")
    sums = pnl.groupby("path")[["gross_margin_usd", "revenue_usd"]].sum()
    assert per_path["gross_margin_pct"].to_numpy() == pytest.approx(
        100 * sums["gross_margin_usd"].to_numpy() / sums["revenue_usd"].to_numpy(), rel=1e-9)
    pooled = 100 * sums["gross_margin_usd"].sum() / sums["revenue_usd"].sum()
    assert summary["totals"]["gross_margin_pct"] == pytest.approx(pooled, rel=1e-9)
    assert abs(per_path["gross_margin_pct"].mean() - pooled) > 1  # the mean of ratios would mislead
    # Per period, each path's margin is its own Σ gross margin / Σ revenue of the months in it.
    rows = result.period_paths.query("period == 'month'").set_index(["path", "start"])
    by_month = pnl.set_index(["path", "month"])
    assert rows["gross_margin_pct"].to_numpy() == pytest.approx(
        100 * by_month["gross_margin_usd"].to_numpy() / by_month["revenue_usd"].to_numpy(), rel=1e-9)
    year = result.periods.query("period == 'year'").iloc[0]
    assert year["gross_margin_pct_pooled"] == pytest.approx(pooled, rel=1e-9)


def _uncertain_paths():
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["models"][0]["demand"].update(base_rps={"dist": "uniform", "low": 2.0, "high": 12.0}, noise="poisson")
    data["models"][0]["pools"] = ["a"]
    data["pricing"] = {"output_usd_per_1m": {"dist": "uniform", "low": 1.0, "high": 3.0}}
    return data


def test_paths_auto_stops_when_met_and_equals_a_run_of_that_many_paths():
    precision = Precision(parse_targets(["shortfall_probability=0.12"]), max_paths=200, first=10)
    auto = simulator.simulate(simulator.load_scenario(_uncertain_paths()), paths="auto", precision=precision,
                              executor="serial")
    state = auto.summary["paths_auto"]
    n = auto.summary["paths"]
    assert state["met"] and state["batches"][-1] == n and len(state["batches"]) >= 2
    fixed = simulator.simulate(simulator.load_scenario(_uncertain_paths()), paths=n, executor="serial")
    assert auto.summary["quantiles"] == fixed.summary["quantiles"]
    pd.testing.assert_frame_equal(auto.bands, fixed.bands)
    pd.testing.assert_frame_equal(auto.periods, fixed.periods)
    # Wilson half-width at n paths with share p, z = 1.645, is at most 0.12 here, as measured.
    assert state["targets"]["shortfall_probability"]["half_width"] <= 0.12


def test_paths_auto_reports_a_cap_it_could_not_beat(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_uncertain_paths(), sort_keys=False))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--paths", "auto", "--max-paths", "12",
                                       "--precision", "revenue_usd_p50=0.1%", "--no-report"])
    assert result.exit_code == 0, result.output
    assert "stopped at the cap of 12 paths" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["paths"] == 12 and summary["paths_auto"]["met"] is False
    assert yaml.safe_load((out / "scenario.resolved.yaml").read_text())["paths"] == 12


@pytest.mark.parametrize("args, words", [
    (["--precision", "shortfall_probability=0.02"], "need --paths auto"),
    (["--paths", "auto", "--precision", "nonsense_p50=1"], "'nonsense_p50' is not a figure"),
    (["--paths", "auto", "--precision", "cost_usd_p50=-1"], "must be positive"),
    (["--paths", "auto", "--precision", "cost_usd_p50"], "expects NAME=HALF_WIDTH"),
])
def test_bad_precision_targets_exit_2(tmp_path, args, words):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(base_scenario(), sort_keys=False))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2 and words in result.stderr, result.output
    assert not (tmp_path / "o").exists()


def test_run_writes_periods_and_prints_the_years(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_growing(), sort_keys=False))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--no-report"])
    assert result.exit_code == 0, result.output
    assert "By year" in result.output and "2026" in result.output
    periods = pd.read_parquet(out / "periods.parquet")
    assert set(periods["period"]) == {"year", "quarter", "month"}
    assert {"p_short", "p_short_lo", "p_short_hi", "gpu_hours_short_mean", "gross_margin_pct_p50",
            "gross_margin_pct_p50_lo", "revenue_usd_p90"} <= set(periods.columns)


def test_the_headline_shows_the_probability_with_its_wilson_interval(tmp_path):
    # One path, short: the Wilson interval of 1 of 1 at z = 1.645 is [1 − 2.7055/3.7055, 1] = [27%, 100%].
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_blip(min_unserved_share=0), sort_keys=False))
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o"), "--no-report"])
    assert result.exit_code == 0, result.output
    assert "100% [27, 100] of paths · short: over 0% unserved" in result.output
    assert "P50 1 h (P90 1 h) · P50 1 GPU-h (P90 1)" in result.output


def test_paths_auto_runs_every_variant_on_the_base_paths():
    data = _uncertain_paths()
    data["variants"] = {"more": {"fleet.pools[0].count": 12}}
    from simulator.decisions.runner import run_scenario

    precision = Precision(parse_targets(["shortfall_probability=0.12"]), max_paths=200, first=10)
    results = run_scenario(simulator.load_scenario(data), precision=precision, show_progress=False)
    base, more = results.results["base"].summary, results.results["more"].summary
    assert base["paths_auto"]["met"] and more["paths"] == base["paths"]
    assert more["paths_auto"]["paths_set_by"] == "base" and more["paths_auto"]["batches"] == [base["paths"]]


def test_a_relative_target_on_a_figure_of_zero_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(base_scenario(), sort_keys=False))  # never short
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "o"), "--paths", "auto",
                                       "--precision", "shortfall_probability=10%", "--max-paths", "200"])
    assert result.exit_code == 2 and "can never be met" in result.stderr, result.output
    assert not (tmp_path / "o").exists()
    again = CliRunner().invoke(main, ["run", str(path), "--paths", "auto", "--precision", "cost_usd_p50=1",
                                      "--precision", "cost_usd_p50=2"])
    assert again.exit_code == 2 and "given twice" in again.stderr


def test_what_counts_as_short_cannot_be_uncertain():
    data = base_scenario(shortfall={"min_unserved_share": {"dist": "uniform", "low": 0, "high": 0.01}})
    with pytest.raises(simulator.ScenarioError, match=r"shortfall\.min_unserved_share: cannot be uncertain"):
        simulator.load_scenario(data)


def test_one_at_a_time_sensitivity_runs_on_correlated_inputs():
    from simulator.decisions.sensitivity import sensitivity_table

    data = _uncertain_paths()
    data["correlations"] = [{"inputs": ["models[0].demand.base_rps", "pricing.output_usd_per_1m"], "rank": 0.5}]
    table = sensitivity_table(simulator.load_scenario(data),
                              lambda point: simulator.simulate(point, paths=1, executor="serial"))
    assert set(table["input"]) == {"models[0].demand.base_rps", "pricing.output_usd_per_1m"}
