"""A path's books, month by month: everything below EBITDA, the balance sheet and the cash flow.

The operating lines (revenue, COGS, R&D compute, opex, depreciation) come from the engine's
arrays (:mod:`simulator.economics.pnl`); here each month posts them to the path's
:class:`~simulator.economics.ledger.Ledger` with everything else money does: GPU deposits,
payments and late credits (:mod:`simulator.economics.purchases`), sales of GPUs at market
(:mod:`simulator.economics.assets`), the facilities' draws, interest, fees and repayments
(:mod:`simulator.economics.facilities`), equity rounds, income tax
(:mod:`simulator.economics.taxes`); a revolver then draws or repays against its cash floor.
The statements' columns are views of the ledger.

Order within a month: interest and fees on the balances at its start; the operating flows;
GPU payments and sales; the delayed draws on this month's GPU payments; scheduled principal;
equity; tax on the month's earnings before tax; then the revolvers, first listed first.
Covenants: DSCR = (EBITDA − tax paid) / (interest + scheduled principal + fees) over the
trailing months a facility's covenant sums (a month without debt service passes); LTV = a
facility's balance / the value of its collateral: its pools' GPUs at market (at book without
a curve) and the deposits paid on their orders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.economics.assets import AssetLog, AssetMonths, asset_months, month_index
from simulator.economics.contracts import ContractMonths, contract_months
from simulator.economics.facilities import FacilityBook
from simulator.economics.ledger import Ledger
from simulator.economics.purchases import PurchaseMonths, purchase_months
from simulator.economics.taxes import TaxBook
from simulator.scenario.economics import Financing, Taxes
from simulator.scenario.market_value import MarketValue
from simulator.scenario.purchase_terms import PurchaseTerms


@dataclass
class BookTerms:
    """What the books need from the scenario (no YAML): terms, and the pools' prices."""

    financing: Financing
    taxes: Taxes
    horizon_start: pd.Timestamp
    horizon_s: float
    pool_names: tuple[str, ...] = ()
    price_usd: np.ndarray = field(default_factory=lambda: np.zeros(0))
    owned: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    curves: Sequence[MarketValue | None] = ()
    purchase_terms: Sequence[PurchaseTerms | None] = ()


@dataclass
class PathAssets:
    """One path's owned GPUs: its asset log and the capex of each step and pool; and its
    contract terms with each one's billing per step (:mod:`simulator.economics.contracts`)."""

    log: AssetLog
    capex: np.ndarray  # (steps, pools) USD, at the delivery step
    step_s: float
    contract_terms: list = field(default_factory=list)
    contract_billing: np.ndarray | None = None  # (terms, steps) USD billed (before credits)
    site: list = field(default_factory=list)  # power upgrades energized: (name, at s, USD, life s)


