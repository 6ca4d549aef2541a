"""Every figure names its statistic, and each corrected figure equals a hand computation from
the run's own per-path outputs: pooled shares from the timeseries, each path's lowest cash
from its statements, runway past the horizon as closing cash / burn, a training job's
lateness against its own uninterrupted finish; and the terminal table fits its width
without splitting a number."""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from rich.console import Console

from simulator.cli import app, main
from simulator.path.training.lateness import uninterrupted_wall_s
from simulator.report.headline import SEPARATOR, headline_parts
from simulator.report.terminal import headline_view, pack, years_view
from tests.helpers import base_scenario, run

PATHS = 10
MONTH_S = 365.25 / 12 * 86_400


def _spread_scenario() -> dict:
    """Three months of daily steps on 8 one-request-per-second GPUs; each path draws its own
    demand (2–16 req/s, growing 50% a month), so paths differ in the share they serve; cash
    starts at $1M and pays $100k a month of other costs against a revenue that grows."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1d"})
    demand = data["models"][0]["demand"]
    demand["base_rps"] = {"dist": "uniform", "low": 2.0, "high": 16.0}
    demand["growth"] = {"kind": "linear", "increase_per_month": 0.5}
    data["pricing"] = {"input_usd_per_1m": 0.0, "output_usd_per_1m": 25.0}
    data["other_costs"] = {"usd_per_month": 100_000.0}
    data["financing"] = {"opening_cash_usd": 1_000_000.0}
    return data


@pytest.fixture(scope="module")
def spread():
    return run(_spread_scenario(), paths=PATHS, seed=5)


def _rank(n: int, p: float) -> int:
    return math.ceil(n * p - 1e-12) - 1


def test_demand_served_and_slo_attainment_are_pooled_with_the_path_quantiles_beside(spread):
    ts, summary = spread.timeseries, spread.summary
    sums = ts.groupby("path")[["served_requests", "demand_requests"]].sum()
    pooled = ts["served_requests"].sum() / ts["demand_requests"].sum()
    per_path = (sums["served_requests"] / sums["demand_requests"]).to_numpy()
    assert summary["pooled"]["share_served"] == pytest.approx(pooled, rel=1e-12)
    # The paths differ, and the pooled share is not their median: the two are not the same figure.
    assert np.quantile(per_path, 0.5) - pooled > 0.01
    for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
        assert summary["quantiles"]["share_served"][name] == pytest.approx(np.quantile(per_path, q), rel=1e-12)
    # Its interval: the ratio estimator's delta method, by hand.
    residual = sums["served_requests"] - pooled * sums["demand_requests"]
    half = 1.6448536269514722 * residual.std(ddof=1) / (math.sqrt(PATHS) * sums["demand_requests"].mean())
    low, high = summary["pooled_ci"]["share_served"]
    assert (low, high) == (pytest.approx(pooled - half, rel=1e-9), pytest.approx(pooled + half, rel=1e-9))
    within = (ts["slo_attainment"] * ts["demand_requests"]).sum() / ts["demand_requests"].sum()
    assert summary["pooled"]["slo_attainment"] == pytest.approx(within, rel=1e-12)
    rows = dict(headline_parts(summary))
    served = rows["Demand served"]
    assert served[0].startswith(f"pooled {pooled:.2%} [")
    assert served[1] == (f"per path P10 {np.quantile(per_path, 0.1):.2%} · P50 {np.quantile(per_path, 0.5):.2%} · "
                         f"P90 {np.quantile(per_path, 0.9):.2%}")
    assert rows["SLO attainment"][0].startswith(f"pooled {within:.2%} [")
    assert summary["statistics"]["pooled"].startswith("each ratio pooled")


def test_every_headline_part_names_its_statistic(spread):
    named = re.compile(r"\b(P10|P50|P90|pooled|per path|of paths|none)\b|^short:")
    for label, parts in headline_parts(spread.summary):
        for part in parts:
            assert named.search(part) or part.startswith("extrapolated at"), (label, part)


def test_lowest_cash_is_each_paths_own_lowest_with_that_paths_month(spread):
    pnl = spread.pnl.sort_values(["path", "month"])
    lowest = {path: (rows["cash_balance_usd"].min(), rows["month"].iloc[int(np.argmin(rows["cash_balance_usd"]))])
              for path, rows in pnl.groupby("path")}
    months = {month for _, month in lowest.values()}
    assert len(months) > 1  # paths bottom out in different months: a quantile of months is no path's
    ordered = sorted(lowest, key=lambda path: (lowest[path][0], path))
    cash = spread.summary["cash"]
    for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
        path = ordered[_rank(PATHS, q)]
        usd, month = lowest[path]
        entry = cash["lowest_balance_at_quantile"][name]
        assert entry == {"usd": pytest.approx(usd, rel=1e-12), "month": pd.Timestamp(month).isoformat(), "path": path}
        assert cash["lowest_balance_month"][name] == pd.Timestamp(month).isoformat()
        values = np.array([v for v, _ in lowest.values()])
        assert cash["lowest_balance_usd"][name] == pytest.approx(np.quantile(values, q), rel=1e-12)


def test_runway_past_the_horizon_is_closing_cash_over_the_burn_and_says_so(spread):
    pnl = spread.pnl.sort_values(["path", "month"])
    runway = {}
    for path, rows in pnl.groupby("path"):
        cash = rows["cash_balance_usd"].to_numpy()
        assert (cash > 0).all()  # never out of cash within the horizon
        burn = -rows["cash_flow_usd"].to_numpy()[-3:].mean()
        past = cash[-1] / burn if burn > 0 else math.inf
        runway[path] = (len(cash) + past if past <= 1200 else math.inf, cash[-1], burn)  # (a century: none)
    assert any(burn > 0 for _, _, burn in runway.values())
    ordered = sorted(runway, key=lambda path: (runway[path][0], path))
    for name, q in (("p10", 0.1), ("p50", 0.5)):
        path = ordered[_rank(PATHS, q)]
        months, closing, burn = runway[path]
        entry = spread.summary["cash"]["runway"][name]
        if math.isfinite(months):
            assert entry["basis"] == "extrapolated" and entry["path"] == path
            assert entry["months_past_horizon"] == pytest.approx(closing / burn, rel=1e-12)
            assert entry["months"] == pytest.approx(months, rel=1e-12)
            assert entry["burn_end_usd_per_month"] == pytest.approx(burn, rel=1e-12)
        else:
            assert entry["basis"] == "not_burning" and entry["months"] is None


def test_a_burning_business_gets_an_extrapolated_runway_in_words():
    # No revenue, $100k of other costs a month from $1M: after three months (Jan–Mar, 90 days)
    # cash is $1M − 90 d of costs, burning the three months' mean; the runway is that ratio.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1d"})
    data["other_costs"] = {"usd_per_month": 100_000.0}
    data["financing"] = {"opening_cash_usd": 1_000_000.0}
    summary = run(data).summary
    spent = 100_000.0 * 90 * 86_400 / MONTH_S
    burn = spent / 3  # the mean of the three months' costs
    entry = summary["cash"]["runway"]["p50"]
    assert entry["basis"] == "extrapolated"
    assert entry["cash_end_usd"] == pytest.approx(1_000_000.0 - spent, rel=1e-9)
    assert entry["months_past_horizon"] == pytest.approx((1_000_000.0 - spent) / burn, rel=1e-9)
    assert summary["cash"]["runway_months"]["p50"] is None  # (not short of cash within the horizon)
    rows = dict(headline_parts(summary))
    assert rows["Runway"][:2] == [f"P50 ~{(1_000_000.0 - spent) / burn:,.0f} months past the horizon",
                                  f"extrapolated at ${burn / 1e3:,.0f}k/month burn"]


def test_a_runway_within_the_horizon_counts_the_months_before_cash_goes_negative():
    # $150k from $200k: January ends at $200k − 31 d of costs > 0, February below zero.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1d"})
    data["other_costs"] = {"usd_per_month": 150_000.0}
    data["financing"] = {"opening_cash_usd": 200_000.0}
    entry = run(data).summary["cash"]["runway"]["p50"]
    assert entry["basis"] == "within_horizon" and entry["months"] == 1.0
    assert entry["month"] == "2026-02-01T00:00:00"


def test_the_uninterrupted_wall_time_counts_every_checkpoint_write_but_the_last():
    hour = 3600.0
    walls = uninterrupted_wall_s([10 * hour, 8 * hour, 9 * hour, 10 * hour, 30.0],
                                 [hour, 4 * hour, 4 * hour, math.inf, hour], [300.0, 60.0, 60.0, 300.0, 300.0])
    assert walls.tolist() == [10 * hour + 9 * 300.0, 8 * hour + 60.0, 9 * hour + 2 * 60.0, 10 * hour, 30.0]


def _training(job: dict) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, training={"mode": "preempt"})
    data["training"] = {"jobs": [job]}
    return data


def test_a_job_nothing_interrupts_is_not_late_however_many_checkpoints_it_writes():
    # 10 h of work on 4 idle GPUs from 00:00, a 5 min checkpoint every hour: 9 writes, it ends
    # at 10:45 = its uninterrupted finish, 0 h late (the old figure: 45 min late).
    data = _training({"name": "ft", "pool": "a", "gpus": 4, "duration": "10h", "checkpoint_interval": "1h",
                      "checkpoint_time": "5min"})
    data["models"][0]["demand"]["base_rps"] = 2.0
    result = run(data)
    job = result.jobs.iloc[0]
    assert job["preemptions"] == 0 and job["interruptions"] == 0
    assert job["end_time"] == pd.Timestamp("2026-01-01 10:45")
    assert job["uninterrupted_end_time"] == pd.Timestamp("2026-01-01 10:45")
    assert job["days_late"] == 0.0
    assert result.summary["training"]["named_jobs"]["ft"]["late_s"] == {"p10": 0.0, "p50": 0.0, "p90": 0.0}


def test_an_interrupted_job_is_late_by_its_end_less_its_uninterrupted_finish():
    # test_burst_and_caps's preempted fine-tune (8 GPUs, 24 h of work, a checkpoint every 4 h,
    # preempted at the 10:00 peak), now writing each checkpoint for 6 min: its uninterrupted
    # finish is 24 h + 5 writes × 6 min = 24.5 h after submission.
    peak = [{"at": "0h", "rps": 0}, {"at": "10h", "rps": 0}, {"at": "601min", "rps": 4}, {"at": "20h", "rps": 4},
            {"at": "1201min", "rps": 0}]
    data = _training({"name": "j", "pool": "a", "gpus": 8, "duration": "24h", "checkpoint_interval": "4h",
                      "checkpoint_time": "6min", "restart_time": "30min"})
    data["models"][0]["demand"] = {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold",
                                                               "points": peak}}
    result = run(data)
    job = result.jobs.iloc[0]
    assert job["preemptions"] >= 1
    # It saves 8 h by 08:12, loses the segment under way at 10:00, restarts at 20:00 + 30 min
    # and runs the 16 h left with 3 writes: it ends at 36:48, 12.3 h late.
    reference = pd.Timestamp("2026-01-01") + pd.Timedelta(hours=24.5)
    assert job["uninterrupted_end_time"] == reference
    assert job["end_time"] == pd.Timestamp("2026-01-02 12:48")
    late_h = (job["end_time"] - reference) / pd.Timedelta(hours=1)
    assert late_h == pytest.approx(12.3, rel=1e-12)
    assert job["days_late"] == pytest.approx(late_h / 24, rel=1e-12)
    assert result.summary["training"]["named_jobs"]["j"]["late_s"]["p50"] == pytest.approx(late_h * 3600, rel=1e-12)


_NUMBER = re.compile(r"[−-]?\$?\d[\d,]*(?:\.\d+)?[%kMB]?")


def _value_lines(text: str) -> list[str]:
    """The value column of the boxed table, or the indented lines of the stacked layout."""
    out = []
    boxed = "│" in text
    for line in text.splitlines():
        cells = line.split("│")
        if boxed and len(cells) == 4:
            out.append(cells[2])
        elif not boxed and line.startswith("  "):
            out.append(line)
    return out


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_terminal_headline_fits_its_width_and_splits_no_number(spread, width):
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(headline_view(spread.summary, "hand · a long variant name: 10 paths", width))
    years = years_view(spread.summary, width)
    if years is not None:
        console.print(years)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text  # nothing truncated
    expected = [n for _, parts in headline_parts(spread.summary) for n in _NUMBER.findall(SEPARATOR.join(parts))]
    shown = [n for line in _value_lines(text) for n in _NUMBER.findall(line)]
    assert shown == expected  # every number whole, in order


def test_pack_breaks_between_parts_and_never_inside_a_number():
    parts = ["P50 $156.06M [155.05, 157.04]", "P10 $154.76M – P90 $157.77M"]
    assert pack(parts, 80) == ["P50 $156.06M [155.05, 157.04] · P10 $154.76M – P90 $157.77M"]
    assert pack(parts, 30) == parts
    assert pack(parts, 20) == ["P50 $156.06M", "[155.05, 157.04]", "P10 $154.76M –", "P90 $157.77M"]


def test_fleetcast_run_prints_within_80_columns(tmp_path, monkeypatch):
    scenario = tmp_path / "s.yaml"
    data = _spread_scenario()
    data["name"] = "a scenario with a rather long name for its title"
    scenario.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    for width in (80, 60):
        monkeypatch.setattr(app.console, "width", width)
        result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "--paths", "4", "--no-report",
                                           "--workers", "1"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert max(len(line) for line in lines) <= width
        assert "Demand served" in result.output and "pooled" in result.output
        summary = json.loads((out / "summary.json").read_text())
        served = summary["pooled"]["share_served"]
        assert f"pooled {served:.2%}" in result.output


def _cells_whole(text: str, cells: list[str]) -> None:
    """Every cell's text is on one line of ``text`` (none split or cut), and nothing is cut."""
    assert "…" not in text
    lines = text.splitlines()
    for cell in cells:
        assert any(cell in line for line in lines), cell


