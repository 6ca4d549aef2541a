"""Repairs on GPUs that arrive by order or by a procurement policy, worked out by hand.

The pool starts empty; its GPUs come from a dated order (16 ordered on day 10 with a 20-day
lead time: installed from day 30) or from a procurement policy (one order of 16 placed at
the first review, at the start, with a 20-day lead time: installed from day 20). On day 40,
4 of them go out of service with a fixed 5-day repair: they are back on day 45. At daily
steps every instant is a step boundary, so by hand, per daily step k:

    installed           0 for k < arrival, 16 from it
    gpus_out_of_service 4 for 40 <= k < 45, else 0
    gpus_available      installed - out of service: 16 - 4 = 12 for 40 <= k < 45
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario import ScenarioError
from tests.helpers import base_scenario, run
from tests.test_invalid_scenarios import _line_of

DAYS = 60
OUT, BACK = 40, 45


def _scenario(supply: dict, changes: list[dict], base_rps: float = 0.0) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": f"{DAYS}d", "step": "1d"})
    data["fleet"]["pools"][0].update(count=0, changes=changes, **supply)
    data["models"][0]["demand"]["base_rps"] = base_rps
    return data


ORDER = {"orders": [{"at": "10d", "count": 16, "lead_time": "20d"}]}
PROCUREMENT = {"procurement": {"order_count": 16, "lead_time": "20d", "review_every": "7d", "lookahead": "7d",
                               "threshold": 0.5, "max_orders": 1}}
REPAIR = [{"at": "40d", "out_of_service": 4, "repair": "5d"}]


def _expected(arrival: int) -> dict[str, np.ndarray]:
    installed = np.where(np.arange(DAYS) >= arrival, 16, 0)
    out = np.zeros(DAYS, dtype=int)
    out[OUT:BACK] = 4
    return {"gpus_installed": installed, "gpus_out_of_service": out, "gpus_available": installed - out}


def _check_pool(result, expected: dict[str, np.ndarray]) -> None:
    pools = result.pools
    assert len(pools) == DAYS
    for column, values in expected.items():
        np.testing.assert_array_equal(pools[column].to_numpy(), values, err_msg=column)
    assert (pools["gpus_failed"] == 0).all()
    # The fleet-wide series say the same (one pool).
    for column, values in expected.items():
        np.testing.assert_array_equal(result.timeseries[column].to_numpy(), values, err_msg=column)


def test_a_repair_on_gpus_that_arrive_by_a_dated_order():
    result = run(_scenario(ORDER, REPAIR))
    _check_pool(result, _expected(arrival=30))
    # Day 40 to 45: 16 - 4 = 12 available.
    available = result.pools["gpus_available"].to_numpy()
    assert available[39] == 16 and (available[40:45] == 12).all() and available[45] == 16


def test_a_repair_on_gpus_that_arrive_by_procurement():
    # 1 rps at 1 rps per 1-GPU replica needs 1 GPU; with none installed or on order the
    # first review (at the start) orders 16, which arrive 20 days later; max_orders stops it there.
    result = run(_scenario(PROCUREMENT, REPAIR, base_rps=1.0))
    _check_pool(result, _expected(arrival=20))
    # Before day 20 nothing is served: 86,400 requests a day unserved; then all are.
    unserved = result.timeseries["unserved_requests"].to_numpy()
    assert (unserved[:20] == 86_400.0).all() and (unserved[20:] == 0.0).all()


def test_an_explicit_return_of_ordered_gpus():
    changes = [{"at": "40d", "out_of_service": 4}, {"at": "45d", "back_in_service": 4}]
    _check_pool(run(_scenario(ORDER, changes)), _expected(arrival=30))


def test_fewer_in_service_than_asked_takes_those_there_are():
    # On day 20 the order has not arrived (it does on day 30): nothing is in service, so the
    # change takes none, and its repair returns none; the GPUs arrive whole on day 30.
    result = run(_scenario(ORDER, [{"at": "20d", "out_of_service": 4, "repair": "5d"}]))
    pools = result.pools
    assert (pools["gpus_out_of_service"] == 0).all()
    np.testing.assert_array_equal(pools["gpus_available"].to_numpy(), _expected(arrival=30)["gpus_installed"])


def test_a_change_at_the_instant_of_delivery_comes_before_it():
    # Day 30 is both the order's arrival and the change's date: the change runs first (its
    # event was scheduled at the start, the delivery's on day 10), finds nothing in service
    # and takes none. docs/guide/fleet.md says so: date an RMA of new GPUs after their arrival.
    result = run(_scenario(ORDER, [{"at": "30d", "out_of_service": 4, "repair": "5d"}]))
    assert (result.pools["gpus_out_of_service"] == 0).all()
    later = run(_scenario(ORDER, [{"at": "31d", "out_of_service": 4, "repair": "5d"}]))
    out = later.pools["gpus_out_of_service"].to_numpy()
    assert (out[31:36] == 4).all() and out[:31].sum() == 0 and out[36:].sum() == 0


def _yaml(supply: dict, changes: list[dict]) -> str:
    data = _scenario(supply, changes)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=200)


# (pool supply, changes, text on the refused line, words in the message)
INVALID = [
    # 0 installed + 16 ordered: 17 can never be in service.
    (ORDER, [{"at": "40d", "out_of_service": 17}], "out_of_service: 17",
     "takes 17 GPUs out of service when at most 16 can be in service (0 installed by then and up to 16 arriving"),
    # 16 ordered, 10 out with a repair (counted out to the end), then 7 more: 16 - 10 = 6 at most.
    (ORDER, [{"at": "40d", "out_of_service": 10, "repair": "5d"}, {"at": "50d", "out_of_service": 7}],
     "out_of_service: 7", "at most 6 can be in service (0 installed by then and up to 16 arriving by order or "
     "procurement; 10 already out, counted out until they return)"),
    # A policy of at most 1 order of 16: 17 never.
    (PROCUREMENT, [{"at": "40d", "out_of_service": 17}], "out_of_service: 17", "at most 16 can be in service"),
]


@pytest.mark.parametrize("case", INVALID, ids=[case[2] + " " + str(i) for i, case in enumerate(INVALID)])
def test_more_than_the_pool_can_ever_hold_is_refused(case, tmp_path):
    supply, changes, line_text, words = case
    text = _yaml(supply, changes)
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    slot = len(changes) - 1
    assert message.startswith(f"error: fleet.pools[0].changes[{slot}].out_of_service: "), message
    assert words in message, message
    assert message.endswith(f"(line {_line_of(text, line_text)})"), message
    assert not (tmp_path / "out").exists()


def test_a_policy_without_max_orders_can_bring_any_number():
    # Without max_orders a policy has no bound, so no count is certainly impossible: accepted,
    # and in the run the change takes the 16 GPUs there are (one order placed by day 40: the
    # threshold is passed again only when the need outgrows 0.5 × 16 GPUs).
    supply = {"procurement": {**PROCUREMENT["procurement"], "max_orders": None}}
    result = run(_scenario(supply, [{"at": "40d", "out_of_service": 100, "repair": "5d"}], base_rps=1.0))
    out = result.pools["gpus_out_of_service"].to_numpy()
    assert (out[OUT:BACK] == 16).all() and out[:OUT].sum() == 0 and out[BACK:].sum() == 0


def test_a_pool_without_orders_keeps_its_message():
    # Unchanged for a pool whose GPUs are all certain: "only N are in service".
    data = base_scenario()
    data["fleet"]["pools"][0]["changes"] = [{"at": "1h", "out_of_service": 9}]
    with pytest.raises(ScenarioError, match="takes 9 GPUs out of service when only 8 are in service$"):
        simulator.load_scenario(data)
