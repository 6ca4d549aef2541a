"""``statements.xlsx`` as a spreadsheet shows it: every figure visible under its number format
(a cost per request of $0.0004 is not 0.00), every column as wide as what it shows.

The text a cell shows is rendered here by hand from the few number-format patterns the
workbook uses (``#,##0.00``, ``0.0%``, ``0.0"%"``, ``#,##0``, dates), independently of
:func:`simulator.runs.workbook_format.shown_text`.
"""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import pytest
from openpyxl import load_workbook

import simulator
from simulator.runs.workbook import workbook_bytes
from simulator.runs.workbook_format import column_format, column_widths, money_format

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def excel_text(value, number_format: str | None) -> str:
    """What Excel shows for ``value`` under the formats this workbook writes."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m" if number_format == "yyyy-mm" else "%Y-%m-%d")
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    positive = (number_format or "General").split(";")[0]
    if positive == "General":
        return f"{value:.10g}"
    if positive.endswith('"%"'):
        body, suffix, value_shown = positive[:-3], "%", value
    elif positive.endswith("%"):
        body, suffix, value_shown = positive[:-1], "%", value * 100
    elif positive.endswith('"×"'):
        body, suffix, value_shown = positive[:-3], "×", value
    else:
        body, suffix, value_shown = positive, "", value
    decimals = len(body.split(".")[1]) if "." in body else 0
    text = f"{abs(value_shown):{',' if ',' in body else ''}.{decimals}f}{suffix}"
    return ("-" if value_shown < 0 and float(text.rstrip('%×').replace(',', '')) != 0 else "") + text


@pytest.mark.parametrize(("value", "shown"), [
    (0.0004, "0.000400"), (0.00044, "0.000440"), (0.0123, "0.0123"), (0.5, "0.500"), (0.999, "0.999"),
    (2.5, "2.50"), (1234567.891, "1,234,567.89"), (0.0, "0.00"), (-0.0004, "-0.000400"), (-1500.0, "-1,500.00"),
])
def test_money_shows_thousands_separators_and_small_amounts_to_three_significant_digits(value, shown):
    assert excel_text(value, money_format(value)) == shown


def test_a_tables_columns_take_formats_by_name():
    assert excel_text(60.26, column_format("gross_margin_pct", 60.26)) == "60.3%"  # already in percent
    assert excel_text(0.853, column_format("utilization", 0.853)) == "85.3%"  # a share
    assert excel_text(560690111.2, column_format("served_requests", 560690111.2)) == "560,690,111"
    assert excel_text(0.00044, column_format("cost_per_request_usd", 0.00044)) == "0.000440"
    assert column_format("model", "chat") is None


def test_widths_fit_the_longest_shown_text_and_bold_headers():
    rows = [[("line", None, True), ("2026-01", None, True)],
            [("Revenue of the assistant", None, False), (1234567.891, money_format(1234567.891), False)],
            [("Cost per request", None, False), (0.0004, money_format(0.0004), False)],
            [("Total", None, True), ("=SUM(B2:B3)", money_format(0.0), True)]]
    first, second = column_widths(rows)
    assert first >= len("Revenue of the assistant") and first <= len("Revenue of the assistant") + 3
    assert second >= len("1,234,567.89")  # the formula's result is as wide as the figures above it


@pytest.fixture(scope="module")
def workbook():
    scenario = simulator.load_scenario(SCENARIOS / "growth.yaml",
                                       {"horizon.duration": "9mo", "horizon.step": "1d", "variants": {}, "plan": None})
    results = simulator.simulate(scenario, paths=2, executor="serial", progress=False)
    return load_workbook(io.BytesIO(workbook_bytes(results, (SCENARIOS / "growth.yaml").read_text())))


def test_every_column_is_as_wide_as_the_longest_value_it_shows(workbook):
    checked = 0
    for sheet in workbook.worksheets:
        longest: dict[str, int] = {}
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    continue  # a formula: its result is not stored
                text = excel_text(cell.value, cell.number_format)
                longest[cell.column_letter] = max(longest.get(cell.column_letter, 0), len(text))
        for letter, size in longest.items():
            width = sheet.column_dimensions[letter].width
            assert width is not None and width >= min(size, 80), (sheet.title, letter, width, size)
            checked += 1
    assert checked > 100


def test_no_figure_shows_as_zero_when_it_is_not(workbook):
    sheet = workbook["Unit economics"]
    header = [cell.value for cell in sheet[1]]
    column = header.index("cost_per_request_usd") + 1
    costs = [sheet.cell(row=r, column=column) for r in range(2, sheet.max_row + 1)
             if sheet.cell(row=r, column=column).value]
    assert costs and all(0 < cell.value < 0.01 for cell in costs)  # sub-cent: it read 0.00
    for cell in costs:
        shown = excel_text(cell.value, cell.number_format)
        assert float(shown) == pytest.approx(cell.value, rel=5e-3), (cell.value, shown)
    zero = re.compile(r"^-?0(\.0+)?%?$")
    for sheet in workbook.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                if isinstance(cell.value, float) and abs(cell.value) >= 1e-6:
                    assert not zero.match(excel_text(cell.value, cell.number_format)), (sheet.title, cell.coordinate,
                                                                                         cell.value, cell.number_format)
