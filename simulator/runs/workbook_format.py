"""How ``statements.xlsx`` shows its figures: number formats that show every figure, and
column widths that fit what the cells show.

Money has thousands separators and cents; an amount under a dollar (a cost per request of
$0.0004) keeps three significant digits rather than reading 0.00. Percentages already in
percent (a gross margin of 60.0) show a % sign; shares (a utilization of 0.85) show as 85.0%.
A write-only sheet takes its column widths before its first row, so the widths are worked
out from the rows (values and formats) before they are written: the text each cell shows,
measured in characters, as a spreadsheet measures a column.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

MONEY = '#,##0.00;[Red]-#,##0.00'
#: A value already in percent (``gross_margin_pct`` 60.0 shows 60.0%).
PERCENT_POINTS = '0.0"%"'
#: A fraction shown as a percentage (0.85 shows 85.0%).
SHARE = '0.0%'
COUNT = '#,##0'
MULTIPLE = '0.00"×"'
#: Columns of fractions (shown as percentages) and of counts, besides ``*_usd`` and ``*_pct``.
SHARE_COLUMNS = frozenset({"utilization", "covenant_breach"})
COUNT_COLUMNS = frozenset({"served_requests", "input_tokens", "output_tokens", "served_tokens", "gpu_hours",
                           "demand_requests", "unserved_requests", "subscriber_months"})
#: Widest and narrowest column, in characters; a little room beside the text.
MAX_WIDTH, MIN_WIDTH, PADDING = 80.0, 8.0, 2.0


def money_format(value: Any) -> str:
    """:data:`MONEY` for an amount of a dollar or more (or zero); for a smaller one, as many
    decimals as three significant digits need (0.0004 shows 0.000400)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return MONEY
    size = abs(float(value))
    if size == 0 or size >= 1:
        return MONEY
    decimals = max(2, 2 - math.floor(math.log10(size)))
    digits = "0" * decimals
    return f'#,##0.{digits};[Red]-#,##0.{digits}'


def column_format(column: str, value: Any) -> str | None:
    """The number format of a value in a table column named ``column`` (``None``: as it is)."""
    if isinstance(value, dt.datetime | dt.date):
        return "yyyy-mm-dd"
    if column.endswith("_usd"):
        return money_format(value)
    if column.endswith("_pct"):
        return PERCENT_POINTS
    if column in SHARE_COLUMNS or column.endswith("_share"):
        return SHARE
    if column in COUNT_COLUMNS:
        return COUNT
    if column == "dscr":
        return MULTIPLE
    return None


_DECIMALS = re.compile(r"^[#,0]*0(?:\.(0+))?")


def shown_text(value: Any, number_format: str | None) -> str:
    """The text a spreadsheet shows for ``value`` under ``number_format`` (for the column's
    width): the formats this workbook uses; a formula's result is not known here (``None``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return "" if value.startswith("=") else value
    if isinstance(value, dt.datetime | dt.date):
        return {"yyyy-mm": value.strftime("%Y-%m")}.get(number_format or "", value.strftime("%Y-%m-%d"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if not math.isfinite(value):
        return str(value)
    if number_format is None or number_format == "General":
        return f"{value:.10g}"
    section = number_format.split(";")[0]
    suffix = "%" if section.endswith("%") or section.endswith('"%"') else "×" if section.endswith('"×"') else ""
    scaled = value * 100 if section.endswith("%") and not section.endswith('"%"') else value
    match = _DECIMALS.match(section)
    decimals = len(match.group(1) or "") if match else 2
    grouping = "," if "," in section else ""
    return f"{scaled:{grouping}.{decimals}f}{suffix}"


def column_widths(rows: list[list[tuple]]) -> list[float]:
    """Each column's width in characters: its longest shown text (bold a tenth wider) and a
    little room, within :data:`MIN_WIDTH` and :data:`MAX_WIDTH`. A column of formulas gets the
    width of the widest figure beside them (their results are of the same size)."""
    widths: list[float] = []
    formulas: set[int] = set()
    for row in rows:
        for index, item in enumerate(row):
            value, number_format, bold = item
            if isinstance(value, str) and value.startswith("="):
                formulas.add(index)
            size = len(shown_text(value, number_format)) * (1.1 if bold else 1.0)
            widths.extend([0.0] * (index + 1 - len(widths)))
            widths[index] = max(widths[index], size)
    figures = max((w for i, w in enumerate(widths) if i > 0), default=MIN_WIDTH)
    return [min(MAX_WIDTH, max(MIN_WIDTH, (max(w, figures) if i in formulas else w) + PADDING))
            for i, w in enumerate(widths)]
