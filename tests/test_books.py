"""The company's books: a worked neocloud case by hand, to the cent, over two years.

Every figure the assertions compare with is computed here from the case's terms (day counts,
annuity formulas, the tax rule), not read from the simulator.

The case: a company opens 2026 with $20M of cash and $10M of existing debt at 9% (an annuity
with 60 months left), and 512 H100s in service since 2025-01-01 ($25,000 each, a 5-year life,
a year of it gone), sold for two years from 2026-01-01 on a contract at $2.10 per GPU-hour,
25% of its value prepaid at its start (deferred revenue, recognised as 25% of each month's
billing). On 2026-01-01 it orders 128 B200s at $40,000 each, promised in 273 days
(2026-10-01) and delivered 10 days late (a fixed slip); it pays 20% six months (6 × 30.4375
days) before the promised date, i.e. on 2026-04-01 09:00, and the rest on delivery less the
vendor's credit of $50 per GPU-day late. A delayed-draw facility lends 70% of each GPU payment
at 10%, each draw an annuity over 36 months from the month after. The B200s depreciate over 4
years (of 365.25 days) from delivery; their resale value falls 25% a year. One model, served
only on the B200s, has 10 req/s of 1,000 output tokens at $50 per million ($0.05 a request,
$43,200 a day) from delivery on; payroll is $1.2M a month. 2026 loses money, 2027 makes it:
tax at 21% on each year's income less the loss carried in (at most 80% of the income: here the
limit binds, and part of the loss is carried on), paid in April of the next year.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import base_scenario, run

DAY = 86_400.0
PRICE, GPUS, LIFE_DAYS = 40_000.0, 128, 4 * 365.25
DELIVERY = pd.Timestamp("2026-10-11")
REVENUE_PER_DAY = 10 * 86_400 * 1_000 * 50.0 / 1e6  # $43,200
PAYROLL = 1_200_000.0
H100S, H100_PRICE, H100_LIFE_DAYS = 512, 25_000.0, 5 * 365.25
CONTRACT_RATE = 2.10
CONTRACT_PREPAID = 0.25 * H100S * 730 * 24 * CONTRACT_RATE  # two years of 730 days, 25% up front
CENT = 0.01


def neocloud_case(**changes) -> dict:
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": 50.0})
    data["horizon"] = {"start": "2026-01-01", "duration": "24mo", "step": "1h"}
    data["fleet"]["pools"] = [{
        "name": "h100", "gpu": "H100", "count": H100S,
        "acquisition": {"type": "owned", "price_usd": H100_PRICE, "depreciation_years": 5,
                        "in_service_since": "2025-01-01"},
    }, {
        "name": "b200", "gpu": "B200", "count": 0,
        "acquisition": {"type": "owned", "price_usd": PRICE, "depreciation_years": 4,
                        "purchase_terms": {"deposit_share": 0.2, "deposit_before_delivery": "6mo",
                                           "late_credit_usd_per_gpu_day": 50}},
        "orders": [{"at": "2026-01-01", "count": GPUS, "lead_time": "273d", "slip": {"dist": "fixed", "value": "10d"}}],
    }]
    model = data["models"][0]
    model["pools"] = ["b200"]
    model["demand"] = {"base_rps": 10.0, "noise": "none", "input_tokens": 0, "output_tokens": 1000}
    model["capacity_rps"] = 1.0
    data["opex"] = [{"name": "payroll", "usd_per_month": PAYROLL}]
    data["contracts"] = [{"name": "acme", "pool": "h100", "gpus": H100S, "start": "2026-01-01", "term": "24mo",
                          "usd_per_gpu_hour": CONTRACT_RATE, "prepaid_share": 0.25}]
    data["taxes"] = {"rate": 0.21, "basis": "yearly"}
    data["market_value"] = {"B200": {"decay_per_year": 0.25}}
    data["financing"] = {
        "opening_cash_usd": 20e6,
        "facilities": [
            {"name": "existing", "kind": "term_loan", "opening_balance_usd": 10e6, "rate_per_year": 0.09,
             "term_months": 60, "covenants": {"min_dscr": 1.2, "dscr_months": 1}},
            {"name": "gpu_loan", "kind": "delayed_draw", "share_of_capex": 0.7, "pools": ["b200"],
             "rate_per_year": 0.10, "term_months": 36, "covenants": {"max_ltv": 0.9}, "collateral": ["b200"]},
        ],
    }
    data.update(changes)
    return data


def annuity(balance: float, monthly_rate: float, months: int) -> float:
    return balance * monthly_rate / (1 - (1 + monthly_rate) ** -months)


def hand_books() -> pd.DataFrame:
    """Month by month, the case's books as a clerk would keep them."""
    months = pd.date_range("2026-01-01", periods=24, freq="MS")
    days = np.array([(m + pd.offsets.MonthBegin(1) - m).days for m in months], dtype=float)
    served_days = np.where(months < "2026-10-01", 0.0, days)
    served_days[months == "2026-10-01"] = 21.0  # from 10-11 00:00 to the month's end
    billing = days * 24 * H100S * CONTRACT_RATE  # every contracted GPU-hour delivered (no failures)
    revenue = served_days * REVENUE_PER_DAY + billing
    recognised = 0.25 * billing  # out of the prepayment
    prepaid = np.where(months == "2026-01-01", CONTRACT_PREPAID, 0.0)
    depreciation = served_days * PRICE / LIFE_DAYS * GPUS + days * H100_PRICE / H100_LIFE_DAYS * H100S
    deposit, credit = 0.2 * PRICE * GPUS, 10 * GPUS * 50.0
    gpu_cash = np.zeros(24)
    gpu_cash[3] = deposit  # 2026-04-01 09:00
    gpu_cash[9] = PRICE * GPUS - deposit - credit  # 2026-10-11
    other_income = np.where(months == "2026-10-01", credit, 0.0)
    # The existing loan: interest on the month's opening balance, then a level payment.
    term_balance, term_interest, term_principal = 10e6, np.zeros(24), np.zeros(24)
    payment = annuity(10e6, 0.09 / 12, 60)
    for j in range(24):
        term_interest[j] = term_balance * 0.09 / 12
        term_principal[j] = payment - term_interest[j]
        term_balance -= term_principal[j]
    # The GPU loan: 70% of each GPU payment, each draw its own 36-month annuity from the month after.
    tranches, gpu_interest, gpu_principal, drawn = [], np.zeros(24), np.zeros(24), 0.7 * gpu_cash
    for j in range(24):
        for tranche in tranches:
            interest = tranche["balance"] * 0.10 / 12
            principal = tranche["payment"] - interest
            gpu_interest[j] += interest
            gpu_principal[j] += principal
            tranche["balance"] -= principal
        if drawn[j]:
            tranches.append({"balance": drawn[j], "payment": annuity(drawn[j], 0.10 / 12, 36)})
    ebitda = revenue - PAYROLL
    ebt = ebitda - depreciation + other_income - term_interest - gpu_interest
    return pd.DataFrame({
        "month": months, "revenue": revenue, "depreciation": depreciation, "ebitda": ebitda, "ebt": ebt,
        "gpu_cash": gpu_cash, "drawn": drawn, "interest": term_interest + gpu_interest,
        "principal": term_principal + gpu_principal, "term_principal": term_principal,
        "gpu_principal": gpu_principal, "other_income": other_income, "billing": billing,
        "recognised": recognised, "prepaid": prepaid,
    })


