"""The run's headline figures laid out for a terminal of a given width.

No line is longer than the width and no number is split across lines: a figure's parts
(:func:`~simulator.report.headline.headline_parts`) are packed whole onto lines; a part
longer than a line breaks only at its spaces, which no number contains. A terminal too
narrow for the two-column table gets the figures stacked (the label on its own line, the
parts indented below); the by-year table drops its least-read columns until it fits.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from simulator.report.headline import SEPARATOR, headline_parts, money_text, period_rows

#: Characters the boxed two-column table adds to its columns: "│ ", " │ ", " │".
_TABLE_FRAME = 7
#: Below this many characters for the value column, the figures are stacked instead.
_MIN_VALUE_WIDTH = 24
_INDENT = "  "
#: By-year columns in the order they go when the terminal is too narrow (last kept longest).
_YEAR_DROP_ORDER = ("margin $M", "GPU-h short", "revenue $M", "margin %")
#: The spaces a part may break at: not the one after a statistic ("P50 $1.2M", "pooled 98%",
#: "in 2027-03"), so a figure stays beside what it is, nor one before a "·" or "–".
_WORDS = re.compile(r"(?<!P\d\d)(?<!pooled)(?<!\bin)(?<!~) (?![·–])")
YEARS_TITLE = "By year: P50 over paths [90% interval]; GPU-hours short: mean"


def pack(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by :data:`SEPARATOR` into lines of at most ``width`` characters,
    breaking between parts, and inside a part only at a space that does not follow a
    statistic's name (:data:`_WORDS`)."""
    width = max(width, 1)
    lines: list[str] = []
    line = ""
    for part in parts:
        joined = f"{line}{SEPARATOR}{part}" if line else part
        if len(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line.rstrip())
        line = ""
        for word in _WORDS.split(part):
            joined = f"{line} {word}" if line else word
            if len(joined) <= width or not line:
                line = joined  # (a single word wider than the line stays whole)
            else:
                lines.append(line)
                line = word
    if line:
        lines.append(line)
    return lines