@pytest.mark.parametrize("width, cells", [
    (80, ["16", "$4.00", "98.77%", "2027-03-04", "36.5%", "−$9.82M", "$123.46M", "$0.41"]),
    (60, ["16", "$4.00", "98.77%", "2027-03-04", "36.5%"]),  # no room for margin $ and $ per 1M tokens
    (40, ["16", "$4.00", "98.77%", "36.5%"]),  # nor for the first shortfall
])
def test_the_sweep_table_drops_figures_rather_than_split_a_number(width, cells):
    import simulator
    from simulator.report.terminal import sweep_view
    from simulator.scenario.labels import field_label

    base = simulator.load_scenario(base_scenario())
    points = pd.DataFrame({"fleet.pools[0].count": [8, 16], "pricing.output_usd_per_1m": [2.0, 4.0],
                           "share_served_p50": [0.98765, 1.0], "first_shortfall_p50": ["2027-03-04T00:00:00", None],
                           "gross_margin_pct_p50": [36.54, 41.0], "gross_margin_usd_p10": [-9_821_035.0, 123_456_789.0],
                           "cost_per_1m_tokens_usd_p50": [0.4123, 0.39]})
    fields = {name: field_label(base, name) for name in ("fleet.pools[0].count", "pricing.output_usd_per_1m")}
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(sweep_view("hand: 2 points", points, fields, width))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    _cells_whole(text, cells)
    dropped = {"$0.41", "−$9.82M", "2027-03-04"} - set(cells)
    assert not any(cell in text for cell in dropped)


