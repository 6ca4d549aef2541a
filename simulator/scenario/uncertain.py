"""Uncertain inputs: any numeric field may be a distribution, drawn once per path.

Write ``{dist: lognormal, median: 0.15, p90: 0.25}`` (or ``triangular`` with ``low, mode,
high``; ``uniform`` with ``low, high``; ``normal`` with ``mean, sd``; ``choice`` with
``values`` and optional ``weights``) where a number is expected: a growth rate, a lead time
(values may be durations such as ``8w``), a price, a count. The scenario is validated at the
distributions' medians; each Monte Carlo path draws its own values from its own stream and
is validated again with them. Fields that *are* distributions of events (repair times,
slips, job durations) keep their meaning: there ``dist`` describes every event, not the path.

A path's value of an input is the distribution's quantile at ``Φ(z)``, with ``z`` a standard
normal score drawn from a stream keyed by the field path (or by the ``draw`` several fields
share; see :mod:`simulator.scenario.correlation`), so each input's draws stay the same when
others are added, removed, fixed or correlated.
"""

from __future__ import annotations

import copy
import json
import math
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, model_validator

from simulator.scenario.correlation import input_key
from simulator.scenario.errors import Loc, ScenarioError, format_path
from simulator.scenario.fieldpath import parse_field_path, set_field
from simulator.scenario.schema_walk import holds_duration, is_model, members, types_at
from simulator.scenario.types import Frozen
from simulator.units import Seconds, UnitError, parse_duration

_Z90 = 1.2815515655446004
#: Top-level fields that shape the run itself (or how it is judged) and so cannot differ between paths.
FIXED_FIELDS = ("name", "horizon", "seed", "paths", "shortfall")


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number or a duration, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    try:
        return parse_duration(value)
    except UnitError as exc:
        raise ValueError(f"expected a number or a duration, got {value!r}") from exc


Number = Annotated[float, BeforeValidator(_number)]


