"""The scenario reference, written from the scenario's JSON Schema at build time.

``fleetcast schema`` and :func:`simulator.scenario.jsonschema.scenario_json_schema` give the
schema; this module turns it into Markdown: the top-level fields first, then one section per
kind of object (``Pool``, ``ServedModel``, …) with the field paths where it appears and a
table of its fields (type, unit, default, example, description). Nothing is copied by hand,
so the reference cannot drift from what the loader accepts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: The definition every number or duration may be replaced by (a distribution drawn per path).
DISTRIBUTION = "Uncertain"

#: Name suffixes and the unit they mean, the longest first.
_SUFFIX_UNITS = [
    ("_usd_per_gpu_hour", "$/GPU-hour"),
    ("usd_per_gpu_hour", "$/GPU-hour"),
    ("_usd_per_gpu_day", "$ per GPU-day"),
    ("_usd_per_1m", "$ per 1M tokens"),
    ("usd_per_kw_month", "$/kW-month"),
    ("usd_per_kwh", "$/kWh"),
    ("usd_per_month", "$/month"),
    ("_usd_per_gpu", "$/GPU"),
    ("cloud_usd_per_gpu_hour", "$/GPU-hour"),
    ("_per_gpu_hour", "per GPU-hour"),
    ("_per_hour", "per hour"),
    ("_per_day", "per day"),
    ("_per_month", "per month"),
    ("_per_year", "per year"),
    ("_usd", "USD"),
    ("usd", "USD"),
    ("_rps", "requests/s"),
    ("rps", "requests/s"),
    ("_tbps", "TB/s"),
    ("_gbps", "GB/s"),
    ("_gib", "GiB"),
    ("_gb", "GB"),
    ("_mw", "MW"),
    ("mw", "MW"),
    ("_kw", "kW"),
    ("_w", "W"),
    ("_years", "years"),
    ("_months", "months"),
    ("_days", "days"),
    ("_hours", "hours"),
    ("_tokens", "tokens"),
    ("_gpus", "GPUs"),
    ("gpus", "GPUs"),
    ("_share", "share 0–1"),
    ("share", "share 0–1"),
    ("_fraction", "share 0–1"),
    ("_probability", "probability 0–1"),
    ("probability", "probability 0–1"),
    ("_percentile", "percentile 0–100"),
    ("_pct", "%"),
    ("_s", "s"),
]
_PREFIX_UNITS = [("tflops_", "TFLOP/s"), ("memory_tbps", "TB/s")]

#: Fields whose names carry no unit suffix, and the unit they are in.
_NAME_UNITS = {
    **dict.fromkeys(("count", "gpus", "min_count", "max_count", "order_count", "partition_gpus", "node_gpus",
                     "add", "remove", "out_of_service", "back_in_service", "blast_radius", "gpus_per_replica",
                     "tp", "dp", "pp", "ep", "scale_up_domain", "max", "step", "choices", "schedule"), "GPUs"),
    **dict.fromkeys(("max_batch", "probe_requests"), "requests"),
    **dict.fromkeys(("replicas", "router_replicas"), "replicas"),
    "distinct_prompts": "prompts",
    "k": "draft tokens per step",
    "allreduce_latency_us": "µs",
    "peak_hour": "hour of the day (UTC)",
    "peak_weekday": "day of the week (0 = Monday)",
    "payment_month": "month of the year (1–12)",
    "flops": "FLOP",
    "params": "parameters",
    "tokens": "tokens",
    "tops_int8": "TOP/s",
    "pue": "ratio (facility / IT power)",
    "server_power_factor": "× GPU TDP",
    "ceiling": "× the base rate",
    "widen": "× the fitted band",
    "min_dscr": "ratio",
    "max_ltv": "ratio",
    "threshold": "ratio (need / supply)",
    "margin": "share (0.1 = 10%)",
    "rank": "rank correlation (−1 to 1)",
    "cash_quantile": "quantile 0–1",
    "usd_per_day_late": "$ per day late",
    "paths": "paths",
    "season_length": "periods",
    "max_orders": "orders",
    "max_rounds": "rounds",
    **dict.fromkeys(("hourly", "weekly"), "multiplier (scaled to mean 1)"),
    **dict.fromkeys(("jump_mean", "jump_sd", "sigma", "prior_sd", "trend", "trend_sd"), "log scale"),
}


@dataclass
class Section:
    """One kind of object: where it appears and its fields."""

    name: str
    description: str
    paths: list[str] = field(default_factory=list)
    fields: list[tuple[str, dict[str, Any], bool]] = field(default_factory=list)  # name, schema, required


def object_refs(node: Any) -> list[tuple[str, str]]:
    """The object definitions a field's value may hold, each with the path suffix that
    leads to it: ``""`` for the value itself, ``"[]"`` through a list, ``".<name>"`` through
    a map keyed by names."""
    if not isinstance(node, dict):
        return []
    found: list[tuple[str, str]] = []
    if "$ref" in node:
        found.append(("", node["$ref"].rsplit("/", 1)[-1]))
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, []):
            found += object_refs(option)
    if isinstance(node.get("items"), dict):
        found += [("[]" + suffix, name) for suffix, name in object_refs(node["items"])]
    if isinstance(node.get("additionalProperties"), dict):
        found += [(".<name>" + suffix, name) for suffix, name in object_refs(node["additionalProperties"])]
    return found


def sections(schema: dict[str, Any]) -> list[Section]:
    """Every object definition reachable from the top, in the order a reader meets them,
    with every field path at which it appears (distributions apart: they may stand for
    any number or duration)."""
    definitions = schema["$defs"]
    found: dict[str, Section] = {}

    def visit(properties: dict[str, Any], prefix: str, stack: tuple[str, ...]) -> None:
        for key, prop in properties.items():
            for suffix, name in object_refs(prop):
                if name == DISTRIBUTION or name in stack or "properties" not in definitions[name]:
                    continue
                definition = definitions[name]
                section = found.get(name)
                if section is None:
                    required = set(definition.get("required", ()))
                    section = found[name] = Section(
                        name, definition.get("description", ""),
                        fields=[(k, v, k in required) for k, v in definition["properties"].items()])
                path = prefix + key + suffix
                if path not in section.paths:
                    section.paths.append(path)
                visit(definition["properties"], path + ".", (*stack, name))

    visit(schema["properties"], "", ())
    if DISTRIBUTION in definitions:
        definition = definitions[DISTRIBUTION]
        required = set(definition.get("required", ()))
        found[DISTRIBUTION] = Section(
            DISTRIBUTION, definition.get("description", ""), ["(any number or duration field)"],
            [(k, v, k in required) for k, v in definition["properties"].items()])
    return list(found.values())


def anchor(name: str) -> str:
    return "obj-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _is_duration(node: dict[str, Any]) -> bool:
    examples = node.get("examples", ())
    return node.get("type") == "string" and any(re.fullmatch(r"\d+(\.\d+)?(s|ms|min|h|d|w|mo|y)", str(e))
                                                for e in examples)


def type_text(node: Any) -> str:
    """A field's type in words, with links to the sections of the objects it may hold."""
    if not isinstance(node, dict):
        return "any"
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return "distribution" if name == DISTRIBUTION else f"[{name}](#{anchor(name)})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{value}`" for value in node["enum"])
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        texts: list[str] = []
        for option in options:
            if option.get("type") == "null":
                continue
            text = type_text(option)
            if text not in texts:
                texts.append(text)
        return " or ".join(texts) if texts else "null"
    kind = node.get("type")
    if kind == "string" and "%" in node.get("pattern", ""):
        return "percentage (`8%`)"
    if _is_duration(node):
        return "duration"
    if node.get("format") in ("date", "date-time"):
        return "date"
    if kind == "array":
        return "list of " + type_text(node.get("items", {}))
    if kind == "object":
        value = node.get("additionalProperties")
        return f"map of name → {type_text(value)}" if isinstance(value, dict) else "mapping"
    bounds = [f"≥ {node[k]}" for k in ("minimum",) if k in node] + \
             [f"> {node[k]}" for k in ("exclusiveMinimum",) if k in node] + \
             [f"≤ {node[k]}" for k in ("maximum",) if k in node] + \
             [f"< {node[k]}" for k in ("exclusiveMaximum",) if k in node]
    text = {"number": "number", "integer": "integer", "string": "text", "boolean": "true/false"}.get(kind, kind or "any")
    return f"{text} ({', '.join(bounds)})" if bounds else text


