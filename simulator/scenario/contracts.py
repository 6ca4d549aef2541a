"""Capacity sold by the GPU-hour: contracts signed, and a pipeline of contracts to come.

A contract holds ``gpus`` GPUs of ``pool`` for the customer from ``start`` for ``term``: they
are kept before token serving gets any (the step kernel takes them off the pool's available
GPUs first, :mod:`simulator.path.kernels`), draw energy at ``usage`` of their time, and their
costs are COGS of the contract's revenue. The customer is billed each hour for the GPUs it
gets at ``usd_per_gpu_hour`` × max(``take_or_pay``, ``usage``): a take-or-pay share is paid
whether used or not. An hour a contracted GPU is not there (down, or never delivered) costs
``sla_credit_usd_per_gpu_hour``, deducted from revenue. ``prepaid_share`` of the term's
committed value (GPUs × hours × price × max(take-or-pay, usage)) is paid at its start: deferred
revenue, recognised as that share of each month's billing. At the term's end the contract is
renewed for another term with ``renewal_probability``; each year the customer defaults with
``default_probability_per_year`` (a constant hazard): the contract ends, and what it prepaid
and has not used is recognised then. Renewals and defaults are drawn per path.

A ``contract_pipeline`` entry brings contracts not signed yet: offers arrive as a Poisson
process at ``arrivals_per_month`` over the horizon, each with a GPU count and a price drawn
uniformly from ``gpus`` and ``usd_per_gpu_hour`` (``[low, high]``); an offer is signed when the
pool's GPUs not sold yet (installed, or delivered and waiting for power, less those held or
signed for contracts) cover it, else declined; a signed contract starts ``lead_time`` later, on
the terms given.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from simulator.scenario.types import Duration, Fraction, Frozen, Instant, NonNegative, PositiveTerm


class ContractTerms(Frozen):
    """Terms shared by a contract and a pipeline's contracts."""

    pool: str = Field(description="The pool whose GPUs the contract holds (owned or reserved)")
    term: PositiveTerm = Field(description="How long each term lasts (12mo, 2y)")
    take_or_pay: Fraction = Field(default=1.0, description="Share of the contracted GPU-hours paid used or not")
    usage: Fraction = Field(default=1.0, description="Share of the held GPU time the customer keeps busy")
    prepaid_share: Fraction = Field(default=0.0, description="Share of a term's committed value paid at its start")
    renewal_probability: Fraction = Field(
        default=0.0, description="Probability (0–1) that a term is renewed at its end, drawn per path")
    default_probability_per_year: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.0, description="Probability (0–1) per year that the customer defaults (a constant hazard, drawn per path)")
    sla_credit_usd_per_gpu_hour: NonNegative = Field(
        default=0.0, description="Credited to the customer per contracted GPU-hour not delivered")


class Contract(ContractTerms):
    """A contract signed: ``gpus`` GPUs of ``pool`` from ``start`` for ``term``."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=60)] = Field(
        description="Unique name of the contract (letters, digits, _ . -)")
    gpus: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        description="GPUs held for the customer, a whole number")
    start: Instant = Field(description="Date the first term starts (ISO date, UTC)")
    usd_per_gpu_hour: NonNegative = Field(description="Price billed per contracted GPU-hour, $/GPU-hour")


class Range(Frozen):
    """A value drawn uniformly between ``low`` and ``high``."""

    low: NonNegative = Field(description="Lower end of the uniform range (same unit as the field)")
    high: NonNegative = Field(description="Upper end of the uniform range (same unit as the field)")

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.high < self.low:
            raise ValueError("high is below low")
        return self


class ContractPipeline(ContractTerms):
    """Contracts to come: Poisson arrivals, sizes and prices drawn per contract."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=60)] = Field(
        description="Name of the pipeline; its contracts are named NAME#k")
    arrivals_per_month: Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)] = Field(
        description="Mean contracts signed per month (a Poisson process)")
    gpus: Range = Field(description="GPUs per contract, uniform on [low, high] (rounded to whole GPUs)")
    usd_per_gpu_hour: Range = Field(
        description="Price of each contract, $/GPU-hour, drawn uniformly on [low, high]")
    lead_time: Duration = Field(default=0.0, description="From signing to the contract's start")
