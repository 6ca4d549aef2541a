"""Field paths: how a scenario names one of its fields, as in ``fleet.pools[1].count``.

Overrides (``--set``), variants, uncertain inputs and sensitivity all address fields this way;
the parser lives here so that each of them reads paths the same way.
"""

from __future__ import annotations

import re
from typing import Any

from simulator.scenario.errors import Loc, ScenarioError

_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def parse_field_path(text: str) -> Loc:
    """``"fleet.pools[1].count"`` as ``("fleet", "pools", 1, "count")``."""
    parts: list[str | int] = []
    position = 0
    for match in _PATH_PART.finditer(text):
        if text[position : match.start()] not in ("", "."):
            break
        parts.append(int(match.group(2)) if match.group(2) is not None else match.group(1))
        position = match.end()
    if not parts or position != len(text):
        raise ScenarioError((), f"cannot read the field path {text!r}")
    return tuple(parts)


def set_field(data: dict[str, Any], key: str, value: Any) -> None:
    """Set the field at path ``key`` of a scenario mapping, creating mappings on the way."""
    loc = parse_field_path(key)
    node: Any = data
    for depth, part in enumerate(loc[:-1]):
        nxt = loc[depth + 1]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise ScenarioError(loc[: depth + 1], "no such list item")
            node = node[part]
        else:
            if not isinstance(node, dict):
                raise ScenarioError(loc[:depth], "not a mapping")
            if node.get(part) is None:  # absent or null: a field below it creates it
                node[part] = [] if isinstance(nxt, int) else {}
            node = node[part]
    last = loc[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise ScenarioError(loc, "no such list item")
    elif not isinstance(node, dict):
        raise ScenarioError(loc[:-1], "not a mapping")
    node[last] = value