def headline_view(summary: dict[str, Any], title: str, width: int) -> RenderableType:
    """The headline figures for a terminal ``width`` characters wide: a two-column table, or
    the figures stacked when the value column would be too narrow."""
    rows = headline_parts(summary)
    label_width = max(len(label) for label, _ in rows)
    value_width = width - label_width - _TABLE_FRAME
    if value_width >= _MIN_VALUE_WIDTH:
        table = Table(title=title, show_header=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(no_wrap=True)
        for label, parts in rows:
            table.add_row(label, Text("\n".join(pack(parts, value_width))))
        return table
    lines: list[RenderableType] = [Text(title, style="italic")]
    for label, parts in rows:
        lines.append(Text(label, style="bold"))
        lines.extend(Text(_INDENT + line) for line in pack(parts, width - len(_INDENT)))
    return Group(*lines)


def years_view(summary: dict[str, Any], width: int) -> Table | None:
    """The by-year table (None without periods), without the columns a terminal ``width``
    wide has no room for (the year and P(short) always stay)."""
    years = period_rows(summary, "year")
    if not years:
        return None
    columns = list(years[0])
    for drop in (None, *_YEAR_DROP_ORDER):
        if drop is not None:
            columns.remove(drop)
        table = _years_table(years, columns)
        if _rendered_width(table) <= width:
            break
    return table


def _years_table(years: list[dict[str, str]], columns: list[str]) -> Table:
    table = Table(title=YEARS_TITLE, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  collapse_padding=True)
    for column in columns:
        table.add_column(column, justify="left" if column == "year" else "right", no_wrap=True)
    for row in years:
        table.add_row(*(row[column] for column in columns))
    return table


def _rendered_width(table: Table) -> int:
    """The widest line of ``table`` (its title aside, which wraps) on an unbounded console."""
    title, table.title = table.title, None
    out = io.StringIO()
    Console(file=out, width=10_000, color_system=None).print(table)
    table.title = title
    return max((len(line.rstrip()) for line in out.getvalue().splitlines()), default=0)


def fitted_table(title: str, columns: list[tuple[str, str]], rows: list[list[str]], width: int,
                 drop_order: Sequence[str] = (), box_style: box.Box = box.HEAVY_HEAD,
                 title_justify: str = "center") -> RenderableType:
    """A table of text cells (``columns``: header and justification) that fits ``width``
    without breaking a cell inside a word (so no number is split or cut): each column is at
    least as wide as its longest word (header included) and gets the room left towards its
    widest cell; the columns of ``drop_order`` go, in that order, while even the narrowest
    layout does not fit. When nothing fits, each row is stacked: one "header: cell" a line."""
    headers = [header for header, _ in columns]
    kept = list(headers)
    drops = list(drop_order)
    while True:
        index = [headers.index(header) for header in kept]
        texts = [[header] + [row[i] for row in rows] for header, i in zip(kept, index, strict=True)]
        narrowest = [max([1, *(len(word) for text in column for word in text.split())]) for column in texts]
        cells = [max((len(text) for text in column[1:]), default=0) for column in texts]
        room = width - (3 * len(kept) + 1)  # "│ " before each column, " │" after the last (blank in a SIMPLE box)
        if sum(narrowest) <= room:
            break
        if not drops:
            return _stacked(title, headers, rows, width)
        kept.remove(drops.pop(0))
    widths = list(narrowest)
    spare = room - sum(widths)
    # The room left: first so that every cell is on one line (the least needed first), then headers.
    for target in (cells, [max(cell, len(header)) for cell, header in zip(cells, kept, strict=True)]):
        for i in sorted(range(len(kept)), key=lambda i: target[i] - widths[i]):
            grow = max(min(target[i] - widths[i], spare), 0)
            widths[i] += grow
            spare -= grow
    justify = dict(columns)
    table = Table(title=title, box=box_style, title_justify=title_justify)
    for header, column_width in zip(kept, widths, strict=True):
        table.add_column(header, justify=justify[header], width=column_width, overflow="fold")
    for row in rows:
        table.add_row(*(row[headers.index(header)] for header in kept))
    return table


def _stacked(title: str, headers: list[str], rows: list[list[str]], width: int) -> Group:
    """Each row as lines of "header: cell" (its empty cells left out), a blank line between."""
    lines: list[RenderableType] = [Text(title, style="italic")]
    for row in rows:
        for header, cell in zip(headers, row, strict=True):
            if cell:
                lines.extend(Text(line) for line in pack([f"{header}: {cell}" if header else cell], width))
        lines.append(Text(""))
    return Group(*lines)


#: The figures of a sweep point the terminal shows after the swept fields, and how.
SWEEP_FIGURES = {"share_served_p50": "served P50", "first_shortfall_p50": "first short P50",
                 "gross_margin_pct_p50": "margin % P50", "gross_margin_usd_p10": "margin $ P10",
                 "cost_per_1m_tokens_usd_p50": "$ per 1M tokens P50"}
#: The sweep's figure columns in the order they go on a narrow terminal.
_SWEEP_DROP_ORDER = ("$ per 1M tokens P50", "margin $ P10", "first short P50", "margin % P50")


def sweep_view(title: str, points: pd.DataFrame, fields: dict[str, str], width: int) -> RenderableType:
    """One row per sweep point: each swept field (``fields``: column to its label) as the
    scenario reads it, then the headline figures of :data:`SWEEP_FIGURES`."""
    columns = [(label, "right") for label in fields.values()] + [(label, "right") for label in SWEEP_FIGURES.values()]
    rows = [[parameter_text(field, row[field]) for field in fields]
            + [_figure_text(name, row[name]) for name in SWEEP_FIGURES] for _, row in points.iterrows()]
    return fitted_table(title, columns, rows, width, _SWEEP_DROP_ORDER)


def _figure_text(name: str, value: Any) -> str:
    if value is None or isinstance(value, float) and value != value:
        return "—"
    if name == "share_served_p50":
        return f"{value:.2%}"
    if name == "first_shortfall_p50":
        return str(value)[:10]
    if name == "gross_margin_pct_p50":
        return f"{value:.1f}%"
    if name == "cost_per_1m_tokens_usd_p50":
        return f"${value:,.2f}"
    return money_text(float(value))


def parameter_text(field: str, value: object) -> str:
    """A swept value as the scenario reads it: a duration in its unit, money in $."""
    from simulator.scenario.labels import field_unit, format_field_value
    from simulator.units import UnitError, parse_duration

    if field_unit(field) == "duration" and isinstance(value, str):
        try:
            return format_field_value(field, parse_duration(value))
        except UnitError:
            return value  # a date
    if isinstance(value, int | float):
        return format_field_value(field, value)
    return "—" if value is None else str(value)[:10] if isinstance(value, str) and "T" in value else str(value)


SENSITIVITY_COLUMNS = ("input", "input p10", "input p90", "margin at p10", "margin at p90", "swing")


def sensitivity_view(title: str, table: pd.DataFrame, width: int) -> RenderableType:
    """The one-at-a-time sensitivity: each input's P10 and P90 and the P50 gross margin at
    each, and the swing between them; the inputs' own values go first on a narrow terminal."""
    from simulator.scenario.labels import format_field_value

    rows = [[str(row["label"]), format_field_value(row["input"], row["input_p10"]),
             format_field_value(row["input"], row["input_p90"]),
             *(money_text(_float(row[c])) for c in ("gross_margin_usd_p10", "gross_margin_usd_p90",
                                                      "gross_margin_usd_swing"))]
            for _, row in table.iterrows()]
    columns = [(name, "left" if name == "input" else "right") for name in SENSITIVITY_COLUMNS]
    return fitted_table(title, columns, rows, width, ("input p10", "input p90", "margin at p10", "margin at p90"))


def _float(value: Any) -> float | None:
    return None if value is None or value != value else float(value)
