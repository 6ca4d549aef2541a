"""Follow the Scenario's type annotations to a field path: which types, which field names."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, BeforeValidator

from simulator.scenario.errors import Loc


def members(tp: Any) -> list[Any]:
    """The concrete types of an annotation (through Annotated, Optional and unions)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return members(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(tp) for m in members(arg)]
    return [tp]


def holds_duration(root: Any, loc: Loc) -> bool:
    """Whether the field at ``loc`` holds seconds written as a duration or an offset
    (``90d``, ``2026-09-01`` for an offset field): its validator is a duration parser."""
    from simulator.scenario.types import DURATION_PARSERS

    return any(func in DURATION_PARSERS for tp in types_at(root, loc) for func in _validators(tp))


def _validators(tp: Any) -> list[Any]:
    """The functions of the ``BeforeValidator``s on an annotation and its union's members."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(tp)
        return [extra.func for extra in extras if isinstance(extra, BeforeValidator)] + _validators(inner)
    if origin in (typing.Union, types.UnionType):
        return [func for arg in typing.get_args(tp) for func in _validators(arg)]
    return []


def is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def types_at(root: Any, loc: Loc) -> list[Any]:
    """Annotations that may describe the value at ``loc`` under the model ``root``."""
    candidates: list[Any] = [root]
    for part in loc:
        following: list[Any] = []
        for tp in candidates:
            for member in members(tp):
                origin = typing.get_origin(member)
                if isinstance(part, int) and origin in (list, tuple):
                    args = typing.get_args(member)
                    following.append(args[0] if origin is list or len(args) == 2 and args[1] is ... else
                                     (args[part] if part < len(args) else Any))
                elif origin is dict:
                    following.append(typing.get_args(member)[1])
                elif is_model(member) and part in member.model_fields:
                    field = member.model_fields[part]  # pydantic keeps Annotated's extras aside
                    following.append(typing.Annotated[field.annotation, *field.metadata] if field.metadata
                                     else field.annotation)
        candidates = following
    return candidates


def allowed_fields(root: Any, loc: Loc) -> set[str]:
    """Field names a mapping at ``loc`` may have."""
    names: set[str] = set()
    for tp in types_at(root, loc):
        for member in members(tp):
            if is_model(member):
                names.update(member.model_fields)
    return names
