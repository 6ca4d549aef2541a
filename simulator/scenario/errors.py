"""The one error a user sees for a bad scenario: a field path, what is wrong, and the line.

``fleet.pools[1].count: must be >= 0, got -8 (line 14)`` is the whole message. The path is
written the way the YAML is navigated (dots for keys, brackets for list items), so it can be
pasted back into ``--set``.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.errors import InputError

Loc = tuple[str | int, ...]


def format_path(loc: Sequence[str | int]) -> str:
    """``("fleet", "pools", 1, "count")`` -> ``fleet.pools[1].count``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "scenario"


class ScenarioError(InputError):
    """An invalid scenario, located by field path and (where known) YAML line.

    Attributes:
        loc: the field path as a tuple of keys and list indices.
        message: what is wrong, without the path.
        line: the 1-based YAML line, or None when the scenario did not come from a file.
        source: the file the scenario came from, if any.
    """

    def __init__(
        self, loc: Loc, message: str, line: int | None = None, source: str | None = None
    ) -> None:
        self.loc = tuple(loc)
        self.message = message
        self.line = line
        self.source = source
        super().__init__(str(self))

    def __reduce__(self):
        # Keep every attribute when the error crosses a process boundary (worker -> main).
        return (type(self), (self.loc, self.message, self.line, self.source))

    @property
    def path(self) -> str:
        return format_path(self.loc)

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        return f"{self.path}: {self.message}{where}"
