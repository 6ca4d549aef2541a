"""Names a scenario does not know, and the closest one it does ("did you mean 'h100-owned'?").

Two slips give misleading messages unless caught by name: a misspelt key whose value is a
block (``trainng:`` with jobs below it is otherwise read, distributions and all, before any
field is checked, and fails somewhere inside), and a reference to a pool, GPU, model or job
that does not exist. :func:`refuse_unknown_keys` runs before anything reads the blocks;
:func:`unknown_name` words every unknown reference the same way.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from typing import Any

from simulator.scenario.errors import Loc, ScenarioError
from simulator.scenario.schema_walk import is_model, members, types_at


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name most like ``name`` (ignoring case), or None when none is close."""
    by_lower = {str(item).lower(): str(item) for item in known}
    found = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[found[0]] if found else None


def unknown_name(kind: str, name: str, known: Iterable[str], listed: str | None = None) -> str:
    """``unknown pool 'h100-ownd'; pools: h100-owned, h100-cloud; did you mean 'h100-owned'?``"""
    names = list(dict.fromkeys(str(item) for item in known))
    guess = closest(name, names)
    hint = f"; did you mean {guess!r}?" if guess is not None else ""
    return f"unknown {kind} {name!r}; {listed or kind + 's'}: {', '.join(names) or 'none defined'}{hint}"


@functools.lru_cache(maxsize=4096)
def field_names(root: Any, loc: Loc) -> frozenset[str]:
    """Keys a mapping at ``loc`` may have: its models' field names and their aliases."""
    names: set[str] = set()
    for tp in types_at(root, loc):
        for member in members(tp):
            if not is_model(member):
                continue
            for name, field in member.model_fields.items():
                names.add(name)
                if isinstance(field.alias, str):
                    names.add(field.alias)
                choices = getattr(field.validation_alias, "choices", None) or [field.validation_alias]
                names.update(choice for choice in choices if isinstance(choice, str))
    return frozenset(names)


def refuse_unknown_keys(data: Any, root: Any, loc: Loc = ()) -> None:
    """Refuse a key no model at its place has whose value is a block (a mapping or a list),
    naming the closest key that exists. Scalars are left to validation, which says the same."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            refuse_unknown_keys(item, root, (*loc, index))
        return
    if not isinstance(data, dict) or loc[:1] in (("variants",), ("uncertain",)):
        return
    allowed = field_names(root, loc)
    for key, value in data.items():
        if allowed and isinstance(key, str) and key not in allowed and isinstance(value, dict | list):
            guess = closest(key, allowed)
            hint = f"did you mean {guess!r}?" if guess else f"allowed: {', '.join(sorted(allowed))}"
            raise ScenarioError((*loc, key), f"unknown field ({hint})")
        if not allowed or key in allowed:
            refuse_unknown_keys(value, root, (*loc, key))
