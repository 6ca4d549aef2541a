"""Examples for the scenario reference, taken from the scenarios shipped in ``scenarios/``.

Each field path of the reference (``fleet.pools[].count``) gets the first value a shipped
scenario writes there, as the scenario writes it (``256``, ``{type: owned, price_usd: 33000}``),
so an example is one that runs: every shipped scenario is run by the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: Longest example shown; a longer value is left out rather than cut.
MAX_CHARS = 70


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000, allow_unicode=True)
    return text.strip().removesuffix("...").strip()


def _walk(value: Any, path: str, known: set[str], within: set[str], found: dict[str, str]) -> None:
    if path and path in known and path not in found:
        text = _flow(value)
        if len(text) <= MAX_CHARS:
            found[path] = text
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if child not in within and path and f"{path}.<name>" in within:
                child = f"{path}.<name>"
            _walk(item, child, known, within, found)
    elif isinstance(value, list):
        for item in value:
            _walk(item, f"{path}[]", known, within, found)


def shipped_examples(scenario_dir: Path, known: set[str]) -> dict[str, str]:
    """Field path -> the first value a shipped scenario gives it (files in name order)."""
    # Every path and every prefix of one: a map's keys (`gpus.<name>`) appear only as prefixes.
    within = set(known) | {path[:i] for path in known for i, c in enumerate(path) if c in ".["}
    found: dict[str, str] = {}
    for path in sorted(scenario_dir.glob("*.yaml")):
        _walk(yaml.safe_load(path.read_text(encoding="utf-8")), "", known, within, found)
    return found
