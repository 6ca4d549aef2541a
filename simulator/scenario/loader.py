"""From a file, a dict and ``--set`` overrides to a validated :class:`Scenario`.

Every failure becomes one :class:`ScenarioError` naming the field path and YAML line;
nothing else escapes, so the CLI can print one line and exit 2.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from simulator.scenario.errors import Loc, ScenarioError, format_path
from simulator.scenario.fieldpath import parse_field_path, set_field
from simulator.scenario.history import expand_histories
from simulator.scenario.percent import read_percentages
from simulator.scenario.plausibility import accepted_checks, check_plausibility
from simulator.scenario.references import check_references
from simulator.scenario.scenario import Scenario
from simulator.scenario.schema_walk import allowed_fields
from simulator.scenario.served import forget_derived
from simulator.scenario.suggest import refuse_unknown_keys
from simulator.scenario.uncertain import extract_uncertain, input_keys
from simulator.scenario.yaml_source import read_yaml_file


def load_scenario(
    source: str | Path | Mapping[str, Any] | Scenario,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    resolve: Callable[[Scenario, Path], Scenario] | None = None,
    base_dir: str | Path | None = None,
    accept: Iterable[str] = (),
) -> Scenario:
    """Validate a scenario given as a YAML file path, a dict, or an existing Scenario.

    Args:
        source: path of a YAML file, a mapping with the same structure, or a Scenario.
        overrides: field values to set before validation, as ``{"horizon.duration": "30d"}``
            or as ``["horizon.duration=30d", "fleet.pools[0].count=64"]`` (values are YAML).
        resolve: a further step run on the validated scenario (with the scenario file's folder)
            whose ScenarioErrors get YAML lines too; the public ``simulator.load_scenario``
            uses it to derive serving capacities.
        accept: plausibility checks confirmed (``--accept``), besides the scenario's ``accept``
            (:mod:`simulator.scenario.plausibility`). The checks look at what a file holds and
            what overrides set on it; a mapping or a Scenario (a program's) is taken as it is.

    Raises:
        ScenarioError: the first problem, with its field path and line.
    """
    if isinstance(source, Scenario):
        if not overrides:
            return source
        base_dir = base_dir or source.source_dir
        source = source.model_dump(mode="json")
    lines: dict[Loc, int] = {}
    overridden: set[Loc] = set()
    base_dir = Path(base_dir or ".")
    origin: str | None = None
    if isinstance(source, Mapping):
        data: Any = copy.deepcopy(dict(source))
    else:
        origin = str(source)
        base_dir = Path(source).parent
        data, lines = read_yaml_file(source)
    try:
        if not isinstance(data, dict):
            kind = type(data).__name__
            raise ScenarioError((), f"expected a mapping of fields at the top level, got a {kind}", 1)
        for key, value in _normalize_overrides(overrides):
            try:
                set_field(data, key, value)
            except ScenarioError as exc:
                exc.message = f"--set: {exc.message}"
                raise
            _forget_uncertain(data, key)
            overridden.add(parse_field_path(key))
        forget_derived(data)
        _refuse_unreadable_values(data, ())
        refuse_unknown_keys(data, Scenario)
        _refuse_duplicate_gpus(data.get("gpus"))
        percent = read_percentages(data, Scenario)
        as_written = copy.deepcopy(data) if origin is not None else {}
        expand_histories(data, base_dir)
        written: dict[str, Any] = {}
        data = _extract_uncertain(data, written)
        scenario = _validated(data, base_dir, written)
        accepted = accepted_checks(accept)
        _check_variants(data, scenario, base_dir, accepted if origin is not None else None)
        if origin is not None:  # what a person wrote: a file and the overrides given with it
            scenario = check_plausibility(scenario, as_written, percent, lines, accepted, overridden=overridden)
        elif accepted - set(scenario.accept):
            scenario = scenario.model_copy(update={"accept": sorted(accepted | set(scenario.accept))})
        scenario._source_dir = str(base_dir)
        if resolve is not None:
            scenario = resolve(scenario, base_dir)
            scenario._source_dir = str(base_dir)
    except RecursionError:  # values nested hundreds deep (a --set of [[[[...]]]])
        raise ScenarioError((), "values are nested too deeply", source=origin) from None
    except ScenarioError as exc:
        if exc.line is None and lines:
            exc.line = _line_of(exc.loc, lines)
        exc.source = origin
        raise
    return scenario


def _validated(data: dict[str, Any], base_dir: Path, written: Mapping[str, Any] | None = None) -> Scenario:
    """Both validation passes: field by field (pydantic), then across fields. ``written``
    holds the distributions as the scenario wrote them, for errors at their medians."""
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": str(base_dir)})
    except ValidationError as exc:
        raise _from_validation_error(exc, data, written or {}) from None
    check_references(scenario)
    return scenario


def _forget_uncertain(data: dict[str, Any], key: str) -> None:
    """A value set by an override replaces any distribution at or below that field."""
    path = format_path(parse_field_path(key))

    def under(field: str) -> bool:
        return field == path or field.startswith((path + ".", path + "["))

    uncertain = data.get("uncertain")
    uncertain = uncertain if isinstance(uncertain, dict) else {}
    before = input_keys(uncertain)
    for field in list(uncertain):
        if under(field):
            del uncertain[field]
    remaining = input_keys(uncertain)
    correlations = data.get("correlations")
    if not isinstance(correlations, list):
        return
    # An input fixed here keeps its place in the copula (as a key whose score is drawn and
    # mixed but not used), so that its partners draw exactly what they draw in the base run.
    pinned = data.get("fixed_inputs") if isinstance(data.get("fixed_inputs"), list) else []
    for entry in correlations:
        for name in entry.get("inputs", []) if isinstance(entry, dict) else []:
            name = str(name)
            if name in remaining:
                continue
            if name in before or under(name):
                key = before.get(name, name)
                if key not in pinned:
                    pinned.append(key)
    if pinned:
        data["fixed_inputs"] = pinned


def _extract_uncertain(data: dict[str, Any], written: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per-path distributions out of the fields (medians in place) into ``uncertain``."""
    at_medians, found = extract_uncertain(data, Scenario, written)
    if found:
        existing = at_medians.get("uncertain")
        at_medians["uncertain"] = {**(existing if isinstance(existing, dict) else {}), **found}
    return at_medians


#: Control characters a name or a text may not hold: they reach file names, spreadsheet
#: cells (which refuse them) and terminals (where ESC starts a command). Tabs and line breaks
#: are text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _refuse_unreadable_values(node: Any, loc: Loc) -> None:
    """No scenario field is a yes/no (pydantic would read ``count: yes`` as 1 GPU), and no
    text holds a control character."""
    if isinstance(node, bool):
        raise ScenarioError(loc, f"expected a number or text, got {str(node).lower()} "
                                 "(YAML reads true/false, yes/no and on/off as booleans; quote it for text)")
    if isinstance(node, str) and _CONTROL.search(node):
        code = ord(_CONTROL.search(node).group())
        raise ScenarioError(loc, f"holds a control character (code {code:#04x}); names and texts cannot")
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str) and _CONTROL.search(key):
                _refuse_unreadable_values(key, (*loc, key.encode("unicode_escape").decode()))
            _refuse_unreadable_values(value, (*loc, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _refuse_unreadable_values(value, (*loc, index))


def _refuse_duplicate_gpus(gpus: Any) -> None:
    """GPU names are case-insensitive: ``h100`` and ``H100`` are one type, given once."""
    if not isinstance(gpus, dict):
        return
    seen: dict[str, str] = {}
    for name in gpus:
        key = str(name).lower()
        if key in seen:
            raise ScenarioError(("gpus", name), f"the same GPU type as {seen[key]!r} (names ignore case); merge them")
        seen[key] = str(name)


def _check_variants(data: dict[str, Any], scenario: Scenario, base_dir: Path, accepted: set[str] | None = None) -> None:
    """Each variant, applied to the base, must be a valid scenario too; an error names the
    variant and the override it comes from (whose line it gets). With ``accepted`` (a file's
    variants) its overrides pass the plausibility checks too."""
    for name, overrides in scenario.variants.items():
        paths = {}
        for key in overrides:
            try:
                paths[key] = parse_field_path(str(key))
            except ScenarioError as exc:
                raise ScenarioError(("variants", name, str(key)), exc.message) from None
        variant = copy.deepcopy({k: v for k, v in data.items() if k != "variants"})
        try:
            for key, value in overrides.items():
                set_field(variant, str(key), copy.deepcopy(value))
                _forget_uncertain(variant, str(key))
            _refuse_duplicate_gpus(variant.get("gpus"))
            percent = read_percentages(variant, Scenario)
            as_written = copy.deepcopy(variant)
            written: dict[str, Any] = {}
            checked = _validated(_extract_uncertain(variant, written), base_dir, written)
            if accepted is not None:
                check_plausibility(checked, as_written, percent, {}, accepted, warn=False, only=set(paths.values()))
        except ScenarioError as exc:
            loc = exc.loc
            key = next((k for k, path in paths.items() if loc[: len(path)] == path or path[: len(loc)] == loc
                        and loc), None)
            where: Loc = ("variants", name) if key is None else ("variants", name, str(key))
            same = key is not None and paths[key] == loc
            raise ScenarioError(where, exc.message if same else f"{exc.path}: {exc.message}") from None


def _normalize_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> list[tuple[str, Any]]:
    if not overrides:
        return []
    if isinstance(overrides, Mapping):
        return list(overrides.items())
    pairs = []
    for item in overrides:
        key, sep, text = str(item).partition("=")
        if not sep or not key.strip():
            raise ScenarioError((), f"--set expects FIELD=VALUE, got {item!r}")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            value = text
        pairs.append((key.strip(), value))
    return pairs


def _from_validation_error(exc: ValidationError, data: Any, written: Mapping[str, Any]) -> ScenarioError:
    found = exc.errors(include_url=False)
    # A misspelt key also makes the right one "missing": report the misspelling.
    # Of the members of a union that all failed (``gpus: 8`` or ``gpus: {choices: …}``), the one
    # that got furthest into the value is the one the user meant.
    # (On a tie, a member that took the value's type and then found it wrong beats one that
    # could not take the type at all.)
    error = next((e for e in found if e["type"] == "extra_forbidden"), None) or max(
        found, key=lambda e: (len(e["loc"]), not e["type"].endswith(("_type", "_parsing"))))
    kind = error["type"]
    loc = _data_loc(data, error["loc"], kind in ("missing", "extra_forbidden"))
    if kind == "extra_forbidden":
        known = sorted(_allowed_fields(loc[:-1], data))
        guess = difflib.get_close_matches(str(loc[-1]), known, n=1)
        hint = f"did you mean {guess[0]!r}?" if guess else f"allowed: {', '.join(known)}"
        if guess and guess[0] == str(loc[-1]):  # a field of another kind of this entry
            hint = "it belongs to another kind of this entry: check its 'type' or 'kind'"
        return ScenarioError(loc, f"unknown field ({hint})")
    if kind == "missing":
        return ScenarioError(loc, "required field is missing")
    if kind == "union_tag_not_found":
        tag = str((error.get("ctx") or {}).get("discriminator", "kind")).strip("'")
        return ScenarioError(loc, f"needs a {tag!r} saying which kind it is")
    message = str(error["msg"]).removeprefix("Value error, ")
    if message and message[0].isupper() and not message.startswith(("'", '"')):
        message = message[0].lower() + message[1:]
    value = error.get("input")
    spec = written.get(format_path(loc))
    if spec is not None:  # the value is the distribution's median: quote what was written
        message = re.sub(r", got .*$", "", message)
        return ScenarioError(loc, f"{message}, at the median of {_flow(spec)}")
    if kind not in ("value_error", "assertion_error") and not isinstance(value, dict | list):
        message += f", got {value!r}"
    return ScenarioError(loc, message)


def _flow(node: Any) -> str:
    """A distribution as one line of YAML, as written (``{dist: uniform, low: -10d, high: 1d}``)."""
    return yaml.safe_dump(node, default_flow_style=True, sort_keys=False, width=10_000).strip()


def _data_loc(data: Any, raw: tuple[Any, ...], names_a_key: bool) -> Loc:
    """The part of a pydantic error location that names real keys of the data.

    Pydantic inserts union members and discriminator tags into locations; they are skipped
    by following the data itself.
    """
    loc: list[str | int] = []
    node = data
    for part in raw:
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            loc.append(part)
            node = node[part]
        elif names_a_key and isinstance(node, dict) and isinstance(part, str) and part == raw[-1]:
            loc.append(part)  # a missing or unknown key
            node = None
    return tuple(loc)


def _line_of(loc: Loc, lines: dict[Loc, int]) -> int | None:
    for depth in range(len(loc), -1, -1):
        if loc[:depth] in lines:
            return lines[loc[:depth]]
    return None


def _allowed_fields(loc: Loc, data: Any) -> set[str]:
    return allowed_fields(Scenario, loc)
