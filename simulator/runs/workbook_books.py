"""The workbook's books: balance sheet, cash-flow statement, covenants and the contract book.

Each sheet shows the mean across paths at each quarter's end (balances) or over the quarter
(flows). Means add up (the mean of a sum is the sum of the means), so every subtotal is a
formula over the lines shown: an analyst who changes a line sees the totals move, and the
formulas recompute to the figures the run wrote (to float rounding). Percentiles do not add
up; they stay in the ``Quarterly`` sheet.

The cash-flow statement is the indirect method: net income, plus depreciation, less gains on
GPUs sold (investing cash) and late-delivery credits (netted in the GPUs paid), plus the
increase in tax payable (tax booked less tax paid) and in deferred revenue (contract
prepayments less the revenue recognised from them and the prepayments kept, which are income
received earlier) is the operating cash flow the ledger's cash postings give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

#: (line, label, sign) of each block; a subtotal row is (None, label, formula kind).
Row = tuple[str | None, str, Any]


def _means(statements: pd.DataFrame, kind: str = "quarter") -> tuple[list[pd.Timestamp], dict]:
    rows = statements[statements["period_kind"] == kind]
    periods = list(dict.fromkeys(rows["period"]))
    return periods, dict(zip(zip(rows["line"], rows["period"], strict=True), rows["mean"], strict=True))


def _column(index: int) -> str:
    """Spreadsheet column letters of a 0-based column index."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def balance_sheet_rows(statements: pd.DataFrame, label: Callable[[pd.Timestamp], str]) -> list[list[tuple]]:
    """Rows of (value, number format, bold): the balance sheet at each quarter's end."""
    periods, mean = _means(statements)
    if not periods:
        return []
    debt = sorted({line for line, _ in mean if line.startswith("debt_") and line != "debt_balance_usd"})
    assets = [("cash_balance_usd", "Cash"), ("deposits_usd", "GPU deposits paid")]
    liabilities = [*((line, "Debt: " + line[5:-4].replace("_", " ")) for line in debt),
                   ("tax_payable_usd", "Income tax payable"), ("deferred_revenue_usd", "Deferred revenue")]
    equity = [("paid_in_capital_usd", "Paid-in capital"), ("retained_earnings_usd", "Retained earnings")]
    out = [[("Balance sheet: mean across paths, USD, quarter end", None, True),
            *((label(period), None, True) for period in periods)]]

    def line_row(line: str, text: str) -> list[tuple]:
        return [(text, None, False), *((float(mean.get((line, p), 0.0)), MONEY, False) for p in periods)]

    def formula_row(text: str, formula: Callable[[str], str]) -> list[tuple]:
        return [(text, None, True), *((formula(_column(1 + i)), MONEY, True) for i in range(len(periods)))]

    row = 2  # the next row's number (1-based, the header is row 1)
    first_asset = row
    for line, text in assets:
        out.append(line_row(line, text))
        row += 1
    out.append(line_row("ppe_cost_usd", "GPUs at cost"))
    out.append(line_row("accumulated_depreciation_usd", "Less accumulated depreciation"))
    cost_row = row
    out.append(formula_row("GPUs, net book value", lambda c, r=cost_row: f"={c}{r}-{c}{r + 1}"))
    row += 3
    net_row = row - 1
    out.append(formula_row("Total assets", lambda c, a=first_asset, n=net_row: f"=SUM({c}{a}:{c}{a + 1})+{c}{n}"))
    assets_row = row
    row += 1
    out.append([])
    row += 1
    totals = []
    for lines, title in ((liabilities, "Total liabilities"), (equity, "Total equity")):
        first = row
        for line, text in lines:
            out.append(line_row(line, text))
            row += 1
        out.append(formula_row(title, lambda c, a=first, b=row - 1: f"=SUM({c}{a}:{c}{b})"))
        totals.append(row)
        row += 1
    liabilities_row, equity_row = totals
    out.append(formula_row("Total liabilities and equity", lambda c: f"={c}{liabilities_row}+{c}{equity_row}"))
    out.append(formula_row("Check: assets − liabilities − equity", lambda c: f"={c}{assets_row}-{c}{row}"))
    out.append([])
    out.append(line_row("fleet_market_value_usd", "Memo: GPUs at market value"))
    return out