class Uncertain(Frozen):
    """A distribution of one input, drawn once per path."""

    dist: Literal["lognormal", "triangular", "uniform", "normal", "choice"] = Field(
        description="The distribution: lognormal (median, p90), triangular (low, mode, high), uniform (low, high), normal (mean, sd) or choice (values, weights)")
    median: Number | None = Field(
        default=None, description="lognormal: the median (a number, or a duration on a duration field)")
    p90: Number | None = Field(default=None, description="lognormal: the 90th percentile, above the median")
    low: Number | None = Field(default=None, description="triangular, uniform: the lowest value")
    mode: Number | None = Field(default=None, description="triangular: the most likely value")
    high: Number | None = Field(default=None, description="triangular, uniform: the highest value")
    mean: Number | None = Field(default=None, description="normal: the mean")
    sd: Number | None = Field(default=None, description="normal: the standard deviation (≥ 0)")
    values: list[Number] | None = Field(default=None, description="choice: the values one is drawn from")
    weights: list[Annotated[float, Field(ge=0)]] | None = Field(
        default=None, description="choice: relative weight of each value (default: equal)")
    draw: Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9_.-]+$",
                               description="Fields with the same draw name share one draw")] | None = Field(
                                   default=None, description="Fields naming the same draw share one random score: they move together")

    @model_validator(mode="after")
    def _parameters(self) -> Uncertain:
        need = {"lognormal": ("median", "p90"), "triangular": ("low", "mode", "high"), "uniform": ("low", "high"),
                "normal": ("mean", "sd"), "choice": ("values",)}[self.dist]
        missing = [name for name in need if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.dist} distribution needs {', '.join(need)} (missing {', '.join(missing)})")
        takes = set(need) | ({"weights"} if self.dist == "choice" else set())
        extra = [name for name in ("median", "p90", "low", "mode", "high", "mean", "sd", "values", "weights")
                 if getattr(self, name) is not None and name not in takes]
        if extra:
            raise ValueError(f"a {self.dist} distribution takes {', '.join(sorted(takes))}; "
                             f"{', '.join(extra)} would be ignored")
        if self.dist == "lognormal" and not 0 < self.median < self.p90:
            raise ValueError(f"a lognormal needs 0 < median < p90, got median {self.median:g}, p90 {self.p90:g}")
        if self.dist == "triangular" and not self.low <= self.mode <= self.high or self.dist == "uniform" and not (
                self.low <= self.high):
            raise ValueError("needs low <= mode <= high" if self.dist == "triangular" else "needs low <= high")
        if self.dist == "normal" and self.sd < 0:
            raise ValueError(f"the standard deviation must be >= 0, got {self.sd:g}")
        if self.dist == "choice":
            if not self.values:
                raise ValueError("'values' must not be empty")
            if self.weights is not None and (len(self.weights) != len(self.values) or sum(self.weights) <= 0):
                raise ValueError("'weights' must match 'values' and not all be zero")
        return self

    @property
    def center(self) -> float:
        """The median (the value the scenario is validated and summarized at)."""
        if self.dist == "lognormal" or self.dist == "normal":
            return float(self.median if self.dist == "lognormal" else self.mean)
        if self.dist == "uniform":
            return 0.5 * (self.low + self.high)
        if self.dist == "triangular":
            a, c, b = self.low, self.mode, self.high
            return c if b == a else (a + math.sqrt((b - a) * (c - a) / 2) if c >= (a + b) / 2
                                     else b - math.sqrt((b - a) * (b - c) / 2))
        ordered = sorted(zip(self.values, self.weights or [1.0] * len(self.values), strict=True))
        total, run = sum(w for _, w in ordered), 0.0
        for value, weight in ordered:
            run += weight
            if run >= total / 2:
                return value
        return ordered[-1][0]

    def quantile(self, q: float) -> float:
        """A quantile (for sensitivity: P10 and P90)."""
        if self.dist == "lognormal":
            sigma = math.log(self.p90 / self.median) / _Z90
            return float(self.median * math.exp(sigma * _normal_ppf(q)))
        if self.dist == "normal":
            return float(self.mean + self.sd * _normal_ppf(q))
        if self.dist == "uniform":
            return float(self.low + q * (self.high - self.low))
        if self.dist == "triangular":
            a, c, b = self.low, self.mode, self.high
            if b == a:
                return a
            split = (c - a) / (b - a)
            return a + math.sqrt(q * (b - a) * (c - a)) if q <= split else b - math.sqrt((1 - q) * (b - a) * (b - c))
        ordered = sorted(zip(self.values, self.weights or [1.0] * len(self.values), strict=True))
        total, run = sum(w for _, w in ordered), 0.0
        for value, weight in ordered:
            run += weight
            if run >= q * total - 1e-12:
                return value
        return ordered[-1][0]

    def from_normal(self, z: float) -> float:
        """The value at normal score ``z``: the quantile at ``Φ(z)`` (exact in ``z`` for the
        lognormal and normal, whose tails then never round to a probability of 0 or 1)."""
        if self.dist == "lognormal":
            return float(self.median * math.exp(math.log(self.p90 / self.median) / _Z90 * z))
        if self.dist == "normal":
            return float(self.mean + self.sd * z)
        return self.quantile(min(max(_STANDARD_NORMAL.cdf(z), 1e-15), 1.0 - 1e-15))

    def sample(self, rng: np.random.Generator) -> float:
        """One draw (through a normal score, as a path draws it)."""
        return self.from_normal(float(rng.standard_normal()))


_STANDARD_NORMAL = NormalDist()


def _normal_ppf(q: float) -> float:
    return _STANDARD_NORMAL.inv_cdf(q)


