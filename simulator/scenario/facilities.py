"""Debt facilities and equity rounds: how the company is funded beyond its opening cash.

A facility is one of three kinds, each a schedule of draws and repayments booked month by
month (:mod:`simulator.economics.facilities`):

- ``term_loan``: a balance outstanding at the horizon's start (``opening_balance_usd``:
  existing debt, repaid from the first month) and/or an ``amount_usd`` drawn at ``start``
  (repaid from the month after);
- ``delayed_draw``: draws ``share_of_capex`` of each month's cash paid for GPUs (deposits
  and balances; of the ``pools`` listed, default every owned pool) up to ``limit_usd`` in all,
  while ``start`` ≤ the month ≤ ``draw_until``; each month's draw is its own tranche repaid
  over the term from the month after;
- ``revolver`` (a credit line): drawn when cash would end a month below ``cash_floor_usd``
  (up to ``limit_usd`` outstanding), repaid from cash above the floor; no amortisation.

Interest is the month's opening balance × the year's rate / 12 (a month is a month, whatever
its days): ``rate_per_year``, or a ``base_rate`` path (steps by date) plus ``spread_per_year``.
Fees: ``upfront_fee_share`` of the commitment (the limit, else the amount) paid in the month
the facility starts; ``commitment_fee_per_year`` on the undrawn limit, monthly.
Amortisation over ``term_months`` after ``interest_only_months``: ``annuity`` (equal
payments), ``straight`` (equal principal) or ``bullet`` (all at the end).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from simulator.scenario.types import Fraction, Frozen, Instant, NonNegative

Rate = Annotated[float, Field(ge=-0.05, le=1, allow_inf_nan=False)]


class BaseRateStep(Frozen):
    """From ``at`` on, the base rate is ``rate_per_year`` (before it: the first step's)."""

    at: Instant = Field(description="Date the base rate applies from (ISO, UTC)")
    rate_per_year: Rate = Field(description="The floating base rate from that date, per year (0.05 = 5%)")


class Covenants(Frozen):
    """Tests a lender sets, checked every month (a breach is any month that fails one).

    DSCR: cash available for debt service (EBITDA − tax paid) over debt service (interest,
    scheduled principal and fees of every facility) over the trailing ``dscr_months``
    (fewer at the horizon's start); a month with no debt service passes. LTV: this
    facility's balance over the market value of the GPUs of its ``collateral`` pools.
    """

    min_dscr: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = Field(
        default=None, description="Least debt service coverage ratio allowed (e.g. 1.25), over the trailing dscr_months")
    max_ltv: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] | None = Field(
        default=None, description="Most loan-to-value allowed: the facility's balance / market value of its collateral (e.g. 0.8)")
    dscr_months: Annotated[int, Field(ge=1, le=36)] = Field(
        default=12, description="Months the DSCR test sums over (12: trailing twelve months)")


class DebtFacility(Frozen):
    """One debt facility (see the module's text for how each kind draws and repays)."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)] = Field(
        description="Name of the facility (lower case, digits, _); its balance is debt_<name>_usd")
    kind: Literal["term_loan", "delayed_draw", "revolver"] = Field(
        description="term_loan (drawn at start, repaid on a schedule), delayed_draw (draws on GPU payments) or revolver (draws to keep cash at a floor)")
    opening_balance_usd: NonNegative = Field(default=0.0, description="Outstanding at the horizon's start")
    amount_usd: NonNegative = Field(default=0.0, description="term_loan: drawn at start")
    limit_usd: NonNegative | None = Field(
        default=None, description="delayed_draw: most drawn in all; revolver: most outstanding")
    share_of_capex: Fraction = Field(default=0.0, description="delayed_draw: share of the GPU cash paid drawn")
    pools: list[str] | None = Field(default=None, description="delayed_draw: the pools whose purchases it funds")
    cash_floor_usd: NonNegative = Field(default=0.0, description="revolver: drawn to keep cash at least this")
    start: Instant | None = Field(default=None, description="Default: the horizon's start")
    draw_until: Instant | None = Field(default=None, description="delayed_draw: last day draws are made")
    rate_per_year: Rate | None = Field(default=None, description="Fixed rate (default 0.08 without base_rate)")
    base_rate: list[BaseRateStep] = Field(default_factory=list, description="A floating base rate by date")
    spread_per_year: Rate = Field(default=0.0, description="Added to base_rate")
    term_months: Annotated[int, Field(ge=1, le=480)] = Field(
        default=36, description="Months to repay (for opening_balance_usd: the months left)")
    interest_only_months: Annotated[int, Field(ge=0, le=480)] = Field(
        default=0, description="Months after each draw with interest but no principal")
    amortization: Literal["annuity", "straight", "bullet"] = Field(
        default="annuity", description="How principal is repaid: annuity (equal instalments), straight (equal principal) or bullet (all at the end)")
    upfront_fee_share: Annotated[float, Field(ge=0, le=0.2)] = Field(
        default=0.0, description="Fee paid in the start month, as a share (0–1) of the commitment")
    commitment_fee_per_year: Annotated[float, Field(ge=0, le=0.2)] = Field(
        default=0.0, description="Fee on the undrawn limit, per year (share of it)")
    covenants: Covenants = Field(
        default_factory=Covenants, description="The lender's tests (min_dscr, max_ltv), checked every month")
    collateral: list[str] | None = Field(
        default=None, description="Pools whose GPUs are pledged (the LTV's denominator; default: every owned pool)")

    @model_validator(mode="after")
    def _consistent(self) -> DebtFacility:
        if self.rate_per_year is not None and self.base_rate:
            raise ValueError("give rate_per_year or base_rate (with spread_per_year), not both")
        dates = [step.at for step in self.base_rate]
        if dates != sorted(dates) or len(set(dates)) != len(dates):
            raise ValueError("base_rate steps must be in increasing date order")
        if self.kind == "revolver" and self.limit_usd is None:
            raise ValueError("a revolver needs limit_usd (the most outstanding)")
        if self.kind == "delayed_draw" and self.share_of_capex <= 0:
            raise ValueError("a delayed_draw facility needs share_of_capex > 0 (the share of GPU payments drawn)")
        if self.kind != "delayed_draw" and (self.share_of_capex or self.pools is not None or self.draw_until):
            raise ValueError("share_of_capex, pools and draw_until are for a delayed_draw facility")
        if self.kind != "term_loan" and self.amount_usd:
            raise ValueError("amount_usd is for a term_loan (a delayed_draw draws on capex, a revolver on need)")
        if self.kind == "term_loan" and self.amount_usd and self.opening_balance_usd and self.start is None:
            raise ValueError("a term loan with an opening balance is in place: give start for a new amount_usd")
        if self.kind == "revolver" and self.opening_balance_usd > (self.limit_usd or 0.0):
            raise ValueError("opening_balance_usd is above the revolver's limit_usd")
        return self

    def rate_at(self, month: object) -> float:
        """The year's rate in the month starting ``month`` (a timestamp)."""
        if not self.base_rate:
            return 0.08 if self.rate_per_year is None else self.rate_per_year
        base = self.base_rate[0].rate_per_year
        for step in self.base_rate:
            if step.at <= month:
                base = step.rate_per_year
        return base + self.spread_per_year


class EquityRound(Frozen):
    """Cash raised from shareholders in the month of ``at`` (paid-in capital)."""

    at: Instant = Field(description="Date the cash comes in (ISO, UTC)")
    amount_usd: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Cash raised, USD (paid-in capital)")
