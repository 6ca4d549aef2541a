"""Demand shape: seasonal profiles (hour of day, weekday) and day-to-day volatility, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from simulator.cli import main
from simulator.units import parse_duration
from tests.helpers import base_scenario, run

DAY_S = 86400.0
HALF_AND_HALF = [1.0] * 12 + [3.0] * 12  # mean 2: scaled to 0.5 (00:00-11:59) and 1.5 (12:00-23:59)


def _scenario(start: str, duration: str, step: str, **demand) -> dict:
    data = base_scenario(horizon={"start": start, "duration": duration, "step": step})
    data["models"][0]["capacity_rps"] = 1e6
    data["models"][0]["demand"].update(base_rps=10.0, **demand)
    return data


def _rate(data: dict, **kwargs) -> pd.Series:
    ts = run(data, **kwargs).timeseries
    ts = ts[ts["path"] == 0].set_index("time")["demand_requests"]
    return ts / parse_duration(data["horizon"]["step"])


# --- profiles -------------------------------------------------------------------------------


def test_hourly_profile_scaled_to_mean_one_gives_half_and_one_and_a_half_of_base():
    # [1]*12 + [3]*12 has mean 2, so the multipliers are 0.5 and 1.5: 10 req/s base gives
    # 5 req/s in hours 0-11 and 15 req/s in hours 12-23 of every UTC day.
    rate = _rate(_scenario("2026-01-01", "3d", "1h", seasonality={"hourly": HALF_AND_HALF}))
    hours = rate.index.hour
    assert rate[hours < 12].to_numpy() == pytest.approx(5.0, rel=1e-12, abs=0)
    assert rate[hours >= 12].to_numpy() == pytest.approx(15.0, rel=1e-12, abs=0)
    assert rate.mean() == pytest.approx(10.0, rel=1e-12)


def test_weekly_profile_monday_first_scaled_to_mean_one():
    # [3]*5 + [10]*2 has mean 35/7 = 5: Monday-Friday 0.6 of base, Saturday and Sunday 2.0.
    # 2026-01-01 is a Thursday.
    rate = _rate(_scenario("2026-01-01", "14d", "1d", seasonality={"weekly": [3, 3, 3, 3, 3, 10, 10]}))
    weekend = rate.index.day_of_week >= 5
    assert rate[~weekend].to_numpy() == pytest.approx(6.0, rel=1e-12, abs=0)
    assert rate[weekend].to_numpy() == pytest.approx(20.0, rel=1e-12, abs=0)
    assert list(rate.index[weekend].day[:2]) == [3, 4]


def test_steps_coarser_than_an_hour_integrate_the_profile_over_the_step():
    # A day holds every hour once: each daily step is exactly the base, from midnight or not.
    for start in ("2026-01-01", "2026-01-01T06:00"):
        rate = _rate(_scenario(start, "5d", "1d", seasonality={"hourly": HALF_AND_HALF}))
        assert rate.to_numpy() == pytest.approx(10.0, rel=1e-12, abs=0)
    # 3 h steps from 10:00: hours 10, 11, 12 -> (0.5 + 0.5 + 1.5) / 3 = 5/6 of base; then
    # 13-15 -> 1.5; ...; 22, 23, 0 -> (1.5 + 1.5 + 0.5) / 3 = 7/6.
    rate = _rate(_scenario("2026-01-01T10:00", "1d", "3h", seasonality={"hourly": HALF_AND_HALF}))
    assert rate.iloc[0] == pytest.approx(10 * 5 / 6, rel=1e-12)
    assert rate.iloc[1] == pytest.approx(15.0, rel=1e-12)
    assert rate.iloc[4] == pytest.approx(10 * 7 / 6, rel=1e-12)


def test_flat_profile_with_the_other_cycle_as_a_cosine_matches_the_cosine_alone():
    # A profile of ones changes nothing, so hourly ones + weekly cosine must integrate exactly
    # as the two-cosine closed form does, on steps that straddle hours (3 h from 01:30).
    cosine = {"weekly_amplitude": 0.4, "peak_weekday": 5}
    plain = _rate(_scenario("2026-01-01T01:30", "14d", "3h", seasonality=cosine))
    flat = _rate(_scenario("2026-01-01T01:30", "14d", "3h", seasonality={**cosine, "hourly": [2.0] * 24}))
    np.testing.assert_allclose(flat.to_numpy(), plain.to_numpy(), rtol=1e-9)
    daily = {"daily_amplitude": 0.5, "peak_hour": 18.5}
    plain = _rate(_scenario("2026-01-01T01:30", "3d", "45min", seasonality=daily))
    flat = _rate(_scenario("2026-01-01T01:30", "3d", "45min", seasonality={**daily, "weekly": [1] * 7}))
    np.testing.assert_allclose(flat.to_numpy(), plain.to_numpy(), rtol=1e-9)


def _validate(tmp_path, seasonality: dict) -> str:
    data = base_scenario()
    data["models"][0]["demand"]["seasonality"] = seasonality
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(
    ("seasonality", "path", "words"),
    [
        ({"daily_amplitude": 0.3, "hourly": HALF_AND_HALF}, "seasonality.hourly", "not both"),
        ({"weekly_amplitude": 0.3, "weekly": [1] * 7}, "seasonality.weekly", "not both"),
        ({"hourly": [1.0] * 23}, "seasonality.hourly", "needs 24 multipliers"),
        ({"weekly": [1.0] * 8}, "seasonality.weekly", "needs 7 multipliers"),
        ({"hourly": [0.0] * 24}, "seasonality.hourly", "all 0"),
        ({"weekly": [1, 1, -1, 1, 1, 1, 1]}, "seasonality.weekly[2]", "greater than or equal to 0"),
    ],
)
def test_bad_profiles_are_refused_naming_the_field(tmp_path, seasonality, path, words):
    message = _validate(tmp_path, seasonality)
    assert message.startswith(f"error: models[0].demand.{path}: "), message
    assert words in message and "(line " in message


# --- volatility -----------------------------------------------------------------------------

SIGMA, PHI, N_DAYS = 0.1, 0.7, 20_000


def test_volatility_factor_has_mean_one_log_sd_sigma_and_lag_one_autocorrelation_phi():
    # One path of 20,000 daily steps, noise none: demand / base is the factor f_d itself.
    data = _scenario("2026-01-01", f"{N_DAYS}d", "1d", volatility={"daily_sigma": SIGMA, "persistence": PHI})
    f = _rate(data).to_numpy() / 10.0
    x = np.log(f)
    n, s2 = len(f), SIGMA**2
    assert n == N_DAYS
    # Tolerances are 4 standard errors of each estimate for a stationary AR(1) log factor.
    # Mean of f: var f = e^{σ²} − 1 and corr(f_d, f_{d+k}) = (e^{φ^k σ²} − 1) / (e^{σ²} − 1), so
    # var(mean) = var f / n · (1 + 2 Σ_k corr_k)  (≈ 0.0017², 4 SE ≈ 0.0068).
    lags = PHI ** np.arange(1, 200)
    inflation = 1 + 2 * np.sum(np.expm1(lags * s2) / np.expm1(s2))
    se_mean = np.sqrt(np.expm1(s2) / n * inflation)
    assert abs(f.mean() - 1.0) < 4 * se_mean
    # sd of log f: var(s²) ≈ 2σ⁴/n · (1 + φ²)/(1 − φ²), so se(s) ≈ σ/2 · sqrt(2/n · (1+φ²)/(1−φ²))
    # (≈ 0.00085, 4 SE ≈ 0.0034).
    se_sd = SIGMA / 2 * np.sqrt(2 / n * (1 + PHI**2) / (1 - PHI**2))
    assert abs(x.std() - SIGMA) < 4 * se_sd
    # Mean of log f is −σ²/2 with se σ · sqrt((1+φ)/(1−φ)/n) (≈ 0.0017).
    assert abs(x.mean() + s2 / 2) < 4 * SIGMA * np.sqrt((1 + PHI) / (1 - PHI) / n)
    # Lag-1 autocorrelation: Bartlett, var r_1 ≈ (1 − φ²)/n (≈ 0.0050², 4 SE ≈ 0.020).
    c = x - x.mean()
    r1 = np.dot(c[1:], c[:-1]) / np.dot(c, c)
    assert abs(r1 - PHI) < 4 * np.sqrt((1 - PHI**2) / n)
    print(f"mean f {f.mean():.5f} (4se {4 * se_mean:.4f}); sd log f {x.std():.5f} (4se {4 * se_sd:.5f}); "
          f"r1 {r1:.4f} (4se {4 * np.sqrt((1 - PHI**2) / n):.4f})")


def test_volatility_is_one_factor_per_calendar_day_on_top_of_the_profile():
    data = _scenario("2026-01-01", "10d", "1h", seasonality={"hourly": HALF_AND_HALF},
                     volatility={"daily_sigma": 0.3, "persistence": 0.5})
    rate = _rate(data)
    shape = np.where(rate.index.hour < 12, 0.5, 1.5)
    factor = (rate / 10.0 / shape).to_numpy().reshape(10, 24)
    np.testing.assert_allclose(factor, factor[:, :1] * np.ones((1, 24)), rtol=1e-12)
    assert len(np.unique(factor[:, 0])) == 10
    # A daily step from 12:00 covers the second half of one day and the first half of the next:
    # its factor is the mean of the two days' factors (same seed, so the same days' factors).
    shifted = _rate(_scenario("2026-01-01T12:00", "9d", "1d", volatility={"daily_sigma": 0.3, "persistence": 0.5}))
    daily = _rate(_scenario("2026-01-01", "10d", "1d", volatility={"daily_sigma": 0.3, "persistence": 0.5}))
    np.testing.assert_allclose(shifted.to_numpy(), (daily.to_numpy()[:-1] + daily.to_numpy()[1:]) / 2, rtol=1e-12)


def _with_failures(**demand) -> dict:
    data = _scenario("2026-01-01", "60d", "1h", noise="poisson", **demand)
    data["paths"] = 4
    data["models"][0]["capacity_rps"] = 4.0
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 2e-3, "repair": "24h"}
    return data


def test_volatility_draws_from_its_own_stream():
    off = run(_with_failures())
    on = run(_with_failures(volatility={"daily_sigma": 0.2, "persistence": 0.7}))
    # Failures come from another stream: identical path by path.
    for path in range(4):
        a = off.pools[off.pools["path"] == path]["gpus_failed"].to_numpy()
        b = on.pools[on.pools["path"] == path]["gpus_failed"].to_numpy()
        np.testing.assert_array_equal(a, b)
    assert off.pools["gpus_failed"].sum() > 0
    # Demand differs (the factor moves the Poisson means) ...
    assert not np.array_equal(off.timeseries["demand_requests"], on.timeseries["demand_requests"])
    # ... but the Poisson stream itself is not shifted: a factor of exactly 1 (σ = 0) still
    # draws the volatility stream and gives the very same Poisson counts as no volatility.
    flat = run(_with_failures(volatility={"daily_sigma": 0.0, "persistence": 0.7}))
    np.testing.assert_array_equal(off.timeseries["demand_requests"], flat.timeseries["demand_requests"])


def test_volatility_applies_with_noise_none_and_is_reproducible_serially_and_on_two_workers():
    data = _with_failures(volatility={"daily_sigma": 0.2, "persistence": 0.7})
    data["models"][0]["demand"]["noise"] = "none"
    serial = run(data)
    again = run(data)
    pooled = run(data, executor="local", workers=2)
    for other in (again, pooled):
        pd.testing.assert_frame_equal(serial.timeseries, other.timeseries)
        pd.testing.assert_frame_equal(serial.pools, other.pools)
    demand = serial.timeseries.pivot(index="time", columns="path", values="demand_requests")
    assert not np.allclose(demand.to_numpy(), 10.0 * 3600)  # the factor applies without counting noise
    assert demand.nunique(axis=1).gt(1).all()  # and differs from path to path


def test_a_launch_after_a_training_job_gets_the_same_daily_factors_as_a_dated_launch():
    # The job needs 8 GPUs for 12 h; demand starts 2 d later, at 2026-01-03 12:00. The factor
    # belongs to the calendar day, so a launch dated at that instant sees the same demand.
    def scenario(start):
        data = _scenario("2026-01-01", "8d", "1h", volatility={"daily_sigma": 0.3, "persistence": 0.5})
        data["fleet"]["pools"][0]["count"] = 16
        data["models"][0]["demand"]["start"] = start
        data["training"] = {"jobs": [{"name": "pre", "pool": "a", "gpus": 8, "duration": "12h"}]}
        return _rate(data)

    after_job = scenario({"after_job": "pre", "delay": "2d"})
    dated = scenario("2026-01-03T12:00")
    assert (after_job[after_job.index < "2026-01-03 12:00"] == 0).all()
    np.testing.assert_allclose(after_job.to_numpy(), dated.to_numpy(), rtol=1e-12)
    assert after_job.iloc[-1] != pytest.approx(10.0)
