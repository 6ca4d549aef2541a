"""Percentages: ``8%`` wherever a share or a rate is taken, read as ``0.08``.

A share (``take_or_pay``, ``deposit_share``, a probability, a utilization) or a rate
(``rate_per_month`` of demand growth, ``rate_per_year`` of interest) is a plain number in the
scenario, ``0.08`` for 8%. Written as ``8%`` it says the same without doubt: ``8`` might be a
slip for 8% (:mod:`simulator.scenario.plausibility` asks), ``8%`` cannot, and ``800%`` is an
unambiguous +800% a month.

Which fields take a percentage follows from the scenario's types: a number field bounded
within [-1, 1] (every share), or one named as a share or a rate (``…_share``,
``…probability``, ``rate_per_month``, ``growth_per_month``, ``rate_per_year``, …). The text is
read exactly (``0.7%`` is the number ``0.007``, as if written so), at the field itself, in a
distribution written at the field (``{dist: uniform, low: 5%, high: 10%}``) and in the
``uncertain`` section.
"""

from __future__ import annotations

import re
import types
import typing
from decimal import Decimal, InvalidOperation
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic.fields import FieldInfo

from simulator.scenario.errors import Loc, ScenarioError
from simulator.scenario.fieldpath import parse_field_path
from simulator.scenario.schema_walk import _validators, holds_duration, members, types_at

#: Field names that hold a share or a rate whatever their bounds.
RATE_NAME = re.compile(
    r"(^|_)(share|probability|utilization|amplitude)$"
    r"|^(rate|growth|increase|decay|volatility|spread|commitment_fee)_per_(month|year)$"
)
_PERCENT = re.compile(r"\s*([+-]?(?:\d[\d_]*(?:\.\d*)?|\.\d+))\s*%\s*")
#: A distribution's parameters that are values of its field (``weights`` are not).
_VALUES = ("median", "p90", "low", "mode", "high", "mean", "sd")


def percentage(value: Any) -> float | None:
    """``"8%"`` -> ``0.08`` (exactly the float ``0.08``); None for anything else."""
    match = _PERCENT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return None
    try:
        return float(Decimal(match.group(1).replace("_", "")) / 100)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None


def takes_percent(root: Any, loc: Loc) -> bool:
    """Whether the field at ``loc`` of the model ``root`` is a share or a rate."""
    if not loc or not isinstance(loc[-1], str):
        return False
    found = types_at(root, loc)
    if not any(float in members(tp) for tp in found) or holds_duration(root, loc):
        return False
    if any(_validators(tp) for tp in found):  # seconds, dates, numbers of their own kind
        return False
    if RATE_NAME.search(loc[-1]):
        return True
    low, high = _bounds(found)
    return low is not None and high is not None and low >= -1 and high <= 1


def read_percentages(data: dict[str, Any], root: Any) -> set[Loc]:
    """Replace, in place, every ``N%`` a share or rate field holds by its number.

    Returns the field paths written so (a distribution counts as its field). A percentage
    where a plain number of another kind is expected is refused, naming the field.
    """
    written: set[Loc] = set()

    def visit(node: Any, loc: Loc) -> Any:
        if isinstance(node, dict):
            if "dist" in node and loc and takes_percent(root, loc):
                if _read_distribution(node, loc):
                    written.add(loc)
                return node
            for key in list(node):
                if loc == ("uncertain",) or loc[:1] == ("variants",):
                    continue  # read where they apply: below, and when a variant is loaded
                node[key] = visit(node[key], (*loc, key))
            return node
        if isinstance(node, list):
            for index, item in enumerate(node):
                node[index] = visit(item, (*loc, index))
            return node
        number = percentage(node)
        if number is None:
            return node
        if not takes_percent(root, loc):
            if isinstance(loc[-1] if loc else None, str) and any(float in members(tp) for tp in types_at(root, loc)):
                raise ScenarioError(loc, f"takes a plain number, not a percentage (only shares and rates do), "
                                         f"got {node!r}")
            return node
        written.add(loc)
        return number

    visit(data, ())
    uncertain = data.get("uncertain")
    for path, spec in (uncertain.items() if isinstance(uncertain, dict) else []):
        try:
            loc = parse_field_path(str(path))
        except ScenarioError:
            continue  # reported where the section is validated
        if isinstance(spec, dict) and takes_percent(root, loc) and _read_distribution(spec, ("uncertain", path)):
            written.add(loc)
    return written


def _read_distribution(spec: dict[str, Any], loc: Loc) -> bool:
    """A distribution's percentage parameters as numbers; whether any was one."""
    found = False
    for key in _VALUES:
        number = percentage(spec.get(key))
        if number is not None:
            spec[key], found = number, True
    values = spec.get("values")
    if isinstance(values, list):
        numbers = [percentage(value) for value in values]
        spec["values"] = [value if number is None else number for value, number in zip(values, numbers, strict=True)]
        found = found or any(number is not None for number in numbers)
    return found


def _bounds(annotations: list[Any]) -> tuple[float | None, float | None]:
    """The tightest lower and upper bounds the annotations' constraints put on a number."""
    lows: list[float] = []
    highs: list[float] = []

    def visit(tp: Any) -> None:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            inner, *extras = typing.get_args(tp)
            for extra in extras:
                for item in extra.metadata if isinstance(extra, FieldInfo) else [extra]:
                    if isinstance(item, Ge | Gt):
                        lows.append(float(item.ge if isinstance(item, Ge) else item.gt))
                    elif isinstance(item, Le | Lt):
                        highs.append(float(item.le if isinstance(item, Le) else item.lt))
            visit(inner)
        elif origin in (typing.Union, types.UnionType):
            for arg in typing.get_args(tp):
                visit(arg)

    for tp in annotations:
        visit(tp)
    return (max(lows) if lows else None), (min(highs) if highs else None)
