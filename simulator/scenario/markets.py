"""Prices that move: each rented pool's rate, and each owned pool's purchase price, as a path
over calendar months (``markets.purchase``: a GPU delivered in a month is paid, and depreciates,
at that month's price).

``markets.rent`` gives a pool (on-demand or spot) a rate per GPU-hour that changes at each
calendar month's start and holds through the month; rent booked in a month is that month's
rate × the GPU-hours billed. Two forms:

- ``points``: from each date on, the rate given (any value may be uncertain, ``{dist: …}``);
- ``process``: the log of the rate mean-reverts to ``log(long_run_usd)`` at ``reversion_per_year``
  with ``volatility_per_year`` (an Ornstein–Uhlenbeck process, sampled exactly month to month),
  plus jumps: ``jumps_per_year`` on average (Poisson), each adding a normal draw of mean
  ``jump_mean`` and sd ``jump_sd`` to the log rate (0.15: +16%). The first month's rate is the
  pool's ``usd_per_gpu_hour``. Drawn per path from a stream of the pool's own, so variants and
  plan rounds see the same prices.

Month to month, with a = exp(−κ/12), x_{m+1} = a·x_m + (1 − a)·θ + s·Z + Σ jumps, where
s² = σ²(1 − a²)/(2κ) and the month's jumps are a Poisson(λ/12) count of N(μ_J, σ_J²) draws.
Its stationary mean is θ + (λ/12)·μ_J / (1 − a) and variance (s² + (λ/12)(σ_J² + μ_J²)) / (1 − a²).
For scale: users reported the H100 one-year rental rate going from $1.70 (Oct 2025) to $2.35
(Mar 2026): mean-reverting with jumps rather than a steady decline. The defaults are assumptions to
set per market.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from simulator.scenario.types import Frozen, Instant, NonNegative, Positive


class RentPoint(Frozen):
    at: Instant = Field(description="Date the rate applies from (ISO, UTC)")
    usd_per_gpu_hour: NonNegative = Field(description="Rental rate from that date, $/GPU-hour")

    @property
    def value(self) -> float:
        return self.usd_per_gpu_hour


class PricePoint(Frozen):
    at: Instant = Field(description="Date the price applies from (ISO, UTC)")
    usd: NonNegative = Field(description="Purchase price per GPU from that date, USD")

    @property
    def value(self) -> float:
        return self.usd


class RentProcess(Frozen):
    """A mean-reverting log rate with jumps (see the module's text)."""

    long_run_usd: Positive = Field(description="The rate the process reverts to, per GPU-hour")
    reversion_per_year: Annotated[float, Field(gt=0, le=50, allow_inf_nan=False)] = Field(
        default=1.0, description="Speed at which the log rate returns to its long-run level, per year")
    volatility_per_year: Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)] = Field(
        default=0.2, description="Volatility of the log rate, per square-root year")
    jumps_per_year: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = Field(
        default=0.0, description="Mean jumps per year (Poisson)")
    jump_mean: Annotated[float, Field(ge=-3, le=3, allow_inf_nan=False)] = Field(
        default=0.0, description="Mean size of a jump in the log rate")
    jump_sd: Annotated[float, Field(ge=0, le=3, allow_inf_nan=False)] = Field(
        default=0.0, description="Standard deviation of a jump in the log rate")


class _PriceMarket(Frozen):
    """A price over time: ``points`` or a ``process``, one of the two."""

    process: RentProcess | None = Field(
        default=None, description="A mean-reverting log process with jumps for the rate (rent) or the price (purchase), drawn per path")

    @model_validator(mode="after")
    def _one_form(self) -> _PriceMarket:
        if bool(self.points) == (self.process is not None):
            raise ValueError("give points or a process, one of the two")
        dates = [point.at for point in self.points]
        if dates != sorted(dates) or len(set(dates)) != len(dates):
            raise ValueError("points must be in increasing date order")
        return self


class RentMarket(_PriceMarket):
    """One rented pool's rate per GPU-hour over time."""

    pool: str = Field(description="The on-demand or spot pool whose rate moves")
    points: list[RentPoint] = Field(
        default_factory=list, description="The rate by date: [{at, usd_per_gpu_hour}]")


class PurchaseMarket(_PriceMarket):
    """One owned pool's purchase price per GPU over time (a process's ``long_run_usd`` is then a
    price per GPU)."""

    pool: str = Field(description="The owned pool whose purchase price moves")
    points: list[PricePoint] = Field(default_factory=list, description="The price by date: [{at, usd}]")


class ApiPoint(Frozen):
    at: Instant = Field(description="Date the multiple applies from (ISO, UTC)")
    share: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] = Field(
        description="The model's API prices (input and output per 1M tokens) as a multiple of those its 'api' gives")

    @property
    def value(self) -> float:
        return self.share


class ApiProcess(RentProcess):
    """The same process for an API's prices, as a multiple of the prices the model's ``api``
    gives (``long_run_usd`` is then a multiple: 0.5, prices halve in the long run)."""


class ApiMarket(_PriceMarket):
    """A served model's external API prices over time: a multiple of its ``api`` prices, by
    calendar month (input and output move together)."""

    model: str = Field(description="The served model whose API prices move")
    points: list[ApiPoint] = Field(
        default_factory=list, description="The price multiple by date: [{at, share}], from the first calendar month starting on or after each")
    process: ApiProcess | None = Field(
        default=None, description="A mean-reverting log process with jumps for the price multiple, drawn per path")


class Markets(Frozen):
    """Prices that move over time."""

    rent: list[RentMarket] = Field(default_factory=list, description="Rental rates of on-demand and spot pools")
    purchase: list[PurchaseMarket] = Field(
        default_factory=list, description="Purchase prices of owned pools: a GPU is paid (and depreciates) at "
        "the price of the month it is delivered")
    api: list[ApiMarket] = Field(
        default_factory=list, description="External API prices of served models, as a multiple of their 'api' "
        "prices by calendar month")