def yearly_tax(hand: pd.DataFrame) -> tuple[float, float, float]:
    """2026's tax, 2027's tax and the loss carried out of 2027."""
    ebt_2026 = hand.loc[hand["month"].dt.year == 2026, "ebt"].sum()
    ebt_2027 = hand.loc[hand["month"].dt.year == 2027, "ebt"].sum()
    assert ebt_2026 < 0 < ebt_2027  # the case's premise: a loss, then a profit
    loss = -ebt_2026
    used = min(loss, 0.8 * ebt_2027)
    return 0.0, 0.21 * (ebt_2027 - used), loss - used


@pytest.fixture(scope="module")
def books():
    results = run(neocloud_case(), paths=1)
    return results.pnl.set_index("month"), hand_books()


def test_income_statement_lines_by_hand(books):
    pnl, hand = books
    for ours, theirs in (("revenue_usd", "revenue"), ("depreciation_amortization_usd", "depreciation"),
                         ("ebitda_usd", "ebitda"), ("interest_usd", "interest"), ("ebt_usd", "ebt"),
                         ("other_income_usd", "other_income"), ("loan_drawn_usd", "drawn"),
                         ("loan_repaid_usd", "principal"), ("gpu_payments_usd", "gpu_cash")):
        assert np.allclose(pnl[ours].to_numpy(), hand[theirs].to_numpy(), atol=CENT, rtol=0), ours


