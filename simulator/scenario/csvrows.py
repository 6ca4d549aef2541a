"""Read a small CSV with a known header: rows with their line numbers, errors naming the line."""

from __future__ import annotations

import csv
import io
from pathlib import Path

#: A scenario's CSV (a history, a growth curve, a job trace) holds at most this many bytes.
MAX_CSV_BYTES = 100_000_000


def read_bounded_text(path: Path, encoding: str) -> str:
    """A file's text, read up to :data:`MAX_CSV_BYTES` and refused past it (a device or a pipe
    such as /dev/zero has no size to check first). Lines are kept as written (``newline=""``)."""
    with Path(path).open("rb") as handle:
        raw = handle.read(MAX_CSV_BYTES + 1)
    if len(raw) > MAX_CSV_BYTES:
        raise ValueError(f"{path}: holds more than {MAX_CSV_BYTES:,} bytes; a scenario's CSV is limited to that")
    return raw.decode(encoding)


def read_rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, list[str]]]:
    """The data rows of ``path`` as (line number, stripped cells), blank lines skipped.

    Raises:
        ValueError: ``"<path>: cannot read …"`` or ``"<path> line N: …"`` for a missing file, a
            wrong header (compared case-insensitively) or a row with too few columns.
    """
    try:
        rows = list(csv.reader(io.StringIO(read_bounded_text(path, "utf-8-sig"))))  # as Excel saves it, too
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    header = ",".join(columns)
    if not rows or [c.strip().lower() for c in rows[0][: len(columns)]] != [c.lower() for c in columns]:
        raise ValueError(f"{path} line 1: expected the header {header!r}")
    out = []
    for number, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        if len(row) < len(columns):
            raise ValueError(f"{path} line {number}: expected {header!r}, got {','.join(row)!r}")
        out.append((number, [cell.strip() for cell in row]))
    return out


class CsvProblem(str):
    """A CSV that could not be read, put in place of its ``csv:`` value by a model's reader so
    that the field check (:func:`csv_field_check`) reports it on that key and its line."""


def csv_field_check(value: object) -> object:
    """Field validator body for ``csv``: raise the reader's problem on the field itself."""
    if isinstance(value, CsvProblem):
        raise ValueError(str(value))
    return value


def row_problem(path: Path, number: int, columns: tuple[str, ...], error: Exception) -> ValueError:
    """A pydantic error on one CSV row, as ``<path> line N: <column>: <message>``."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        where = next((columns[part] for part in first["loc"] if isinstance(part, int) and part < len(columns)), "")
        message = str(first["msg"]).removeprefix("Value error, ")
        message = message[:1].lower() + message[1:]
        got = "" if "got " in message else f", got {first.get('input')!r}"
        return ValueError(f"{path} line {number}: {where + ': ' if where else ''}{message}{got}")
    return ValueError(f"{path} line {number}: {error}")
