"""Reading a traffic history: dates read one way for the whole file, gaps and repeats named.

A history is a CSV with a ``date`` column and ``rps`` (requests per second at that date) or
``requests`` (requests in the period from that date to the next). Dates are read for the whole
column at once, never row by row:

* ISO 8601 (``2026-01-05``, ``2026-01-05T13:00``, with or without seconds and an offset) is read
  as such when the first row is (and then every row must be);
* otherwise the history's ``date_order`` (``day_first`` or ``month_first``) or ``date_format``
  (a ``strftime`` pattern such as ``%d/%m/%Y``) says how. Without either, the column is read month-first and day-first; when
  only one reading is valid for every row it is taken (and said), when both are valid and
  differ the file is refused, naming the column and an example row, since guessing would
  silently change the growth.

The cadence is the most common spacing between dates: hourly, daily, weekly or monthly (dates at
midnight on the same day of each month, or on each month's last day), or "every N
minutes/hours/days". A missing period (a spacing of more than one and a half times the cadence,
or a skipped month), a date off the cadence (closer to the one before than 0.9 of the cadence, or
off the month's day), a repeated date and a value that is not a positive number are refused with
their line.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.scenario.csvrows import read_bounded_text

_ISO = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?)$")
CADENCES = {"hourly": pd.Timedelta(hours=1), "daily": pd.Timedelta(days=1), "weekly": pd.Timedelta(days=7)}


@dataclass(frozen=True)
class DateReading:
    """How to read a history's dates: ``dayfirst`` or a ``strftime`` pattern (or neither: ISO)."""

    dayfirst: bool | None = None
    format: str | None = None


@dataclass
class History:
    """A history read: the rate by date, its cadence, and what the reading noticed."""

    rps: pd.Series  # requests per second, by date (a period's mean rate at its middle for ``requests``)
    cadence: str  # hourly | daily | weekly | monthly | every …
    spacing: pd.Timedelta  # the cadence as a duration (a month: its mean length)
    column: str  # rps | requests
    lines: np.ndarray  # the file's line of each row, in date order
    starts: pd.DatetimeIndex  # each row's date as written: the start of its period
    notes: list[str] = field(default_factory=list)

    @property
    def first(self) -> pd.Timestamp:
        return self.rps.index[0]

    @property
    def last(self) -> pd.Timestamp:
        return self.rps.index[-1]


def load_history(path: Path, reading: DateReading | None = None) -> History:
    """Read ``path`` (module docstring); ValueError with the line for anything wrong in it."""
    reading = reading or DateReading()
    try:
        rows = list(csv.reader(io.StringIO(read_bounded_text(path, "utf-8-sig"))))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason})") from None
    if not rows:
        raise ValueError(f"{path} is empty")
    header = [name.strip().lower() for name in rows[0]]
    if "date" not in header or not {"rps", "requests"} & set(header):
        raise ValueError(f"{path}: needs a 'date' column and an 'rps' or 'requests' column, has {', '.join(header)}")
    column = "rps" if "rps" in header else "requests"
    at_date, at_value = header.index("date"), header.index(column)
    texts, values, lines = [], [], []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(at_date, at_value):
            raise ValueError(f"{path} line {number}: {row!r} has no {column} value")
        try:
            value = float(row[at_value])
        except ValueError:
            raise ValueError(f"{path} line {number}: {column} {row[at_value]!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{path} line {number}: {column} must be a positive number, got {row[at_value].strip()}")
        texts.append(row[at_date].strip())
        values.append(value)
        lines.append(number)
    if len(texts) < 3:
        raise ValueError(f"{path}: {len(texts)} rows; a fit needs at least 3")
    notes: list[str] = []
    dates = _read_dates(path, texts, lines, reading, notes)
    order = np.argsort(dates.to_numpy(), kind="stable")
    dates, values_sorted, lines_sorted = dates[order], np.asarray(values)[order], np.asarray(lines)[order]
    repeated = np.flatnonzero(dates[1:] == dates[:-1])
    if repeated.size:
        k = int(repeated[0])
        raise ValueError(f"{path} line {lines_sorted[k + 1]}: the date {texts[order[k + 1]]} repeats line "
                         f"{lines_sorted[k]}'s")
    cadence, spacing = _cadence(dates)
    _check_gaps(path, dates, lines_sorted, cadence, spacing)
    series = pd.Series(values_sorted, index=dates)
    if column == "requests":
        series = _mean_rates(series, cadence)
    notes.insert(0, f"{len(series)} points, {cadence}, {dates[0]:%Y-%m-%d} to {dates[-1]:%Y-%m-%d}")
    return History(series, cadence, spacing, column, lines_sorted, dates, notes)


