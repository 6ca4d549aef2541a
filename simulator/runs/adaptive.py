"""``--paths auto``: add paths in batches until the figures that matter are precise enough.

A precision target names a headline figure and the largest half-width its 90% interval may
have: ``shortfall_probability=0.02`` (the share of paths running short, within ±2 points),
``gross_margin_pct_p50=1`` (the median margin within ±1 point), ``cost_usd_mean=1%`` (a
trailing ``%`` makes it relative to the figure). Figures are any per-path total of the
summary with ``_p10``, ``_p50``, ``_p90`` or ``_mean``.

The run starts with ``first`` paths; after each batch every target's half-width is
measured, and the next batch is sized from the ``1/√n`` law of Monte Carlo error (at most
four times the paths so far, at least a tenth more) until every target is met or
``max_paths`` is reached. Path ``i`` is the same path whatever the batches, so an auto run
that stops at ``N`` paths gives exactly the figures of a run of ``N`` paths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulator.errors import InputError
from simulator.runs.intervals import half_width, mean_interval, quantile_interval, wilson_interval
from simulator.runs.limits import DEFAULT_MAX_PATHS
from simulator.runs.periods import LEVEL
from simulator.runs.summary import QUANTILES, RATIOS, TOTAL_COLUMNS

DEFAULT_TARGETS = {"shortfall_probability": "0.02", "gross_margin_pct_p50": "1"}
FIRST_BATCH = 100


class PrecisionError(InputError):
    """A precision target that names no figure or asks for no precision."""


@dataclass(frozen=True)
class Target:
    figure: str
    half_width: float
    relative: bool = False

    def describe(self) -> str:
        return f"{self.figure} ±{self.half_width:g}{'%' if self.relative else ''}"


@dataclass
class Precision:
    """What an auto run must reach, and how far it may go."""

    targets: tuple[Target, ...]
    max_paths: int = DEFAULT_MAX_PATHS
    first: int = FIRST_BATCH
    batches: list[int] = field(default_factory=list)


def parse_targets(texts: dict[str, str] | list[str] | None) -> tuple[Target, ...]:
    """Targets from ``NAME=VALUE`` texts (or a mapping); the defaults when there are none."""
    items = list(texts.items()) if isinstance(texts, dict) else [_split(text) for text in texts or ()]
    if not items:
        items = list(DEFAULT_TARGETS.items())
    targets = []
    for name, value in items:
        name, text = name.strip(), str(value).strip()
        if name != "shortfall_probability":
            metric, _, stat = name.rpartition("_")
            if stat not in (*QUANTILES, "mean") or metric not in TOTAL_COLUMNS:
                raise PrecisionError(f"--precision: {name!r} is not a figure; use shortfall_probability or a total "
                                     f"with _p10, _p50, _p90 or _mean (e.g. gross_margin_usd_p50)")
            if stat == "mean" and metric in RATIOS:
                raise PrecisionError(f"--precision: {name}: the mean of the paths' ratios is not a figure Fleetcast "
                                     f"reports; use {metric}_p50")
        relative = text.endswith("%")
        try:
            width = float(text.removesuffix("%"))
        except ValueError:
            raise PrecisionError(f"--precision: {name}: expected a half-width such as 0.02 or 1%, got {text!r}") from None
        if not width > 0 or not math.isfinite(width):
            raise PrecisionError(f"--precision: {name}: the half-width must be positive, got {text!r}")
        if any(target.figure == name for target in targets):
            raise PrecisionError(f"--precision: {name} is given twice")
        targets.append(Target(name, width, relative))
    return tuple(targets)


def _split(text: str) -> tuple[str, str]:
    name, sep, value = str(text).partition("=")
    if not sep:
        raise PrecisionError(f"--precision expects NAME=HALF_WIDTH, got {text!r}")
    return name, value


def measure(totals: pd.DataFrame, target: Target) -> tuple[float | None, float]:
    """The figure's estimate over ``totals`` (one row per path) and its interval's half-width."""
    if target.figure == "shortfall_probability":
        hits, n = int(totals["first_shortfall_time"].notna().sum()), len(totals)
        return (hits / n if n else None), half_width(wilson_interval(hits, n, LEVEL))
    metric, _, stat = target.figure.rpartition("_")
    values = totals[metric].to_numpy(dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return None, math.inf
    if stat == "mean":
        return float(values.mean()), half_width(mean_interval(values, LEVEL))
    return float(np.quantile(values, QUANTILES[stat])), half_width(quantile_interval(values, QUANTILES[stat], LEVEL))


def status(totals: pd.DataFrame, targets: tuple[Target, ...]) -> dict[str, dict[str, float | bool | None]]:
    """Per target: the estimate, the half-width reached, the half-width asked, and whether met.

    Raises :class:`PrecisionError` for a relative target on a figure that is 0: no number of
    paths can bring a half-width to a share of nothing.
    """
    out = {}
    for target in targets:
        value, width = measure(totals, target)
        if target.relative and value == 0:
            raise PrecisionError(f"--precision: {target.figure} is 0 over {len(totals):,} paths, so a half-width of "
                                 f"{target.half_width:g}% of it can never be met; give an absolute half-width")
        allowed = target.half_width * (abs(value) / 100.0 if value is not None else math.nan) if target.relative \
            else target.half_width
        met = bool(width <= allowed) if math.isfinite(width) and not math.isnan(allowed) else False
        out[target.figure] = {"value": value, "half_width": _finite(width), "target_half_width": _finite(allowed),
                              "met": met}
    return out


def next_total(n: int, state: dict[str, dict[str, float | bool | None]], max_paths: int) -> int:
    """Paths to reach next: enough by the ``1/√n`` law for the worst target, within bounds."""
    need = n
    for entry in state.values():
        if entry["met"]:
            continue
        width, allowed = entry["half_width"], entry["target_half_width"]
        if width is None or not allowed:
            need = max(need, 4 * n)
        else:
            need = max(need, math.ceil(1.1 * n * (width / allowed) ** 2))
    return int(min(max_paths, max(math.ceil(1.1 * n), min(4 * n, need))))


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def variant_precision(results: Any, precision: Precision, base: str) -> dict[str, Any]:
    """What a variant run at the base's number of paths reached on the same targets."""
    per_path = pd.DataFrame(results.summary["per_path"])
    state = status(per_path, precision.targets)
    return {"met": all(entry["met"] for entry in state.values()), "max_paths": precision.max_paths,
            "batches": [results.summary["paths"]], "targets": state, "paths_set_by": base}
