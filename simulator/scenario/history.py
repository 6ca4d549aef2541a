"""Demand fitted from the traffic a user has: ``demand.history: file.csv``.

The file has a ``date`` column and either ``rps`` (requests per second at that date) or
``requests`` (requests in the period from that date to the next; the last period as long as
the one before). Growth is fitted on the logarithm of the rate against calendar months by
least squares: ``ln rps = a + b·months``, so the monthly growth is ``e^b − 1``, with its
standard error from the residuals (``e^b · se(b)``, the delta method) and a 90% interval from
Student's t. When the history bends down (a quadratic term below zero at |t| > 3) and a
logistic curve halves the residual spread, the logistic is used instead (its ceiling by a
search over multiples of the highest rate, the rate by least squares for each). With hourly or finer data over at least two weeks, the
hour-of-day and weekday profiles of the detrended rate are fitted too.

In a scenario, the fit fills the model's ``base_rps`` (the fitted rate at the demand's
``start``, or the horizon's), ``growth`` and, when fitted, ``seasonality``; the growth rate's uncertainty becomes
an uncertain input (normal, the fit's rate and standard error), so bands widen with the
horizon. ``fleetcast fit-demand`` prints the same fit and the block it writes.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.scenario.csvrows import read_bounded_text
from simulator.units import SECONDS_PER_MONTH

# Student's t, two-sided 90% (the 95th percentile), for 1-30 degrees of freedom (standard tables).
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761,
        1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701,
        1.699, 1.697)
_Z95 = 1.6448536269514722


def t95(dof: int) -> float:
    """The 95th percentile of Student's t (Cornish-Fisher beyond the table)."""
    if dof <= 30:
        return _T95[max(dof, 1) - 1]
    z = _Z95
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


@dataclass
class DemandFit:
    """A fitted growth: rates per month, the level at the end of the history, diagnostics."""

    kind: str  # exponential | logistic
    points: int
    first: pd.Timestamp
    last: pd.Timestamp
    rate_per_month: float
    rate_se: float
    rate_interval: tuple[float, float]  # 90%
    log_intercept: float  # ln rps at the first date (exponential) or the logistic's scale
    residual_sd: float  # of ln rps
    r_squared: float
    ceiling_rps: float | None = None
    hourly: list[float] | None = None
    weekly: list[float] | None = None
    notes: list[str] = field(default_factory=list)
    spacing: pd.Timedelta = pd.Timedelta(0)  # the history's median interval between points

    def rps_at(self, when: pd.Timestamp) -> float:
        months = (when - self.first).total_seconds() / SECONDS_PER_MONTH
        if self.kind == "logistic":
            k, r = self.ceiling_rps, math.log1p(self.rate_per_month)
            return k / (1.0 + math.exp(self.log_intercept - r * months))
        return math.exp(self.log_intercept + math.log1p(self.rate_per_month) * months)

    def demand_block(self, start: pd.Timestamp) -> dict[str, Any]:
        """The ``demand`` fields this fit writes for a horizon starting at ``start``."""
        base = self.rps_at(start)
        if self.kind == "logistic":
            growth = {"kind": "logistic", "ceiling": max(self.ceiling_rps / base, 1.000001),
                      "rate_per_month": math.log1p(self.rate_per_month)}
        else:
            growth = {"kind": "exponential", "rate_per_month": self.rate_per_month}
        block: dict[str, Any] = {"base_rps": base, "growth": growth}
        if self.hourly is not None:
            block["seasonality"] = {"hourly": self.hourly, **({"weekly": self.weekly} if self.weekly else {})}
        return block

    def uncertain(self) -> dict[str, Any] | None:
        """The growth rate's uncertainty as an uncertain input, for an exponential fit.

        Raises ValueError when the history is too short or noisy for it: a normal draw could
        then fall to a rate of −100% a month or below (more than 5 standard errors away).
        """
        if self.kind != "exponential" or not self.rate_se > 0:
            return None
        if self.rate_per_month - 5 * self.rate_se <= -1:
            raise ValueError(f"the history is too short or noisy to fit growth: {self.rate_per_month:.1%} ± "
                             f"{self.rate_se:.1%} a month (give growth by hand, or more history)")
        return {"dist": "normal", "mean": self.rate_per_month, "sd": self.rate_se}

    def next_start(self) -> pd.Timestamp:
        """Where the history's last period ends: the next month's first day for monthly data
        dated on the first, else one spacing after the last point."""
        if all(day.is_month_start and day == day.normalize() for day in (self.first, self.last)):
            return self.last + pd.offsets.MonthBegin(1)
        return self.last + self.spacing


