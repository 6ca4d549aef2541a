"""The order planner finds known optima: orders placed a lead time (and a slip quantile) before
the need, a rented bridge until a purchase lands, reservations for the months they cover, and
the months no order can reach reported as such.

The scenarios are deterministic (``noise: none``, no failures, free energy and facility), so
the need is known by hand: 8 GPUs serve 1 req/s each, and demand steps from 4 req/s to
20 req/s, so 12 more GPUs are needed from the step on.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.decisions.order_planner import covering_need, plan_orders
from simulator.decisions.plan_output import plan_document
from simulator.scenario.plan import PlanSettings
from tests.helpers import base_scenario


def _scenario(step_at: str = "150d", duration: str = "160d", until: str | None = None, **pool) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": duration, "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "owned", "price_usd": 30_000}
    points = [{"at": "0d", "rps": 4}, {"at": step_at, "rps": 4}, {"at": step_at, "rps": 20}]
    if until is not None:
        points += [{"at": until, "rps": 20}, {"at": until, "rps": 4}]
    data["models"][0]["demand"] = {"noise": "none", "input_tokens": 1000, "output_tokens": 200,
                                   "growth": {"kind": "piecewise", "extrapolate": "hold", "points": points}}
    data["fleet"]["pools"][0].update(pool)
    return data


def _plan(data: dict, orders: list[dict], paths: int = 2, **target):
    settings = PlanSettings(orders=orders, target={"probability": 0.1, **target}, paths=paths, review_every="1d")
    return plan_orders(simulator.load_scenario(data), settings, workers=1)


def _day(offset_days: float) -> str:
    return (pd.Timestamp("2026-01-01") + pd.Timedelta(days=offset_days)).strftime("%Y-%m-%d")


def test_an_order_is_placed_one_lead_time_before_the_need_for_exactly_the_gpus_needed():
    outcome = _plan(_scenario(), [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}])
    document = plan_document(outcome)
    # Need from day 150 (2026-05-31); 120 days before is day 30 (2026-01-31); 12 GPUs = 3 orders of 4.
    assert [(o["order_date"], o["count"], o["in_service"]["p50"]) for o in document["orders"]] == [
        (_day(30), 12, _day(150))]
    assert document["cost"]["orders_commit_usd"] == pytest.approx(12 * 30_000)  # no energy or facility cost
    assert document["target_met"] and not document["unreachable"]
    assert outcome.baseline.risk[4] == 1.0  # May runs short without the order...
    assert outcome.search.risk.max() == 0.0 and outcome.fresh.risk.max() == 0.0  # ...and not with it
    assert outcome.simulations == 3  # the fleet as it stands, one confirmation, fresh seeds


def test_fewer_gpus_or_a_later_order_would_run_short():
    # The optimum is tight: one order of 4 fewer, or the order one day later, leaves May short.
    data = _scenario()
    for count, at in ((8, "30d"), (12, "31d")):
        data["fleet"]["pools"][0]["orders"] = [{"at": at, "count": count, "lead_time": "120d"}]
        summary = simulator.simulate(data, paths=1, executor="serial").summary
        assert summary["first_shortfall_time"]["probability"] == 1.0


def test_a_slip_moves_the_order_earlier_by_its_quantile_at_the_target():
    slip = {"dist": "uniform", "low": "0d", "high": "30d"}
    outcome = _plan(_scenario(), [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d", "slip": slip}],
                    paths=40, per="horizon")
    # P(any shortfall) <= 10%: delivered by the slip's 90th percentile, 27 days: order on day
    # 150 - 120 - 27 = 3 at the latest.
    first = outcome.rounds[0]
    assert first["repair"] == "the need quantile"
    assert first["orders"] == [{"pool": "a", "count": 12, "at": _day(3)}]
    # A repair, if the confirmation paths slip more than 10% of the time, can only move it earlier.
    final = plan_document(outcome)["orders"]
    assert len(final) == 1 and final[0]["count"] == 12 and final[0]["order_date"] <= _day(3)
    assert outcome.search.risk[0] <= 0.1


def test_a_month_no_order_can_reach_is_reported_and_the_rest_is_planned():
    # Need from March 1; orders take 120 days, so nothing can be in service before May 1.
    data = _scenario(step_at="2026-03-01", duration="200d")
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}])
    document = plan_document(outcome)
    assert [row["period"] for row in document["unreachable"]] == ["2026-03", "2026-04"]
    assert all("nothing ordered at the start can be in service before 2026-05-01" in row["reason"]
               for row in document["unreachable"])
    assert not document["target_met"]
    assert [(o["order_date"], o["count"]) for o in document["orders"]] == [("2026-01-01", 12)]
    risk = {row["period"]: row["planned"] for row in document["periods"]}
    assert risk["2026-03"] == 1.0 and risk["2026-04"] == 1.0
    assert all(risk[month] == 0.0 for month in ("2026-05", "2026-06", "2026-07"))


def test_a_rented_bridge_until_the_purchase_lands():
    # 12 GPUs needed from March 1 for the rest of the year. Renting costs $10/GPU-hour
    # ($7,300 a GPU-month); a GPU costs $30,000, so renting from March to December ($72k a
    # GPU) loses to buying; but a purchase lands on May 1 at the earliest: rent March and April.
    data = _scenario(step_at="2026-03-01", duration="365d")
    data["fleet"]["pools"].append({"name": "rented", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 10.0}})
    data["models"][0]["pools"] = ["a", "rented"]
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"},
                           {"pool": "rented", "step": 4, "max": 16}])
    document = plan_document(outcome)
    orders = sorted((o["tier"], o["order_date"], o["count"], o["in_service"].get("p50") or
                     o["in_service"]["until"]) for o in document["orders"])
    assert orders == [("buy", "2026-01-01", 12, "2026-05-01"), ("rent", "2026-03-01", 12, "2026-05-01")]
    rent = 12 * 10.0 * (31 + 30) * 24
    assert document["cost"]["orders_commit_usd"] == pytest.approx(12 * 30_000 + rent)
    assert document["target_met"] and outcome.fresh.risk.max() == 0.0


def test_a_reservation_covers_the_months_it_is_needed():
    # 12 GPUs needed in April, May and June only; a 3-month reservation at $2/GPU-hour
    # starting April 1 covers them exactly (buying at $30,000 would cost more).
    data = _scenario(step_at="2026-04-01", until="2026-07-01", duration="240d")
    data["fleet"]["pools"].append({"name": "res", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "reserved", "usd_per_gpu_hour": 2.0, "term": "3mo"}})
    data["models"][0]["pools"] = ["a", "res"]
    outcome = _plan(data, [{"pool": "res", "step": 4, "max": 64}])
    document = plan_document(outcome)
    assert [(o["tier"], o["order_date"], o["count"], o["in_service"]["from"], o["in_service"]["until"])
            for o in document["orders"]] == [("reserve", "2026-04-01", 12, "2026-04-01", "2026-07-01")]
    assert document["cost"]["orders_commit_usd"] == pytest.approx(12 * 2.0 * 91 * 24)
    assert outcome.search.risk.max() == 0.0


def test_a_budget_that_cannot_pay_for_the_need_is_named():
    # 12 GPUs at $30,000 are needed from day 150; $250,000 buys 8 of them (2 orders of 4):
    # the most need the budget covers, and the months from June stay short, for the budget.
    settings = PlanSettings(orders=[{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}],
                            target={"probability": 0.1}, paths=2, review_every="1d", budget_usd=250_000)
    outcome = plan_orders(simulator.load_scenario(_scenario(duration="200d")), settings, workers=1)
    document = plan_document(outcome)
    assert [(o["order_date"], o["count"]) for o in document["orders"]] == [(_day(30), 8)]
    assert document["cost"]["orders_commit_usd"] == pytest.approx(240_000)
    assert [row["period"] for row in document["unreachable"]] == ["2026-05", "2026-06", "2026-07"]
    assert all("the budget ($250,000) is spent" in row["reason"] for row in document["unreachable"])


def test_a_reservation_does_not_copy_its_pools_training_partition():
    # The reserved pool keeps 8 GPUs for training; the 12 GPUs needed for inference in April to
    # June are 12 reserved, not 12 plus a partition of 8 in every new commitment.
    data = _scenario(step_at="2026-04-01", until="2026-07-01", duration="240d")
    data["fleet"]["pools"].append({"name": "res", "gpu": "H100", "count": 8,
                                   "training": {"mode": "dedicated", "partition_gpus": 8},
                                   "acquisition": {"type": "reserved", "usd_per_gpu_hour": 2.0, "term": "3mo"}})
    data["models"][0]["pools"] = ["a", "res"]
    outcome = _plan(data, [{"pool": "res", "step": 4, "max": 64}])
    assert [(o["count"], o["in_service"]["from"]) for o in plan_document(outcome)["orders"]] == [(12, "2026-04-01")]
    assert [(p.name, p.count, p.training.partition_gpus) for p in outcome.scenario.fleet.pools][1:] == [
        ("res", 8, 8), ("res+1", 12, 0)]
    assert outcome.search.risk.max() == 0.0


def test_rentals_cover_whole_calendar_months_when_the_horizon_starts_at_noon():
    # Starting at 12:00, each day's slot runs from midnight to midnight, so the need of the
    # first hours of February is February's, and a February rental covers it.
    data = base_scenario(horizon={"start": "2026-01-01T12:00", "duration": "60d", "step": "1h"})
    points = [{"at": "2026-01-01T12:00", "rps": 4}, {"at": "2026-01-10", "rps": 4}, {"at": "2026-01-10", "rps": 20},
              {"at": "2026-02-01T06:00", "rps": 20}, {"at": "2026-02-01T06:00", "rps": 4}]
    data["models"][0]["demand"] = {"noise": "none", "input_tokens": 1000, "output_tokens": 200,
                                   "growth": {"kind": "piecewise", "extrapolate": "hold", "points": points}}
    data["fleet"]["pools"].append({"name": "rented", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 10.0}})
    data["models"][0]["pools"] = ["a", "rented"]
    outcome = _plan(data, [{"pool": "rented", "step": 4, "max": 16}])
    document = plan_document(outcome)
    assert [(o["count"], o["in_service"]["from"], o["in_service"]["until"]) for o in document["orders"]] == [
        (12, "2026-01-01", "2026-03-01")]  # January (from its first hour) and February
    assert document["target_met"] and outcome.search.risk.max() == 0.0
    assert document["periods"][0]["start"] == "2026-01-01"


def test_an_episode_material_only_across_models_is_a_need():
    # Model 0 is short in hours 0-2, model 1 in hours 3-5: with min_duration 4h neither is
    # material alone, but the step is short when any model is, so hours 0-5 are one material
    # episode and every GPU missing in it is needed.
    from simulator.path import kernels as K
    from simulator.runs.need import path_need
    from simulator.scenario.horizon import Horizon
    from simulator.scenario.shortfall import Shortfall

    out = np.zeros((24, 2, K.MODEL_COGS + 1))
    out[:, :, K.MODEL_DEMAND] = 10.0
    out[0:3, 0, K.MODEL_UNSERVED], out[0:3, 0, K.MODEL_SHORTFALL_GPUS] = 5.0, 4.0
    out[3:6, 1, K.MODEL_UNSERVED], out[3:6, 1, K.MODEL_SHORTFALL_GPUS] = 5.0, 3.0
    horizon = Horizon(start="2026-01-01", duration="24h", step="1h")
    assert path_need(out, Shortfall(min_duration="4h"), horizon).tolist() == [[4.0], [3.0]]
    # Alone, a 3-hour episode of one model is no need; a 4-hour one needs what stays missing.
    out[3:6, 1, K.MODEL_UNSERVED] = 0.0
    out[10:14, 0, K.MODEL_UNSERVED], out[10:14, 0, K.MODEL_SHORTFALL_GPUS] = 5.0, [2.0, 6.0, 6.0, 3.0]
    assert path_need(out, Shortfall(min_duration="4h"), horizon).tolist() == [[2.0], [0.0]]


def test_the_need_quantile_covers_the_period_jointly():
    # 10 paths, one model, two days; 8 of the 10 paths must lack nothing on either day.
    day1 = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=float)
    day2 = np.array([9, 8, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)  # paths 0 and 1 peak on day 2
    need = np.stack([day1, day2], axis=1)[:, None, :]
    level, left = covering_need(need, np.array([0, 0]), np.array([0.2]))
    # Each day's 80% quantile (8th of 10: 7 on day 1, 0 on day 2) covers only paths 2-7 on
    # both days. The 9th of 10 (8 and 8) covers paths 1-8: path 0 (9 on day 2) and path 9
    # (9 on day 1) are left, 20%.
    assert level[0].tolist() == [8.0, 8.0]
    assert left[0] == pytest.approx(0.2)
    # With everything allowed (allowance 1) nothing is asked.
    assert covering_need(need, np.array([0, 0]), np.array([1.0]))[0].max() == 0.0


def _cli(tmp_path, *args):
    from simulator.cli import main

    path = tmp_path / "s.yaml"
    if not path.exists():
        path.write_text(yaml.safe_dump(_scenario(), sort_keys=False))
    return CliRunner().invoke(main, ["plan", str(path), *args])


def test_fleetcast_plan_writes_plan_json_and_the_plans_run(tmp_path):
    out = tmp_path / "plan"
    result = _cli(tmp_path, "--order", "a:4:64", "--paths", "2", "--review-every", "10d", "--out", str(out),
                  "--no-report")
    assert result.exit_code == 0, result.output
    document = json.loads((out / "plan.json").read_text())
    assert [(o["pool"], o["count"]) for o in document["orders"]] == [("a", 12)]
    assert document["candidates"][0]["lead_time"] == "0s"  # the pool has no lead time: order at the need
    assert document["orders"][0]["order_date"] == _day(150)  # a review date (every 10 days)
    assert (out / "summary.json").exists() and (out / "timeseries.parquet").exists()
    assert "buy" in result.output and "a (H100)" in result.output


def test_the_plan_section_is_read_and_the_command_line_overrides_it(tmp_path):
    data = _scenario()
    data["plan"] = {"orders": [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}],
                    "target": {"probability": 0.05, "per": "quarter"}, "paths": 2, "review_every": "1d"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "plan"
    result = _cli(tmp_path, "--target", "0.2", "--out", str(out), "--no-report", "-q")
    assert result.exit_code == 0, result.output
    document = json.loads((out / "plan.json").read_text())
    assert document["target"] == {"probability": 0.2, "per": "quarter"}
    assert document["orders"][0]["order_date"] == _day(30)  # the section's 120-day lead time
    # --order replaces the candidates and keeps the lead time the section gives the pool.
    result = _cli(tmp_path, "--order", "a:12:12", "--out", str(out), "--no-report", "-q")
    assert result.exit_code == 0, result.output
    document = json.loads((out / "plan.json").read_text())
    assert [(o["order_date"], o["count"]) for o in document["orders"]] == [(_day(30), 12)]


@pytest.mark.parametrize(("args", "message"), [
    (["--order", "a:4"], "--order expects POOL:STEP:MAX"),
    (["--order", "a:8:4"], "need 1 <= STEP <= MAX"),
    (["--order", "nope:4:8"], "unknown pool 'nope'"),
    ([], "nothing to plan"),
    (["--order", "a:4:8", "--action", "x=a@0d:4:8"], "--action plans dated additions on their own"),
])
def test_bad_orders_exit_2_with_one_line(tmp_path, args, message):
    out = tmp_path / "plan"
    result = _cli(tmp_path, *args, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_spot_pool_cannot_be_ordered_for():
    data = _scenario()
    data["fleet"]["pools"].append({"name": "s", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "spot", "usd_per_gpu_hour": 1.0}})
    data["plan"] = {"orders": [{"pool": "s", "step": 4, "max": 8}]}
    with pytest.raises(simulator.ScenarioError, match="spot capacity cannot be ordered") as caught:
        simulator.load_scenario(data)
    assert caught.value.path == "plan.orders[0].pool"


@pytest.mark.parametrize("spec", [
    {"dist": "fixed", "value": "3d"},
    {"dist": "exponential", "mean": "3w"},
    {"dist": "uniform", "low": "2d", "high": "30d"},
    {"dist": "lognormal", "median": "2w", "p90": "6w"},
])
def test_a_slips_quantile_matches_its_samples(spec):
    # The planner times orders by a slip's quantile: its closed form against 400,000 draws.
    from pydantic import TypeAdapter

    from simulator.scenario.distributions import DurationDistribution

    slip = TypeAdapter(DurationDistribution).validate_python(spec)
    draws = np.asarray(slip.sample(np.random.default_rng(7), 400_000), dtype=float)
    for q in (0.1, 0.5, 0.9, 0.95):
        # 400,000 draws put the empirical quantile within ~0.5% of the true one here.
        assert slip.quantile(q) == pytest.approx(np.quantile(draws, q), rel=0.01, abs=1.0)
    if spec["dist"] == "exponential":
        assert slip.quantile(0.9) == pytest.approx(3 * 7 * 86400 * np.log(10))  # -mean ln(1 - q)


@pytest.mark.parametrize(("decay", "tier"), [(None, "rent"), (0.5, "buy"), (0.95, "rent")])
def test_a_late_need_is_bought_when_the_gpus_value_at_the_end_covers_the_difference(decay, tier):
    # 12 GPUs needed in October, November and December only (the horizon's last quarter).
    # Renting costs $5/GPU-hour: 92 days × 24 h × $5 = $11,040 a GPU. A GPU costs $30,000 and
    # lands on October 1 (ordered 30 days before); at the horizon's end, 92 days later, it is
    # worth $30,000 × (1 − d)^(92/365.25) with a yearly decay d. Buying nets the price less that:
    # it wins when 30,000 (1 − (1 − d)^0.2519) < 11,040, i.e. below d* = 1 − 0.632^(1/0.2519)
    # = 0.838. At d = 0.5 a GPU nets $4,776 (bought); at 0.95, $15,893 (rented); without a
    # curve it nets its whole price (rented, as before).
    age = 92 / 365.25
    breakeven = 1 - (1 - 92 * 24 * 5.0 / 30_000) ** (1 / age)
    assert breakeven == pytest.approx(0.838, abs=0.001)
    data = _scenario(step_at="2026-10-01", duration="365d")
    data["fleet"]["pools"].append({"name": "rented", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 5.0}})
    data["models"][0]["pools"] = ["a", "rented"]
    if decay is not None:
        data["market_value"] = {"H100": {"decay_per_year": decay}}
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "30d"},
                           {"pool": "rented", "step": 4, "max": 16}])
    document = plan_document(outcome)
    assert {o["tier"] for o in document["orders"]} == {tier}
    assert sum(o["count"] for o in document["orders"] if o["order_date"] <= "2026-10-01") == 12
    if tier == "buy":
        resale = 12 * 30_000 * (1 - decay) ** age
        assert document["cost"]["market_value_at_end_usd"] == pytest.approx(resale, rel=1e-9)
        assert document["cost"]["orders_net_of_resale_usd"] == pytest.approx(12 * 30_000 - resale, rel=1e-9)
    else:
        assert document["cost"]["orders_commit_usd"] == pytest.approx(12 * 92 * 24 * 5.0)
    assert document["target_met"]


def test_an_order_flag_for_a_pool_whose_plan_entry_has_no_lead_time_runs(tmp_path):
    # It used to exit 1: the plan entry's missing lead time was formatted as a duration.
    data = _scenario(step_at="60d", duration="90d")
    data["plan"] = {"orders": [{"pool": "a", "step": 4, "max": 16}]}  # no lead time given
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    result = _cli(tmp_path, "--order", "a:4:32", "--paths", "2", "--out", str(tmp_path / "plan"), "-q")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "plan" / "plan.json").read_text())["orders"]


def test_plan_reports_each_stage_on_a_non_terminal(tmp_path):
    # Off a terminal a progress bar prints nothing; a plan says each simulation on its own line.
    result = _cli(tmp_path, "--order", "a:4:64", "--paths", "2", "--out", str(tmp_path / "plan"))
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("simulation ")]
    assert lines[0] == "simulation 1: the fleet as it stands (2 paths)"
    assert lines[-1].startswith(f"simulation {len(lines)}: fresh seeds")


def test_the_plans_report_shows_its_orders_and_the_risk_per_period(tmp_path):
    result = _cli(tmp_path, "--order", "a:4:64", "--paths", "2", "--out", str(tmp_path / "plan"), "-q")
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "plan" / "plan.json").read_text())
    html = (tmp_path / "plan" / "report.html").read_text()
    assert "Order plan" in html and "plan-orders-table" in html and "plan-periods-table" in html
    order = document["orders"][0]
    assert order["order_date"] in html and f"{order['count']:,}" in html
    assert all(period["period"] in html for period in document["periods"])
    assert document["power_blocked_gpus_peak"]["p90"] == 0.0  # no power cap: nothing waits


def test_a_burst_pool_is_chosen_over_monthly_rentals_for_a_short_peak():
    # 12 GPUs needed for five days (March 10–14) only. A month's rental of 12 GPUs at $5/GPU-hour
    # costs 12 × 31 × 24 × $5 = $44,640; an autoscaled pool at $8/GPU-hour rents them only on the
    # days needed: 12 × 5 × 24 × $8 = $11,520. The plan caps the burst pool at the 12 GPUs and
    # rents nothing by the month; on fresh seeds nothing runs short.
    data = _scenario(step_at="2026-03-10", duration="120d", until="2026-03-15")
    data["fleet"]["pools"] += [
        {"name": "monthly", "gpu": "H100", "count": 0, "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 5.0}},
        {"name": "burst", "gpu": "H100", "count": 0,
         "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 8.0, "min_count": 0, "max_count": 64,
                         "autoscale": {"policy": "predictive", "target_utilization": 1.0}}}]
    data["models"][0]["pools"] = ["a", "monthly", "burst"]
    outcome = _plan(data, [{"pool": "monthly", "step": 4, "max": 16}, {"pool": "burst", "step": 4, "max": 64}])
    document = plan_document(outcome)
    assert [(o["pool"], o["tier"], o["count"]) for o in document["orders"]] == [("burst", "burst", 12)]
    assert document["orders"][0]["cost_usd"] == pytest.approx(12 * 5 * 24 * 8.0)
    assert document["target_met"] and outcome.fresh.risk.max() == 0.0
    rented = outcome.results.summary["quantiles"]["cost_cloud_usd"]["p50"] if "cost_cloud_usd" in \
        outcome.results.summary["quantiles"] else None
    if rented is not None:
        assert rented <= 12 * 5 * 24 * 8.0 * 1.05  # the autoscaler rents about what the plan expected


def test_a_plan_never_orders_more_gpus_than_the_site_can_power():
    # 8 H100s run under a site cap; the need from day 150 is 20 more GPUs (28 req/s at 1 each).
    # The cap leaves room for 17.5 more GPUs' site power: in orders of 4, 16 fit and 20 do not,
    # so the plan orders 16 and names the power cap for the period it cannot protect.
    data = _scenario()
    data["models"][0]["demand"]["growth"]["points"][-1]["rps"] = 28
    kw = simulator.load_scenario(data).site_kw_per_gpu("H100")  # TDP × server factor × PUE
    cap_kw = (8 + 17.5) * kw
    data["power"] = {"caps": [{"at": "2026-01-01", "mw": cap_kw / 1000}]}
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}])
    document = plan_document(outcome)
    assert sum(o["count"] for o in document["orders"]) == 16
    assert not document["target_met"]
    assert any("power cap" in row["reason"] for row in document["unreachable"])
    blocked = outcome.results.timeseries["gpus_power_blocked"]
    assert blocked.max() == 0  # every GPU ordered is powered
    del data["power"]  # without the cap the same need is met with 20
    uncapped = plan_document(_plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}]))
    assert sum(o["count"] for o in uncapped["orders"]) == 20 and uncapped["target_met"]


def test_a_plan_keeps_cash_above_its_floor_and_names_what_it_cannot_afford():
    # The fleet as it stands opens with $640,000 and pays $240,000 for its 8 GPUs at the start,
    # then spends nothing (free energy and facility, no revenue, no opex): month-end cash is
    # $400,000 on every path. The need is 12 GPUs at
    # $30,000 each ($360,000). A floor of $100,000 leaves $300,000: 10 GPUs' worth, so in orders
    # of 4 the plan buys 8 and names cash for the period it cannot protect; a floor of $0 buys 12.
    data = _scenario()
    data["financing"] = {"opening_cash_usd": 640_000}
    orders = [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"}]

    def plan(floor):
        settings = PlanSettings(orders=orders, target={"probability": 0.1}, paths=2, review_every="1d",
                                cash_floor_usd=floor)
        return plan_document(plan_orders(simulator.load_scenario(data), settings, workers=1))

    tight = plan(100_000)
    assert sum(o["count"] for o in tight["orders"]) == 8 and not tight["target_met"]
    assert any("cash" in row["reason"] for row in tight["unreachable"])
    loose = plan(0)
    assert sum(o["count"] for o in loose["orders"]) == 12 and loose["target_met"]


@pytest.mark.parametrize(("decay", "markets", "tier"), [
    (0.95, {"rent": [{"pool": "rented", "points": [{"at": "2026-10-01", "usd_per_gpu_hour": 8.0}]}]}, "buy"),
    (0.95, {"rent": [{"pool": "rented", "points": [{"at": "2026-10-01", "usd_per_gpu_hour": 6.0}]}]}, "rent"),
    (0.5, {"purchase": [{"pool": "a", "points": [{"at": "2026-01-01", "usd": 80_000}]}]}, "rent"),
    (0.5, {"purchase": [{"pool": "a", "points": [{"at": "2026-01-01", "usd": 60_000}]}]}, "buy"),
])
def test_the_planner_prices_orders_at_the_market_of_their_month(decay, markets, tier):
    # The case above (12 GPUs for the last 92 days, landing October 1), with prices that move.
    # At d = 0.95 a GPU bought at $30,000 nets $15,893; renting from October at $8/h costs
    # 92 × 24 × 8 = $17,664 (buy), at $6/h $13,248 (rent). At d = 0.5 buying nets the
    # October price × (1 − 0.5^0.2519) = 0.1602 × price: $12,816 at $80,000 (rent beats $11,040),
    # $9,612 at $60,000 (buy). (Prices that rise only later would be beaten by buying early.)
    age = 92 / 365.25
    assert 30_000 * (1 - 0.05**age) == pytest.approx(15_893, abs=1)
    assert 80_000 * (1 - 0.5**age) == pytest.approx(12_816, abs=1)
    data = _scenario(step_at="2026-10-01", duration="365d")
    data["fleet"]["pools"].append({"name": "rented", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 5.0}})
    data["models"][0]["pools"] = ["a", "rented"]
    data["market_value"] = {"H100": {"decay_per_year": decay}}
    data["markets"] = markets
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "30d"},
                           {"pool": "rented", "step": 4, "max": 16}])
    document = plan_document(outcome)
    assert {o["tier"] for o in document["orders"]} == {tier}
    if tier == "rent":
        rate = 6.0 if "rent" in markets else 5.0
        assert document["cost"]["orders_commit_usd"] == pytest.approx(12 * 92 * 24 * rate)
    else:
        price = 30_000 if "rent" in markets else 60_000
        assert document["cost"]["market_value_at_end_usd"] == pytest.approx(12 * price * (1 - decay) ** age, rel=1e-9)
    assert document["target_met"]


def test_a_unit_across_two_pools_is_ordered_on_both():
    """The demand steps to 20 req/s on day 150; units of 1 req/s hold 2 GPUs of pool a and 1 of pool
    b, whose 8 and 4 GPUs serve the first 4 req/s: 16 more units need 32 GPUs of a and 16 of b,
    each ordered one lead time before."""
    data = _scenario()
    data["fleet"]["pools"].append({"name": "b", "gpu": "H200", "count": 4,
                                   "acquisition": {"type": "owned", "price_usd": 20_000}})
    model = data["models"][0]
    del model["gpus_per_replica"], model["capacity_rps"]
    model["replicas"] = {"a": {"gpus_per_replica": 2, "capacity_rps": 1.0, "companion_pool": "b",
                               "companion_gpus": 1}}
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "120d"},
                           {"pool": "b", "step": 4, "max": 64, "lead_time": "60d"}])
    document = plan_document(outcome)
    ordered = sorted((o["pool"], o["order_date"], o["count"]) for o in document["orders"])
    assert ordered == [("a", _day(30), 32), ("b", _day(90), 16)]
    assert document["target_met"] and outcome.fresh.risk.max() == 0.0
