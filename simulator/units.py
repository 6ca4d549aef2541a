"""Readable units at the edge, seconds and USD inside.

Scenarios speak in durations such as ``90d``, ``2h``, ``15min`` or ``50ms`` and in ISO dates;
the engine speaks in float seconds since the start of the horizon. Parsing is pandas'
``Timedelta``/``Timestamp``; this module only adds the conventions pandas lacks (months and
years for planning, a compact way back to text) and one-line error messages.

A month or a year has two meanings. As a length (a lead time, a repair time, a rate "per
month") it is fixed: a month is 30.4375 days, a year 365.25 days. Added to a date to make an
end (a horizon's ``duration``, a reservation's ``term``), a whole number of months or years is
calendar time: 1y from 2027-01-01 ends on 2028-01-01 (:func:`calendar_months`, :func:`add_term`).
"""

from __future__ import annotations

import datetime as dt
import math
import re

import pandas as pd

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
#: A planning year: 365.25 days (the Julian year), so four years hold one leap day.
SECONDS_PER_YEAR = 365.25 * SECONDS_PER_DAY
#: A planning month: one twelfth of a planning year, 30.4375 days.
SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0

_CALENDAR_UNITS = {
    "y": SECONDS_PER_YEAR,
    "yr": SECONDS_PER_YEAR,
    "year": SECONDS_PER_YEAR,
    "years": SECONDS_PER_YEAR,
    "mo": SECONDS_PER_MONTH,
    "month": SECONDS_PER_MONTH,
    "months": SECONDS_PER_MONTH,
    "w": 7 * SECONDS_PER_DAY,
    "week": 7 * SECONDS_PER_DAY,
    "weeks": 7 * SECONDS_PER_DAY,
}
_NUMBER_RE = re.compile(r"^\s*[-+]?[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?\s*$", re.IGNORECASE)
_ISO_DATE_RE = re.compile(
    r"^\s*\d{4}-\d{2}-\d{2}([ T]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?)?(Z|[+-]\d{2}(:?\d{2})?)?\s*$", re.IGNORECASE)
_CALENDAR_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]+)\s*$")
#: A whole number of one unit, as :func:`format_duration` writes it.
_WHOLE_RE = re.compile(r"^\s*([-+]?[0-9]+)\s*(y|mo|w|d|h|min|s|ms)\s*$", re.IGNORECASE)
#: Seconds as a decimal, as :func:`format_duration` writes those no whole unit holds.
_SECONDS_RE = re.compile(r"^\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?)\s*s\s*$", re.IGNORECASE)

# Units used to write a duration back out, largest first: planning years and months (fixed
# lengths), weeks, days, hours, minutes, seconds, milliseconds.
_FORMAT_UNITS = (("y", SECONDS_PER_YEAR), ("mo", SECONDS_PER_MONTH), ("w", 7 * SECONDS_PER_DAY),
                 ("d", SECONDS_PER_DAY), ("h", SECONDS_PER_HOUR), ("min", 60.0), ("s", 1.0), ("ms", 0.001))
#: pandas' longest Timedelta (292 years), in seconds.
_LONGEST_TIMEDELTA_S = pd.Timedelta.max.total_seconds()
#: The units of calendar time (:func:`calendar_months`): a length written in them may mean calendar months.
_MONTH_UNITS = ("y", "mo")


#: The dates a scenario may name: inside pandas' nanosecond range (1677 to 2262) with room for a
#: horizon that starts on the last of them.
EARLIEST_DATE = pd.Timestamp("1900-01-01")
LATEST_DATE = pd.Timestamp("2200-01-01")


class UnitError(ValueError):
    """A value that is not a readable duration or date."""


class Seconds(float):
    """A number of seconds the program computed (a distribution's median or draw, a planned
    offset): a duration field takes it as it is. A bare number a user wrote has no unit and
    is refused (:func:`parse_duration`)."""

    __slots__ = ()


def _needs_a_unit(value: object) -> UnitError:
    text = str(value).strip()
    return UnitError(f"a duration needs a unit, e.g. '{text}d', '{text}h' or '{text}s' "
                     f"(a bare number is not read as seconds); got {value!r}")


