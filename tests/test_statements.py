"""Financial statements a CFO would sign (issue 16): opex below gross margin, EBITDA to net
income, cash and debt, loans with a cap, unit economics per model, spreadsheet export.

Every figure is worked out by hand in the comments, to the cent.
"""

from __future__ import annotations

import os

import openpyxl
import pandas as pd
import pytest

from tests.helpers import base_scenario, run


def _two_months(**financing) -> dict:
    # January and February 2026 (31 + 28 days), hourly. 64 owned GPUs at $30,000 = $1,920,000
    # paid on day one, depreciated over 4 years of 365.25 days: $1,920,000 x 31 / 1,461 =
    # $40,739.22 in January, x 28 / 1,461 = $36,796.71 in February. 4 req/s of 1,000 input
    # and 200 output tokens at $1 / $2 per 1M = $0.0014 a request: 10,713,600 requests in
    # January ($14,999.04), 9,676,800 in February ($13,547.52). Payroll $120,000 a month.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "59d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=64, acquisition={"type": "owned", "price_usd": 30000,
                                                            "depreciation_years": 4})
    data["pricing"] = {"input_usd_per_1m": 1.0, "output_usd_per_1m": 2.0}
    data["opex"] = [{"name": "payroll", "usd_per_month": 120000}]
    data["financing"] = {"opening_cash_usd": 2e6, "share_of_capex": 1.0, "cap_usd": 5e6, "rate_per_year": 0.11,
                         "term_years": 3, **financing}
    return data


def test_two_months_of_statements_by_hand_to_the_cent():
    # Loan: $1,920,000 drawn in January (under the $5M cap), repaid from February at 11%/12 a
    # month over 36 months: payment 1,920,000 x r / (1 - (1 + r)^-36) = $62,858.34, of which
    # interest 1,920,000 x 0.11 / 12 = $17,600.00 and principal $45,258.34.
    # January: gross profit 14,999.04 - 40,739.22 = -25,740.18; EBITDA 14,999.04 - 120,000 =
    #   -105,000.96; EBIT -145,740.18; no interest; net income -145,740.18.
    #   Cash: 2,000,000 - 105,000.96 - 1,920,000 + 1,920,000 = 1,894,999.04; debt 1,920,000.
    # February: EBITDA 13,547.52 - 120,000 = -106,452.48; EBIT -106,452.48 - 36,796.71 =
    #   -143,249.19; EBT (and net income) -160,849.19.
    #   Cash: 1,894,999.04 - 106,452.48 - 17,600 - 45,258.34 = 1,725,688.22; debt 1,874,741.66.
    pnl = run(_two_months()).pnl
    expected = {
        "revenue_usd": [14_999.04, 13_547.52],
        "cogs_usd": [40_739.22, 36_796.71],
        "gross_margin_usd": [-25_740.18, -23_249.19],
        "opex_payroll_usd": [120_000.00, 120_000.00],
        "opex_usd": [120_000.00, 120_000.00],
        "ebitda_usd": [-105_000.96, -106_452.48],
        "depreciation_amortization_usd": [40_739.22, 36_796.71],
        "ebit_usd": [-145_740.18, -143_249.19],
        "interest_usd": [0.00, 17_600.00],
        "net_income_usd": [-145_740.18, -160_849.19],
        "capex_usd": [1_920_000.00, 0.00],
        "loan_drawn_usd": [1_920_000.00, 0.00],
        "loan_repaid_usd": [0.00, 45_258.34],
        "cash_balance_usd": [1_894_999.04, 1_725_688.22],
        "debt_balance_usd": [1_920_000.00, 1_874_741.66],
    }
    for column, values in expected.items():
        assert pnl[column].round(2).tolist() == values, column
    assert (pnl["interest_usd"] + pnl["loan_repaid_usd"]).round(2).tolist()[1] == 62_858.34


