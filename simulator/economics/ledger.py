"""A path's general ledger: every money event posted once, as a balanced entry, by month.

Amounts are debits positive, credits negative; every posting debits one account and credits
another by the same amount, so the accounts always sum to zero and the balance sheet
balances by construction (assets = liabilities + equity, the income accounts closing into
retained earnings). A posting that touches cash names its cash-flow section (operating,
investing, financing): the cash-flow statement is the cash postings summed by section.

The statements are views (:meth:`Ledger.balances`, :meth:`Ledger.flows`,
:meth:`Ledger.cash_by_section`); :mod:`simulator.economics.books` posts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Balance-sheet accounts (debt accounts are added per facility as ``debt:<name>``).
ASSETS = ("cash", "deposits", "ppe_cost", "accumulated_depreciation")
LIABILITIES = ("tax_payable", "deferred_revenue")
EQUITY = ("paid_in_capital",)
#: Income accounts: closed into retained earnings.
INCOME = ("revenue", "cash_costs", "depreciation", "other_income", "gain_on_sale", "interest", "financing_fees",
          "tax")
SECTIONS = ("operating", "investing", "financing")


class Ledger:
    """Postings of one path over ``months`` months."""

    def __init__(self, months: int, facilities: Sequence[str]) -> None:
        self.debt = tuple(f"debt:{name}" for name in facilities)
        self.accounts = (*ASSETS, *LIABILITIES, *self.debt, *EQUITY, *INCOME)
        self.index = {name: i for i, name in enumerate(self.accounts)}
        self.opening = np.zeros(len(self.accounts))
        self.postings = np.zeros((months, len(self.accounts)))
        self.cash = np.zeros((months, len(SECTIONS)))

    def open(self, account: str, debit: float) -> None:
        """An opening balance (debit positive); the opening equity takes the other side."""
        self.opening[self.index[account]] += debit
        self.opening[self.index["paid_in_capital"]] -= debit

    def post(self, month: int, debit: str, credit: str, amount: float, section: str | None = None) -> None:
        """Debit ``debit`` and credit ``credit`` by ``amount`` (a negative amount reverses them)."""
        if amount == 0.0:
            return
        self.postings[month, self.index[debit]] += amount
        self.postings[month, self.index[credit]] -= amount
        if "cash" in (debit, credit):
            if section is None:
                raise ValueError(f"a cash posting ({debit} / {credit}) needs its cash-flow section")
            self.cash[month, SECTIONS.index(section)] += amount if debit == "cash" else -amount

    def balance_of(self, account: str, month: int) -> float:
        """An account's balance at the end of ``month`` (debit positive)."""
        i = self.index[account]
        return float(self.opening[i] + self.postings[: month + 1, i].sum())

    def balances(self) -> dict[str, np.ndarray]:
        """Each balance-sheet account at each month's end (debit positive), and retained earnings
        (credit positive: the income accounts closed)."""
        running = self.opening + np.cumsum(self.postings, axis=0)
        out = {name: running[:, self.index[name]] for name in (*ASSETS, *LIABILITIES, *self.debt, *EQUITY)}
        income = [self.index[name] for name in INCOME]
        out["retained_earnings"] = -np.cumsum(self.postings[:, income].sum(axis=1))
        return out

    def flows(self, account: str) -> np.ndarray:
        """An account's postings per month (debit positive)."""
        return self.postings[:, self.index[account]].copy()

    def cash_by_section(self) -> dict[str, np.ndarray]:
        return {name: self.cash[:, i].copy() for i, name in enumerate(SECTIONS)}
