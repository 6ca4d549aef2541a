"""``scenario.resolved.yaml`` reproduces its run: written back, read again, run again, equal.

Scenarios are generated with durations no whole unit holds (``16.384d``, ``1000.5s``,
``0.37h``), given as they are or as distributions (lognormal, triangular, uniform), on
fields of every kind that holds a duration: a lead time, a delivery slip, a repair time, a
training job's length, checkpoint interval and restart time, and a submission offset.
"""

from __future__ import annotations

import pandas as pd
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simulator
from simulator.scenario import dump_scenario
from tests.helpers import base_scenario

#: Units a duration is written in here, and their seconds.
_UNITS = {"d": 86_400.0, "h": 3_600.0, "min": 60.0, "s": 1.0}


@st.composite
def _duration(draw: st.DrawFn, low_s: float, high_s: float) -> str:
    """A duration between low_s and high_s seconds, as a user might write it (not round)."""
    unit = draw(st.sampled_from(sorted(_UNITS)))
    seconds = draw(st.floats(min_value=low_s, max_value=high_s, allow_nan=False))
    return f"{round(seconds / _UNITS[unit], 4)}{unit}"


def _seconds(text: str) -> float:
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * _UNITS[unit]
    raise AssertionError(text)


@st.composite
def _uncertain_duration(draw: st.DrawFn, low_s: float, high_s: float) -> str | dict:
    """A duration, or a distribution of durations (each parameter in its own unit)."""
    kind = draw(st.sampled_from(["fixed", "lognormal", "triangular", "uniform"]))
    values = sorted(draw(st.lists(_duration(low_s, high_s), min_size=3, max_size=3)), key=_seconds)
    if kind == "fixed":
        return values[1]
    if kind == "lognormal":
        if _seconds(values[1]) >= _seconds(values[2]):
            return values[1]
        return {"dist": "lognormal", "median": values[1], "p90": values[2]}
    if kind == "triangular":
        return {"dist": "triangular", "low": values[0], "mode": values[1], "high": values[2]}
    return {"dist": "uniform", "low": values[0], "high": values[2]}


@st.composite
def _event_duration(draw: st.DrawFn, low_s: float, high_s: float) -> str | dict:
    """A duration drawn afresh for each event (a repair, a slip); a lognormal's median may
    itself be uncertain from path to path."""
    kind = draw(st.sampled_from(["fixed", "exponential", "uniform", "lognormal"]))
    values = sorted(draw(st.lists(_duration(low_s, high_s), min_size=3, max_size=3)), key=_seconds)
    if kind == "fixed":
        return {"dist": "fixed", "value": values[0]}
    if kind == "exponential":
        return {"dist": "exponential", "mean": values[1]}
    if kind == "uniform" or _seconds(values[1]) >= _seconds(values[2]):
        return {"dist": "uniform", "low": values[0], "high": values[2]}
    median = values[1]
    if draw(st.booleans()) and _seconds(values[0]) > 0:
        median = {"dist": "uniform", "low": values[0], "high": values[1]}
    return {"dist": "lognormal", "median": median, "p90": values[2]}


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    days = draw(st.integers(min_value=3, max_value=12))
    data = base_scenario(
        name="round-trip",
        horizon={"start": "2026-01-01", "duration": f"{days}d", "step": draw(st.sampled_from(["1h", "30min", "2h"]))},
        seed=draw(st.integers(min_value=0, max_value=2**32)),
    )
    pool = data["fleet"]["pools"][0]
    pool["orders"] = [{"at": "2026-01-02", "count": 8, "lead_time": draw(_uncertain_duration(3_600, 4 * 86_400)),
                       "slip": draw(_event_duration(600, 2 * 86_400))}]
    pool["failures"] = {"rate_per_gpu_hour": draw(st.floats(min_value=1e-4, max_value=5e-3)),
                        "repair": draw(_event_duration(600, 86_400))}
    data["models"][0]["demand"]["base_rps"] = draw(st.one_of(
        st.floats(min_value=1.0, max_value=8.0),
        st.builds(lambda m, k: {"dist": "lognormal", "median": m, "p90": m * k},
                  st.floats(min_value=1.0, max_value=8.0), st.floats(min_value=1.1, max_value=2.0))))
    data["training"] = {"jobs": [{
        "name": "fine-tune", "pool": "a", "gpus": draw(st.integers(min_value=1, max_value=8)),
        "duration": draw(_uncertain_duration(1_800, 3 * 86_400)),
        "submit": draw(_duration(0, 2 * 86_400)),
        "checkpoint_interval": draw(_duration(300, 7_200)),
        "restart_time": draw(_duration(0, 1_800)),
    }]}
    return data


@given(scenarios())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_resolved_scenario_loads_back_equal_and_runs_identically(data):
    scenario = simulator.load_scenario(data)
    text = dump_scenario(scenario)
    again = simulator.load_scenario(yaml.safe_load(text))
    assert again == scenario
    assert dump_scenario(again) == text  # written twice, the same text
    first = simulator.simulate(scenario, paths=2, executor="serial", keep_paths=None, progress=False)
    second = simulator.simulate(again, paths=2, executor="serial", keep_paths=None, progress=False)
    pd.testing.assert_frame_equal(first.timeseries, second.timeseries)
    pd.testing.assert_frame_equal(first.pools, second.pools)
    assert first.summary == second.summary
