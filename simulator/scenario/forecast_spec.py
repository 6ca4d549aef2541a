"""Forecast sections of a served model's demand: the history block and the fitted model it gives.

``demand.history`` names a traffic CSV, or is a block::

    history:
      file: traffic.csv
      date_order: day_first          # or date_format: "%d/%m/%Y"; ISO dates need neither
      widen: 1.5                     # your judgement: the band's width in ln(rate) times 1.5
      growth_prior: {rate_per_month: 0.06, sd: 0.02}   # combined with the fit's trend (docs/guide/demand-history.md)
      regime: {after_months: 6, rate_per_month: 0.05, probability: 0.7}
      change: detect                 # look for one change of growth in the history (default)

When the scenario loads, the history is fitted (:mod:`simulator.scenario.forecasting.fit`) and
replaced by ``base_rps``, ``growth``, ``seasonality`` and ``forecast``, the fitted model whose
paths the Monte Carlo draws (:mod:`simulator.demand.forecast_paths`). A ``forecast`` block may
also be written by hand (``scenario.resolved.yaml`` shows the fitted one).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from simulator.scenario.types import Fraction, Frozen, NonNegative, Positive

GrowthRate = Annotated[float, Field(gt=-1, le=10, allow_inf_nan=False)]


class GrowthPrior(Frozen):
    """Your belief about the monthly growth, combined with the fit's by precision (docs/guide/demand-history.md)."""

    rate_per_month: GrowthRate = Field(description="Expected monthly growth (0.06 = 6% a month)")
    sd: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] = Field(
        description="Its standard deviation, in the same units (0.02 = ±2 points a month)")


class ForecastRegime(Frozen):
    """A change of growth ahead: from ``after_months`` past the history's end, growth runs at
    ``rate_per_month``, on a share ``probability`` of the paths. Each field may be uncertain
    (``{dist: …}``), drawn per path like any uncertain input."""

    after_months: Annotated[float, Field(ge=0, le=600, allow_inf_nan=False)] = Field(
        description="Months after the history's end when growth changes")
    rate_per_month: GrowthRate = Field(description="Monthly growth after the change")
    probability: Fraction = Field(default=1.0, description="Share of paths on which the change happens")


class HistorySpec(Frozen):
    """A traffic history and how to read and fit it (module docstring)."""

    file: str = Field(description="CSV with a date column and rps or requests (a path relative to the scenario)")
    date_order: Literal["day_first", "month_first"] | None = Field(
        default=None, description="How dates that are not ISO 8601 are written (day_first: 05/01/2026 = 5 January)")
    date_format: str | None = Field(default=None, description="strftime pattern of the dates, e.g. %d/%m/%Y")
    widen: Annotated[float, Field(ge=0.1, le=10, allow_inf_nan=False)] = Field(
        default=1.0, description="Multiplies the forecast band's width in ln(rate) (1 = the fit's)")
    growth_prior: GrowthPrior | None = Field(
        default=None, description="Your judgement of the growth, combined with the fit's by precision: {rate_per_month, sd}")
    regime: ForecastRegime | None = Field(
        default=None, description="A change of growth that may come: {after_months, rate_per_month, probability}")
    change: Literal["detect", "off"] = Field(
        default="detect", description="detect: fit one change of growth in the history when the data show one")

    @property
    def dayfirst(self) -> bool | None:
        return None if self.date_order is None else self.date_order == "day_first"

    @model_validator(mode="after")
    def _one_reading(self) -> HistorySpec:
        if self.date_order is not None and self.date_format is not None:
            raise ValueError("give date_order or date_format, not both")
        return self


class DemandForecast(Frozen):
    """A fitted ETS model of ln(rate) per period, from which each path draws its demand.

    Per period ``h`` after ``origin`` the path's deseasonalised ln rate is
    ``ℓ_{h−1} + φ b_{h−1} + ε_h`` with ``ℓ_h = ℓ_{h−1} + φ b_{h−1} + α ε_h``,
    ``b_h = φ b_{h−1} + β ε_h`` and the season ``s_h = s_{h−m} + γ ε_h``, ``ε ~ N(0, (widen σ)²)``;
    the trend is tilted by ``δ ~ N(0, (widen · trend_sd)²)`` per period and a ``regime`` replaces it
    after its date. The path's demand is the scenario's expected demand times ``exp`` of its
    departure from the point forecast.
    """

    model: str = Field(default="ETS", description="What was fitted (for the reader)")
    origin: str = Field(description="The history's end: the first instant forecast (ISO date)")
    period_s: Positive = Field(description="Seconds per modelled period (a day, a week, a month)")
    alpha: Fraction = Field(description="Level smoothing weight")
    beta: Fraction = Field(default=0.0, description="Trend smoothing weight")
    gamma: Fraction = Field(default=0.0, description="Season smoothing weight")
    phi: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(default=1.0, description="Trend damping")
    sigma: NonNegative = Field(description="Standard deviation of one period's ln-rate error")
    trend: Annotated[float, Field(allow_inf_nan=False)] = Field(
        default=0.0, description="ln growth per period at the origin")
    trend_sd: NonNegative = Field(default=0.0, description="Standard error of the trend per period")
    season_length: Annotated[int, Field(ge=0, le=366)] = Field(default=0, description="Periods per season (0: none)")
    widen: Annotated[float, Field(ge=0.1, le=10, allow_inf_nan=False)] = Field(
        default=1.0, description="Multiplies every random term of a forecast path: the band's width in ln(rate) is this times the fit's")
    regime: ForecastRegime | None = Field(
        default=None, description="A change of growth that may come: after_months, rate_per_month, probability")
    notes: list[str] = Field(default_factory=list, description="What the fit found, for the reader (not used)")
