"""Valid but almost certainly mistyped: the slips a person makes, caught after validation.

Each check has a name, and is confirmed by naming it (``--accept growth`` on the command line,
or ``accept: [growth]`` in the scenario), or by writing the value so it cannot be a slip:

========== ================================================= ========= ===================
check      flags                                             then      unambiguous spelling
========== ================================================= ========= ===================
growth     a monthly growth of 1 or more (``8`` is +800%/mo) refuses   ``800%`` (or ``8%``)
percentile a latency percentile of 1 or less (``0.9``)        refuses   (``--accept`` only)
latency    a latency target in seconds of 10 or more          refuses   ``30s`` (or ``30ms``)
price      a price above $1,000 per 1M tokens                 warns     (``--accept`` only)
horizon    a dated event where it has no effect (outside the  warns     (``--accept`` only)
           horizon)
========== ================================================= ========= ===================

Only what the user wrote is checked (a file, ``--set``, a variant): a value filled in from a
catalog or fitted from a history is no slip. A refusal is a
:class:`~simulator.scenario.errors.ScenarioError` (field path, YAML line, the value and what
was probably meant); a warning is a :class:`ScenarioWarning`. Every finding is also kept in
the scenario's ``plausibility_notes`` (so ``scenario.resolved.yaml`` shows it), and a value
taken as meant puts its check in ``accept``, so that the resolved file reads back as it was.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from simulator.errors import InputError
from simulator.scenario.errors import Loc, ScenarioError, format_path
from simulator.scenario.fieldpath import parse_field_path
from simulator.scenario.schema_walk import _validators, types_at
from simulator.scenario.suggest import unknown_name
from simulator.scenario.types import _instant, _seconds, _when
from simulator.units import format_timestamp

#: Every check by name, with what it flags (as ``--help`` and the messages list them).
CHECKS: dict[str, str] = {
    "growth": "a monthly growth rate of 1 (+100% a month) or more",
    "percentile": "a latency percentile of 1 or less",
    "latency": "a latency target of 10 seconds or more written as a bare number",
    "price": "a price above $1,000 per 1M tokens",
    "horizon": "a dated event outside the horizon, where it has no effect",
}
CheckName = Literal["growth", "percentile", "latency", "price", "horizon"]
#: Checks whose slip costs the most unseen: they refuse until confirmed.
REFUSING = frozenset({"growth", "percentile", "latency"})
#: Monthly growth rates (demand, forecast prior and regime, an opex line's growth).
GROWTH_FIELDS = frozenset({"rate_per_month", "increase_per_month", "growth_per_month"})
#: Date fields that end something: they have no effect at or before the horizon's start.
_ENDING = frozenset({"end", "draw_until"})
_NUMBERS = ("median", "mode", "mean", "low", "high")
LATENCY_LIMIT_S = 10.0
PRICE_LIMIT_USD = 1000.0


class ScenarioWarning(UserWarning):
    """A value that is valid but probably not meant (the CLI prints it as one line)."""


@dataclass(frozen=True)
class Finding:
    """One value a check flags: where, what it is, what was probably meant."""

    check: str
    loc: Loc
    what: str
    intent: str = ""
    spelling: str | None = None
    line: int | None = None

    @property
    def confirm(self) -> str:
        """How to say it is meant."""
        written = f"write {self.spelling} or " if self.spelling else ""
        return f"if meant, {written}pass --accept {self.check}"

    def message(self) -> str:
        """The message without path and line (as a ScenarioError holds it)."""
        intent = f": {self.intent}" if self.intent else ""
        return f"{self.what}{intent} ({self.confirm})"

    def text(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        return f"{format_path(self.loc)}: {self.message()}{where}"


def accepted_checks(names: Iterable[str]) -> set[str]:
    """The checks ``--accept`` names; an unknown name is refused with the closest one."""
    names = list(names)
    for name in names:
        if name not in CHECKS:
            raise InputError(f"--accept: {unknown_name('check', name, CHECKS)}")  # an option: no YAML line
    return set(names)


def check_plausibility(scenario: Any, written: dict[str, Any], percent: set[Loc], lines: dict[Loc, int],
                       accept: set[str], warn: bool = True, only: set[Loc] | None = None,
                       overridden: set[Loc] = frozenset()) -> Any:
    """The scenario with its ``plausibility_notes`` and ``accept``, or a refusal.

    Args:
        scenario: the validated scenario.
        written: the scenario's data as the user wrote it (after overrides, before histories
            are fitted), percentages read.
        percent: field paths written as percentages (unambiguous: never flagged).
        lines: YAML line of each field path.
        accept: checks confirmed (``--accept``) besides the scenario's own ``accept``.
        warn: issue a :class:`ScenarioWarning` for each warning not confirmed.
        only: check only these field paths and what is below them (a variant's overrides).
        overridden: field paths overrides set. A horizon set so (``--set horizon.duration=14d``
            for a quick run) takes the dates the file wrote for its own horizon as meant (and
            puts ``horizon`` in ``accept``, so the resolved file reads back as it ran).

    Raises:
        ScenarioError: the first refused value not confirmed.
    """
    accepted = set(scenario.accept) | set(accept)
    notes: list[str] = []
    moved = any(loc[:1] == ("horizon",) for loc in overridden)  # dates of the file's own horizon are no slip
    taken: set[str] = set()
    for finding in findings(scenario, written, percent, lines, only):
        if finding.check == "horizon" and moved and not _under(finding.loc, overridden):
            taken.add("horizon")
            notes.append(f"{finding.check}: {finding.text()}: accepted (the horizon was set by an override)")
        elif finding.check in accepted:
            notes.append(f"{finding.check}: {finding.text()}: accepted")
        elif finding.check in REFUSING:
            raise ScenarioError(finding.loc, finding.message(), finding.line)
        else:
            notes.append(f"{finding.check}: {finding.text()}")
            if warn:
                with warnings.catch_warnings():
                    warnings.simplefilter("always", ScenarioWarning)  # every load says it again
                    warnings.warn(ScenarioWarning(finding.text()), stacklevel=2)
    accepted |= taken
    for loc, seconds in _latencies_with_units(type(scenario), written, only):
        accepted.add("latency")  # written with its unit: taken as meant, and read back so
        notes.append(f"latency: {format_path(loc)}: {seconds:g} seconds, written with its unit")
    for loc in sorted(percent, key=format_path):
        spelled = max(_numbers(_at(written, loc)), default=None)
        if spelled is not None and loc[-1] in GROWTH_FIELDS and spelled >= 1:
            accepted.add("growth")  # written as a percentage: taken as meant, and read back so
            notes.append(f"growth: {format_path(loc)}: +{spelled * 100:g}% a month, written as a percentage")
    return scenario.model_copy(update={"accept": sorted(accepted), "plausibility_notes": notes})


def findings(scenario: Any, written: dict[str, Any], percent: set[Loc], lines: dict[Loc, int],
             only: set[Loc] | None = None) -> Iterator[Finding]:
    """Every value the checks flag, in the order the scenario holds them."""
    root = type(scenario)
    for loc, value in _leaves(written, ()):
        if not loc or not isinstance(loc[-1], str) or loc[0] in ("variants", "uncertain", "accept"):
            continue
        if only is not None and not _under(loc, only):
            continue
        found = None if loc in percent else _flag(scenario, root, loc, value)
        if found is not None:
            yield Finding(found.check, loc, found.what, found.intent, found.spelling, _line_of(loc, lines))
    for loc, target, value in _uncertain_inputs(written):  # a distribution the section gives a field
        if (only is not None and not _under(loc, only)) or target in percent:
            continue
        found = _flag(scenario, root, target, value)
        if found is not None:
            yield Finding(found.check, loc, found.what, found.intent, found.spelling, _line_of(loc, lines))


def _uncertain_inputs(written: dict[str, Any]) -> Iterator[tuple[Loc, Loc, Any]]:
    """``uncertain:`` entries as (their own field path, the field they draw, the distribution)."""
    section = written.get("uncertain")
    for key, value in (section.items() if isinstance(section, dict) else ()):
        try:
            target = parse_field_path(str(key))
        except ScenarioError:
            continue  # reported where the section is validated
        yield ("uncertain", key), target, value


def _latencies_with_units(root: Any, written: dict[str, Any], only: set[Loc] | None) -> Iterator[tuple[Loc, float]]:
    """Latency targets of :data:`LATENCY_LIMIT_S` or more written with a unit (``30s``): unambiguous."""
    for loc, value in _leaves(written, ()):
        if (not loc or not isinstance(loc[-1], str) or loc[0] in ("variants", "uncertain", "accept")
                or (only is not None and not _under(loc, only)) or not isinstance(value, str)):
            continue
        if _seconds in _parsers(root, loc) and not any(True for _ in _numbers(value, text=True)):
            try:
                seconds = float(_seconds(value))
            except (TypeError, ValueError):
                continue
            if seconds >= LATENCY_LIMIT_S:
                yield loc, seconds


def _flag(scenario: Any, root: Any, loc: Loc, value: Any) -> Finding | None:
    name = str(loc[-1])
    parsers = _parsers(root, loc)
    if name in GROWTH_FIELDS:
        rate = next((v for v in _numbers(value) if v >= 1), None)
        if rate is not None:
            return Finding("growth", loc, f"{rate:g} is +{rate * 100:g}% a month",
                           f"did you mean {rate:g}% ({rate / 100:g})?", f"{rate * 100:g}%")
    elif name.endswith("percentile"):
        level = next((v for v in _numbers(value) if v <= 1), None)
        if level is not None:
            return Finding("percentile", loc, f"{level:g} is the {level:g}th percentile",
                           f"did you mean {level * 100:g} (p{level * 100:g})?")
    elif _seconds in parsers:
        seconds = next((v for v in _numbers(value, text=True) if v >= LATENCY_LIMIT_S), None)
        if seconds is not None:
            return Finding("latency", loc, f"{seconds:g} is {seconds:g} seconds",
                           f"did you mean {seconds:g}ms ({seconds / 1000:g})?", f"{seconds:g}s")
    elif name.endswith("_per_1m") or "per_1m_tokens" in name:
        price = next((v for v in _numbers(value) if v > PRICE_LIMIT_USD), None)
        if price is not None:
            return Finding("price", loc, f"${price:,.2f} per 1M tokens is above ${PRICE_LIMIT_USD:,.0f}",
                           f"did you mean ${price / 1000:,.2f}?")
    elif parsers & {_when, _instant}:
        return _outside_horizon(scenario, loc)
    return None


@functools.lru_cache(maxsize=4096)
def _parsers(root: Any, loc: Loc) -> frozenset[Any]:
    """The validator functions of the field at ``loc`` (seconds, dates)."""
    return frozenset(func for tp in types_at(root, loc) for func in _validators(tp))


def _outside_horizon(scenario: Any, loc: Loc) -> Finding | None:
    """A dated event where it has no effect: starting at or after the horizon's end, ending at
    or before its start, or a contract whose term is over before the start."""
    name = str(loc[-1])
    if loc[0] == "horizon" or name == "in_service_since" or "points" in loc and "growth" in loc:
        return None  # the horizon itself; a past date by nature; a curve's points past the end shape it
    when = _at(scenario, loc)
    horizon = scenario.horizon
    if not isinstance(when, float | int | pd.Timestamp):
        return None
    offset = horizon.offset_of(when)
    date = format_timestamp(horizon.start + pd.Timedelta(seconds=offset))
    if name in _ENDING:
        if offset <= 0:
            return Finding("horizon", loc, f"{date} is at or before the horizon's start "
                                           f"({format_timestamp(horizon.start)}): it has no effect")
        return None
    if offset >= horizon.length_s:
        return Finding("horizon", loc, f"{date} is at or after the horizon's end "
                                       f"({format_timestamp(horizon.end_time)}): it has no effect")
    term = getattr(_at(scenario, loc[:-1]), "term", None)
    if loc[0] == "contracts" and name == "start" and term is not None and isinstance(when, pd.Timestamp):
        end = term.end_from(when)
        if end <= horizon.start:
            return Finding("horizon", loc, f"the contract's term ends on {format_timestamp(end)}, before the "
                                           f"horizon's start ({format_timestamp(horizon.start)}): it has no effect")
    return None


def _under(loc: Loc, prefixes: set[Loc]) -> bool:
    return any(loc[: len(prefix)] == prefix for prefix in prefixes)


def _numbers(value: Any, text: bool = False) -> Iterator[float]:
    """The numbers a written value holds: itself, or a distribution's values (with ``text``,
    a number written as text, ``"30"``, too; a duration such as ``30s`` is not a bare number)."""
    if isinstance(value, dict):
        for key in _NUMBERS:
            yield from _numbers(value.get(key), text)
        for item in value.get("values") or [] if isinstance(value.get("values"), list) else []:
            yield from _numbers(item, text)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield float(value)
    elif text and isinstance(value, str):
        try:
            yield float(value)
        except ValueError:
            return


def _leaves(node: Any, loc: Loc) -> Iterator[tuple[Loc, Any]]:
    """Every written value with its field path (a distribution is one value)."""
    if isinstance(node, dict) and "dist" not in node:
        for key, value in node.items():
            yield from _leaves(value, (*loc, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*loc, index))
    else:
        yield loc, node


def _at(node: Any, loc: Loc) -> Any:
    """The value at ``loc`` in data or a model (None where there is none)."""
    try:
        for part in loc:
            node = node[part] if isinstance(part, int) or isinstance(node, dict) else getattr(node, part)
    except (AttributeError, KeyError, IndexError, TypeError):
        return None
    return node


def _line_of(loc: Loc, lines: dict[Loc, int]) -> int | None:
    for depth in range(len(loc), -1, -1):
        if loc[:depth] in lines:
            return lines[loc[:depth]]
    return None


__all__ = ["CHECKS", "CheckName", "accepted_checks", "REFUSING", "Finding", "ScenarioWarning", "check_plausibility", "findings"]
