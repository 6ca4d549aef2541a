"""Income tax month by month: on each month's profit, or yearly with losses carried forward.

With ``basis: monthly`` (the default, as before): tax = rate × the month's earnings
before tax when positive, paid in the month. With ``basis: yearly``, tax is owed on each calendar year's
taxable income: the year's EBT less the losses carried in from earlier years, the deduction
at most ``nol_limit_share`` of the year's income (80%: US rules for losses arising after
2017); a year's loss is carried forward without limit of time (no carry-back). Each month
books the year-to-date tax less what earlier months of the year booked (so a month can
book a negative tax as a loss reverses an earlier profit; the year's total is the year's
tax); the year's tax is paid in month ``payment_month`` of the next year (April: a calendar
year filer's due date). With ``basis: yearly``, tax owed and not yet paid is a liability (income tax payable).
Deferred tax (timing differences between book and tax depreciation) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.scenario.economics import Taxes


@dataclass
class TaxBook:
    """The running state of one path's taxes, advanced a month at a time."""

    terms: Taxes
    carried_loss: float = 0.0  # losses available at the start of the current year
    year: int | None = None
    ytd_ebt: float = 0.0
    ytd_tax: float = 0.0
    owed: dict[int, float] = field(default_factory=dict)  # year -> tax owed, unpaid

    def __post_init__(self) -> None:
        self.carried_loss = self.terms.opening_loss_usd

    def month(self, year: int, month: int, ebt: float) -> tuple[float, float]:
        """Book one month's EBT: returns (tax expense, tax paid) for the month."""
        rate = self.terms.rate
        if self.terms.basis == "monthly":
            tax = rate * max(ebt, 0.0)
            return tax, tax
        if self.year is not None and year != self.year:
            self._close_year()
        self.year = year
        self.ytd_ebt += ebt
        ytd_tax = rate * self._taxable(self.ytd_ebt)
        expense = ytd_tax - self.ytd_tax
        self.ytd_tax = ytd_tax
        self.owed[year] = ytd_tax
        paid = 0.0
        if month == self.terms.payment_month:
            for owed_year in [y for y in self.owed if y < year]:
                paid += self.owed.pop(owed_year)
        return expense, paid

    def payable(self) -> float:
        """Tax owed and not yet paid."""
        return sum(self.owed.values())

    def _taxable(self, income: float) -> float:
        if income <= 0:
            return 0.0
        used = min(self.carried_loss, self.terms.nol_limit_share * income)
        return income - used

    def _close_year(self) -> None:
        income = self.ytd_ebt
        if income > 0:
            self.carried_loss -= min(self.carried_loss, self.terms.nol_limit_share * income)
        else:
            self.carried_loss += -income
        self.ytd_ebt = 0.0
        self.ytd_tax = 0.0
