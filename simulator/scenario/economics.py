"""Prices and running costs: what a token sells for, what energy, space and overhead cost.

Defaults are sourced reference figures (``shared/data/reference_hardware.md``): PUE 1.3
(average hyperscale), US industrial power $0.083/kWh (2025), a GPU drawing 75% of its TDP
on average (Epoch AI), server power 1.8× the GPUs' TDP (DGX H100: 10.2 kW for 8 × 700 W),
and wholesale colocation at $184 per kW-month (North America, H2 2024).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from simulator.scenario.facilities import DebtFacility, EquityRound
from simulator.scenario.types import Fraction, Frozen, Instant, NonNegative


class Pricing(Frozen):
    """What users pay, per million tokens; prices may fall by a share each year."""

    input_usd_per_1m: NonNegative = Field(
        default=0.0, description="Price charged for input tokens, $ per 1M tokens")
    output_usd_per_1m: NonNegative = Field(
        default=0.0, description="Price charged for output tokens, $ per 1M tokens")
    decline_per_year: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.0, description="Yearly price decline (0.3 = prices fall 30% a year, compounded)"
    )


class Subscription(Frozen):
    """Revenue from subscribers: each pays monthly and sends ``requests_per_day``.

    The number of subscribers is the demand's rate without seasonality divided by the
    requests one subscriber sends, so demand growth is subscriber growth.
    """

    usd_per_month: NonNegative = Field(description="What each subscriber pays, $/month")
    requests_per_day: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Requests a subscriber makes per day: subscribers = demand rate without seasonality / this")


class ExternalApi(Frozen):
    """A third-party model API: ``overflow`` takes what self-hosting cannot serve,
    ``all`` serves every request. Priced per million tokens, limited in requests per second."""

    mode: Literal["overflow", "all"] = Field(
        default="overflow", description="overflow: the API takes what self-hosting cannot serve; all: it serves everything (no pools needed)")
    input_usd_per_1m: NonNegative = Field(description="API price of input tokens, $ per 1M tokens")
    output_usd_per_1m: NonNegative = Field(description="API price of output tokens, $ per 1M tokens")
    rate_limit_rps: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="Most requests per second the API takes (none: unlimited)")


class Financing(Frozen):
    """Cash at the start, debt facilities and equity rounds.

    The single loan of ``share_of_capex`` (a share of each month's purchases borrowed, up to
    ``cap_usd``, each month's loan repaid in equal monthly instalments from the month after) is
    one delayed-draw facility named ``loan``; ``facilities`` adds any number more
    (:mod:`simulator.scenario.facilities`), ``equity`` adds cash from shareholders.
    """

    opening_cash_usd: float = Field(default=0.0, allow_inf_nan=False, description="Cash at the horizon's start")
    share_of_capex: Fraction = Field(
        default=0.0, description="Share (0–1) of each month's capex borrowed on the single loan")
    cap_usd: NonNegative | None = Field(
        default=None, description="Most that may be borrowed in all (past it, purchases are paid from cash)")
    rate_per_year: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.08, description="Interest rate of that loan, per year (0.08 = 8%)")
    term_years: Annotated[float, Field(gt=0, le=30)] = Field(
        default=3.0, description="Each month's loan is repaid in equal monthly instalments over this many years")
    facilities: list[DebtFacility] = Field(default_factory=list, description="Debt facilities (term loans, delayed-draw, "
                                       "revolvers), each with its covenants")
    equity: list[EquityRound] = Field(default_factory=list, description="Equity rounds: cash raised on a date")

    @model_validator(mode="after")
    def _unique_names(self) -> Financing:
        names = [facility.name for facility in self.facilities]
        if self.share_of_capex > 0:
            names.append("loan")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"facility names must be unique ('loan' is share_of_capex's): {', '.join(duplicates)}")
        return self

    def all_facilities(self) -> list[DebtFacility]:
        """The facilities, the ``share_of_capex`` loan first (as a delayed-draw facility)."""
        legacy = []
        if self.share_of_capex > 0:
            legacy.append(DebtFacility(name="loan", kind="delayed_draw", share_of_capex=self.share_of_capex,
                                   limit_usd=self.cap_usd, rate_per_year=self.rate_per_year,
                                   term_months=max(1, round(self.term_years * 12))))
        return [*legacy, *self.facilities]


class Taxes(Frozen):
    """Income tax: ``basis: monthly`` (the default) a flat rate on each month's positive earnings
    before tax, paid in the month; ``basis: yearly`` on each calendar year's income less the
    losses carried in (:mod:`simulator.economics.taxes`)."""

    rate: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.0, description="Income tax rate, share 0–1 (0.21: US federal)")
    basis: Literal["monthly", "yearly"] = Field(
        default="monthly", description="monthly: each positive month, no loss carried; yearly: losses carried forward")
    nol_limit_share: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.8, description="Most of a year's income losses carried in may offset (US: 80%)")
    opening_loss_usd: NonNegative = Field(default=0.0, description="Losses carried in from before the horizon")
    payment_month: Annotated[int, Field(ge=1, le=12)] = Field(
        default=4, description="Month of the next year in which a year's tax is paid")


class OpexStep(Frozen):
    """From ``at`` on, the line costs ``usd_per_month`` (its growth continues from there)."""

    at: Instant = Field(description="Date the new amount applies from (ISO, UTC)")
    usd_per_month: NonNegative = Field(description="The amount from that date, $/month")


class OpexLine(Frozen):
    """A named operating expense (payroll, SG&A, R&D staff, …), booked below gross margin.

    Fixed per calendar month (February costs what January does), prorated by days only for a
    month the line or the horizon covers in part. ``growth_per_month`` compounds every
    calendar month from the line's start (or its latest step); ``steps`` set new levels.
    """

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)] = Field(
        description="Name of the expense line (payroll, sga, …); its column is opex_<name>_usd")
    usd_per_month: NonNegative = Field(description="Amount per calendar month at the line's start, $/month")
    growth_per_month: Annotated[float, Field(ge=-0.5, le=1)] = Field(
        default=0.0, description="Growth of the amount every month from its start or latest step, per month (0.03 = 3%)")
    start: Instant | None = Field(default=None, description="First day of the line (default: the horizon's)")
    end: Instant | None = Field(default=None, description="Day the line stops (default: never)")
    steps: list[OpexStep] = Field(
        default_factory=list, description="Dated changes of the amount: [{at, usd_per_month}]")

    @model_validator(mode="after")
    def _ordered(self) -> OpexLine:
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError("end is not after start")
        dates = [step.at for step in self.steps]
        if dates != sorted(dates) or len(set(dates)) != len(dates):
            raise ValueError("steps must be in increasing date order")
        return self


class Alerts(Frozen):
    """Thresholds a team would alert on, evaluated month by month on every path."""

    monthly_compute_budget_usd: NonNegative | None = Field(
        default=None, description="Alert when a month's compute cost exceeds this, USD per month")
    max_utilization: Fraction | None = Field(
        default=None, description="Alert when a month's mean GPU utilization exceeds this share (0–1)")
    min_utilization: Fraction | None = Field(
        default=None, description="Alert when a month's mean GPU utilization falls below this share (0–1)")
    max_unserved_share: Fraction | None = Field(
        default=None, description="Alert when a month leaves more than this share (0–1) of its demand unserved")
    max_cost_per_1m_tokens_usd: NonNegative | None = Field(
        default=None, description="Alert when a month's cost per 1M tokens served exceeds this, $ per 1M tokens")

    @field_validator("min_utilization")
    @classmethod
    def _below_max(cls, value: float | None, info: ValidationInfo) -> float | None:
        high = info.data.get("max_utilization")
        if value is not None and high is not None and value > high:
            raise ValueError(f"is above max_utilization ({high:g}): every month would alert")
        return value


class Energy(Frozen):
    """Electricity for owned GPUs (a rental price already includes it).

    Power drawn by one available GPU's share of its server is
    ``TDP × draw × server_power_factor``, where ``draw`` is ``draw_fraction`` for busy GPU
    time and ``idle_draw_fraction`` for idle time; the facility multiplies it by PUE.
    """

    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = Field(
        default=1.3, description="Power usage effectiveness: facility power / IT power (1.1–1.3 hyperscale, 1.5–1.8 enterprise colocation)")
    usd_per_kwh: NonNegative = Field(
        default=0.083, description="Electricity price, $/kWh (US industrial ≈ 0.08)")
    draw_fraction: Fraction = Field(default=0.75, description="Average draw of a busy GPU / TDP")
    idle_draw_fraction: Fraction | None = Field(
        default=None, description="Draw of an idle GPU / TDP (default: same as draw_fraction)"
    )
    server_power_factor: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = Field(
        default=1.8, description="Server power per GPU / GPU TDP (CPUs, memory, network, fans)"
    )

    @property
    def idle_fraction(self) -> float:
        return self.draw_fraction if self.idle_draw_fraction is None else self.idle_draw_fraction


class Facility(Frozen):
    """Data-centre space and power for owned GPUs, priced per kW of IT load provisioned."""

    usd_per_kw_month: NonNegative = Field(
        default=184.0, description="Colocation price per kW of provisioned IT power (owned GPUs × TDP × server factor), $/kW-month")


class OtherCosts(Frozen):
    """Fixed costs of running the serving infrastructure (network, storage, support).

    Counted in COGS, spread evenly over time (a month is 30.4375 days). Payroll, SG&A and
    other costs of running the company are ``opex`` lines, booked below gross margin.
    """

    usd_per_month: NonNegative = Field(
        default=0.0, description="Fixed costs of running the serving infrastructure (network, storage, on-call), in COGS, $/month")