def test_tax_of_each_year_with_the_loss_carried_forward(books):
    pnl, hand = books
    tax_2026, tax_2027, carried = yearly_tax(hand)
    by_year = pnl["tax_usd"].groupby(pnl.index.year).sum()
    assert by_year[2026] == pytest.approx(tax_2026, abs=CENT)
    assert by_year[2027] == pytest.approx(tax_2027, abs=CENT)
    assert pnl["tax_paid_usd"].sum() == 0.0  # 2027's tax is due in April 2028, past the horizon
    assert pnl.loc["2027-12-01", "tax_payable_usd"] == pytest.approx(tax_2027, abs=CENT)
    assert pnl.loc["2027-12-01", "carried_loss_usd"] == pytest.approx(-hand.loc[:11, "ebt"].sum(), abs=CENT)
    # 80% of 2027's income does not cover all of 2026's loss: the limit binds, the rest is carried on.
    ebt_2027 = hand.loc[12:, "ebt"].sum()
    assert tax_2027 == pytest.approx(0.21 * 0.2 * ebt_2027)
    assert carried == pytest.approx(-hand.loc[:11, "ebt"].sum() - 0.8 * ebt_2027) and carried > 0


def test_balance_sheet_at_two_month_ends(books):
    pnl, hand = books
    tax_2026, tax_2027, _ = yearly_tax(hand)
    # The H100s' book value at the start: the price less a year (365 days) of a 5-year life.
    h100_book = H100S * H100_PRICE * (H100_LIFE_DAYS - 365) / H100_LIFE_DAYS
    opening_equity = 20e6 + h100_book - 10e6
    for month, j in (("2026-06-01", 5), ("2027-12-01", 23)):
        upto = hand.loc[:j]
        income = upto["ebt"].sum() - (tax_2027 if j == 23 else 0.0)
        cash = (20e6 + upto["revenue"].sum() - upto["recognised"].sum() + upto["prepaid"].sum() - PAYROLL * (j + 1)
                - upto["interest"].sum() - upto["gpu_cash"].sum() + upto["drawn"].sum() - upto["principal"].sum())
        delivered = j >= 9
        expected = {
            "cash_balance_usd": cash,
            "deposits_usd": 0.0 if delivered else 0.2 * PRICE * GPUS,
            "ppe_cost_usd": H100S * H100_PRICE + (PRICE * GPUS if delivered else 0.0),
            "accumulated_depreciation_usd": H100S * H100_PRICE - h100_book + upto["depreciation"].sum(),
            "deferred_revenue_usd": CONTRACT_PREPAID - upto["recognised"].sum(),
            "debt_existing_usd": 10e6 - upto["term_principal"].sum(),
            "debt_gpu_loan_usd": upto["drawn"].sum() - upto["gpu_principal"].sum(),
            "tax_payable_usd": tax_2027 if j == 23 else 0.0,
            "paid_in_capital_usd": opening_equity,
            "retained_earnings_usd": income,
        }
        row = pnl.loc[month]
        for line, value in expected.items():
            assert row[line] == pytest.approx(value, abs=CENT), (month, line)
        assert row["total_assets_usd"] == pytest.approx(
            row["total_liabilities_usd"] + row["total_equity_usd"], abs=CENT)