def cash_flow_rows(statements: pd.DataFrame, label: Callable[[pd.Timestamp], str]) -> list[list[tuple]]:
    """Rows of the quarterly cash-flow statement (indirect method), subtotals as formulas."""
    periods, mean = _means(statements)
    if not periods:
        return []
    n = len(periods)

    def value(line: str, period: pd.Timestamp, sign: float = 1.0) -> float:
        return sign * float(mean.get((line, period), 0.0))

    out = [[("Cash flow: mean across paths, USD, per quarter", None, True), *((label(p), None, True) for p in periods)]]
    operating = [
        ("Net income", [value("net_income_usd", p) for p in periods]),
        ("Depreciation", [value("depreciation_amortization_usd", p) for p in periods]),
        ("Less gains on GPUs sold (in investing)", [value("gain_on_sale_usd", p, -1) for p in periods]),
        ("Less late-delivery credits (netted in GPUs paid)", [value("late_credits_usd", p, -1) for p in periods]),
        ("Increase in income tax payable", [value("tax_usd", p) - value("tax_paid_usd", p) for p in periods]),
        ("Increase in deferred revenue (contract prepayments)",
         [value("deferred_revenue_change_usd", p) for p in periods]),
    ]
    investing = [("GPUs paid", [value("gpu_payments_usd", p, -1) for p in periods]),
                 ("GPUs sold", [value("sale_proceeds_usd", p) for p in periods])]
    financing = [("Loans drawn", [value("loan_drawn_usd", p) for p in periods]),
                 ("Principal repaid", [value("loan_repaid_usd", p, -1) for p in periods]),
                 ("Equity raised", [value("equity_raised_usd", p) for p in periods])]
    row, totals = 2, []
    for title, block in (("Operating cash flow", operating), ("Investing cash flow", investing),
                         ("Financing cash flow", financing)):
        first = row
        for text, values in block:
            out.append([(text, None, False), *((v, MONEY, False) for v in values)])
            row += 1
        out.append([(title, None, True), *((f"=SUM({_column(1 + i)}{first}:{_column(1 + i)}{row - 1})", MONEY, True)
                                          for i in range(n))])
        totals.append(row)
        row += 1
    out.append([("Net change in cash", None, True),
                *((f"={'+'.join(f'{_column(1 + i)}{t}' for t in totals)}", MONEY, True) for i in range(n))])
    change_row = row
    row += 1
    opening = [mean.get(("cash_balance_usd", periods[i - 1]), 0.0) if i else
               mean.get(("cash_balance_usd", periods[0]), 0.0) - mean.get(("cash_flow_usd", periods[0]), 0.0)
               for i in range(n)]
    out.append([("Cash at the start", None, False), *((float(v), MONEY, False) for v in opening)])
    out.append([("Cash at the end", None, True),
                *((f"={_column(1 + i)}{row}+{_column(1 + i)}{change_row}", MONEY, True) for i in range(n))])
    out.append([("Memo: cash balance the ledger holds", None, False),
                *((value("cash_balance_usd", p), MONEY, False) for p in periods)])
    return out


def covenant_rows(covenants: dict[str, Any] | None, statements: pd.DataFrame,
                  label: Callable[[pd.Timestamp], str]) -> list[list[tuple]]:
    """Per quarter: the probability of a covenant breach with its interval, the DSCR and LTVs."""
    if not covenants:
        return []
    rows = statements[statements["period_kind"] == "quarter"]
    ratio_lines = [line for line in dict.fromkeys(rows["line"]) if line == "dscr" or line.startswith("ltv_")]
    header = ["quarter", "P(breach)", "interval low", "interval high",
              *(f"{line} {q}" for line in ratio_lines for q in ("P10", "P50", "P90"))]
    out = [[(text, None, True) for text in header]]
    by = {(line, period): entry for line, period, entry in zip(rows["line"], rows["period"],
                                                                rows[["p10", "p50", "p90"]].to_numpy(), strict=True)}
    for quarter in covenants.get("breach_by_quarter", []):
        period = pd.Timestamp(quarter["quarter"])
        low, high = quarter["probability_ci"]
        cells = [(label(period), None, False), (quarter["probability"], "0.0%", False), (low, "0.0%", False),
                 (high, "0.0%", False)]
        for line in ratio_lines:
            entry = by.get((line, period))
            cells += [(None if entry is None or not pd.notna(v) else float(v), '0.00"×"', False)
                      for v in (entry if entry is not None else [None] * 3)]
        out.append(cells)
    return out


def contract_rows(book: pd.DataFrame, n_paths: int, label: Callable[[pd.Timestamp], str]) -> list[list[tuple]]:
    """The contract book: per contract and quarter, means over paths (a path without the
    contract counts 0) of GPU-hours contracted and delivered, billing, SLA credits, revenue."""
    if not len(book):
        return []
    figures = ("gpu_hours_contracted", "gpu_hours_delivered", "billing_usd", "sla_credits_usd", "revenue_usd")
    quarters = book.assign(quarter=pd.DatetimeIndex(book["month"]).to_period("Q").start_time,
                           contract=book["contract"].str.split("#").str[0])
    sums = quarters.groupby(["contract", "quarter"], sort=True)[list(figures)].sum() / max(n_paths, 1)
    out = [[(text, None, True) for text in ("contract", "quarter", "GPU-hours contracted", "GPU-hours delivered",
                                            "billing", "SLA credits", "revenue")]]
    for (contract, quarter), row in sums.iterrows():
        out.append([(str(contract), None, False), (label(quarter), None, False),
                    *((float(row[name]), "#,##0" if name.startswith("gpu") else MONEY, False) for name in figures)])
    return out


MONEY = '#,##0.00;[Red]-#,##0.00'