def read_history(path: Path) -> pd.Series:
    """Requests per second by date, from a history CSV (see module docstring)."""
    try:
        rows = list(csv.reader(io.StringIO(read_bounded_text(path, "utf-8"))))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason})") from None
    if not rows:
        raise ValueError(f"{path} is empty")
    header = [name.strip().lower() for name in rows[0]]
    if "date" not in header or not {"rps", "requests"} & set(header):
        raise ValueError(f"{path}: needs a 'date' column and an 'rps' or 'requests' column, has {', '.join(header)}")
    column = "rps" if "rps" in header else "requests"
    dates, values = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        try:
            dates.append(pd.Timestamp(row[header.index("date")].strip()))
            values.append(float(row[header.index(column)]))
        except (ValueError, IndexError):
            raise ValueError(f"{path} line {number}: {row!r} is not a date and a number") from None
        if not values[-1] > 0 or not math.isfinite(values[-1]):
            raise ValueError(f"{path} line {number}: {column} must be a positive number, got {values[-1]:g}")
    series = pd.Series(values, index=pd.DatetimeIndex(dates)).sort_index()
    if series.index.has_duplicates:
        raise ValueError(f"{path}: a date appears twice")
    if len(series) < 3:
        raise ValueError(f"{path}: {len(series)} rows; a fit needs at least 3")
    if column == "requests":
        # A period's requests give its mean rate, placed at the period's middle. The last
        # period is a calendar month for monthly data, else as long as the one before.
        index = series.index
        if all(day.is_month_start and day == day.normalize() for day in index):
            ends = index + pd.offsets.MonthBegin(1)
        else:
            ends = index[1:].append(pd.DatetimeIndex([index[-1] + (index[-1] - index[-2])]))
        seconds = (ends - index).total_seconds().to_numpy()
        series = pd.Series(series.to_numpy() / seconds,
                           index=series.index + pd.to_timedelta(seconds / 2, unit="s"))
    return series


def fit_history(rps: pd.Series) -> DemandFit:
    """Fit growth (and seasonality, where the history allows) to requests per second by date."""
    months = (rps.index - rps.index[0]).total_seconds().to_numpy() / SECONDS_PER_MONTH
    seasonal = _seasonality(rps)
    adjusted = rps.to_numpy() / (seasonal if seasonal is not None else 1.0)
    y = np.log(adjusted)
    fit = _log_linear(months, y)
    if len(y) >= 6 and _bends(months, y):
        logistic = _logistic(months, adjusted)
        # Compound growth unless saturation is clear: the logistic halves the residual spread.
        if logistic is not None and logistic.residual_sd < 0.5 * fit.residual_sd:
            fit = logistic
    fit.first, fit.last = rps.index[0], rps.index[-1]
    fit.spacing = pd.Timedelta(seconds=float(np.median(np.diff(months))) * SECONDS_PER_MONTH)
    if seasonal is not None:
        fit.hourly, fit.weekly = _profiles(rps.index, rps.to_numpy() / np.exp(_trend(fit, months)))
    return fit


def _log_linear(months: np.ndarray, y: np.ndarray) -> DemandFit:
    n = len(y)
    x = months - months.mean()
    slope = float((x * (y - y.mean())).sum() / (x * x).sum())
    intercept = float(y.mean() - slope * months.mean())
    residuals = y - (intercept + slope * months)
    dof = max(n - 2, 1)
    sd = float(np.sqrt((residuals**2).sum() / dof))
    se_slope = sd / float(np.sqrt((x * x).sum()))
    total = float(((y - y.mean()) ** 2).sum())
    t = t95(dof)
    return DemandFit(kind="exponential", points=n, first=pd.NaT, last=pd.NaT, rate_per_month=math.expm1(slope),
                     rate_se=math.exp(slope) * se_slope,
                     rate_interval=(math.expm1(slope - t * se_slope), math.expm1(slope + t * se_slope)),
                     log_intercept=intercept, residual_sd=sd,
                     r_squared=1.0 - float((residuals**2).sum()) / total if total > 0 else 1.0)


def _bends(months: np.ndarray, y: np.ndarray) -> bool:
    """A quadratic term below zero, more than three standard errors away."""
    design = np.column_stack([np.ones_like(months), months, months**2])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coef
    dof = len(y) - 3
    sigma2 = float((residuals**2).sum()) / dof
    cov = sigma2 * np.linalg.inv(design.T @ design)
    return coef[2] < 0 and abs(coef[2]) > 3 * math.sqrt(cov[2, 2])