def test_dscr_and_ltv_in_two_months(books):
    pnl, hand = books
    # DSCR (monthly): (EBITDA − tax paid) / (interest + scheduled principal); no tax is paid.
    for month, j in (("2026-06-01", 5), ("2027-06-01", 17)):
        service = hand.loc[j, "interest"] + hand.loc[j, "principal"]
        assert pnl.loc[month, "dscr"] == pytest.approx(hand.loc[j, "ebitda"] / service, rel=1e-9)
    # LTV of the GPU loan: its balance over the B200s at 75% a year of their age from delivery
    # (before delivery: over the deposit paid); its collateral is the B200 pool alone.
    june = hand.loc[:5]
    assert pnl.loc["2026-06-01", "ltv_gpu_loan"] == pytest.approx(
        (june["drawn"].sum() - june["gpu_principal"].sum()) / (0.2 * PRICE * GPUS), rel=1e-9)
    december = hand.loc[:23]
    age = (pd.Timestamp("2028-01-01") - DELIVERY).days / 365.25
    value = PRICE * GPUS * 0.75 ** age
    h100_book = H100S * H100_PRICE * (H100_LIFE_DAYS - 730 - 365) / H100_LIFE_DAYS  # no H100 curve: at book
    assert pnl.loc["2027-12-01", "fleet_market_value_usd"] == pytest.approx(value + h100_book, rel=1e-9)
    assert pnl.loc["2027-12-01", "ltv_gpu_loan"] == pytest.approx(
        (december["drawn"].sum() - december["gpu_principal"].sum()) / value, rel=1e-9)


def test_covenant_breach_by_quarter_with_its_interval():
    # Five identical paths (no randomness): the DSCR covenant (1.2, monthly) fails every month
    # until the B200s earn (EBITDA negative), so every path breaches in each quarter of 2026;
    # from 2027 each month's DSCR is the hand figure, checked against 1.2 here.
    results = run(neocloud_case(), paths=5)
    hand = hand_books()
    service = hand["interest"] + hand["principal"]
    monthly_breach = (hand["ebitda"] / service) < 1.2
    quarters = results.summary["covenants"]["breach_by_quarter"]
    assert len(quarters) == 8
    for q, row in enumerate(quarters):
        expected = bool(monthly_breach[3 * q: 3 * q + 3].any())
        assert row["probability"] == (1.0 if expected else 0.0)
        # Wilson at 90% with n = 5: all or none breached gives [0.649, 1] or [0, 0.351].
        z2, n = 1.6448536269514722 ** 2, 5
        p = 1.0 if expected else 0.0
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = np.sqrt(z2) / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        assert row["probability_ci"] == pytest.approx([max(centre - half, 0.0), min(centre + half, 1.0)], abs=1e-9)
    assert any(not bool(monthly_breach[3 * q: 3 * q + 3].any()) for q in range(8))  # some quarter passes


def _evaluate(sheet, reference: str, seen: tuple = ()) -> float:
    """A cell's value, its formula worked out (the sheets use only +, - and SUM over a column range)."""
    import re

    value = sheet[reference].value
    if not (isinstance(value, str) and value.startswith("=")):
        return 0.0 if value is None else float(value)
    assert reference not in seen, f"circular formula at {reference}"
    total = 0.0
    for sign, term in re.findall(r"([+-]?)((?:SUM\([A-Z]+\d+:[A-Z]+\d+\))|(?:[A-Z]+\d+))", value[1:]):
        if term.startswith("SUM"):
            column, first, _, last = re.match(r"SUM\(([A-Z]+)(\d+):([A-Z]+)(\d+)\)", term).groups()
            part = sum(_evaluate(sheet, f"{column}{r}", (*seen, reference)) for r in range(int(first), int(last) + 1))
        else:
            part = _evaluate(sheet, term, (*seen, reference))
        total += -part if sign == "-" else part
    return total


