"""Generated scenarios, valid and broken, through the command a user runs.

Each example is a valid generated scenario (``tests/test_properties.scenarios``), sometimes
with distributions on its numbers and variants, then possibly broken: a value replaced by
something of the wrong kind or range, a key removed, an unknown key added, a distribution or
a variant made impossible. ``fleetcast run`` must then either run it (exit 0, a complete run
directory) or refuse it (exit 2, one line naming a field, nothing written) — never anything
else, and never a traceback.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.cli import main
from tests.test_properties import scenarios

ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.just(-1), st.just(0), st.just(10**12), st.just(-1e-9),
    st.just(math.inf), st.just(-math.inf), st.just(math.nan),
    st.sampled_from(["", "lots", "90d", "-5d", "1 fortnight", "2026-13-01", "2026-02-03", "h100", "1e400", "0x10"]),
    st.just([]), st.just([1, "a"]), st.just({}), st.just({"dist": "lognormal"}),
)
DISTRIBUTIONS = st.one_of(
    st.builds(lambda m, k: {"dist": "lognormal", "median": m, "p90": m * k},
              st.floats(0.01, 50), st.floats(0.5, 3)),
    st.builds(lambda lo, w: {"dist": "uniform", "low": lo, "high": lo + w}, st.floats(0, 20), st.floats(-1, 10)),
    st.builds(lambda lo, a, b: {"dist": "triangular", "low": lo, "mode": lo + a, "high": lo + a + b},
              st.floats(0, 20), st.floats(-1, 5), st.floats(-1, 5)),
    st.builds(lambda m, sd: {"dist": "normal", "mean": m, "sd": sd}, st.floats(0, 50), st.floats(-1, 5)),
    st.builds(lambda v: {"dist": "choice", "values": v}, st.lists(st.floats(0, 50), max_size=3)),
)


DURATION_DISTRIBUTIONS = st.one_of(
    st.builds(lambda lo, w: {"dist": "uniform", "low": f"{lo}h", "high": f"{lo + w}h"},
              st.integers(0, 48), st.integers(-2, 48)),
    st.builds(lambda m, k: {"dist": "lognormal", "median": f"{m}h", "p90": f"{m * k}h"},
              st.integers(0, 24), st.integers(0, 4)),
    st.builds(lambda m: {"dist": "exponential", "mean": f"{m}h"}, st.integers(0, 24)),
    st.builds(lambda m: {"dist": "fixed", "value": f"{m}h"}, st.integers(0, 24)),
)


def _leaves(node: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*path, key))] or [path]
    if isinstance(node, list):
        return [leaf for i, value in enumerate(node) for leaf in _leaves(value, (*path, i))] or [path]
    return [path]


def _set(data: Any, path: tuple, value: Any) -> None:
    node = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def _dotted(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@st.composite
def user_scenarios(draw) -> dict[str, Any]:
    data = copy.deepcopy(draw(scenarios()))  # damaged below: never change what the strategy shares
    leaves = [p for p in _leaves(data) if p and p[0] not in ("name", "horizon", "seed")]
    numeric = [p for p in leaves if isinstance(_get(data, p), int | float) and not isinstance(_get(data, p), bool)]
    if numeric and draw(st.booleans()):  # some numbers drawn per path
        for path in draw(st.lists(st.sampled_from(numeric), max_size=3, unique=True)):
            _set(data, path, draw(DISTRIBUTIONS))
    durations = [p for p in leaves if isinstance(_get(data, p), str) and _get(data, p)[:-1].isdigit()
                 and _get(data, p)[-1] in "hd"]
    if durations and draw(st.booleans()):  # durations drawn per path, or event distributions
        for path in draw(st.lists(st.sampled_from(durations), max_size=2, unique=True)):
            _set(data, path, draw(DURATION_DISTRIBUTIONS))
    if numeric and draw(st.booleans()):  # variants overriding numbers, sometimes badly
        data["variants"] = {
            f"v{i}": {_dotted(path): draw(st.one_of(st.floats(0, 100), ODD_VALUES))
                      for path in draw(st.lists(st.sampled_from(numeric), min_size=1, max_size=2, unique=True))}
            for i in range(draw(st.integers(1, 2)))
        }
    damage = draw(st.sampled_from(["none", "none", "value", "remove", "unknown key", "variant path"]))
    leaves = _leaves(data)
    if damage == "value":
        _set(data, draw(st.sampled_from(leaves)), draw(ODD_VALUES))
    elif damage == "remove":
        path = draw(st.sampled_from(leaves))
        parent = _get(data, path[:-1])
        if isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.pop(path[-1])
    elif damage == "unknown key":
        dicts = [p for p in [(), *[leaf[:i] for leaf in leaves for i in range(1, len(leaf))]]
                 if isinstance(_get(data, p), dict)]
        _get(data, draw(st.sampled_from(dicts)))["surplus_field"] = 1
    elif damage == "variant path":
        data["variants"] = {"broken": {draw(st.sampled_from(["fleet.pools[9].count", "fleet..pools", "nope.x",
                                                              "models[0].demand.base_rps.deeper", "[0]"])): 1}}
    return data


def _get(data: Any, path: tuple) -> Any:
    node = data
    for part in path:
        node = node[part]
    return node


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=user_scenarios())
def test_a_generated_scenario_runs_or_is_refused_with_one_line(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    scenario = folder / "s.yaml"
    # JSON first: YAML cannot write NaN/inf as plain values, JSON-in-YAML can (.nan, .inf).
    scenario.write_text(yaml.safe_dump(json.loads(json.dumps(copy.deepcopy(data), default=str)),
                                       sort_keys=False, allow_unicode=True))
    out = folder / "out"
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "--paths", "2", "--workers", "1",
                                       "--no-report", "-q"])
    assert result.exit_code in (0, 2), (result.exit_code, result.output, data)
    assert "Traceback" not in result.output and "internal error" not in result.output
    if result.exit_code == 0:
        assert {p.name for p in out.iterdir()} >= {"summary.json", "bands.parquet", "pnl.parquet",
                                                  "scenario.resolved.yaml", "timeseries.parquet"}
    else:
        message = result.stderr.strip()
        assert message.startswith("error: ") and "\n" not in message, message
        assert not out.exists()
        assert sorted(p.name for p in Path(folder).iterdir()) == ["s.yaml"]