@pytest.mark.parametrize("width", [60, 30])
def test_a_fitted_table_keeps_every_word_whole_even_beside_an_empty_column(width):
    from rich import box

    from simulator.report.terminal import fitted_table

    columns = [("", "left"), ("pool", "left"), ("GPUs", "right"), ("in service", "left"), ("commits", "right")]
    rows = [["buy", "a (H100)", "1,024", "2026-05-31 (P90 2026-07-02)", "$123,360,000"],
            ["", "(no order needed)", "", "", ""]]
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(fitted_table("orders", columns, rows, width, drop_order=("in service",), box_style=box.SIMPLE_HEAD))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    _cells_whole(text, ["1,024", "$123,360,000", "(H100)", "2026-07-02"])
    # Too narrow for a table even without "in service": each row stacked, every cell named.
    assert ("commits: $123,360,000" in text) == (width == 30)


def test_the_burn_leaves_out_a_purchase_and_counts_a_partial_last_month_for_its_days():
    # $100k of other costs a month (accrued by the second: a 28-day February costs 28/30.44 of it)
    # over 100 days from 1 January: the last three months are February, March and 10 days of
    # April, i.e. 2⅓ months. Eight GPUs bought on 15 March are a one-off investing flow: the
    # burn is the costs alone per month covered, and the runway the closing cash over it.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "100d", "step": "1d"})
    data["other_costs"] = {"usd_per_month": 100_000.0}
    data["financing"] = {"opening_cash_usd": 1_000_000.0}
    data["fleet"]["pools"][0]["acquisition"]["price_usd"] = 20_000.0
    data["fleet"]["pools"][0]["orders"] = [{"at": "2026-03-15", "count": 8, "lead_time": "0d"}]
    result = run(data)
    pnl = result.pnl.sort_values("month")
    assert pnl["capex_usd"].to_numpy()[-3:].sum() > 100_000.0  # the purchase is in the last three months
    burn = 100_000.0 * (28 + 31 + 10) * 86_400 / MONTH_S / (1 + 1 + 10 / 30)
    entry = result.summary["cash"]["runway"]["p50"]
    assert entry["basis"] == "extrapolated"
    assert entry["burn_end_usd_per_month"] == pytest.approx(burn, rel=1e-9)
    assert entry["months_past_horizon"] == pytest.approx(entry["cash_end_usd"] / burn, rel=1e-9)
    assert entry["cash_end_usd"] == pytest.approx(pnl["cash_balance_usd"].iloc[-1], rel=1e-12)
