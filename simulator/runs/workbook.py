"""``statements.xlsx``: the run's statements as a spreadsheet opens them (numbers, with formats).

Sheets: ``Monthly``, ``Quarterly``, ``Yearly`` (each line of the statements by period: the
P50 across paths, then P10 and P90 below it), ``Cash flow`` (monthly, P50, with the cash
balance's P10 and P90), ``Balance sheet`` and ``Cash flow statement`` (quarterly means, every
subtotal a formula over the lines shown, :mod:`simulator.runs.workbook_books`), ``Covenants``
(per quarter: the probability of a breach with its interval, DSCR and LTV percentiles),
``Contract book`` (per contract and quarter: GPU-hours contracted and delivered, billing, SLA
credits, revenue; means over paths),
``Unit economics`` (per model and month, and over the horizon),
``P&L by path`` (the kept paths' rows of ``pnl.parquet``, row for row, at most 2,000: the
Parquet and CSV files hold every path),
and ``Assumptions`` (every field of the resolved scenario).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any

import pandas as pd
import yaml

from simulator.economics.statements import PERIODS
from simulator.runs.forked import at_child_stop
from simulator.runs.workbook_books import (
    balance_sheet_rows,
    cash_flow_rows,
    contract_rows,
    covenant_rows,
)
from simulator.runs.workbook_format import (
    MULTIPLE,
    PERCENT_POINTS,
    SHARE,
    column_format,
    column_widths,
    money_format,
)

#: Number formats of the statements' lines that are not money (see :mod:`simulator.runs.workbook_format`).
LINE_FORMATS = {"ratio": PERCENT_POINTS, "multiple": MULTIPLE, "any": SHARE}
MAX_ROWS = 2_000  # openpyxl writes ~50,000 cells a second: a sample to audit, not every path
_CASH_LINES = ("operating_cash_flow_usd", "capex_usd", "loan_drawn_usd", "loan_repaid_usd", "cash_flow_usd",
               "cash_balance_usd", "debt_balance_usd")


def workbook_bytes(results: Any, resolved_yaml: str) -> bytes:
    """The workbook of ``results`` (a :class:`~simulator.runs.results.Results`), as bytes."""
    from openpyxl import Workbook  # imported here: only a run that writes its files needs it
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    book = Workbook(write_only=True)  # streamed: a cell costs a few microseconds, not tens
    try:
        return _filled(book, results, resolved_yaml, WriteOnlyCell, Font(bold=True))
    except BaseException:  # an interrupt (Ctrl-C, SIGTERM) or an error while the sheets stream
        _close_streams(book)
        raise


@at_child_stop
def _remove_temporary_sheets() -> None:
    """The sheets' temporary files of a workbook still streaming (openpyxl lists them, and
    removes them itself only when the interpreter exits normally)."""
    writer = sys.modules.get("openpyxl.worksheet._writer")
    for path in list(getattr(writer, "ALL_TEMP_FILES", ())):
        with contextlib.suppress(OSError):
            os.remove(path)


def _close_streams(book) -> None:
    """Close an unfinished write-only workbook's streams, each sheet's rows before its file,
    and remove the sheets' temporary files.

    Left to the garbage collector, they close in any order: a sheet's rows then write to a
    file already closed and Python prints the "exception ignored" traceback on stderr. The
    temporary files are otherwise removed only when the interpreter exits normally, which a
    forked writer (:mod:`simulator.runs.forked`) never does.
    """
    for sheet in book.worksheets:
        writer = getattr(sheet, "_writer", None)
        for stream in (getattr(sheet, "_rows", None), getattr(writer, "xf", None)):
            if stream is not None:
                with contextlib.suppress(Exception):
                    stream.close()
        if writer is not None and isinstance(getattr(writer, "out", None), str):
            with contextlib.suppress(Exception):
                writer.cleanup()


def _filled(book, results: Any, resolved_yaml: str, WriteOnlyCell, bold) -> bytes:  # noqa: N803
    """Stream every sheet into ``book`` and return the saved file."""

    def cell(sheet, value, number_format: str | None = None, strong: bool = False):
        out = WriteOnlyCell(sheet, value=value)
        if number_format:
            out.number_format = number_format
        if strong:
            out.font = bold
        return out

    def write(title: str, rows: list[list[tuple]]) -> None:
        """A sheet of rows of (value, number format, bold), its columns as wide as their text."""
        sheet = book.create_sheet(title)
        _widths(sheet, rows)
        for row in rows:
            sheet.append([cell(sheet, *item) for item in row])

    statements = results.statements
    for kind in PERIODS:
        rows = statements[statements["period_kind"] == kind] if len(statements) else statements
        write({"month": "Monthly", "quarter": "Quarterly", "year": "Yearly"}[kind], _statement_rows(rows, kind))
    write("Cash flow", _cash_rows(statements))
    quarter = lambda period: _period_label(pd.Timestamp(period), "quarter")  # noqa: E731
    covenants = (getattr(results, "summary", None) or {}).get("covenants")
    for title, rows in (("Balance sheet", balance_sheet_rows(statements, quarter) if len(statements) else []),
                        ("Cash flow statement", cash_flow_rows(statements, quarter) if len(statements) else []),
                        ("Covenants", covenant_rows(covenants, statements, quarter) if len(statements) else []),
                        ("Contract book", contract_rows(getattr(results, "contract_book", pd.DataFrame()),
                                                        int((getattr(results, "summary", None) or {}).get("paths", 1)),
                                                        quarter))):
        write(title, rows)
    write("Unit economics", _table_rows(results.unit_economics))
    kept = results.pnl[results.pnl["path"] < max(results.kept_paths, 1)] if len(results.pnl) else results.pnl
    write("P&L by path", _table_rows(kept.head(MAX_ROWS)))
    write("Assumptions", [[("field", None, True), ("value", None, True)],
                          *([(field, None, False), (value if isinstance(value, int | float | str | bool) else str(value),
                                                     None, False)]
                            for field, value in _flatten(yaml.safe_load(resolved_yaml)))])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _widths(sheet, rows: list[list[tuple]]) -> None:
    """Set column widths before a write-only sheet's rows: each as wide as the text it shows."""
    for index, width in enumerate(column_widths(rows)):
        sheet.column_dimensions[_letters(index)].width = width