def parse_duration(value: object) -> float:
    """Return a duration in seconds.

    Accepts pandas Timedelta strings (``"90d"``, ``"2h"``, ``"15min"``, ``"1h30min"``,
    ``"50ms"``), planning units pandas does not have (``"6mo"``, ``"2y"``, ``"3w"``), a
    ``datetime.timedelta``, or :class:`Seconds`. A bare number other than zero, written or
    quoted (``151``, ``"151"``), is refused: ``lead_time: 151`` is more likely days than seconds.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a duration such as '90d' or '2h', got {value!r}")
    if isinstance(value, int | float):
        if value != 0 and not isinstance(value, Seconds):
            raise _needs_a_unit(value)
        seconds = float(value)
    elif isinstance(value, dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        try:
            seconds = _parse_duration_text(value)
        except OverflowError:  # 10**400d
            raise UnitError(f"duration must be finite, got {value!r}") from None
    else:
        raise UnitError(f"expected a duration such as '90d' or '2h', got {value!r}")
    if not math.isfinite(seconds):
        raise UnitError(f"duration must be finite, got {value!r}")
    return seconds


def _parse_duration_text(text: str) -> float:
    if _NUMBER_RE.match(text):  # pandas would read a bare "3600" as nanoseconds
        if float(text) == 0:
            return 0.0
        raise _needs_a_unit(text)
    whole = _WHOLE_RE.match(text)
    if whole:  # what format_duration writes, read exactly (and past pandas' 292 years)
        return int(whole.group(1)) * dict(_FORMAT_UNITS)[whole.group(2).lower()]
    seconds = _SECONDS_RE.match(text)
    if seconds:  # read as the float it writes (pandas would round to nanoseconds)
        return float(seconds.group(1))
    match = _CALENDAR_RE.match(text.lower())
    if match and match.group(2) in _CALENDAR_UNITS:
        return float(match.group(1)) * _CALENDAR_UNITS[match.group(2)]
    # pandas reads days as "D"; scenarios write "90d".
    text = re.sub(r"(\d)\s*d(?![a-z])", r"\1D", text.strip())
    try:
        delta = pd.Timedelta(text)
    except (ValueError, TypeError) as exc:
        raise UnitError(
            f"expected a duration such as '90d', '2h', '15min' or '6mo', got {text!r}"
        ) from exc
    if pd.isna(delta):
        raise UnitError(f"expected a duration, got {text!r}")
    return delta.total_seconds()


def calendar_months(value: object) -> int | None:
    """Whole calendar months of a duration written in months or years, else None.

    ``"12mo"`` and ``"1y"`` are 12, ``"1.5y"`` is 18; ``"0.5mo"``, ``"30d"`` or a number of
    seconds are None (a fixed length).
    """
    if not isinstance(value, str):
        return None
    match = _CALENDAR_RE.match(value.lower())
    if not match or _CALENDAR_UNITS.get(match.group(2)) not in (SECONDS_PER_MONTH, SECONDS_PER_YEAR):
        return None
    per = 12 if _CALENDAR_UNITS[match.group(2)] == SECONDS_PER_YEAR else 1
    months = float(match.group(1)) * per
    return int(round(months)) if abs(months - round(months)) < 1e-9 and months >= 1 else None


def add_term(start: pd.Timestamp, seconds: float, months: int | None) -> pd.Timestamp:
    """The end of a term from ``start``: ``months`` calendar months, or else ``seconds``."""
    if months is not None:
        return start + pd.DateOffset(months=months)
    return start + pd.Timedelta(seconds=seconds)


def format_duration(seconds: float, *, months: bool = True) -> str:
    """Write seconds back as text that :func:`parse_duration` reads as the same float: the
    largest whole unit that is exactly that many seconds (``1y``, ``4mo``, ``6w``, ``90d``,
    ``2h``, ``15min``), else milliseconds below a second (``50ms``), else the shortest decimal
    of the seconds themselves (``1000.5s``, ``17255236.0237s``).

    ``months=False`` leaves out years and months, for a fixed length in a field where ``4mo``
    would be read as calendar months (a term or a horizon's ``duration``: :func:`calendar_months`).
    """
    seconds = float(seconds)
    if seconds == 0:
        return "0s"
    for suffix, size in _FORMAT_UNITS:
        if suffix == "ms" and abs(seconds) >= 1:  # 1000.5s reads better than 1000500ms
            break
        if suffix in _MONTH_UNITS and not months:
            continue
        count = round(seconds / size)
        if count != 0 and count * size == seconds:
            return f"{count}{suffix}"
    return f"{seconds!r}s"


def readable_duration(seconds: float) -> str:
    """A duration for people to read (not to parse back): :func:`format_duration`'s text
    (``1mo``, ``1h``, ``15min``, ``1.5s``), but days and clock time where that would be a
    count of 10,000 or more (``6 days 22:41:00``, not ``10001min``)."""
    text = format_duration(seconds)
    whole = _WHOLE_RE.match(text)
    if whole and abs(int(whole.group(1))) >= 10_000 and abs(seconds) < _LONGEST_TIMEDELTA_S:  # 10001min: in days
        return str(pd.Timedelta(seconds=seconds))
    return text


def parse_timestamp(value: object) -> pd.Timestamp:
    """Return a timezone-naive UTC timestamp from an ISO date or datetime."""
    if isinstance(value, str) and not _ISO_DATE_RE.match(value):
        raise UnitError(f"expected an ISO date such as '2026-03-01', got {value!r}")
    if not isinstance(value, str | dt.date | pd.Timestamp):  # not a bare number: 2026 is not a date
        raise UnitError(f"expected an ISO date such as '2026-03-01', got {value!r}")
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise UnitError(f"expected an ISO date such as '2026-03-01', got {value!r}") from exc
    if pd.isna(stamp):
        raise UnitError(f"expected an ISO date such as '2026-03-01', got {value!r}")
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    if not EARLIEST_DATE <= stamp < LATEST_DATE:
        shown = value.isoformat() if isinstance(value, dt.date) else value
        raise UnitError(f"dates run from {EARLIEST_DATE.year} to {LATEST_DATE.year - 1} "
                        f"(times are held in nanoseconds), got {shown!r}")
    return stamp.as_unit("ns")


def format_timestamp(stamp: pd.Timestamp) -> str:
    """ISO text of a timestamp: the date alone when it falls on midnight."""
    if stamp == stamp.normalize():
        return stamp.strftime("%Y-%m-%d")
    return stamp.isoformat()