def _leaves(node: Any) -> list[dict[str, Any]]:
    if not isinstance(node, dict):
        return []
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        return [leaf for option in options for leaf in _leaves(option)]
    return [node]


def unit_text(name: str, node: dict[str, Any]) -> str:
    """The unit a field is written in: durations and dates by their form, others by the
    naming rule of the scenario (``_usd``, ``_per_month``, ``_s``, …)."""
    leaves = [leaf for leaf in _leaves(node) if leaf.get("type") != "null" and "$ref" not in leaf]
    if any(_is_duration(leaf) for leaf in leaves):
        return "duration"
    if leaves and all(leaf.get("format") in ("date", "date-time") for leaf in leaves):
        return "date (UTC)"
    if all(leaf.get("type") in ("string", "boolean", "object") or "enum" in leaf or "const" in leaf
           or leaf.get("type") == "array" and not _numeric_items(leaf) for leaf in leaves):
        return "—"
    if name in _NAME_UNITS:
        return _NAME_UNITS[name]
    for prefix, unit in _PREFIX_UNITS:
        if name.startswith(prefix):
            return unit
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    if any(_is_share(leaf) for leaf in leaves):
        return "share 0–1"
    return "—"


def _is_share(leaf: dict[str, Any]) -> bool:
    """A number bounded within [0, 1] (or a list of such numbers)."""
    if leaf.get("type") == "array":
        return any(_is_share(item) for item in _leaves(leaf.get("items", {})))
    low = leaf.get("minimum", leaf.get("exclusiveMinimum"))
    high = leaf.get("maximum", leaf.get("exclusiveMaximum"))
    return low is not None and high is not None and low >= 0 and high <= 1