def _letters(index: int) -> str:
    letters, index = "", index + 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _period_label(period: pd.Timestamp, kind: str) -> str:
    if kind == "year":
        return f"{period.year}"
    if kind == "quarter":
        return f"{period.year} Q{period.quarter}"
    return f"{period:%Y-%m}"


# Rows are lists of (value, number format, bold) for the workbook's cells.
def _statement_rows(rows: pd.DataFrame, kind: str) -> list[list[tuple]]:
    if not len(rows):
        return []
    periods = list(dict.fromkeys(rows["period"]))
    lines = list(dict.fromkeys(zip(rows["line"], rows["label"], rows["kind"], strict=True)))
    out = []
    anys = set(rows.loc[rows["kind"] == "any", "line"])  # a breach indicator: its mean is a probability
    for statistic in ("p50", "p10", "p90"):
        values_of = rows[statistic].where(~rows["line"].isin(anys), rows["mean"])
        cells = dict(zip(zip(rows["line"], rows["period"], strict=True), values_of, strict=True))
        out.append([(f"{statistic.upper()} across paths, USD (margin in %)", None, True),
                    *((_period_label(period, kind), None, True) for period in periods)])
        for line, label, line_kind in lines:
            values = [cells[(line, period)] for period in periods]
            out.append([(label.strip(), None, False),
                        *((None if pd.isna(v) else float(v), LINE_FORMATS.get(line_kind) or money_format(v), False)
                          for v in values)])
        out += [[], []]
    return out


def _cash_rows(statements: pd.DataFrame) -> list[list[tuple]]:
    if not len(statements):
        return []
    monthly = statements[statements["period_kind"] == "month"]
    headers = ["month", *[f"{line} (P50)" for line in _CASH_LINES], "cash_balance_usd (P10)", "cash_balance_usd (P90)"]
    out = [[(header, None, True) for header in headers]]
    keys = list(zip(monthly["period"], monthly["line"], strict=True))
    by = {statistic: dict(zip(keys, monthly[statistic], strict=True)) for statistic in ("p10", "p50", "p90")}
    for period in dict.fromkeys(monthly["period"]):
        values = [by["p50"][(period, line)] for line in _CASH_LINES]
        values += [by["p10"][(period, "cash_balance_usd")], by["p90"][(period, "cash_balance_usd")]]
        out.append([(period.to_pydatetime(), "yyyy-mm", False), *((float(v), money_format(v), False) for v in values)])
    return out


def _table_rows(table: pd.DataFrame) -> list[list[tuple]]:
    """A table's header and rows, each value in the format its column and size call for."""
    columns = [str(column) for column in table.columns]
    out = [[(column, None, True) for column in columns]]
    for row in table.itertuples(index=False):
        values = [_plain(value) for value in row]
        out.append([(value, column_format(column, value), False) for column, value in zip(columns, values, strict=True)])
    return out


def _plain(value: Any) -> Any:
    """A cell value openpyxl writes as a number, a date or text (None for a missing one)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [item for key, inner in value.items()
                for item in _flatten(inner, f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(value, list):
        if not value:
            return [(prefix, "[]")]
        return [item for i, inner in enumerate(value) for item in _flatten(inner, f"{prefix}[{i}]")]
    return [(prefix, value)]
