"""Field types shared by the scenario models: readable at the edge, SI units inside.

A ``Duration`` is written ``90d`` or ``2h`` and held as float seconds; an ``Instant`` is an
ISO date held as a ``pandas.Timestamp``; a ``When`` is either of them, an offset from the
start of the horizon or a date. A ``Term`` is a length added to a date to make an end (a
horizon's duration, a reservation's term): written in whole months or years it is a
:class:`Span` of calendar months, so ``1y`` from 2027-01-01 ends on 2028-01-01. Each
serializes back to readable text, so ``scenario.resolved.yaml`` reads like the file the user
wrote.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
)

from simulator.units import (
    UnitError,
    add_term,
    calendar_months,
    format_duration,
    format_timestamp,
    parse_duration,
    parse_timestamp,
)


class Frozen(BaseModel):
    """Base of every scenario model: immutable, and unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


def _duration(value: Any) -> float:
    try:
        seconds = parse_duration(value)
    except UnitError as exc:
        raise ValueError(str(exc)) from None
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative, got {value!r}")
    return seconds


def _positive_duration(value: Any) -> float:
    seconds = _duration(value)
    if seconds <= 0:
        raise ValueError(f"must be a positive duration, got {value!r}")
    return seconds


@dataclass(frozen=True)
class Span:
    """A term as written: whole calendar ``months`` (``12mo``, ``1y``), or a fixed length.

    ``seconds`` is the fixed length (a month 30.4375 days, a year 365.25 days); an end is
    :meth:`end_from` a start, in calendar months when ``months`` is set. ``in_years`` keeps
    ``1y`` written back as ``1y`` rather than ``12mo``.
    """

    seconds: float
    months: int | None = None
    in_years: bool = False

    def end_from(self, start: pd.Timestamp) -> pd.Timestamp:
        return add_term(start, self.seconds, self.months)

    def text(self) -> str:
        if self.months is None:  # a fixed length: never "4mo", which would read as calendar months
            return format_duration(self.seconds, months=False)
        if self.in_years and self.months % 12 == 0:
            return f"{self.months // 12}y"
        return f"{self.months}mo"


def _span(value: Any, positive: bool = False) -> Span:
    if isinstance(value, Span):
        return value
    seconds = _positive_duration(value) if positive else _duration(value)
    months = calendar_months(value)
    in_years = months is not None and str(value).strip().lower().rstrip("s").endswith(("y", "yr", "year"))
    return Span(seconds, months, in_years)


def _instant(value: Any) -> pd.Timestamp:
    if isinstance(value, pd.Timestamp):
        return value
    try:
        return parse_timestamp(value)
    except UnitError as exc:
        raise ValueError(str(exc)) from None


def _when(value: Any) -> float | pd.Timestamp:
    """An offset (``90d``) or a date (``2026-09-01``)."""
    if isinstance(value, pd.Timestamp | dt.date):
        return _instant(value)
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except UnitError:
            try:
                return parse_timestamp(value)
            except UnitError:
                raise ValueError(
                    f"expected a date such as '2026-09-01' or an offset from the start "
                    f"such as '90d', got {value!r}"
                ) from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:  # an offset the program computed, or 0; not a bare number a user wrote
            return parse_duration(value)
        except UnitError as exc:
            raise ValueError(str(exc)) from None
    raise ValueError(f"expected a date or an offset such as '90d', got {value!r}")


def _write_when(value: float | pd.Timestamp) -> str:
    if isinstance(value, pd.Timestamp):
        return format_timestamp(value)
    return format_duration(value)


def _positive_span(value: Any) -> Span:
    return _span(value, positive=True)


#: The validators of fields that hold a duration (or an offset): a distribution on such a
#: field is written in durations, and its median and draws are :class:`Seconds`.
DURATION_PARSERS = frozenset({_duration, _positive_duration, _span, _positive_span, _when})

Duration = Annotated[
    float,
    BeforeValidator(_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["90d", "2h", "15min", "6mo"]}),
]
PositiveDuration = Annotated[
    float,
    BeforeValidator(_positive_duration),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["1h", "7d"]}),
]
Term = Annotated[
    Span,
    BeforeValidator(_span),
    PlainSerializer(Span.text, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["18mo", "1y", "365d"]}),
]
PositiveTerm = Annotated[
    Span,
    BeforeValidator(_positive_span),
    PlainSerializer(Span.text, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["1y", "6mo"]}),
]
Instant = Annotated[
    pd.Timestamp,
    BeforeValidator(_instant),
    PlainSerializer(format_timestamp, return_type=str),
    WithJsonSchema({"type": "string", "format": "date", "examples": ["2026-03-01"]}),
]
When = Annotated[
    float | pd.Timestamp,
    BeforeValidator(_when),
    PlainSerializer(_write_when, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["2026-09-01", "90d"]}),
]

def _seconds(value: Any) -> Any:
    """A field named in seconds (``tpot_s``) takes a bare number of seconds or a duration."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parse_duration(value)
    except UnitError as exc:
        raise ValueError(str(exc)) from None


#: Seconds, as a field named ``..._s`` says: ``0.08`` or ``80ms``.
PositiveSeconds = Annotated[
    float,
    BeforeValidator(_seconds),
    Field(gt=0, allow_inf_nan=False),
    WithJsonSchema({"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                              {"type": "string", "examples": ["80ms", "2s"]}]}),
]

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