def extract_uncertain(data: dict[str, Any], root: Any,
                      written: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Replace per-path distributions in raw scenario data by their medians.

    Returns the data at the medians and the distributions found, by field path; ``written``,
    if given, receives each distribution as the scenario wrote it (for error messages).
    """
    found: dict[str, dict[str, Any]] = {}
    data = copy.deepcopy(data)

    def visit(node: Any, loc: Loc) -> Any:
        if isinstance(node, dict):
            if "dist" in node and loc and loc[0] not in ("uncertain", "variants") and not _is_event_distribution(root, loc):
                if loc[0] in FIXED_FIELDS:
                    raise ScenarioError(loc, "cannot be uncertain: the horizon, seed, paths and what counts as "
                                             "running short are the same on every path")
                spec = _validated(node, loc)
                _check_parameters(node, loc, holds_duration(root, loc))
                found[format_path(loc)] = spec.model_dump(exclude_none=True)
                if written is not None:
                    written[format_path(loc)] = node
                return _typed(root, loc, spec.center)
            return {key: visit(value, (*loc, key)) for key, value in node.items()}
        if isinstance(node, list):
            return [visit(value, (*loc, index)) for index, value in enumerate(node)]
        return node

    return visit(data, ()), found


def input_keys(uncertain: dict[str, Any]) -> dict[str, str]:
    """Every name a correlation may use (field paths and draw names) -> its input key."""
    keys = {}
    for path, spec in uncertain.items():
        draw = spec.get("draw") if isinstance(spec, dict) else spec.draw
        keys[path] = input_key(path, draw)
        if draw:
            keys[draw] = input_key(path, draw)
    return keys


def copula_keys(uncertain: dict[str, Any], fixed_inputs: list[str]) -> dict[str, str]:
    """The names correlations may use: the uncertain inputs and draws, and the input keys of
    correlated inputs an override fixed (a draw's key ``draw:NAME`` is named ``NAME``)."""
    return {**{key.removeprefix("draw:"): key for key in fixed_inputs}, **input_keys(uncertain)}


def apply_draws(data: dict[str, Any], uncertain: dict[str, Any], scores: dict[str, float],
                root: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """One path's values: ``data`` with every uncertain field set from the normal score of
    its input key (``scores``, see :func:`input_keys`)."""
    data = json.loads(json.dumps(data))  # the scenario as JSON data (model_dump(mode="json")): quicker than deepcopy
    drawn = {}
    keys = input_keys(uncertain)
    for path in sorted(uncertain):
        spec = Uncertain.model_validate(uncertain[path])
        typed = _typed(root, parse_field_path(path), spec.from_normal(scores[keys[path]]))
        set_field(data, path, typed)
        drawn[path] = typed
    return data, drawn


def _validated(node: dict[str, Any], loc: Loc) -> Uncertain:
    from pydantic import ValidationError

    try:
        return Uncertain.model_validate(node)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = tuple(part for part in error["loc"] if isinstance(part, str) and part in node)
        message = str(error["msg"]).removeprefix("Value error, ")
        raise ScenarioError((*loc, *where), message[0].lower() + message[1:]) from None


def _is_event_distribution(root: Any, loc: Loc) -> bool:
    """Whether the field at ``loc`` is itself a distribution model (with a ``dist`` field)."""
    return any(is_model(member) and "dist" in member.model_fields
               for tp in types_at(root, loc) for member in members(tp))


_PARAMETERS = ("median", "p90", "low", "mode", "high", "mean", "sd")


def _check_parameters(node: dict[str, Any], loc: Loc, durations: bool) -> None:
    """A distribution is written in its field's terms: durations with units for a duration
    (``low: 151d``; a bare ``151`` is refused as on the field itself), numbers for a number."""
    for name in (*_PARAMETERS, "values"):
        given = node.get(name)
        items = list(enumerate(given)) if name == "values" and isinstance(given, list) else [(None, given)]
        for index, value in items:
            if value is None:
                continue
            where = (*loc, name) if index is None else (*loc, name, index)
            if durations:
                try:
                    parse_duration(value)
                except UnitError as exc:
                    raise ScenarioError(where, str(exc)) from None
            elif isinstance(value, str):
                raise ScenarioError(where, f"expected a number (this field is not a duration), got {value!r}")


def _typed(root: Any, loc: Loc, value: float) -> float | int:
    if holds_duration(root, loc):
        return Seconds(value)
    kinds = {member for tp in types_at(root, loc) for member in members(tp)}
    if int in kinds and float not in kinds:
        return int(round(value))
    return value


def typed_value(root: Any, path: str, value: float) -> float | int:
    """``value`` as the field at ``path`` takes it (whole numbers for integer fields)."""
    return _typed(root, parse_field_path(path), value)
