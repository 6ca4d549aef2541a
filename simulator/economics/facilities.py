"""One debt facility's draws, interest, fees and repayments, a month at a time.

A facility holds *tranches*: the opening balance, a term loan's amount, each month's draw of a
delayed-draw facility. Each tranche is repaid on its own schedule from the month after its
draw (an opening balance: from the first month), after ``interest_only_months``, over
``term_months``: an annuity (equal payments, recomputed over the months left when a floating
rate moves), straight (equal principal) or a bullet. A revolver is one balance with no
schedule: :mod:`simulator.economics.books` draws and repays it against the cash floor.

Within a month: interest (and fees) on the balances at the month's start, then the scheduled
principal, then the month's draws. Terms are in :mod:`simulator.scenario.facilities`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.scenario.facilities import DebtFacility


@dataclass
class Tranche:
    balance: float
    amount: float
    first_payment: int  # month index of the first repayment (after any interest-only months)
    term: int
    paid: int = 0
    payment: float = 0.0
    rate: float = np.nan  # the monthly rate the payment was computed at


class FacilityBook:
    """The running state of one facility over a path's months."""

    def __init__(self, spec: DebtFacility, months: np.ndarray) -> None:
        self.spec = spec
        self.months = pd.DatetimeIndex(months)
        self.tranches: list[Tranche] = []
        self.revolving = 0.0
        self.drawn_total = 0.0
        start = self.months[0] if spec.start is None else spec.start
        self.start_index = int(np.searchsorted(self.months.to_numpy(), np.datetime64(start.to_period("M").start_time)))
        if spec.draw_until is None:
            self.draw_end = len(months) - 1
        else:
            self.draw_end = int(np.searchsorted(self.months.to_numpy(), np.datetime64(spec.draw_until), "right")) - 1
        # A facility dated inside the horizon (or undated and new) starts now: its amount is drawn
        # and its upfront fee paid in its first month. One dated before, or undated with an opening
        # balance, is already in place: what it lent is its opening balance.
        self.starts_inside = (spec.start >= self.months[0]) if spec.start is not None else spec.opening_balance_usd == 0
        if spec.opening_balance_usd > 0:
            if spec.kind == "revolver":
                self.revolving = spec.opening_balance_usd
            else:
                self.tranches.append(Tranche(spec.opening_balance_usd, spec.opening_balance_usd,
                                             spec.interest_only_months, spec.term_months))

    @property
    def balance(self) -> float:
        return self.revolving + sum(t.balance for t in self.tranches)

    def monthly_rate(self, j: int) -> float:
        return self.spec.rate_at(self.months[j]) / 12.0

    def interest_and_fees(self, j: int) -> tuple[float, float]:
        """Interest on the balances at month ``j``'s start; upfront and commitment fees."""
        rate = self.monthly_rate(j)
        interest = (self.revolving + sum(t.balance for t in self.tranches)) * rate
        spec = self.spec
        fees = 0.0
        if j == self.start_index and self.starts_inside:
            fees += spec.upfront_fee_share * (spec.limit_usd if spec.limit_usd is not None else spec.amount_usd)
        if spec.commitment_fee_per_year and spec.limit_usd is not None and j >= self.start_index:
            if spec.kind == "revolver":
                fees += max(spec.limit_usd - self.revolving, 0.0) * spec.commitment_fee_per_year / 12.0
            elif spec.kind == "delayed_draw" and j <= self.draw_end:
                fees += max(spec.limit_usd - self.drawn_total, 0.0) * spec.commitment_fee_per_year / 12.0
        return interest, fees

    def scheduled_principal(self, j: int) -> float:
        """Repay what the schedules ask in month ``j`` (interest is computed before)."""
        rate = self.monthly_rate(j)
        total = 0.0
        for t in self.tranches:
            if j < t.first_payment or t.paid >= t.term or t.balance <= 0:
                continue
            left = t.term - t.paid
            if self.spec.amortization == "bullet":
                principal = t.balance if left == 1 else 0.0
            elif self.spec.amortization == "straight":
                principal = min(t.amount / t.term, t.balance)
            else:
                if rate != t.rate:  # first payment, or a floating rate moved: level over what is left
                    # balance · r / (1 − (1 + r)^−n), written to keep its precision for a tiny r
                    t.payment = t.balance * rate / -math.expm1(-left * math.log1p(rate)) if rate != 0 else t.balance / left
                    t.rate = rate
                principal = min(t.payment - t.balance * rate, t.balance)
            t.balance -= principal
            t.paid += 1
            total += principal
        return total

    def draw_wanted(self, j: int, capex_cash: float) -> float:
        """The delayed-draw amount of month ``j``, given the GPU cash paid it funds."""
        spec = self.spec
        if spec.kind == "term_loan":
            return spec.amount_usd if j == self.start_index and self.starts_inside else 0.0
        if spec.kind != "delayed_draw" or not self.start_index <= j <= self.draw_end:
            return 0.0
        wanted = spec.share_of_capex * max(capex_cash, 0.0)  # a month of credits above payments draws nothing
        if spec.limit_usd is not None:
            wanted = min(wanted, max(spec.limit_usd - self.drawn_total, 0.0))
        return wanted

    def draw(self, j: int, amount: float) -> None:
        if amount <= 0:
            return
        self.drawn_total += amount
        if self.spec.kind == "revolver":
            self.revolving += amount
            return
        self.tranches.append(Tranche(amount, amount, j + 1 + self.spec.interest_only_months, self.spec.term_months))

    def repay_revolver(self, amount: float) -> None:
        self.revolving -= amount
