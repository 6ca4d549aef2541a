"""GPUs out of service (RMA): still installed and paid for, but serving nothing, by hand.

The scenario: 100 owned H100s (TDP 700 W) at $30,000 with a 5-year life, a 30-day horizon
of hourly steps (720), facility $200 per kW-month, energy $0.10/kWh at PUE 1.3, server power
factor 1.8, idle draw 0.3 of TDP. Five GPUs go out of service on day 10 (step 240) and come
back on day 20 (step 480).

    depreciation / step = 100 × 30,000 / (5 × 8,766 h)         = 3,000,000 / 43,830 = $68.4462697
    facility / step     = 100 × 0.7 kW × 1.8 × $200 / 730.5 h  = 25,200 / 730.5     = $34.4969199
    idle kWh per GPU-h  = 0.7 × 0.3 × 1.8 × 1.3                = 0.4914 kWh
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from click.testing import CliRunner

from simulator.cli import main
from tests.helpers import base_scenario, run
from tests.test_invalid_scenarios import LAUNCH, _line_of

STEPS = 720
OUT, BACK = 240, 480  # day 10 and day 20, in hourly steps
DEPRECIATION_100 = 100 * 30_000 / (5 * 8766)  # $68.4462697 per hour
FACILITY_100 = 100 * 0.7 * 1.8 * 200 / 730.5  # $34.4969199 per hour
IDLE_KWH = 0.7 * 0.3 * 1.8 * 1.3  # 0.4914 kWh per idle GPU-hour
BUSY_KWH = 0.7 * 0.75 * 1.8 * 1.3  # 1.2285 kWh per busy GPU-hour


def rma_scenario(changes, base_rps: float = 0.0) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "30d", "step": "1h"})
    data["fleet"]["pools"][0].update(
        count=100, acquisition={"type": "owned", "price_usd": 30_000, "depreciation_years": 5}, changes=changes)
    data["models"][0].update(gpus_per_replica=2, capacity_rps=1.0,
                             demand={"base_rps": base_rps, "noise": "none"})
    data["energy"] = {"usd_per_kwh": 0.10, "pue": 1.3, "idle_draw_fraction": 0.3}
    data["facility"] = {"usd_per_kw_month": 200.0}
    return data


EXPLICIT = [{"at": "10d", "out_of_service": 5}, {"at": "20d", "back_in_service": 5}]


def _window(values, inside, outside):
    values = np.asarray(values)
    assert (values[OUT:BACK] == inside).all(), values[OUT:BACK]
    assert (values[:OUT] == outside).all() and (values[BACK:] == outside).all()


def test_out_of_service_keeps_depreciation_and_facility_but_draws_no_energy():
    result = run(rma_scenario(EXPLICIT))
    ts = result.timeseries
    # Installed all along; 95 available in the window; the 5 show as out of service, not failed.
    _window(ts["gpus_installed"], 100, 100)
    _window(ts["gpus_available"], 95, 100)
    _window(ts["gpus_out_of_service"], 5, 0)
    assert (ts["gpus_failed"] == 0).all()
    # Depreciation and facility: exactly those of 100 GPUs every step, window included.
    assert ts["cost_depreciation_usd"].to_numpy() == pytest.approx([DEPRECIATION_100] * STEPS, rel=1e-12)
    assert ts["cost_facility_usd"].to_numpy() == pytest.approx([FACILITY_100] * STEPS, rel=1e-12)
    # 720 h × $68.4462697 = $49,281.31 and 720 h × $34.4969199 = $24,837.78.
    assert ts["cost_depreciation_usd"].sum() == pytest.approx(720 * 3_000_000 / 43_830, rel=1e-12)
    assert ts["cost_facility_usd"].sum() == pytest.approx(720 * 25_200 / 730.5, rel=1e-12)
    # No demand, so every available GPU idles: 100 × 0.4914 = 49.14 kWh an hour, 95 × 0.4914 =
    # 46.683 in the window: 2.457 kWh ($0.2457) an hour less, the 5 GPUs' idle draw.
    kwh = ts["energy_kwh"].to_numpy()
    assert kwh[:OUT] == pytest.approx([49.14] * OUT) and kwh[BACK:] == pytest.approx([49.14] * (STEPS - BACK))
    assert kwh[OUT:BACK] == pytest.approx([46.683] * (BACK - OUT))
    # Total: 480 h × 49.14 + 240 h × 46.683 = 23,587.2 + 11,203.92 = 34,791.12 kWh = $3,479.112.
    assert kwh.sum() == pytest.approx(34_791.12)
    assert ts["cost_energy_usd"].sum() == pytest.approx(3_479.112)
    # The pools table says the same, and installed = available + failed + out of service.
    pools = result.pools
    _window(pools["gpus_out_of_service"], 5, 0)
    np.testing.assert_array_equal(
        pools["gpus_installed"], pools["gpus_available"] + pools["gpus_failed"] + pools["gpus_out_of_service"])


def test_remove_instead_stops_depreciation_and_facility():
    # The old way: removing 5 on day 10 stops their depreciation and facility from step 240:
    # 95 × 30,000 / 43,830 = $65.0239562 and 95 × 1.26 kW × $200 / 730.5 = $32.7720739 an hour,
    # so 480 h × 5 GPUs × ($0.6844627 + $0.3449692 = $1.0294319) = $2,470.64 less than out of service.
    oos = run(rma_scenario(EXPLICIT)).timeseries
    removed = run(rma_scenario([{"at": "10d", "remove": 5}])).timeseries
    depreciation = removed["cost_depreciation_usd"].to_numpy()
    assert depreciation[:OUT] == pytest.approx([DEPRECIATION_100] * OUT, rel=1e-12)
    assert depreciation[OUT:] == pytest.approx([95 * 30_000 / 43_830] * (STEPS - OUT), rel=1e-12)
    assert removed["cost_facility_usd"].to_numpy()[OUT:] == pytest.approx([95 * 25_200 / 73_050] * (STEPS - OUT))
    less = (oos["cost_depreciation_usd"] + oos["cost_facility_usd"]).sum() - (
        removed["cost_depreciation_usd"] + removed["cost_facility_usd"]).sum()
    assert less == pytest.approx(480 * 5 * (30_000 / 43_830 + 0.7 * 1.8 * 200 / 730.5), rel=1e-9)
    assert less == pytest.approx(2_470.64, abs=0.01)


def test_a_demand_of_98_gpus_is_short_in_the_window_only():
    # 49 rps at 1 rps per 2-GPU replica: 49 replicas, 98 GPUs. With 95 available only 47
    # replicas fit (94 GPUs): 2 replicas (4 GPUs) short, 2 rps × 3,600 s = 7,200 requests unserved.
    ts = run(rma_scenario(EXPLICIT, base_rps=49.0)).timeseries
    _window(ts["replicas"], 47, 49)
    _window(ts["gpus_inference"], 94, 98)
    _window(ts["shortfall_gpus"], 4, 0)
    _window(ts["unserved_requests"], 7_200.0, 0.0)
    # Energy: 98 busy + 2 idle = (98 × 1.2285 + 2 × 0.4914) = 121.3758 kWh outside; 94 busy + 1
    # idle = 115.9704 kWh inside; the 5 GPUs out of service draw nothing.
    kwh = ts["energy_kwh"].to_numpy()
    assert kwh[:OUT] == pytest.approx([98 * BUSY_KWH + 2 * IDLE_KWH] * OUT)
    assert kwh[OUT:BACK] == pytest.approx([94 * BUSY_KWH + 1 * IDLE_KWH] * (BACK - OUT))
    assert kwh[0] == pytest.approx(121.3758) and kwh[OUT] == pytest.approx(115.9704)


def test_repair_draw_returns_them_at_the_expected_time():
    # A lognormal of median 9 d 23.5 h and p90 36 s later: every GPU returns within a minute of
    # 10 d + 239.5 h = 479.5 h, the middle of step 479, and serves from its own return: step 479
    # has about half of them out (2.5 on average, shown rounded), none from step 480, as an
    # explicit return at 479.5 h gives to within the seconds between the draws.
    repaired = [{"at": "10d", "out_of_service": 5,
                 "repair": {"dist": "lognormal", "median": "239.5h", "p90": "239.51h"}}]
    explicit_back = [{"at": "10d", "out_of_service": 5}, {"at": "479.5h", "back_in_service": 5}]
    ts = run(rma_scenario(repaired, base_rps=49.0), paths=3).timeseries
    explicit = run(rma_scenario(explicit_back, base_rps=49.0), paths=3).timeseries
    for path in range(3):
        out = ts[ts["path"] == path]["gpus_out_of_service"].to_numpy()
        assert (out[:OUT] == 0).all() and (out[OUT:479] == 5).all() and out[479] in (2, 3) and (out[480:] == 0).all()
    columns = ["gpus_available", "gpus_out_of_service", "cost_usd", "energy_kwh", "shortfall_gpus"]
    step = ts["time"] == ts["time"].unique()[479]
    np.testing.assert_allclose(ts.loc[~step, columns].to_numpy(float), explicit.loc[~step, columns].to_numpy(float),
                               rtol=1e-12)
    np.testing.assert_allclose(ts.loc[step, "energy_kwh"], explicit.loc[step, "energy_kwh"], rtol=1e-3)


def test_repair_times_are_per_gpu_and_from_the_pools_stream():
    # Uniform 2–3 days from day 10 (240 h): each GPU returns at its own time in (288 h, 312 h)
    # and serves from then: before step 288 none is back, from step 312 all are.
    repaired = [{"at": "10d", "out_of_service": 5, "repair": {"dist": "uniform", "low": "2d", "high": "3d"}}]
    result = run(rma_scenario(repaired), paths=4, seed=7)
    ts = result.timeseries
    returns = set()
    for path in range(4):
        out = ts[ts["path"] == path]["gpus_out_of_service"].to_numpy()
        assert (out[:OUT] == 0).all() and (out[OUT:288] == 5).all() and (out[312:] == 0).all()
        assert (np.diff(out[OUT:]) <= 0).all()
        returns.add(tuple(out[288:313]))
    assert len(returns) > 1  # the draws differ between paths
    # Same seed, same draws; failures switched on in the pool (the failures' stream) change
    # nothing in the repair times (the out-of-service stream is its own, keyed by the pool).
    again = run(rma_scenario(repaired), paths=4, seed=7).timeseries
    np.testing.assert_array_equal(again["gpus_out_of_service"], ts["gpus_out_of_service"])
    data = rma_scenario(repaired)
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 1e-3, "repair": "6h"}
    failing = run(data, paths=4, seed=7).timeseries
    np.testing.assert_array_equal(failing["gpus_out_of_service"], ts["gpus_out_of_service"])


def test_failed_gpus_are_counted_apart_from_those_out_of_service():
    # With failures at 10⁻³ per GPU-hour (about 2.4 a day on 100 GPUs) and 6 h repairs, the
    # columns add up on every step: installed = available + failed + out of service.
    data = rma_scenario(EXPLICIT)
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 1e-3, "repair": "6h"}
    ts = run(data, paths=2, seed=3).timeseries
    assert ts["gpus_failed"].sum() > 0
    np.testing.assert_array_equal(
        ts["gpus_installed"], ts["gpus_available"] + ts["gpus_failed"] + ts["gpus_out_of_service"])
    for path in range(2):
        _window(ts[ts["path"] == path]["gpus_out_of_service"], 5, 0)
    assert (ts["cost_depreciation_usd"].to_numpy() == pytest.approx([DEPRECIATION_100] * 2 * STEPS, rel=1e-12))


def test_a_reserved_pool_keeps_paying_rent_for_gpus_out_of_service():
    # 10 GPUs reserved at $2/GPU-h for 30 d; 2 out of service from 1 d to 2 d of a 3-day
    # horizon: rent stays 10 × $2 = $20 an hour (72 h: $1,440); 8 available in the window.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(
        count=10, acquisition={"type": "reserved", "usd_per_gpu_hour": 2.0, "term": "30d"},
        changes=[{"at": "1d", "out_of_service": 2}, {"at": "2d", "back_in_service": 2}])
    ts = run(data).timeseries
    assert ts["cost_cloud_usd"].to_numpy() == pytest.approx([20.0] * 72)
    assert ts["cost_cloud_usd"].sum() == pytest.approx(1_440.0)
    available = ts["gpus_available"].to_numpy()
    assert (available[24:48] == 8).all() and (available[:24] == 10).all() and (available[48:] == 10).all()


def test_removal_after_return_and_out_of_service_that_outlives_the_horizon():
    # Out 5 on day 10, back on day 20, 5 removed on day 25: 95 installed and available from
    # step 600 on; GPUs out on day 28 with a 10-day repair are still out at the end.
    changes = copy.deepcopy(EXPLICIT) + [{"at": "25d", "remove": 5}, {"at": "28d", "out_of_service": 3, "repair": "10d"}]
    ts = run(rma_scenario(changes)).timeseries
    assert (ts["gpus_installed"].to_numpy()[600:] == 95).all()
    out = ts["gpus_out_of_service"].to_numpy()
    assert (out[600:672] == 0).all() and (out[672:] == 3).all()


# (edit of the launch corpus as (old, new), field path, text on its line, words in the message)
CHANGE = "{at: 2026-09-01, add: 128}"
INVALID = [
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, out_of_service: 8}\n        - {at: 2026-11-01, back_in_service: 9}"),
     "fleet.pools[0].changes[2].back_in_service", "back_in_service: 9", "returns 9 GPUs when only 8 are out of service"),
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, back_in_service: 1}"),
     "fleet.pools[0].changes[1].back_in_service", "back_in_service: 1", "only 0 are out of service"),
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, out_of_service: 8, repair: 3d}\n        - {at: 2026-10-02, back_in_service: 8}"),
     "fleet.pools[0].changes[2].back_in_service", "back_in_service: 8", "without a repair"),
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, out_of_service: 400}"),
     "fleet.pools[0].changes[1].out_of_service", "out_of_service: 400", "only 384 are in service"),
    ((CHANGE, "{at: 2026-04-01, out_of_service: 200}\n        - {at: 2026-05-01, out_of_service: 57}"),
     "fleet.pools[0].changes[1].out_of_service", "out_of_service: 57", "only 56 are in service"),
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, out_of_service: 300}\n        - {at: 2026-11-01, remove: 100}"),
     "fleet.pools[0].changes[2].remove", "remove: 100", "only 84 are in service"),
    ((CHANGE, CHANGE + "\n        - {at: 2026-10-01, back_in_service: 1, repair: 3d}"),
     "fleet.pools[0].changes[1]", "repair: 3d", "'repair' goes with 'out_of_service' only"),
    ((CHANGE, "{at: 2026-09-01, add: 128, out_of_service: 8}"),
     "fleet.pools[0].changes[0]", "out_of_service: 8", "exactly one of 'add', 'remove', 'out_of_service'"),
    (("      count: 64\n", "      count: 64\n      changes: [{at: 2026-05-01, out_of_service: 8}]\n"),
     "fleet.pools[1].changes[0].out_of_service", "out_of_service: 8", "applies to owned and reserved pools"),
]


@pytest.mark.parametrize("case", INVALID, ids=[c[1] + " " + c[3] for c in INVALID])
def test_invalid_service_changes_exit_2_naming_the_field(case, tmp_path):
    (old, new), path, line_text, words = case
    assert old in LAUNCH
    text = LAUNCH.replace(old, new, 1)
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"error: {path}: "), message
    assert words in message, message
    assert message.endswith(f"(line {_line_of(text, line_text)})"), message
    assert not (tmp_path / "out").exists()