def test_the_workbook_balance_sheet_and_cash_flow_recompute_from_their_formulas(tmp_path):
    from openpyxl import load_workbook

    results = run(neocloud_case(), paths=3)
    results.save(tmp_path / "run")
    book = load_workbook(tmp_path / "run" / "statements.xlsx")
    assert {"Balance sheet", "Cash flow statement", "Covenants", "Contract book"} <= set(book.sheetnames)
    contract_sheet = book["Contract book"]
    rows = list(contract_sheet.iter_rows(min_row=2, values_only=True))
    assert [row[0] for row in rows] == ["acme"] * 8  # eight quarters of the two-year contract
    assert sum(row[6] for row in rows) == pytest.approx(hand_books()["billing"].sum(), abs=CENT)
    quarterly = results.statements[results.statements["period_kind"] == "quarter"]
    mean = dict(zip(zip(quarterly["line"], quarterly["period"], strict=True), quarterly["mean"], strict=True))
    periods = list(dict.fromkeys(quarterly["period"]))
    sheet = book["Balance sheet"]
    labels = {sheet.cell(row=r, column=1).value: r for r in range(1, sheet.max_row + 1)}
    formulas = 0
    for i, period in enumerate(periods):
        column = chr(ord("B") + i)
        for label, line in (("Total assets", "total_assets_usd"), ("Total liabilities", "total_liabilities_usd"),
                            ("Total equity", "total_equity_usd"), ("GPUs, net book value", "ppe_net_usd")):
            cell = f"{column}{labels[label]}"
            formulas += str(sheet[cell].value).startswith("=")
            assert _evaluate(sheet, cell) == pytest.approx(mean[(line, period)], abs=CENT), (label, period)
        assert abs(_evaluate(sheet, f"{column}{labels['Check: assets − liabilities − equity']}")) < CENT
    assert formulas == 4 * len(periods)
    # An analyst changes a line: the totals move with it.
    sheet[f"B{labels['Cash']}"].value = float(sheet[f"B{labels['Cash']}"].value) + 1_000.0
    assert _evaluate(sheet, f"B{labels['Total assets']}") == pytest.approx(mean[("total_assets_usd", periods[0])] + 1_000,
                                                                          abs=CENT)
    flows = book["Cash flow statement"]
    rows = {flows.cell(row=r, column=1).value: r for r in range(1, flows.max_row + 1)}
    for i, period in enumerate(periods):
        column = chr(ord("B") + i)
        for label, line in (("Operating cash flow", "operating_cash_flow_usd"),
                            ("Investing cash flow", "investing_cash_flow_usd"),
                            ("Financing cash flow", "financing_cash_flow_usd"), ("Net change in cash", "cash_flow_usd"),
                            ("Cash at the end", "cash_balance_usd")):
            assert _evaluate(flows, f"{column}{rows[label]}") == pytest.approx(mean[(line, period)], abs=CENT), label
    labels_shown = [str(row[0].value) for row in book["Balance sheet"].iter_rows() if row[0].value is not None]
    assert book["Balance sheet"].column_dimensions["A"].width >= max(map(len, labels_shown))  # no label cut
    covenants = book["Covenants"]
    assert covenants.cell(row=2, column=2).value == 1.0  # 2026 Q1: every path breaches the DSCR test


def test_the_report_shows_the_books_and_the_covenants(tmp_path):
    import yaml
    from click.testing import CliRunner

    from simulator.cli import main

    path = tmp_path / "neocloud.yaml"
    path.write_text(yaml.safe_dump(neocloud_case(), sort_keys=False))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(out), "--paths", "2", "-q"])
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    for line in ("Total assets", "Total liabilities", "Total equity", "Investing cash flow", "Financing cash flow",
                 "GPU deposits paid", "debt: gpu loan", "DSCR (trailing, period end)", "LTV: gpu loan",
                 "Covenant breached (any month)", "Covenant breach", "Contract book", "Deferred revenue"):
        assert line in html, line
    assert "100% of paths" in html  # 2026's quarters: every path breaches


