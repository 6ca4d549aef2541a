"""What a GPU order costs in cash and when: deposit at order, balance on delivery, credits if late.

``deposit_share`` of an order's price is paid ``deposit_before_delivery`` before the promised
delivery (the order's date plus its lead time), or at the order when that would be earlier
(default: at the order); the rest on delivery. The vendor credits
``late_credit_usd_per_gpu_day`` for each GPU-day the delivery comes after the promised date
(booked as other income, netted from the balance paid). Orders dated before the horizon whose
deposit fell before it were paid then: the deposit is an opening asset.
Apply to a pool's ``orders`` and procurement orders; GPUs of ``count`` and ``changes`` are
paid on arrival.
"""

from __future__ import annotations

from pydantic import Field

from simulator.scenario.types import Duration, Fraction, Frozen, NonNegative


class PurchaseTerms(Frozen):
    """The payment terms of a pool's GPU orders."""

    deposit_share: Fraction = Field(default=0.0, description="Share of the price paid before delivery")
    deposit_before_delivery: Duration | None = Field(
        default=None, description="Deposit paid this long before the promised delivery (default: at the order)")
    late_credit_usd_per_gpu_day: NonNegative = Field(
        default=0.0, description="Credit from the vendor per GPU and day of delivery past the promised date")