def _logistic(months: np.ndarray, rps: np.ndarray) -> DemandFit | None:
    """``K / (1 + e^(c − r·months))`` by least squares on ``ln rps``: for each ceiling ``K`` (a
    multiple of the highest rate), ``c`` and ``r`` by Gauss-Newton from a linearized start."""
    y = np.log(rps)
    best = None
    for multiple in np.geomspace(1.02, 50.0, 120):
        k = multiple * rps.max()
        z = np.log(k / rps - 1.0)  # = c - r months; weighted as each point's error in ln rps
        slope, c = np.polyfit(months, z, 1, w=(k - rps) / k)
        r = -slope
        for _ in range(30):
            u = c - r * months
            sigma = 1.0 / (1.0 + np.exp(-u))
            residual = y - (np.log(k) - np.logaddexp(0.0, u))
            jacobian = np.column_stack([-sigma, months * sigma])  # d model / d (c, r)
            step, *_ = np.linalg.lstsq(jacobian, residual, rcond=None)
            c, r = c + step[0], r + step[1]
            if np.abs(step).max() < 1e-10:
                break
        sse = float(((y - (np.log(k) - np.logaddexp(0.0, c - r * months))) ** 2).sum())
        if np.isfinite(sse) and r > 0 and (best is None or sse < best[0]):
            best = (sse, k, r, c)
    if best is None:
        return None
    sse, k, r, c = best
    n = len(rps)
    sd = math.sqrt(sse / max(n - 3, 1))
    return DemandFit(kind="logistic", points=n, first=pd.NaT, last=pd.NaT, rate_per_month=math.expm1(r),
                     rate_se=float("nan"), rate_interval=(float("nan"), float("nan")), log_intercept=c,
                     residual_sd=sd, r_squared=float("nan"), ceiling_rps=k,
                     notes=["the history bends: a logistic curve fits better than compound growth"])


def _trend(fit: DemandFit, months: np.ndarray) -> np.ndarray:
    if fit.kind == "logistic":
        r = math.log1p(fit.rate_per_month)
        return np.log(fit.ceiling_rps / (1.0 + np.exp(fit.log_intercept - r * months)))
    return fit.log_intercept + math.log1p(fit.rate_per_month) * months


def _seasonality(rps: pd.Series) -> np.ndarray | None:
    """Hour-of-day (and weekday) multipliers per row, for hourly or finer data over two weeks."""
    spacing = float(np.median(np.diff((rps.index - rps.index[0]).total_seconds().to_numpy())))
    if spacing > 3600 or (rps.index[-1] - rps.index[0]) < pd.Timedelta(days=14):
        return None
    hourly, weekly = _profiles(rps.index, rps.to_numpy() / rps.rolling("7D", min_periods=1).mean().to_numpy())
    factor = np.asarray(hourly)[rps.index.hour]
    if weekly is not None:
        factor = factor * np.asarray(weekly)[rps.index.dayofweek]
    return factor


def _profiles(index: pd.DatetimeIndex, ratio: np.ndarray) -> tuple[list[float], list[float] | None]:
    frame = pd.DataFrame({"ratio": ratio, "hour": index.hour, "day": index.dayofweek})
    hourly = frame.groupby("hour")["ratio"].mean().reindex(range(24)).fillna(1.0)
    hourly = hourly / hourly.mean()
    weekly = frame.groupby("day")["ratio"].mean().reindex(range(7))
    weekly = None if weekly.isna().any() else (weekly / weekly.mean()).round(4).tolist()
    return hourly.round(4).tolist(), weekly


def expand_histories(data: dict[str, Any], base_dir: Path) -> None:
    """Replace each model's ``demand.history`` by the fields its fit gives (in place).

    The fitted rate of an exponential growth goes in as a distribution (normal: the rate and
    its standard error), which scenario loading turns into an uncertain input.
    """
    from simulator.scenario.errors import ScenarioError

    models = data.get("models")
    horizon = data.get("horizon")
    if not isinstance(models, list) or not isinstance(horizon, dict):
        return
    for index, model in enumerate(models):
        demand = model.get("demand") if isinstance(model, dict) else None
        if not isinstance(demand, dict) or demand.get("history") is None:
            continue
        loc = ("models", index, "demand", "history")
        taken = [name for name in ("base_rps", "growth") if name in demand]
        if taken:
            raise ScenarioError(loc, f"the history's fit gives {' and '.join(taken)}; give one or the other")
        try:
            fit = fit_history(read_history(base_dir / str(demand["history"])))
            block = fit.demand_block(_forecast_start(horizon.get("start"), demand.get("start")))
            if (spread := fit.uncertain()) is not None:
                block["growth"]["rate_per_month"] = spread
        except ValueError as exc:
            raise ScenarioError(loc, str(exc)) from None
        if "seasonality" in demand:
            block.pop("seasonality", None)
        demand.pop("history")
        demand.update(_plain_numbers(block))


def _forecast_start(horizon_start: Any, demand_start: Any) -> pd.Timestamp:
    """Where ``base_rps`` is read off the fit: the demand's start when it is a date or an
    offset from the horizon's, else (none, or after a training job) the horizon's start."""
    from simulator.units import parse_duration, parse_timestamp

    try:
        start = parse_timestamp(horizon_start)
    except (ValueError, TypeError):
        raise ValueError(f"the horizon's start {horizon_start!r} is not a date") from None
    if demand_start is None or isinstance(demand_start, dict):
        return start
    try:
        return parse_timestamp(demand_start)
    except (ValueError, TypeError):
        pass
    try:
        return start + pd.Timedelta(seconds=parse_duration(demand_start))
    except (ValueError, TypeError):
        raise ValueError(f"the demand's start {demand_start!r} is neither a date nor a duration") from None


def _plain_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain_numbers(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain_numbers(inner) for inner in value]
    return float(value) if isinstance(value, np.floating) else value
