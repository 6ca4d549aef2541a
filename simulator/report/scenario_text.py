"""A resolved scenario's settings as a reader reads them: money to its significant digits
(``$0.0004``, not ``$0.00``), shares as percentages, durations as the YAML writes them, and an
uncertain input as the distribution it was written as (``normal(mean 8%, sd 2%)``,
``uniform $0.05–$0.12``), never as the median the resolved file holds in its place.

Every value is found by its field path (``pricing.input_usd_per_1m``, ``fleet.pools[1].count``),
the same path under which ``uncertain:`` keeps its distribution.
"""

from __future__ import annotations

import math
from typing import Any

#: Fields that hold a share or a rate per period, shown as percentages (a field name, or its end).
PERCENT_FIELDS = frozenset({
    "rate_per_month", "growth_per_month", "decline_per_year", "rate_per_year", "share_of_capex", "take_or_pay",
    "usage", "prepaid_share", "probability", "renewal_probability", "default_probability_per_year", "nol_limit_share",
    "decay_per_year", "headroom", "daily_amplitude", "weekly_amplitude", "draw_fraction", "idle_draw_fraction",
    "min_unserved_share", "max_unserved_share", "min_utilization", "max_utilization", "min_slo_attainment",
    "commitment_fee_per_year", "spread_per_year", "upfront_fee_share", "max_ltv", "target", "threshold",
    "cash_quantile", "increase_per_month", "gpu_memory_utilization", "target_utilization", "fill_probability", "mfu",
})
#: Whole-section fields whose value is a share only under these section names (``taxes.rate``).
PERCENT_IN = {"taxes": {"rate"}}


def money_text(value: float) -> str:
    """USD to its significant digits: ``$25,000``, ``$184``, ``$2.50``, ``$1.00``, ``$0.083``,
    ``$0.0004`` (cents below $100, none on whole amounts from $100)."""
    size = abs(float(value))
    if size == 0:
        return "$0"
    if size >= 1000 or (size >= 100 and size == round(size)):
        text = f"${size:,.0f}"
    elif size >= 1:
        text = f"${size:,.2f}"
    else:  # three significant digits, at least two decimals, no trailing zeros past them
        decimals = max(2, 2 - math.floor(math.log10(size)))
        digits = f"{size:.{decimals}f}".rstrip("0")
        whole, _, fraction = digits.partition(".")
        text = f"${whole}.{fraction.ljust(2, '0')}"
    return text if value >= 0 else "−" + text


def percent_text(value: float) -> str:
    """A share as a percentage to its significant digits: ``8%``, ``12.5%``, ``0.4%``, ``0.003%``."""
    pct = float(value) * 100
    if pct == round(pct):
        return f"{pct:.0f}%"
    return f"{pct:.3g}%" if abs(pct) >= 0.001 else f"{pct:.2g}%"


def number_text(value: Any) -> str:
    """A number as written: whole numbers with thousands separators, others to 6 significant digits."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value == round(value) and abs(value) < 1e15:
            return f"{int(value):,}"
        return f"{value:,.6g}"
    return str(value)


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1].split("[", 1)[0]


def kind_of(path: str) -> str:
    """``usd``, ``percent`` or ``number`` for the field at ``path``, by its name."""
    leaf = _leaf(path)
    section = path.split(".", 1)[0].split("[", 1)[0]
    if "usd" in leaf.split("_"):
        return "usd"
    if leaf in PERCENT_FIELDS or leaf in PERCENT_IN.get(section, ()):
        return "percent"
    return "number"


def scalar_text(value: Any, kind: str = "number") -> str:
    """One value of a field of ``kind``; text (durations, dates, names) stays as written."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return number_text(value)
    if kind == "usd":
        return money_text(value)
    if kind == "percent":
        return percent_text(value)
    return number_text(value)


def distribution_text(spec: dict[str, Any], kind: str = "number") -> str:
    """A distribution as written: ``uniform 3–9``, ``normal(mean 8%, sd 2%)``,
    ``lognormal(median 3w, p90 8w)``, ``triangular(low 200, mode 256, high 256)``,
    ``choice of 1, 2, 4``, ``exponential(mean 3w)``, a fixed event duration as its value."""
    def one(name: str) -> str:
        return scalar_text(spec.get(name), kind)

    dist = spec.get("dist")
    if dist == "uniform":
        return f"uniform {one('low')}–{one('high')}"
    if dist == "fixed":
        return one("value")
    if dist == "choice":
        text = "choice of " + ", ".join(scalar_text(v, kind) for v in spec.get("values") or [])
        weights = spec.get("weights")
        return text + (f" (weights {', '.join(number_text(w) for w in weights)})" if weights else "")
    names = {"normal": ("mean", "sd"), "lognormal": ("median", "p90"), "triangular": ("low", "mode", "high"),
             "exponential": ("mean",)}.get(str(dist))
    if names is None:  # a form this version does not know: its fields as written
        names = tuple(name for name in spec if name not in ("dist", "draw"))
    inner = ", ".join(f"{name} {value_text(spec.get(name), kind, {})}" for name in names if name in spec)
    return f"{dist}({inner})"


def is_distribution(value: Any) -> bool:
    return isinstance(value, dict) and "dist" in value


def value_text(value: Any, kind: str, uncertain: dict[str, Any], path: str = "") -> str:
    """The value at ``path``: its distribution when the path is uncertain (drawn per path), an
    event distribution as written, else the value itself."""
    if path and path in uncertain:
        return distribution_text(uncertain[path], kind) + " (drawn per path)"
    if is_distribution(value):
        return distribution_text(value, kind)
    return scalar_text(value, kind)


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == {} or value == ""


def structure_text(value: Any, path: str, uncertain: dict[str, Any], skip: tuple[str, ...] = (),
                   kind: str | None = None) -> str:
    """Any part of a scenario, written out: ``key value`` pairs (unset ones left out), nested
    parts in parentheses, lists joined with ``;``; uncertain values as their distributions.
    ``kind``: the kind of a part's values when its own field names do not say (the ``low`` and
    ``high`` of a price range)."""
    own = kind_of(path) if path else "number"
    kind = own if own != "number" or kind is None else kind
    if path in uncertain or is_distribution(value) or not isinstance(value, dict | list):
        return value_text(value, kind, uncertain, path)
    if isinstance(value, list):
        if not value:
            return "none"
        parts = [structure_text(item, f"{path}[{i}]", uncertain, kind=kind) for i, item in enumerate(value)]
        return ("; " if any(isinstance(item, dict) for item in value) else ", ").join(parts)
    parts = []
    for key, item in value.items():
        if key in skip or _empty(item):
            continue
        text = structure_text(item, f"{path}.{key}" if path else key, uncertain, kind=kind)
        nested = (isinstance(item, dict) and not is_distribution(item)) or (
            isinstance(item, list) and any(isinstance(entry, dict) for entry in item))
        parts.append(f"{str(key).replace('_', ' ')} ({text})" if nested else f"{str(key).replace('_', ' ')} {text}")
    return ", ".join(parts) if parts else "none"