def site_months(site: Sequence, starts_s: np.ndarray, ends_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per month: the capex of the power upgrades energized in it, and their straight-line
    depreciation (each from the day it is energized, over its life)."""
    capex, depreciation = np.zeros(len(starts_s)), np.zeros(len(starts_s))
    for _name, at_s, cost, life_s in site:
        capex[int(month_index(starts_s, at_s))] += cost
        covered = np.clip(np.minimum(ends_s, at_s + life_s) - np.maximum(starts_s, at_s), 0.0, None)
        depreciation += cost * covered / life_s
    return capex, depreciation


def month_bounds(months: np.ndarray, terms: BookTerms) -> tuple[np.ndarray, np.ndarray]:
    """Each month's start and end in seconds from the horizon's start (clipped to the horizon)."""
    starts = pd.DatetimeIndex(months)
    offset = ((starts - terms.horizon_start).total_seconds()).to_numpy()
    starts_s = np.maximum(offset, 0.0)
    ends = (starts.to_period("M") + 1).start_time
    ends_s = np.minimum(((ends - terms.horizon_start).total_seconds()).to_numpy(), terms.horizon_s)
    return starts_s, ends_s


def path_books(column: dict[str, np.ndarray], months: np.ndarray, terms: BookTerms,
               assets: PathAssets | None = None) -> dict[str, np.ndarray]:
    """The books of one path over its ``months`` (sorted): new columns of its P&L frame."""
    n = len(months)
    starts_s, ends_s = month_bounds(months, terms)
    pools = max(len(terms.price_usd), 1)
    capex = np.zeros((n, pools))
    if assets is not None and assets.log.assets:  # each purchase in the month it lands (as its deposit)
        for pool, count, delivered_s, _age, cost, _book, bought in assets.log.assets:
            if bought:
                capex[int(month_index(starts_s, delivered_s)), pool] += count * cost
    elif assets is not None and assets.capex.size:
        step_starts = np.arange(assets.capex.shape[0]) * assets.step_s
        np.add.at(capex, month_index(starts_s, step_starts), assets.capex)
    else:
        capex[:, 0] = column["capex_usd"]
    log = assets.log if assets is not None else AssetLog()
    price = terms.price_usd if len(terms.price_usd) else np.zeros(1)
    held = asset_months(log, starts_s, ends_s, price, list(terms.curves) or [None])
    bought = purchase_months(log.orders, starts_s, terms.horizon_s, price, list(terms.purchase_terms) or [None])
    sold = ContractMonths(np.zeros(n), np.zeros(n), np.zeros(n), 0.0)
    if assets is not None and assets.contract_terms:
        billing = np.zeros((len(assets.contract_terms), n))
        step_starts = np.arange(assets.contract_billing.shape[1]) * assets.step_s
        np.add.at(billing.T, month_index(starts_s, step_starts), assets.contract_billing.T)
        sold = contract_months(assets.contract_terms, billing, starts_s, terms.horizon_s)
    return _post(column, months, starts_s, terms, capex, held, bought, sold)


def _post(column: dict[str, np.ndarray], months: np.ndarray, starts_s: np.ndarray, terms: BookTerms, capex: np.ndarray,
          held: AssetMonths, bought: PurchaseMonths, sold: ContractMonths) -> dict[str, np.ndarray]:
    n = len(months)
    specs = terms.financing.all_facilities()
    books = [FacilityBook(spec, months) for spec in specs]
    ledger = Ledger(n, [spec.name for spec in specs])
    ledger.open("cash", terms.financing.opening_cash_usd)
    ledger.open("deposits", float(bought.opening_deposits.sum()))
    ledger.open("ppe_cost", held.opening_cost)
    ledger.open("accumulated_depreciation", -held.opening_accumulated)
    ledger.open("deferred_revenue", -sold.opening_deferred)
    for spec in specs:
        ledger.open(f"debt:{spec.name}", -spec.opening_balance_usd)
    tax = TaxBook(terms.taxes)
    gpu_cash = bought.cash_paid(capex)
    pool_index = {name: i for i, name in enumerate(terms.pool_names)}
    equity = np.zeros(n)
    for rnd in terms.financing.equity:
        at = (rnd.at - terms.horizon_start).total_seconds()
        if 0 <= at < terms.horizon_s:
            equity[int(month_index(starts_s, at))] += rnd.amount_usd
    out = {name: np.zeros(n) for name in (
        "interest_usd", "financing_fees_usd", "other_income_usd", "gain_on_sale_usd", "ebt_usd", "tax_usd",
        "tax_paid_usd", "loan_drawn_usd", "loan_repaid_usd", "scheduled_principal_usd", "carried_loss_usd",
        "gpu_payments_usd", "deposits_paid_usd", "sale_proceeds_usd", "equity_raised_usd",
        "deferred_revenue_change_usd", "late_credits_usd")}
    years = pd.DatetimeIndex(months).year.to_numpy()
    month_numbers = pd.DatetimeIndex(months).month.to_numpy()
    for j in range(n):
        interest = fees = 0.0
        for book in books:
            i, f = book.interest_and_fees(j)
            interest, fees = interest + i, fees + f
        ledger.post(j, "interest", "cash", interest, "operating")
        ledger.post(j, "financing_fees", "cash", fees, "operating")
        revenue, ebitda = column["revenue_usd"][j], column["ebitda_usd"][j]
        # Revenue: what contracts prepaid is taken out of deferred revenue, the rest comes in as cash.
        ledger.post(j, "cash", "deferred_revenue", sold.prepaid[j], "operating")
        ledger.post(j, "deferred_revenue", "revenue", sold.recognised[j])
        ledger.post(j, "cash", "revenue", revenue - sold.recognised[j], "operating")
        ledger.post(j, "deferred_revenue", "other_income", sold.forfeited[j])
        ledger.post(j, "cash_costs", "cash", revenue - ebitda, "operating")
        ledger.post(j, "depreciation", "accumulated_depreciation", column["depreciation_amortization_usd"][j])
        # GPUs: deposits paid, deliveries (deposit applied, late credit, the rest in cash), sales.
        credit = float(bought.credits[j].sum())
        ledger.post(j, "deposits", "cash", float(bought.deposits_paid[j].sum()), "investing")
        delivered = float(capex[j].sum())
        ledger.post(j, "ppe_cost", "deposits", float(bought.deposits_applied[j].sum()))
        ledger.post(j, "ppe_cost", "other_income", credit)
        ledger.post(j, "ppe_cost", "cash", delivered - float(bought.deposits_applied[j].sum()) - credit, "investing")
        ledger.post(j, "cash", "ppe_cost", held.sale_proceeds[j], "investing")
        ledger.post(j, "accumulated_depreciation", "ppe_cost", held.sale_cost[j] - held.sale_book[j])
        ledger.post(j, "ppe_cost", "gain_on_sale", held.sale_proceeds[j] - held.sale_book[j])
        ledger.post(j, "ppe_cost", "cash", column["site_capex_usd"][j] if "site_capex_usd" in column else 0.0,
                    "investing")  # site power upgrades, paid when energized
        drawn = principal = 0.0
        for book in books:
            funded = float(gpu_cash[j].sum() if book.spec.pools is None else
                           gpu_cash[j, [pool_index[name] for name in book.spec.pools]].sum())
            draw = book.draw_wanted(j, funded)
            paid = book.scheduled_principal(j)
            book.draw(j, draw)
            ledger.post(j, "cash", f"debt:{book.spec.name}", draw, "financing")
            ledger.post(j, f"debt:{book.spec.name}", "cash", paid, "financing")
            drawn, principal = drawn + draw, principal + paid
        out["scheduled_principal_usd"][j] = principal
        ledger.post(j, "cash", "paid_in_capital", equity[j], "financing")
        ebt = (column["ebit_usd"][j] + credit + sold.forfeited[j] + held.sale_proceeds[j] - held.sale_book[j]
               - interest - fees)
        expense, tax_paid = tax.month(int(years[j]), int(month_numbers[j]), ebt)
        ledger.post(j, "tax", "tax_payable", expense)
        ledger.post(j, "tax_payable", "cash", tax_paid, "operating")
        for book in books:  # revolvers: to the cash floor, or repaid from cash above it
            if book.spec.kind != "revolver" or j < book.start_index:
                continue
            cash = ledger.balance_of("cash", j)
            floor, limit = book.spec.cash_floor_usd, float(book.spec.limit_usd or 0.0)
            if cash < floor:
                draw = min(limit - book.revolving, floor - cash)
                book.draw(j, max(draw, 0.0))
                ledger.post(j, "cash", f"debt:{book.spec.name}", max(draw, 0.0), "financing")
                drawn += max(draw, 0.0)
            elif book.revolving > 0:
                repay = min(book.revolving, cash - floor)
                book.repay_revolver(repay)
                ledger.post(j, f"debt:{book.spec.name}", "cash", repay, "financing")
                principal += repay
        out["interest_usd"][j], out["financing_fees_usd"][j] = interest, fees
        out["other_income_usd"][j] = credit + sold.forfeited[j]
        out["late_credits_usd"][j] = credit
        out["gain_on_sale_usd"][j] = held.sale_proceeds[j] - held.sale_book[j]
        out["ebt_usd"][j], out["tax_usd"][j], out["tax_paid_usd"][j] = ebt, expense, tax_paid
        out["loan_drawn_usd"][j], out["loan_repaid_usd"][j] = drawn, principal
        out["carried_loss_usd"][j] = tax.carried_loss
        out["deferred_revenue_change_usd"][j] = sold.prepaid[j] - sold.recognised[j] - sold.forfeited[j]
        out["gpu_payments_usd"][j] = float(gpu_cash[j].sum())
        out["deposits_paid_usd"][j] = float(bought.deposits_paid[j].sum())
        out["sale_proceeds_usd"][j], out["equity_raised_usd"][j] = held.sale_proceeds[j], equity[j]
    out.update(_statement_views(ledger, specs))
    out.update(_covenants(column, out, specs, held, bought.held(), terms))
    return out


def _statement_views(ledger: Ledger, specs: Sequence) -> dict[str, np.ndarray]:
    """The balance sheet and the cash flow, from the ledger (liabilities and equity positive)."""
    b = ledger.balances()
    view = {"cash_balance_usd": b["cash"], "deposits_usd": b["deposits"], "ppe_cost_usd": b["ppe_cost"],
            "accumulated_depreciation_usd": -b["accumulated_depreciation"]}
    view["ppe_net_usd"] = view["ppe_cost_usd"] - view["accumulated_depreciation_usd"]
    view["total_assets_usd"] = view["cash_balance_usd"] + view["deposits_usd"] + view["ppe_net_usd"]
    debt = np.zeros(len(b["cash"]))
    for spec in specs:
        view[f"debt_{spec.name}_usd"] = -b[f"debt:{spec.name}"]
        debt = debt + view[f"debt_{spec.name}_usd"]
    view["debt_balance_usd"] = debt
    view["tax_payable_usd"] = -b["tax_payable"]
    view["deferred_revenue_usd"] = -b["deferred_revenue"]
    view["total_liabilities_usd"] = debt + view["tax_payable_usd"] + view["deferred_revenue_usd"]
    view["paid_in_capital_usd"] = -b["paid_in_capital"]
    view["retained_earnings_usd"] = b["retained_earnings"]
    view["total_equity_usd"] = view["paid_in_capital_usd"] + view["retained_earnings_usd"]
    view["balance_check_usd"] = view["total_assets_usd"] - view["total_liabilities_usd"] - view["total_equity_usd"]
    sections = ledger.cash_by_section()
    view["operating_cash_flow_usd"] = sections["operating"]
    view["investing_cash_flow_usd"] = sections["investing"]
    view["financing_cash_flow_usd"] = sections["financing"]
    view["cash_flow_usd"] = sections["operating"] + sections["investing"] + sections["financing"]
    view["net_income_usd"] = np.diff(b["retained_earnings"], prepend=0.0)
    return view


def _covenants(column: dict[str, np.ndarray], out: dict[str, np.ndarray], specs: Sequence,
               held: AssetMonths, deposits: np.ndarray, terms: BookTerms) -> dict[str, np.ndarray]:
    """DSCR per month, each facility's LTV, and whether any covenant failed."""
    n = len(out["ebt_usd"])
    cfads = column["ebitda_usd"] - out["tax_paid_usd"]
    service = out["interest_usd"] + out["scheduled_principal_usd"] + out["financing_fees_usd"]
    windows = [spec.covenants.dscr_months for spec in specs if spec.covenants.min_dscr is not None] or [12]
    view = {"dscr": _trailing_ratio(cfads, service, windows[0])}
    breach = np.zeros(n, dtype=bool)
    collateral_value = held.market_value + deposits  # the GPUs pledged, and deposits paid on them
    for spec in specs:
        pools = [i for i, owned in enumerate(terms.owned) if owned] if spec.collateral is None else \
            [terms.pool_names.index(name) for name in spec.collateral]
        value = collateral_value[:, pools].sum(axis=1) if pools else np.zeros(n)
        balance = out[f"debt_{spec.name}_usd"]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ltv = np.where(balance > 0, balance / np.where(value > 0, value, np.nan), 0.0)
        ltv = np.where((balance > 0) & (value <= 0), np.inf, ltv)
        view[f"ltv_{spec.name}"] = ltv
        c = spec.covenants
        if c.min_dscr is not None:
            dscr = _trailing_ratio(cfads, service, c.dscr_months)
            breach |= np.isfinite(dscr) & (dscr < c.min_dscr)
        if c.max_ltv is not None:
            breach |= ltv > c.max_ltv
    view["covenant_breach"] = breach.astype(np.float64)
    view["fleet_market_value_usd"] = held.market_value.sum(axis=1)
    return view


def _trailing_ratio(numerator: np.ndarray, denominator: np.ndarray, months: int) -> np.ndarray:
    """Sum over the trailing ``months`` (fewer at the start) of one over the other; NaN where
    the denominator is zero."""
    top = np.convolve(numerator, np.ones(months))[: len(numerator)]
    bottom = np.convolve(denominator, np.ones(months))[: len(denominator)]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
