"""Site power upgrades, by hand: an upgrade ordered lets the GPUs waiting for power in when it is
energized, its cost is capex that month and depreciates straight-line after; the planner orders
one when the GPUs it lets in are needed and it pays, and never plans GPUs the site cannot power."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.decisions.plan_output import plan_document
from tests.helpers import base_scenario, run


def _site(**upgrade) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "60d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=8, acquisition={"type": "owned", "price_usd": 0},
                                     changes=[{"at": "0d", "add": 8}])
    kw = simulator.load_scenario(data).site_kw_per_gpu("H100")
    data["power"] = {"caps": [{"at": "2026-01-01", "mw": 8 * kw / 1000}],
                     "upgrades": [{"name": "substation", "mw": 8 * kw / 1000, "cost_usd": 1_200_000,
                                   "lead_time": "10d", "at": "2026-01-01", "depreciation_years": 10, **upgrade}]}
    return data


def test_an_upgrade_lets_the_waiting_gpus_in_when_energized_and_is_capex_then_depreciation():
    result = run(_site(), paths=1)
    pools = result.pools
    installed = pools["gpus_installed"].to_numpy()
    blocked = pools["gpus_power_blocked"].to_numpy()
    # 8 GPUs fit the cap; the 8 added wait for power until day 10 (step 240), then all 16 are in.
    assert (installed[:240] == 8).all() and (blocked[:240] == 8).all()
    assert (installed[240:] == 16).all() and (blocked[240:] == 0).all()
    pnl = result.pnl.set_index("month")
    jan, feb = pd.Timestamp("2026-01-01"), pd.Timestamp("2026-02-01")
    assert pnl.loc[jan, "site_capex_usd"] == pytest.approx(1_200_000)
    assert pnl.loc[feb, "site_capex_usd"] == 0.0
    # $1.2M over 10 years of 365.25 days: 21 days of January (from the 11th, 00:00), 28 of February.
    per_day = 1_200_000 / (10 * 365.25)
    assert pnl.loc[jan, "site_depreciation_usd"] == pytest.approx(21 * per_day)
    assert pnl.loc[feb, "site_depreciation_usd"] == pytest.approx(28 * per_day)
    assert pnl.loc[jan, "depreciation_amortization_usd"] == pytest.approx(21 * per_day)  # the GPUs cost 0
    assert pnl.loc[jan, "ebit_usd"] == pytest.approx(-21 * per_day)
    assert pnl.loc[jan, "investing_cash_flow_usd"] == pytest.approx(-1_200_000)
    assert pnl.loc[feb, "ppe_net_usd"] == pytest.approx(1_200_000 - 49 * per_day)
    assert np.abs(result.pnl["balance_check_usd"]).max() < 1e-6


def test_an_upgrade_not_ordered_is_only_an_option_and_a_slip_delays_it():
    result = run(_site(at=None), paths=1)
    assert (result.pools["gpus_installed"] == 8).all()
    assert (result.pnl["site_capex_usd"] == 0).all()
    slipped = run(_site(slip="5d"), paths=1).pools["gpus_installed"].to_numpy()
    assert (slipped[:360] == 8).all() and (slipped[360:] == 16).all()  # day 15: 10 + 5


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["power"].update(caps=[]), r"power\.upgrades\[0\]: an upgrade raises the site's power cap"),
    (lambda d: d["power"]["upgrades"].append(dict(d["power"]["upgrades"][0])), r"power\.upgrades\[1\]\.name: 'substation' is used twice"),
    (lambda d: d["power"]["upgrades"][0].update(mw=-1), r"power\.upgrades\[0\]\.mw"),
])
def test_upgrades_that_cannot_be_are_refused_by_name(change, message):
    data = _site()
    change(data)
    with pytest.raises(simulator.ScenarioError, match=message):
        simulator.load_scenario(data)


def _planned_data(upgrade_usd: float | None = None) -> dict:
    from tests.test_order_planner import _scenario

    data = _scenario(step_at="2026-10-01", duration="365d")
    data["fleet"]["pools"].append({"name": "rented", "gpu": "H100", "count": 0,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 5.0}})
    data["models"][0]["pools"] = ["a", "rented"]
    data["market_value"] = {"H100": {"decay_per_year": 0.5}}
    kw = simulator.load_scenario(data).site_kw_per_gpu("H100")
    data["power"] = {"caps": [{"at": "2026-01-01", "mw": (12 * kw + 1) / 1000}]}  # room for 4 more GPUs
    if upgrade_usd is not None:
        data["power"]["upgrades"] = [{"name": "feed-2", "mw": (8 * kw + 1) / 1000, "cost_usd": upgrade_usd,
                                      "lead_time": "30d", "depreciation_years": 10}]
    return data


def _planned(upgrade_usd: float | None, rent: bool = True):
    from tests.test_order_planner import _plan

    outcome = _plan(_planned_data(upgrade_usd), [{"pool": "a", "step": 4, "max": 64, "lead_time": "30d"}]
                    + ([{"pool": "rented", "step": 4, "max": 16}] if rent else []))
    return outcome, plan_document(outcome)


# 12 GPUs needed from October 1 to the horizon's end (92 days). Renting: 92 × 24 × $5 = $11,040 a
# GPU; buying nets $30,000 × (1 − 0.5^(92/365.25)) = $4,776. The site has power for 4 more: those
# are bought. The other 8 are rented, unless an upgrade for them is ordered (energized October 1,
# ordered 30 days before), which counts what it is used up by the end: its price × 92 days over a
# 10-year life. It pays below C* = 8 × (11,040 − 4,776) / (92 / 3,652.5) = $1.99M.
AGE = 92 / 365.25
SAVING = 8 * (92 * 24 * 5.0 - 30_000 * (1 - 0.5**AGE))
BREAK_EVEN = SAVING / (92 / 3652.5)


def test_under_a_power_cap_the_plan_buys_what_the_site_can_power_and_rents_the_rest():
    assert pytest.approx(1.99e6, rel=0.01) == BREAK_EVEN
    outcome, document = _planned(None)
    bought = sum(o["count"] for o in document["orders"] if o["tier"] == "buy")
    rented = {o["count"] for o in document["orders"] if o["tier"] == "rent"}
    assert bought == 4 and rented == {8}
    assert document["target_met"]
    assert (outcome.results.timeseries["gpus_power_blocked"] == 0).all()  # never a GPU it cannot power


@pytest.mark.parametrize(("usd", "ordered"), [(0.9 * BREAK_EVEN, True), (1.1 * BREAK_EVEN, False)])
def test_a_power_upgrade_is_ordered_when_it_pays(usd, ordered):
    outcome, document = _planned(usd)
    power = [o for o in document["orders"] if o["tier"] == "power"]
    bought = sum(o["count"] for o in document["orders"] if o["tier"] == "buy")
    if ordered:
        assert [(o["pool"], o["order_date"], o["in_service"]["p50"]) for o in power] == [
            ("feed-2", "2026-09-01", "2026-10-01")]
        assert bought == 12 and not [o for o in document["orders"] if o["tier"] == "rent"]
        assert power[0]["cost_usd"] == usd
        assert power[0]["market_value_at_end_usd"] == pytest.approx(usd * (1 - 92 / 3652.5))
        upgrade = outcome.scenario.power.upgrades[0]
        assert upgrade.at == pd.Timestamp("2026-09-01")  # written into the planned scenario: the run energizes it
    else:
        assert not power and bought == 4
    assert document["target_met"]
    assert (outcome.results.timeseries["gpus_power_blocked"] == 0).all()


def test_months_the_cap_keeps_short_name_power_and_the_missing_upgrade():
    _, document = _planned(None, rent=False)
    assert not document["target_met"]
    reasons = {row["period"]: row["reason"] for row in document["unreachable"]}
    assert set(reasons) == {"2026-10", "2026-11", "2026-12"}
    assert all("the site's power cap" in r and "no power upgrade on offer" in r for r in reasons.values())


def test_an_upgrade_already_ordered_counts_in_the_planners_power_room():
    # The same case with an upgrade for 8 more GPUs ordered at the start (energized day 30): the
    # site can power all 12 by October, so buying ($4,776 net a GPU) beats renting ($11,040).
    from tests.test_order_planner import _plan

    data = _planned_data(1e6)
    data["power"]["upgrades"][0]["at"] = "2026-01-01"
    outcome = _plan(data, [{"pool": "a", "step": 4, "max": 64, "lead_time": "30d"},
                           {"pool": "rented", "step": 4, "max": 16}])
    document = plan_document(outcome)
    assert sum(o["count"] for o in document["orders"] if o["tier"] == "buy") == 12
    assert not [o for o in document["orders"] if o["tier"] == "rent"]
    assert (outcome.results.timeseries["gpus_power_blocked"] == 0).all()


def test_replanning_keeps_the_power_upgrades_the_plan_ordered():
    from simulator.decisions.replan_compare import replanning_scenario

    outcome, _ = _planned(0.9 * BREAK_EVEN)
    replanned = replanning_scenario(outcome, simulator.load_scenario(_planned_data(0.9 * BREAK_EVEN)))
    assert replanned.power.upgrades[0].at == pd.Timestamp("2026-09-01")
    assert replanned.fleet.pools[0].procurement.policy == "replan"