def test_a_loan_cap_leaves_the_rest_of_the_purchase_to_cash_and_tax_falls_on_profit_only():
    # Capped at $1,000,000: January's draw is $1,000,000, so cash ends January at
    # 2,000,000 - 105,000.96 - 1,920,000 + 1,000,000 = 974,999.04 and the payment on the
    # capped loan is 1,000,000 x r / (1 - (1 + r)^-36) = $32,738.72 (interest $9,166.67).
    # Tax at 25% of a loss is 0.
    data = _two_months(cap_usd=1e6)
    data["taxes"] = {"rate": 0.25}
    pnl = run(data).pnl
    assert pnl["loan_drawn_usd"].tolist() == [1e6, 0.0]
    assert pnl["cash_balance_usd"].round(2).tolist()[0] == 974_999.04
    assert round(pnl["interest_usd"].iloc[1], 2) == 9_166.67
    assert round(pnl["interest_usd"].iloc[1] + pnl["loan_repaid_usd"].iloc[1], 2) == 32_738.72
    assert (pnl["tax_usd"] == 0).all()
    # With prices 100 times higher January's EBT is positive and taxed at 25%:
    # revenue 1,499,904.00; EBIT 1,499,904 - 40,739.2197 - 120,000 = 1,339,164.7803 (no interest
    # in January); tax 334,791.1951 -> 334,791.20; net income 1,004,373.5852 -> 1,004,373.59.
    data["pricing"] = {"input_usd_per_1m": 100.0, "output_usd_per_1m": 200.0}
    january = run(data).pnl.iloc[0]
    assert round(january["tax_usd"], 2) == 334_791.20
    assert round(january["net_income_usd"], 2) == 1_004_373.59


def test_opex_is_per_calendar_month_with_growth_steps_and_partial_months():
    # Horizon 2026-01-15 to 2026-04-15. payroll: $100,000 a month growing 10% a month from
    # January: January 100,000 x 17/31 (the horizon covers 17 of its 31 days), February
    # 110,000 (28 days cost what 31 do), March 121,000, April 133,100 x 14/30.
    # office: $9,000 from 2026-02-01, $12,000 from 2026-03-16 (16 days of March at 12,000).
    data = base_scenario(horizon={"start": "2026-01-15", "duration": "90d", "step": "1h"})
    data["opex"] = [
        {"name": "payroll", "usd_per_month": 100000, "growth_per_month": 0.1},
        {"name": "office", "usd_per_month": 9000, "start": "2026-02-01", "steps": [{"at": "2026-03-16", "usd_per_month": 12000}]},
    ]
    pnl = run(data).pnl
    assert pnl["opex_payroll_usd"].round(2).tolist() == [round(100_000 * 17 / 31, 2), 110_000.0, 121_000.0,
                                                          round(133_100 * 14 / 30, 2)]
    assert pnl["opex_office_usd"].round(2).tolist() == [0.0, 9_000.0, round(9_000 * 15 / 31 + 12_000 * 16 / 31, 2),
                                                         round(12_000 * 14 / 30, 2)]
    # Opex sits below gross margin: COGS and gross margin do not move.
    bare = run(base_scenario(horizon={"start": "2026-01-15", "duration": "90d", "step": "1h"})).pnl
    pd.testing.assert_series_equal(pnl["gross_margin_usd"], bare["gross_margin_usd"])
    assert (pnl["ebit_usd"] == bare["ebit_usd"] - pnl["opex_usd"]).all()


def _shared_pool() -> dict:
    # One owned pool of 10 GPUs at $8,766 over 1 year of 365.25 days: $1 per GPU-hour, $10 an
    # hour for the pool. 1-GPU replicas of 1 req/s: `a` at 6 req/s holds 6 GPUs, `b` at 2 req/s
    # holds 2; the 2 idle GPUs are carried in the same proportion, so a bears 6/8 of $240 a day
    # = $180 and b $60. Other costs $30.4375 a month = $1 a day, also split 6/8 : 2/8.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "1d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=10, acquisition={"type": "owned", "price_usd": 8766,
                                                            "depreciation_years": 1})
    data["other_costs"] = {"usd_per_month": 30.4375}
    data["models"] = [
        {"name": "a", "pools": ["a"], "gpus_per_replica": 1, "capacity_rps": 1.0,
         "pricing": {"input_usd_per_1m": 1.0, "output_usd_per_1m": 3.0},
         "demand": {"base_rps": 6.0, "noise": "none", "input_tokens": 1000, "output_tokens": 200}},
        {"name": "b", "pools": ["a"], "gpus_per_replica": 1, "capacity_rps": 1.0,
         "pricing": {"input_usd_per_1m": 0.0, "output_usd_per_1m": 2.0},
         "demand": {"base_rps": 2.0, "noise": "none", "input_tokens": 300, "output_tokens": 500}},
    ]
    return data


