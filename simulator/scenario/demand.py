"""How a served model's request rate evolves: base rate, growth, seasonality, noise.

The expected rate at time t is ``base_rps × growth(t) × daily(t) × weekly(t)`` (a piecewise
curve gives absolute rates and replaces ``base_rps × growth``); each cycle is a cosine or a
profile of multipliers. Growth is counted from the demand's ``start`` (the launch); before it
the rate is zero. An optional day-to-day ``volatility`` factor (mean 1) multiplies it on each
path. Noise is Poisson: the number of requests in a step is Poisson with that count as its
mean; ``noise: none`` gives the count itself, so a test can compute the answer by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from simulator.scenario.csvrows import CsvProblem, csv_field_check, read_rows, row_problem
from simulator.scenario.forecast_spec import DemandForecast, HistorySpec
from simulator.scenario.training import LaunchAfter
from simulator.scenario.types import Fraction, Frozen, NonNegative, Positive, When


class ConstantGrowth(Frozen):
    """No growth: the base rate throughout."""

    kind: Literal["constant"] = Field(default="constant", description="constant: the base rate throughout")


class LinearGrowth(Frozen):
    """``1 + increase_per_month × months``: the base rate gains a fixed amount each month."""

    kind: Literal["linear"] = Field(
        default="linear", description="linear: 1 + increase_per_month × months, as a multiple of the base rate")
    increase_per_month: Annotated[float, Field(ge=-1, allow_inf_nan=False)] = Field(
        description="Added each month, as a fraction of the base rate (0.1 = +10% of base)"
    )


class ExponentialGrowth(Frozen):
    """``(1 + rate_per_month) ** months``: compound growth."""

    kind: Literal["exponential"] = Field(
        default="exponential", description="exponential: (1 + rate_per_month) ^ months")
    rate_per_month: Annotated[float, Field(gt=-1, le=10, allow_inf_nan=False)] = Field(
        description="Monthly growth rate (0.15 = 15% a month)"
    )


class LogisticGrowth(Frozen):
    """``ceiling / (1 + (ceiling − 1)·e^(−r·months))``: fast growth that saturates.

    Starts at 1 (the base rate), grows at about ``rate_per_month`` while small against the
    ceiling, and approaches ``ceiling`` times the base rate.
    """

    kind: Literal["logistic"] = Field(
        default="logistic", description="logistic: starts at 1 and saturates at ceiling × the base rate")
    ceiling: Annotated[float, Field(gt=1, allow_inf_nan=False)] = Field(
        description="Saturation level as a multiple of the base rate"
    )
    rate_per_month: Positive = Field(description="Continuous growth rate while far from the ceiling")


class RatePoint(Frozen):
    """One point of a piecewise rate curve."""

    at: When = Field(description="Date (ISO, UTC) or offset from the horizon's start (a duration)")
    rps: NonNegative = Field(description="Mean demand at that date, requests/s")


class PiecewiseGrowth(Frozen):
    """Absolute rates at dates, interpolated linearly; flat before the first point.

    Give the points inline or as ``csv:`` with columns ``date,rps`` (a path relative to the
    scenario file). A curve whose last point comes before the horizon's end must say what
    follows it: ``extrapolate: hold`` keeps the last rate, ``trend`` goes on growing as the
    last segment did (compounded); without it the scenario is refused, so that 12 months of
    history do not silently become a flat forecast.
    """

    kind: Literal["piecewise"] = Field(
        default="piecewise", description="piecewise: absolute rates at dates, linear between points (no base_rps)")
    csv: str | None = Field(
        default=None, description="A CSV of the points instead of `points` (columns date,rps; a path relative to the scenario)")
    points: list[RatePoint] = Field(
        default_factory=list, description="The rates at dates, in date order: [{at, rps}]")
    extrapolate: Literal["hold", "trend"] | None = Field(
        default=None, description="After the last point: hold its rate, or continue the last segment's trend")

    @model_validator(mode="before")
    @classmethod
    def _read_csv(cls, data: object, info: ValidationInfo) -> object:
        if not isinstance(data, dict) or not data.get("csv") or data.get("points"):
            return data
        base = Path((info.context or {}).get("base_dir", "."))
        path = base / str(data["csv"])
        try:
            return {**data, "points": _read_rate_csv(path)}
        except ValueError as exc:
            return {**data, "csv": CsvProblem(str(exc))}

    _csv_readable = field_validator("csv", mode="before")(lambda cls, v: csv_field_check(v))

    @model_validator(mode="after")
    def _has_points(self) -> PiecewiseGrowth:
        if not self.points:
            raise ValueError("a piecewise curve needs 'points' or a 'csv' file with rows")
        return self


def _read_rate_csv(path: Path) -> list[dict[str, str]]:
    points = []
    for number, row in read_rows(path, ("date", "rps")):
        try:
            rps = float(row[1])
        except ValueError:
            raise ValueError(f"{path} line {number}: rps {row[1]!r} is not a number") from None
        try:  # each row checked here, so that an error names the file and its line
            RatePoint.model_validate({"at": row[0], "rps": rps})
        except ValidationError as exc:
            raise row_problem(path, number, ("at", "rps"), exc) from None
        points.append({"at": row[0], "rps": rps})
    return points


Growth = Annotated[
    ConstantGrowth | LinearGrowth | ExponentialGrowth | LogisticGrowth | PiecewiseGrowth,
    Field(discriminator="kind"),
]


class Seasonality(Frozen):
    """Daily and weekly cycles: a cosine ``1 + amplitude × cos(2π (t − peak) / period)`` or a profile.

    A profile (``hourly``: 24 multipliers by UTC hour, ``weekly``: 7 by weekday, Monday first)
    replaces that cycle's cosine; it is scaled so that its mean over the cycle is 1. Either
    way both cycles average to 1 over whole weeks, so they move load around without changing
    the total. Times are UTC.
    """

    daily_amplitude: Fraction = Field(
        default=0.0, description="Relative swing of the daily cosine, share 0–1 (0.35: ±35% around the mean)")
    peak_hour: Annotated[float, Field(ge=0, lt=24)] = Field(default=15.0, description="UTC hour")
    weekly_amplitude: Fraction = Field(
        default=0.0, description="Relative swing of the weekly cosine, share 0–1")
    peak_weekday: Annotated[int, Field(ge=0, le=6)] = Field(
        default=2, description="0 = Monday … 6 = Sunday"
    )
    hourly: list[NonNegative] | None = Field(
        default=None, description="24 multipliers by UTC hour of day, scaled to mean 1 (replaces the daily cosine)"
    )
    weekly: list[NonNegative] | None = Field(
        default=None, description="7 multipliers by weekday, Monday first, scaled to mean 1 (replaces the weekly cosine)"
    )

    @field_validator("hourly")
    @classmethod
    def _hourly(cls, value: list[float] | None, info: ValidationInfo) -> list[float] | None:
        return _profile(value, 24, "hour of day", info.data.get("daily_amplitude", 0.0), "daily_amplitude")

    @field_validator("weekly")
    @classmethod
    def _weekly(cls, value: list[float] | None, info: ValidationInfo) -> list[float] | None:
        return _profile(value, 7, "weekday", info.data.get("weekly_amplitude", 0.0), "weekly_amplitude")


def _profile(value: list[float] | None, length: int, unit: str, amplitude: float, cosine: str) -> list[float] | None:
    if value is None:
        return None
    if len(value) != length:
        raise ValueError(f"needs {length} multipliers (one per {unit}), got {len(value)}")
    if not any(v > 0 for v in value):
        raise ValueError("multipliers are all 0; at least one must be positive")
    if amplitude:
        raise ValueError(f"a profile replaces the cosine: give this or '{cosine}', not both")
    return value


class Volatility(Frozen):
    """Day-to-day swings: one multiplicative factor per UTC calendar day, AR(1) on the log scale.

    ``x_d = persistence · x_{d−1} + sqrt(1 − persistence²) · daily_sigma · ε_d`` (``x_0 =
    daily_sigma · ε_0``, ε standard normal) keeps ``x`` stationary with standard deviation
    ``daily_sigma`` and lag-1 autocorrelation ``persistence``; the factor ``f_d = exp(x_d −
    daily_sigma²/2)`` then has mean 1.
    """

    daily_sigma: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        description="Standard deviation of the log factor (0.1 ≈ ±10% from day to day)"
    )
    persistence: Fraction = Field(
        default=0.0, description="Lag-1 autocorrelation of the log factor from one day to the next"
    )


class Demand(Frozen):
    """Inference demand for one served model."""

    base_rps: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] | None = Field(
        default=None, description="Mean requests per second at the start (not with piecewise)"
    )
    start: When | LaunchAfter | None = Field(
        default=None, description="Launch: no demand before this date, or until a training job is done"
    )
    growth: Growth = Field(
        default_factory=ConstantGrowth, description="How the mean rate grows: constant, linear, exponential, logistic or piecewise (by `kind`)")
    history: str | HistorySpec | None = Field(
        default=None,
        description="CSV of past traffic (date, rps or requests), or a block with its file and how to read and "
        "fit it: base_rps, growth, seasonality and forecast are fitted from it when the scenario loads")
    forecast: DemandForecast | None = Field(
        default=None, description="A fitted forecast model: each path draws its own demand path from it")
    seasonality: Seasonality = Field(
        default_factory=Seasonality, description="Daily and weekly cycles (cosines or profiles), each averaging to 1")
    volatility: Volatility | None = Field(
        default=None, description="Day-to-day multiplicative swings (default off); applies with noise: none too"
    )
    noise: Literal["poisson", "none"] = Field(
        default="poisson", description="poisson: requests per step are Poisson around the expected count; none: the expected count (for hand checks)")
    input_tokens: NonNegative = Field(default=1000.0, description="Mean prompt tokens per request")
    output_tokens: NonNegative = Field(default=250.0, description="Mean output tokens per request")

    @field_validator("growth", mode="before")
    @classmethod
    def _growth_shorthand(cls, value: object) -> object:
        return {"kind": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _base_rate(self) -> Demand:
        piecewise = isinstance(self.growth, PiecewiseGrowth)
        if piecewise and self.base_rps is not None:
            raise ValueError("'base_rps' is not used with piecewise growth; the points give the rates")
        if not piecewise and self.base_rps is None:
            raise ValueError("'base_rps' is required (requests per second at the start)")
        if self.forecast is not None and self.volatility is not None:
            raise ValueError("'volatility' and 'forecast' both draw day-to-day swings; the forecast carries the "
                             "history's own, so drop volatility (or widen the forecast)")
        return self