def _numeric_items(leaf: dict[str, Any]) -> bool:
    return any(item.get("type") in ("number", "integer") for item in _leaves(leaf.get("items", {})))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def default_text(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return "—"
    value = prop["default"]
    if value is None:
        return "none"
    return f"`{_cell(json.dumps(value, ensure_ascii=False))}`"


def example_text(prop: dict[str, Any], shipped: list[str] = ()) -> str:
    """The field's own examples, else the value a shipped scenario gives it."""
    examples = prop.get("examples")
    if not examples:
        for leaf in _leaves(prop):
            if leaf.get("examples") and not _is_duration(leaf):
                examples = leaf["examples"]
                break
    if not examples and "const" in prop:
        examples = [prop["const"]]
    if not examples and shipped:
        return f"`{_cell(shipped[0])}`"
    if not examples and "enum" in prop:
        examples = prop["enum"][:1]
    if not examples:
        return "—"
    return ", ".join(f"`{_cell(json.dumps(e, ensure_ascii=False))}`" for e in examples[:2])


def description_text(prop: dict[str, Any]) -> str:
    text = prop.get("description")
    if not text:
        for leaf in _leaves(prop):
            if leaf.get("description") and "const" not in leaf:
                text = leaf["description"]
                break
    return _cell(text) if text else "—"


def _table(fields: list[tuple[str, dict[str, Any], bool]], paths: list[str],
           examples: dict[str, str]) -> list[str]:
    rows = ["| field | type | unit | default | example | description |", "|---|---|---|---|---|---|"]
    for name, prop, required in fields:
        # A discriminator (``type: owned``) is its own example: the value found at its path may
        # belong to another member of the union.
        shipped = [] if "const" in prop else [examples[f"{at}.{name}" if at else name] for at in paths
                                              if (f"{at}.{name}" if at else name) in examples]
        rows.append(f"| `{name}` | {_cell(type_text(prop))} | {unit_text(name, prop)} | "
                    f"{default_text(prop, required)} | {example_text(prop, shipped)} | {description_text(prop)} |")
    return rows


def field_paths(schema: dict[str, Any]) -> set[str]:
    """Every field path the reference gives: the top-level keys, and each object's fields at
    each path where it appears."""
    paths = set(schema["properties"])
    for section in sections(schema):
        paths.update(f"{at}.{name}" for at in section.paths if not at.startswith("(")
                     for name, _, _ in section.fields)
    return paths


def render(schema: dict[str, Any], examples: dict[str, str] | None = None) -> str:
    """The whole reference as Markdown (headings from level 2); ``examples`` maps field paths
    to example values (see :mod:`scenario_examples`)."""
    examples = examples or {}
    required = set(schema.get("required", ()))
    top = [(k, v, k in required) for k, v in schema["properties"].items()]
    lines = ["## Top level", "", "The keys of a scenario file.", "", "Appears at: `(top level)`", "",
             *_table(top, [""], examples), ""]
    for section in sections(schema):
        lines += [f"## {section.name} {{ #{anchor(section.name)} }}", ""]
        if section.description:
            lines += [" ".join(section.description.split()).replace("``", "`"), ""]
        lines += ["Appears at: " + ", ".join(f"`{path}`" for path in section.paths), ""]
        lines += [*_table(section.fields, section.paths, examples), ""]
    return "\n".join(lines)