def _read_dates(path: Path, texts: list[str], lines: list[int], reading: DateReading,
                notes: list[str]) -> pd.DatetimeIndex:
    """The column's dates, read one way for every row (module docstring)."""
    column = pd.Series(texts)
    if reading.format is not None:
        return _strict(path, column, lines, dict(format=reading.format), f"the format {reading.format!r}")
    if _ISO.match(texts[0]):  # ISO from the first row: every row must be (offsets taken to UTC)
        return _strict(path, column, lines, dict(format="ISO8601", utc=True), "ISO 8601")
    if reading.dayfirst is not None:
        how = "day-first" if reading.dayfirst else "month-first"
        dates = _strict(path, column, lines, dict(dayfirst=reading.dayfirst, format="mixed"), how)
        k = _inconsistent(texts, dates, reading.dayfirst)
        if k is not None:
            raise ValueError(f"{path} line {lines[k]}: {texts[k]!r} is not a date {how} (read the other way round)")
        return dates
    readings = {}
    for dayfirst in (False, True):
        try:
            readings[dayfirst] = _strict(path, column, lines, dict(dayfirst=dayfirst, format="mixed"), "")
        except ValueError:
            continue
        if _inconsistent(texts, readings[dayfirst], dayfirst) is not None:
            del readings[dayfirst]
    if not readings:
        raise ValueError(f"{path}: the dates (e.g. {texts[0]!r} on line {lines[0]}) are neither ISO 8601 "
                         "nor one consistent day/month order; give history.date_format")
    if len(readings) == 2 and not readings[False].equals(readings[True]):
        k = int(np.flatnonzero(readings[False] != readings[True])[0])
        raise ValueError(
            f"{path}: the date column is ambiguous: line {lines[k]} ({texts[k]!r}) reads as "
            f"{readings[False][k]:%Y-%m-%d} month-first and {readings[True][k]:%Y-%m-%d} day-first; "
            "say which with history.date_order: day_first|month_first (or history.date_format; --dayfirst or "
            "--monthfirst on the command line)")
    dayfirst = next(iter(readings)) if len(readings) == 1 else False
    if len(readings) == 1:
        notes.append(f"dates read {'day' if dayfirst else 'month'}-first (the only reading valid for every row)")
    return readings[dayfirst]


def _strict(path: Path, column: pd.Series, lines: list[int], options: dict, how: str) -> pd.DatetimeIndex:
    """Every value read with ``options``, or ValueError naming the first that is not."""
    parsed = pd.to_datetime(column, errors="coerce", **options)
    bad = np.flatnonzero(parsed.isna().to_numpy())
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{path} line {lines[k]}: {column.iloc[k]!r} is not a date as {how}".rstrip(" as"))
    if getattr(parsed.dt, "tz", None) is not None:
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    return pd.DatetimeIndex(parsed)


def _inconsistent(texts: list[str], dates: pd.DatetimeIndex, dayfirst: bool) -> int | None:
    """The first row not read in the asked day/month order (pandas' "mixed" reading falls back to
    the other order for a day above 12 rather than failing), or None."""
    for k, (text, date) in enumerate(zip(texts, dates, strict=True)):
        numbers = [int(n) for n in re.findall(r"\d+", text)[:3]]
        if len(numbers) < 3:
            continue
        if numbers[0] in (date.year, date.year % 100) and numbers[0] > 31:  # year first: Y/M/D throughout
            continue
        first, second = numbers[0], numbers[1]
        day, month = (first, second) if dayfirst else (second, first)
        if (date.day, date.month) != (day, month):
            return k
    return None


def _cadence(dates: pd.DatetimeIndex) -> tuple[str, pd.Timedelta]:
    steps = pd.Series(dates[1:] - dates[:-1])
    common = steps.mode().iloc[0]
    if pd.Timedelta(days=28) <= common <= pd.Timedelta(days=31) and all(d == d.normalize() for d in dates):
        return "monthly", pd.Timedelta(days=365.25 / 12)
    for name, length in CADENCES.items():
        if common == length:
            return name, length
    return f"every {_say(common)}", common


def _say(delta: pd.Timedelta) -> str:
    seconds = delta.total_seconds()
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} seconds"


def _check_gaps(path: Path, dates: pd.DatetimeIndex, lines: np.ndarray, cadence: str, spacing: pd.Timedelta) -> None:
    """Refuse a missing period or a date off the cadence, naming the lines either side of it."""
    if cadence == "monthly":
        month_ends = all(d.is_month_end for d in dates)
        for k in range(len(dates)):  # every date on the first one's day of the month (or every one a month's end)
            on_day = dates[k].is_month_end if month_ends else dates[k].day == dates[0].day
            if not on_day:
                said = "the end of its month" if month_ends else f"day {dates[0].day} of its month"
                raise ValueError(f"{path} line {lines[k]}: {dates[k]:%Y-%m-%d} is not on {said} like the history's "
                                 "other dates (one row per month)")
        months = dates.year * 12 + dates.month
        jumps = np.flatnonzero(np.diff(months) > 1)
    else:
        gaps = (dates[1:] - dates[:-1]).to_numpy()
        short = np.flatnonzero(gaps < 0.9 * spacing.to_timedelta64())  # 0.9: a 23-hour day across a clock change
        if short.size:
            k = int(short[0])
            raise ValueError(f"{path} line {lines[k + 1]}: {dates[k + 1]} is only {_say(dates[k + 1] - dates[k])} "
                             f"after line {lines[k]}, in a {cadence} history (one row per period)")
        jumps = np.flatnonzero(gaps > 1.5 * spacing.to_timedelta64())
    if jumps.size:
        k = int(jumps[0])
        missing = (f"{(dates[k] + pd.DateOffset(months=1)):%Y-%m}" if cadence == "monthly"
                   else f"{dates[k] + spacing:%Y-%m-%d %H:%M}")
        raise ValueError(f"{path} line {lines[k + 1]}: a gap in the {cadence} history after line {lines[k]} "
                         f"({dates[k]:%Y-%m-%d}): {missing} is missing; add it, or give the history a regular "
                         f"cadence")


def _mean_rates(series: pd.Series, cadence: str) -> pd.Series:
    """Requests per period → the period's mean rate, placed at the period's middle. The last
    period is a calendar month for monthly data, else as long as the one before."""
    index = series.index
    if cadence == "monthly":
        ends = index + pd.DateOffset(months=1)
    else:
        ends = index[1:].append(pd.DatetimeIndex([index[-1] + (index[-1] - index[-2])]))
    seconds = (ends - index).total_seconds().to_numpy()
    return pd.Series(series.to_numpy() / seconds, index=index + pd.to_timedelta(seconds / 2, unit="s"))
