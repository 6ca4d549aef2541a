"""Field paths in words, and field values in their units, for tables and charts.

``fleet.pools[0].orders[2].lead_time`` is how a scenario addresses a field; a reader wants
"pool h100-owned: order 3 lead time" and "112 days". A list item is named by its ``name``
when it has one (pools, models, jobs), else by its position counted from 1; the part up to
the last named item comes first, then a colon and the rest. Durations, held in seconds, are
shown in days; fields in US dollars (``usd`` in the name) with a dollar sign.
"""

from __future__ import annotations

from typing import Any

from simulator.scenario.fieldpath import parse_field_path
from simulator.scenario.scenario import Scenario
from simulator.scenario.schema_walk import holds_duration

#: Whole field names that read better rewritten.
_NAMES = {
    "input_usd_per_1m": "price per 1M input tokens",
    "output_usd_per_1m": "price per 1M output tokens",
    "usd_per_gpu_hour": "price per GPU-hour",
    "price_usd": "price per GPU",
    "usd_per_kwh": "price per kWh",
    "usd_per_kw_month": "price per kW-month",
    "base_rps": "base requests/s",
    "capacity_rps": "capacity requests/s",
    "rate_limit_rps": "rate limit requests/s",
}
_WORDS = {"at": "time", "gpu-hour": "GPU-hour", "kw-month": "kW-month", "usd": "$", "rps": "req/s", "gpu": "GPU", "gpus": "GPUs", "kwh": "kWh", "kw": "kW", "mw": "MW",
          "1m": "1M", "ttft": "TTFT", "tpot": "TPOT", "pue": "PUE", "tp": "TP", "mfu": "MFU", "slo": "SLO"}
#: Sections that add nothing a reader needs ("fleet.pools[0]" is "pool a").
_SILENT = {"fleet", "pricing", "acquisition"}
_SINGULAR = {"pools": "pool", "models": "model", "orders": "order", "changes": "change", "caps": "cap",
             "jobs": "job", "streams": "stream", "traces": "trace", "points": "point", "values": "value"}


def _words(name: str) -> str:
    if name in _NAMES:
        return _NAMES[name]
    name = name.replace("gpu_hour", "gpu-hour").replace("kw_month", "kw-month")
    return " ".join(_WORDS.get(word, word) for word in name.split("_"))


def field_label(scenario: Scenario | None, field_path: str) -> str:
    """A field path in words: ``models[1].demand.growth.rate_per_month`` ->
    ``"model chat: demand growth rate per month"`` (items unnamed without a scenario)."""
    loc = parse_field_path(field_path)
    node: Any = scenario
    subject: list[str] = []
    rest: list[str] = []
    for depth, part in enumerate(loc):
        node = _child(node, part)
        if isinstance(part, int):
            container = loc[depth - 1] if depth else ""
            singular = _SINGULAR.get(str(container), str(container).removesuffix("s"))
            name = getattr(node, "name", None)
            if rest and rest[-1] == _words(str(container)):
                rest.pop()
            if isinstance(name, str):
                subject, rest = [*subject, *rest, f"{singular} {name}"], []
            else:
                rest.append(f"{singular} {part + 1}")
        elif depth == len(loc) - 1 or part not in _SILENT:
            rest.append(_words(part))
    if not subject and len(rest) > 1 and loc[0] not in _SILENT and not isinstance(loc[1], int):
        subject, rest = rest[:1], rest[1:]
    if not subject:
        return " ".join(rest)
    return " ".join(subject) + (": " + " ".join(rest) if rest else "")


def _child(node: Any, part: str | int) -> Any:
    if node is None:
        return None
    try:
        if isinstance(part, int):
            return node[part]
        return node[part] if isinstance(node, dict) else getattr(node, part, None)
    except (IndexError, KeyError, TypeError):
        return None


def field_unit(field_path: str) -> str | None:
    """``"duration"`` for a field held in seconds, ``"usd"`` for money, else None."""
    loc = parse_field_path(field_path)
    last = loc[-1]
    if isinstance(last, int):
        return None
    if holds_duration(Scenario, loc):
        return "duration"
    return "usd" if "usd" in last.split("_") else None


def format_field_value(field_path: str, value: Any) -> str:
    """A value of the field at ``field_path`` in its unit: ``"112 days"``, ``"$2.50"``, ``"256"``."""
    if value is None or isinstance(value, float) and value != value:
        return "—"
    unit = field_unit(field_path)
    if unit == "duration":
        days = float(value) / 86400.0
        return f"{_number(days)} day{'' if days == 1 else 's'}"
    if unit == "usd":
        return format_usd(float(value))
    return _number(value)


def format_usd(value: float) -> str:
    """Money for a reader: ``$0.083``, ``$2.50``, ``$12,345``, ``$1.23M``."""
    sign, size = ("-" if value < 0 else ""), abs(value)
    if size >= 1e6:
        return f"{sign}${size / 1e6:,.2f}M"
    if size >= 1000:
        return f"{sign}${size:,.0f}"
    in_cents = abs(size - round(size, 2)) < 1e-9
    return f"{sign}${size:.2f}" if size >= 1 or in_cents else f"{sign}${size:.3g}"


def _number(value: Any) -> str:
    if isinstance(value, int) or float(value).is_integer() and abs(float(value)) < 1e15:
        return f"{int(value):,}"
    return f"{float(value):,.4g}"