def test_unit_economics_of_two_models_sharing_a_pool_by_hand():
    # a: cost $180.75. Its cost splits by what its tokens sell for: input 1,000 x $1 against
    # output 200 x $3, so 1,000 : 600 and output carries 600/1,600 = $67.78125. It serves
    # 6 x 86,400 = 518,400 requests, 103.68 M output tokens: $0.65375... per 1M output tokens
    # (67.78125 / 103.68), 180.75 / 518.4 M input... per request $180.75 / 518,400.
    # b: cost $60.25, all on output (input is free): 2 x 86,400 x 500 = 86.4 M output tokens,
    # $0.697338 per 1M.
    result = run(_shared_pool())
    whole = result.unit_economics[result.unit_economics["month"].isna()].set_index("model")
    assert whole.loc["a", "cogs_usd"] == pytest.approx(180.75)
    assert whole.loc["b", "cogs_usd"] == pytest.approx(60.25)
    assert whole.loc["a", "cost_per_1m_output_tokens_usd"] == pytest.approx(180.75 * 600 / 1600 / 103.68)
    assert whole.loc["a", "cost_per_1m_input_tokens_usd"] == pytest.approx(180.75 * 1000 / 1600 / 518.4)
    assert whole.loc["b", "cost_per_1m_output_tokens_usd"] == pytest.approx(60.25 / 86.4)
    assert whole.loc["a", "cost_per_request_usd"] == pytest.approx(180.75 / 518_400)
    assert whole.loc["a", "gpu_hours"] == pytest.approx(6 * 24) and whole.loc["b", "gpu_hours"] == pytest.approx(2 * 24)
    # The models carry the whole COGS: nothing is left unallocated.
    assert whole.loc["unallocated", "cogs_usd"] == pytest.approx(0.0, abs=1e-9)
    assert whole.loc[["a", "b"], "cogs_usd"].sum() == pytest.approx(result.pnl["cogs_usd"].sum())
    # Revenue and margin per model: a 518,400 x (1,000 x $1 + 200 x $3) / 1M = $829.44.
    assert whole.loc["a", "revenue_usd"] == pytest.approx(829.44)
    assert whole.loc["a", "gross_margin_usd"] == pytest.approx(829.44 - 180.75)
    assert result.summary["unit_economics"]["b"]["cogs_usd"] == pytest.approx(60.25)


def test_the_spreadsheet_and_the_csv_hold_the_numbers_of_the_parquet(tmp_path):
    result = run(_two_months(), paths=2)
    directory = result.save(tmp_path / "run", report=False)
    parquet = pd.read_parquet(directory / "pnl.parquet")
    csv = pd.read_csv(directory / "pnl.csv", parse_dates=["month"])
    pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)
    book = openpyxl.load_workbook(directory / "statements.xlsx")
    assert {"Monthly", "Quarterly", "Yearly", "Cash flow", "Unit economics", "P&L by path", "Assumptions"} <= set(
        book.sheetnames)
    sheet = book["P&L by path"]
    header = [cell.value for cell in sheet[1]]
    rows = [[cell.value for cell in row] for row in sheet.iter_rows(min_row=2)]
    assert len(rows) == len(parquet)
    for column in ("revenue_usd", "net_income_usd", "cash_balance_usd", "debt_balance_usd"):
        got = [row[header.index(column)] for row in rows]
        # Numbers, not text, and the same numbers (a spreadsheet keeps 15 significant digits).
        assert all(isinstance(value, int | float) for value in got), column
        assert got == pytest.approx(parquet[column].tolist(), rel=1e-14, abs=1e-9), column
    # The yearly statement's P50 net income for 2026 is the sum of the months (same on both paths).
    yearly = book["Yearly"]
    labels = [row[0].value for row in yearly.iter_rows(min_row=1, max_row=40)]
    net = yearly.cell(labels.index("Net income") + 1, 2)
    assert net.value == pytest.approx(parquet[parquet["path"] == 0]["net_income_usd"].sum())
    assert isinstance(net.value, int | float) and "#,##0" in net.number_format
    assumptions = {row[0].value: row[1].value for row in book["Assumptions"].iter_rows(min_row=2)}
    assert assumptions["financing.cap_usd"] == 5e6 and assumptions["opex[0].name"] == "payroll"