def test_options_compare_by_money_and_cash():
    from simulator.report.headline import headline_figures

    cheap = neocloud_case()
    cheap["fleet"]["pools"][1]["orders"][0]["count"] = 64  # half the B200s
    runs = {"full": run(neocloud_case(), paths=2), "half": run(cheap, paths=2)}
    table = headline_figures({name: result.summary for name, result in runs.items()})
    for name, result in runs.items():
        pnl = result.pnl.sort_values(["path", "month"])
        by_path = pnl.groupby("path")
        assert table.loc[name, "capex_usd_p50"] == pytest.approx(np.median(by_path["capex_usd"].sum()), abs=CENT)
        assert table.loc[name, "net_income_usd_p50"] == pytest.approx(np.median(by_path["net_income_usd"].sum()),
                                                                       abs=CENT)
        assert table.loc[name, "lowest_cash_usd_p50"] == pytest.approx(np.median(by_path["cash_balance_usd"].min()),
                                                                        abs=CENT)
        assert table.loc[name, "cash_end_usd_p50"] == pytest.approx(np.median(by_path["cash_balance_usd"].last()),
                                                                     abs=CENT)
        assert table.loc[name, "debt_end_usd_p50"] == pytest.approx(np.median(by_path["debt_balance_usd"].last()),
                                                                     abs=CENT)
    assert table.loc["half", "capex_usd_p50"] == pytest.approx(64 * PRICE)
    assert table.loc["full", "capex_usd_p50"] == pytest.approx(128 * PRICE)


def test_a_new_term_loan_without_a_start_is_drawn_in_the_first_month():
    # $1.2M at 12% a year, straight over 12 months: drawn in January (no start given), interest
    # 1% a month on the opening balance from February, $100,000 of principal a month.
    data = base_scenario()
    data["horizon"] = {"start": "2026-01-01", "duration": "3mo", "step": "1d"}
    data["financing"] = {"facilities": [{"name": "tl", "kind": "term_loan", "amount_usd": 1.2e6,
                                         "rate_per_year": 0.12, "term_months": 12, "amortization": "straight",
                                         "upfront_fee_share": 0.01}]}
    pnl = run(data, paths=1).pnl
    assert list(pnl["loan_drawn_usd"]) == pytest.approx([1.2e6, 0.0, 0.0])
    assert list(pnl["financing_fees_usd"]) == pytest.approx([12_000.0, 0.0, 0.0])
    assert list(pnl["interest_usd"]) == pytest.approx([0.0, 12_000.0, 11_000.0])
    assert list(pnl["debt_tl_usd"]) == pytest.approx([1.2e6, 1.1e6, 1.0e6])


def test_the_workbook_cash_flow_holds_with_prepayments_kept():
    # 10 GPUs contracted on a pool of 8 for one month, half prepaid, $3 per GPU-hour missing: the
    # unused prepayment is kept (other income) and must not be taken out twice in the indirect method.
    from openpyxl import load_workbook

    data = base_scenario()
    data["horizon"] = {"start": "2026-01-01", "duration": "3mo", "step": "1d"}
    data["contracts"] = [{"name": "c", "pool": "a", "gpus": 10, "start": "2026-01-01", "term": "1mo",
                          "usd_per_gpu_hour": 2.0, "prepaid_share": 0.5, "sla_credit_usd_per_gpu_hour": 3.0}]
    results = run(data, paths=1)
    assert results.pnl["other_income_usd"].sum() > 0  # a prepayment was kept
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        results.save(Path(folder) / "run", report=False)
        sheet = load_workbook(Path(folder) / "run" / "statements.xlsx")["Cash flow statement"]
        rows = {sheet.cell(row=r, column=1).value: r for r in range(1, sheet.max_row + 1)}
        cash = results.pnl["cash_balance_usd"].iloc[-1]
        assert _evaluate(sheet, f"B{rows['Cash at the end']}") == pytest.approx(cash, abs=CENT)
