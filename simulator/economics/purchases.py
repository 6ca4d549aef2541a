"""Cash paid for GPU orders month by month under their terms (:mod:`simulator.scenario.purchase_terms`).

Without terms an order is paid in full on delivery: the cash is the engine's capex. With
terms, its deposit moves out of the delivery month into the month it is paid, and the
late-delivery credit is netted from the balance. Per (month, pool):

    cash paid = capex − deposits applied − credits + deposits paid

A deposit paid before the horizon is an opening asset (``opening_deposits``); one paid for
an order not delivered by the horizon's end stays an asset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulator.economics.assets import month_index
from simulator.scenario.purchase_terms import PurchaseTerms

SECONDS_PER_DAY = 86_400.0


@dataclass
class PurchaseMonths:
    """Per (month, pool), USD."""

    deposits_paid: np.ndarray
    deposits_applied: np.ndarray  # deposits turned into GPUs at delivery
    credits: np.ndarray  # late-delivery credits
    opening_deposits: np.ndarray  # per pool: paid before the horizon

    def held(self) -> np.ndarray:
        """Deposits held (paid, GPUs not yet delivered) at each month's end, per pool."""
        return self.opening_deposits + np.cumsum(self.deposits_paid - self.deposits_applied, axis=0)

    def cash_paid(self, capex: np.ndarray) -> np.ndarray:
        """Cash paid for GPUs per (month, pool), from the value delivered (``capex``)."""
        return capex - self.deposits_applied - self.credits + self.deposits_paid


def purchase_months(orders: Sequence, starts_s: np.ndarray, horizon_s: float, price_usd: np.ndarray,
                    terms: Sequence[PurchaseTerms | None]) -> PurchaseMonths:
    """Deposits and credits of a path's orders (rows ``[ordered_s, promised_s, delivered_s,
    pool, count]``) by month, for pools with ``terms``."""
    shape = (len(starts_s), len(price_usd))
    paid, applied, credits = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    opening = np.zeros(len(price_usd))
    for ordered, promised, delivered, pool, count in orders:
        term = terms[pool]
        if term is None:
            continue
        deposit = term.deposit_share * float(price_usd[pool]) * count
        due = ordered if term.deposit_before_delivery is None else max(ordered, promised - term.deposit_before_delivery)
        if due < 0:
            opening[pool] += deposit
        elif due < horizon_s:
            paid[int(month_index(starts_s, due)), pool] += deposit
        if np.isfinite(delivered):
            j = int(month_index(starts_s, delivered))
            applied[j, pool] += deposit
            late_days = max(delivered - promised, 0.0) / SECONDS_PER_DAY
            credits[j, pool] += late_days * count * term.late_credit_usd_per_gpu_day
    return PurchaseMonths(paid, applied, credits, opening)