def test_statements_roll_months_up_to_quarters_and_years_and_cash_runs_out(tmp_path):
    # No loan and $1M of opening cash against $1.92M of capex: cash is negative from January,
    # the first month (no runway); a year of payroll on top keeps it so.
    data = _two_months(share_of_capex=0.0, opening_cash_usd=1e6)
    data["horizon"]["duration"] = "365d"
    result = run(data)
    table = result.statements
    yearly = table[(table["period_kind"] == "year") & (table["line"] == "opex_usd")]
    assert yearly["p50"].tolist() == pytest.approx([12 * 120_000])
    quarters = table[(table["period_kind"] == "quarter") & (table["line"] == "cash_balance_usd")]
    months = result.pnl.set_index("month")["cash_balance_usd"]
    assert quarters["p50"].tolist() == pytest.approx(
        [months[pd.Timestamp(f"2026-{m:02d}-01")] for m in (3, 6, 9, 12)])
    cash = result.summary["cash"]
    assert cash["negative_probability"] == 1.0
    assert cash["first_negative_month"]["p50"].startswith("2026-01-01") and cash["runway_months"]["p50"] == 0
    assert cash["lowest_balance_usd"]["p50"] == pytest.approx(months.min())


def test_opex_is_booked_for_a_month_in_which_no_step_starts():
    # Steps of 1mo (30.4375 days) from 2026-01-01 start on Jan 1, Jan 31, Mar 2, …: no step
    # starts in February, whose payroll is paid all the same. Twelve such steps end 365.25 days
    # on, 6 h into January 2027: 12 months of $1,000 and 6/744 of a thirteenth.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "12mo", "step": "1mo"})
    data["opex"] = [{"name": "payroll", "usd_per_month": 1000}]
    pnl = run(data).pnl
    assert pd.Timestamp("2026-02-01") in set(pnl["month"])
    assert pnl["opex_usd"].sum() == pytest.approx(12_000 + 1000 * 6 / 744)


@pytest.mark.parametrize("interrupt_at_cell", [40, 400])
def test_an_interrupt_while_the_spreadsheet_streams_leaves_no_half_open_sheet(monkeypatch, interrupt_at_cell):
    # Ctrl-C lands while the write-only sheets are open. Left to the garbage collector, a
    # sheet's rows are closed after its file and Python prints an "exception ignored"
    # traceback on stderr: the interrupted run must stop quietly instead.
    import gc
    import sys

    import openpyxl.cell
    import openpyxl.worksheet._writer

    from simulator.runs.workbook import workbook_bytes

    result = run(_two_months(), paths=2)
    made = []

    make_cell = openpyxl.cell.WriteOnlyCell

    def interrupting_cell(*args, **kwargs):
        made.append(1)
        if len(made) == interrupt_at_cell:
            raise KeyboardInterrupt
        return make_cell(*args, **kwargs)

    ignored = []
    monkeypatch.setattr(openpyxl.cell, "WriteOnlyCell", interrupting_cell)
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    temporary = set(openpyxl.worksheet._writer.ALL_TEMP_FILES)
    with pytest.raises(KeyboardInterrupt):
        workbook_bytes(result, "a: 1\n")
    gc.collect()
    assert len(made) == interrupt_at_cell and ignored == []
    # Its sheets' temporary files are gone too (openpyxl removes them only at a normal
    # interpreter exit, which a forked writer never makes).
    left = set(openpyxl.worksheet._writer.ALL_TEMP_FILES) - temporary
    assert not [path for path in left if os.path.exists(path)]
