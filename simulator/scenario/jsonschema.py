"""The scenario's JSON Schema, for completion and checking in editors (``fleetcast schema``).

Pydantic writes the schema of the models; two things are added to say what the loader
accepts beyond them: any number or duration may instead be a distribution drawn per path
(``{dist: lognormal, median: …, p90: …}``, see :mod:`simulator.scenario.uncertain`), except
the fields that shape the run (name, horizon, seed, paths); a share or a rate may be written
as a percentage (``8%``, :mod:`simulator.scenario.percent`); and defaults of durations are
written as durations (``"1h"``), as a scenario would write them.
"""

from __future__ import annotations

from typing import Any

from simulator.scenario.percent import RATE_NAME
from simulator.scenario.scenario import Scenario
from simulator.scenario.uncertain import FIXED_FIELDS
from simulator.units import format_duration

SCHEMA_ID = "https://fleetcast.dev/schema/scenario.json"
_DISTRIBUTION = {"$ref": "#/$defs/Uncertain"}
#: A share or a rate written as a percentage (what :func:`simulator.scenario.percent.percentage` reads).
_PERCENT_TEXT = {"type": "string", "pattern": r"^\s*[+-]?(\d[\d_]*(\.\d*)?|\.\d+)\s*%\s*$", "examples": ["8%"]}


def scenario_json_schema() -> dict[str, Any]:
    schema = Scenario.model_json_schema(mode="validation")
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
    schema["title"] = "Fleetcast scenario"
    definitions = schema["$defs"]
    # A distribution's parameters may be durations (lead_time: {dist: uniform, low: 16w, high: 26w}).
    duration_text = {"type": "string", "examples": ["16w", "90d"]}
    for prop in definitions["Uncertain"]["properties"].values():
        for option in prop.get("anyOf", []):
            if option.get("type") == "number":
                prop["anyOf"].insert(1, duration_text)
                break
            if option.get("type") == "array" and option.get("items", {}).get("type") == "number":
                option["items"] = {"anyOf": [option["items"], duration_text]}
                break
    # A catalog GPU may be given in part (its other figures come from the catalog); a new
    # type missing a figure is reported by the loader.
    definitions["GpuSpec"].pop("required", None)
    for name, definition in definitions.items():
        if name not in ("Uncertain", "Horizon"):  # the horizon shapes the run: never drawn
            _walk(definition)
    for name in ("duration", "end", "step"):  # the horizon is never drawn
        prop = definitions["Horizon"]["properties"][name]
        if isinstance(prop.get("default"), int | float):
            prop["default"] = format_duration(float(prop["default"]))
    for name, prop in schema["properties"].items():
        if name not in FIXED_FIELDS:
            schema["properties"][name] = _walk(prop)
    return schema


def _is_duration(node: dict[str, Any]) -> bool:
    """Durations (``90d``) and dates-or-offsets (``2026-09-01`` or ``90d``)."""
    examples = node.get("examples", ())
    return node.get("type") == "string" and any(unit in examples for unit in ("15min", "90d", "1h"))


#: A duration is text with a unit; of bare numbers only zero, which needs none.
_ZERO = {"const": 0, "description": "zero (any other duration needs a unit: 90d, 2h, 15min)"}


def _walk(node: Any) -> Any:
    """Allow a distribution wherever a number or duration is; fix duration defaults."""
    if isinstance(node, list):
        return [_walk(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "properties" in node:
        node["properties"] = {key: _with_percent(key, _walk(value)) for key, value in node["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _walk(node[key])
    if "anyOf" in node:
        node["anyOf"] = [_walk(option) for option in node["anyOf"]]
        if any(_is_duration(option) for option in node["anyOf"]):
            if isinstance(node.get("default"), int | float):
                node["default"] = format_duration(float(node["default"]))
            node["anyOf"] = [option for option in node["anyOf"] if option.get("type") != "null"]
            node["anyOf"] = [*node["anyOf"], _ZERO, _DISTRIBUTION, {"type": "null"}]
        return node
    if _is_duration(node) and isinstance(node.get("default"), int | float):
        node["default"] = format_duration(float(node["default"]))
    if node.get("type") in ("number", "integer") or _is_duration(node):
        outer = {key: node.pop(key) for key in ("title", "description", "default") if key in node}
        options = [node, _ZERO] if _is_duration(node) else [node]
        return {**outer, "anyOf": [*options, _DISTRIBUTION]}
    return node


def _takes_percent(name: str, option: dict[str, Any]) -> bool:
    """A number option of a share or a rate: named as one, or bounded within [-1, 1] (the
    loader's rule, :func:`simulator.scenario.percent.takes_percent`)."""
    if option.get("type") != "number":
        return False
    low = option.get("minimum", option.get("exclusiveMinimum"))
    high = option.get("maximum", option.get("exclusiveMaximum"))
    return bool(RATE_NAME.search(name)) or (low is not None and high is not None and low >= -1 and high <= 1)


def _with_percent(name: str, node: Any) -> Any:
    """The property ``name`` with a percentage allowed beside its number, where it is a share or a rate."""
    if isinstance(node, dict) and any(_takes_percent(name, option) for option in node.get("anyOf", ())):
        node["anyOf"] = [*node["anyOf"][:1], _PERCENT_TEXT, *node["anyOf"][1:]]
    return node
