"""Write a scenario back out as YAML, every default filled in, in readable units."""

from __future__ import annotations

from typing import Any

import yaml

from simulator.scenario.fieldpath import parse_field_path
from simulator.scenario.scenario import Scenario
from simulator.scenario.schema_walk import holds_duration
from simulator.units import format_duration

#: A distribution's parameters that are values of its field (weights are not).
_VALUES = ("median", "p90", "low", "mode", "high", "mean", "sd")


class _Dumper(yaml.SafeDumper):
    """Block-style YAML that keeps field order; lists of plain values on one line."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flat = all(isinstance(item, str | int | float | bool) or item is None for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat and bool(data))


_Dumper.add_representer(list, _represent_list)


def dump_scenario(scenario: Scenario) -> str:
    """The resolved scenario as YAML text that :func:`load_scenario` reads back unchanged."""
    data: dict[str, Any] = scenario.model_dump(mode="json")
    data["uncertain"] = {path: _in_units(path, {k: v for k, v in spec.items() if v is not None})
                         for path, spec in data.get("uncertain", {}).items()}
    if not data.get("fixed_inputs"):  # written only when an override fixed a correlated input
        data.pop("fixed_inputs", None)
    for name in ("accept", "plausibility_notes"):  # written only when a plausibility check found something
        if not data.get(name):
            data.pop(name, None)
    for model in data.get("models", []):  # a pool's entry: only what it gives or what was derived
        for pool, shape in (model.get("replicas") or {}).items():
            serving = {k: v for k, v in (shape.get("serving") or {}).items() if v is not None}
            model["replicas"][pool] = {k: v for k, v in {**shape, "serving": serving or None}.items()
                                       if v is not None}
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _in_units(path: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A distribution of a duration field written in durations (``16.5d``, read back exactly)."""
    if not holds_duration(Scenario, parse_field_path(path)):
        return spec
    written = {k: format_duration(v) if k in _VALUES else v for k, v in spec.items()}
    if "values" in written:
        written["values"] = [format_duration(v) for v in written["values"]]
    return written
