"""Inputs that catch the slip a person makes: valid values almost certainly mistyped are refused
(a growth of 8 a month, the 0.9th percentile, a 30-second TPOT) or warned about (a price above
$1,000 per 1M tokens, an event dated where it has no effect) until confirmed with ``--accept`` or
written so they cannot be a slip (``800%``, ``30s``); unknown names get a "did you mean"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.scenario import load_scenario as validate_only
from simulator.scenario.percent import percentage
from simulator.scenario.plausibility import CHECKS
from tests.helpers import base_scenario

BASE = """\
name: slips
horizon: {start: 2026-01-01, duration: 60d, step: 1d}
fleet:
  pools:
    - name: h100-owned
      gpu: H100
      count: 16
      orders:
        - {at: 2026-02-01, count: 8, lead_time: 10d}
models:
  - name: chat
    pools: [h100-owned]
    capacity_rps: 5
    demand:
      base_rps: 10
      growth: {kind: exponential, rate_per_month: 0.08}
pricing: {input_usd_per_1m: 0.9, output_usd_per_1m: 2.5}
energy: {pue: 1.3}
"""
SERVED = BASE.replace(
    "    capacity_rps: 5\n",
    "    serving:\n      model: llama-3.1-8b\n      tp: 1\n"
    "      slo: {ttft_s: 2.0, ttft_percentile: 90, tpot_s: 0.1, tpot_percentile: 99}\n")
FORECAST = BASE.replace(
    "      growth: {kind: exponential, rate_per_month: 0.08}\n",
    "      growth: {kind: exponential, rate_per_month: 0.08}\n"
    "      forecast: {origin: '2026-01-01', period_s: 86400, alpha: 0.3, sigma: 0.05,\n"
    "                 regime: {after_months: 1, rate_per_month: 0.05, probability: 1}}\n")


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line holding ``needle`` (found here, not by the loader)."""
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def cli(*args: str):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def resolved(result) -> dict:
    return yaml.safe_load(result.stdout)


def assert_refused(result, path: str, line: int | None, *words: str) -> None:
    """Exit 2, one line naming the field path and line, no traceback."""
    assert result.exit_code == 2, result.output
    message = result.stderr
    assert message.startswith(f"error: {path}: ") and message.count("\n") == 1, message
    assert "Traceback" not in message
    if line is not None:
        assert message.rstrip().endswith(f"(line {line})"), message
    for word in words:
        assert word in message, (word, message)


# --- growth: refused ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "written", "path", "value", "meant"), [
    (BASE, "rate_per_month: 0.08", "models[0].demand.growth.rate_per_month", "8", "did you mean 8% (0.08)?"),
    (BASE, "{kind: exponential, rate_per_month: 0.08}", "models[0].demand.growth.increase_per_month", "3.5",
     "did you mean 3.5% (0.035)?"),
    (FORECAST, "rate_per_month: 0.05", "models[0].demand.forecast.regime.rate_per_month", "5",
     "did you mean 5% (0.05)?"),
])
def test_a_monthly_growth_of_1_or_more_is_refused_with_what_was_meant(tmp_path, text, written, path, value, meant):
    if "increase" in path:
        slipped = text.replace(written, f"{{kind: linear, increase_per_month: {value}}}")
        anchor = "increase_per_month"
    else:
        slipped = text.replace(written, f"rate_per_month: {value}", 1) if "regime" not in path else \
            text.replace("regime: {after_months: 1, rate_per_month: 0.05", f"regime: {{after_months: 1, "
                         f"rate_per_month: {value}")
        anchor = "regime" if "regime" in path else "rate_per_month"
    scenario = write(tmp_path, slipped)
    out = tmp_path / "out"
    result = cli("run", scenario, "--out", out, "-q", "--no-report")
    percent = f"{float(value) * 100:.0f}%"  # +800% a month, by hand
    assert_refused(result, path, line_of(slipped, anchor), f"{value} is +{percent} a month", meant,
                   f"write {percent} or pass --accept growth")
    assert not out.exists()


def test_an_opex_line_growing_100_percent_a_month_is_refused(tmp_path):
    text = BASE + "opex:\n  - {name: rent, usd_per_month: 1000, growth_per_month: 1}\n"
    result = cli("validate", write(tmp_path, text))
    assert_refused(result, "opex[0].growth_per_month", line_of(text, "growth_per_month"), "1 is +100% a month",
                   "did you mean 1% (0.01)?")


def test_a_refused_growth_is_taken_with_accept_and_recorded(tmp_path):
    scenario = write(tmp_path, BASE.replace("rate_per_month: 0.08", "rate_per_month: 8"))
    result = cli("validate", scenario, "--accept", "growth")
    assert result.exit_code == 0, result.output
    data = resolved(result)
    assert data["models"][0]["demand"]["growth"]["rate_per_month"] == 8.0
    assert data["accept"] == ["growth"]
    line = line_of(BASE, "rate_per_month")
    assert data["plausibility_notes"] == [
        f"growth: models[0].demand.growth.rate_per_month: 8 is +800% a month: did you mean 8% (0.08)? "
        f"(if meant, write 800% or pass --accept growth) (line {line}): accepted"]


def test_accept_in_the_scenario_confirms_as_the_option_does(tmp_path):
    scenario = write(tmp_path, BASE.replace("rate_per_month: 0.08", "rate_per_month: 8") + "accept: [growth]\n")
    result = cli("validate", scenario)
    assert result.exit_code == 0, result.output
    assert resolved(result)["models"][0]["demand"]["growth"]["rate_per_month"] == 8.0


def test_800_percent_is_an_unambiguous_growth_and_the_resolved_file_reads_back(tmp_path):
    scenario = write(tmp_path, BASE.replace("rate_per_month: 0.08", "rate_per_month: 800%"))
    result = cli("validate", scenario)
    assert result.exit_code == 0 and result.stderr.startswith("ok: "), result.output
    data = resolved(result)
    assert data["models"][0]["demand"]["growth"]["rate_per_month"] == 8.0
    assert data["accept"] == ["growth"]  # so that the resolved file, which says 8.0, reads back as meant
    again = cli("validate", write(tmp_path, result.stdout, "resolved.yaml"))
    assert again.exit_code == 0, again.output
    assert resolved(again)["models"][0]["demand"]["growth"]["rate_per_month"] == 8.0


def test_8_percent_resolves_exactly_as_0_08(tmp_path):
    decimal = cli("validate", write(tmp_path, BASE, "decimal.yaml"))
    percent = cli("validate", write(tmp_path, BASE.replace("rate_per_month: 0.08", "rate_per_month: 8%"), "pct.yaml"))
    assert decimal.exit_code == percent.exit_code == 0
    assert resolved(percent)["models"][0]["demand"]["growth"]["rate_per_month"] == 0.08
    assert percent.stdout == decimal.stdout


def test_percentages_are_read_exactly_wherever_a_share_or_rate_is_taken(tmp_path):
    text = BASE.replace("energy: {pue: 1.3}", "energy: {pue: 1.3, draw_fraction: 70%, idle_draw_fraction: 0.7%}")
    text += "taxes: {rate: 21%}\nfinancing: {rate_per_year: 7.5%}\n"
    result = cli("validate", write(tmp_path, text))
    assert result.exit_code == 0, result.output
    data = resolved(result)
    assert (data["energy"]["draw_fraction"], data["energy"]["idle_draw_fraction"]) == (0.7, 0.007)
    assert (data["taxes"]["rate"], data["financing"]["rate_per_year"]) == (0.21, 0.075)
    assert (percentage("12.5%"), percentage(" 3 %"), percentage("-20%"), percentage("8")) == (0.125, 0.03, -0.2, None)


def test_a_distribution_may_be_written_in_percent(tmp_path):
    text = BASE.replace("rate_per_month: 0.08", "rate_per_month: {dist: uniform, low: 5%, high: 25%}")
    result = cli("validate", write(tmp_path, text))
    assert result.exit_code == 0, result.output
    data = resolved(result)
    spec = data["uncertain"]["models[0].demand.growth.rate_per_month"]
    assert (spec["low"], spec["high"]) == (0.05, 0.25)
    assert data["models"][0]["demand"]["growth"]["rate_per_month"] == pytest.approx(0.15, abs=1e-15)


def test_paths_drawing_a_growth_above_100_percent_run_when_the_distribution_says_so(tmp_path):
    text = BASE.replace("rate_per_month: 0.08", "rate_per_month: {dist: uniform, low: 50%, high: 150%}")
    text += "paths: 8\n"
    out = tmp_path / "out"
    result = cli("run", write(tmp_path, text), "--out", out, "-q", "--no-report", "--seed", "3")
    assert result.exit_code == 0, result.output  # each path's draw is validated, never taken for a slip
    resolved_text = yaml.safe_load((out / "scenario.resolved.yaml").read_text())
    assert resolved_text["uncertain"]["models[0].demand.growth.rate_per_month"]["high"] == 1.5
    assert resolved_text["accept"] == ["growth"]  # 150% is a growth above 100% written unambiguously
    again = cli("validate", out / "scenario.resolved.yaml")
    assert again.exit_code == 0 and again.stderr.startswith("ok: "), again.output


def test_a_percentage_where_no_share_is_taken_is_refused(tmp_path):
    text = BASE.replace("energy: {pue: 1.3}", "energy: {pue: 130%}")
    result = cli("validate", write(tmp_path, text))
    assert_refused(result, "energy.pue", line_of(text, "pue"), "not a percentage", "'130%'")


def test_a_variant_is_checked_and_takes_percentages_too(tmp_path):
    text = BASE + "variants:\n  fast: {'models[0].demand.growth.rate_per_month': 8}\n"
    result = cli("validate", write(tmp_path, text))
    assert_refused(result, "variants.fast.models[0].demand.growth.rate_per_month", line_of(text, "fast:"),
                   "8 is +800% a month")
    text = BASE + "variants:\n  fast: {'models[0].demand.growth.rate_per_month': 8%}\n"
    scenario = validate_only(write(tmp_path, text))
    fast = validate_only(scenario, scenario.variants["fast"])
    assert fast.models[0].demand.growth.rate_per_month == 0.08


def test_values_just_inside_the_limits_pass_silently(tmp_path):
    scenario = write(tmp_path, BASE)
    result = cli("validate", scenario, "--set", "models[0].demand.growth.rate_per_month=0.99",
                 "--set", "pricing.output_usd_per_1m=1000", "--set", "fleet.pools[0].orders[0].at=2026-03-01")
    assert result.exit_code == 0 and result.stderr.startswith("ok: ") and result.stderr.count("\n") == 1, result.output
    assert "plausibility_notes" not in resolved(result)  # written only when there are some
    served = validate_only(write(tmp_path, SERVED, "served.yaml"), ["models[0].serving.slo.ttft_percentile=1.5",
                                                                       "models[0].serving.slo.tpot_s=9.9"])
    assert served.plausibility_notes == []


# --- percentile and latency: refused ------------------------------------------------------------

@pytest.mark.parametrize(("field", "value", "meant"), [
    ("ttft_percentile", "0.9", "0.9 is the 0.9th percentile: did you mean 90 (p90)?"),
    ("tpot_percentile", "0.99", "0.99 is the 0.99th percentile: did you mean 99 (p99)?"),
    ("tpot_s", "30", "30 is 30 seconds: did you mean 30ms (0.03)? (if meant, write 30s or pass --accept latency)"),
    ("ttft_s", "12", "12 is 12 seconds: did you mean 12ms (0.012)?"),
])
def test_a_percentile_as_a_fraction_or_a_latency_in_seconds_is_refused(tmp_path, field, value, meant):
    default = {"ttft_percentile": "90", "tpot_percentile": "99", "tpot_s": "0.1", "ttft_s": "2.0"}[field]
    text = SERVED.replace(f"{field}: {default}", f"{field}: {value}")
    out = tmp_path / "out"
    result = cli("run", write(tmp_path, text), "--out", out, "-q", "--no-report")
    check = "percentile" if "percentile" in field else "latency"
    assert_refused(result, f"models[0].serving.slo.{field}", line_of(text, "slo:"), meant, f"--accept {check}")
    assert not out.exists()


def test_a_percentile_fraction_is_taken_with_accept(tmp_path):
    text = SERVED.replace("ttft_percentile: 90", "ttft_percentile: 0.9")
    result = cli("validate", write(tmp_path, text), "--accept", "percentile")
    assert result.exit_code == 0, result.output
    data = resolved(result)
    assert data["models"][0]["serving"]["slo"]["ttft_percentile"] == 0.9
    assert data["plausibility_notes"][0].startswith("percentile: models[0].serving.slo.ttft_percentile: 0.9 is")
    assert data["plausibility_notes"][0].endswith(": accepted")


def test_a_latency_written_with_its_unit_is_taken_as_written(tmp_path):
    text = SERVED.replace("tpot_s: 0.1", "tpot_s: 30s")
    result = cli("validate", write(tmp_path, text))
    assert result.exit_code == 0, result.output
    data = resolved(result)
    assert data["models"][0]["serving"]["slo"]["tpot_s"] == 30.0
    # Taken as meant, and said: the resolved file (which writes 30.0) reads back as it ran.
    assert data["accept"] == ["latency"]
    assert data["plausibility_notes"] == ["latency: models[0].serving.slo.tpot_s: 30 seconds, written with its unit"]
    assert "plausibility_notes" not in resolved(cli("validate", write(tmp_path, SERVED, "plain.yaml")))


# --- price and horizon: warned ------------------------------------------------------------------

def test_a_price_above_1000_per_million_tokens_is_warned_then_accepted(tmp_path):
    text = BASE.replace("output_usd_per_1m: 2.5", "output_usd_per_1m: 2500")
    scenario = write(tmp_path, text)
    result = cli("validate", scenario)
    assert result.exit_code == 0, result.output
    warning, ok = result.stderr.splitlines()
    assert warning == ("warning: pricing.output_usd_per_1m: $2,500.00 per 1M tokens is above $1,000: did you mean "
                       f"$2.50? (if meant, pass --accept price) (line {line_of(text, 'pricing')})")
    assert ok.startswith("ok: ")
    assert resolved(result)["plausibility_notes"] == [f"price: {warning.removeprefix('warning: ')}"]
    accepted = cli("validate", scenario, "--accept", "price")
    assert accepted.exit_code == 0 and accepted.stderr.startswith("ok: "), accepted.output
    assert resolved(accepted)["plausibility_notes"][0].endswith(": accepted")


@pytest.mark.parametrize(("written", "slipped", "path", "words"), [
    ("{at: 2026-02-01, count: 8", "{at: 2026-06-01, count: 8", "fleet.pools[0].orders[0].at",
     "2026-06-01 is at or after the horizon's end (2026-03-02): it has no effect"),
    ("      count: 16\n", "      count: 16\n      changes: [{at: 90d, add: 8}]\n", "fleet.pools[0].changes[0].at",
     "2026-04-01 is at or after the horizon's end (2026-03-02)"),  # 2026-01-01 + 90 days
    ("pricing:", "training:\n  jobs: [{name: j, pool: h100-owned, gpus: 8, duration: 1d, submit: 2027-01-01}]\n"
     "pricing:", "training.jobs[0].submit", "2027-01-01 is at or after the horizon's end"),
    ("pricing:", "contracts: [{name: c, pool: h100-owned, gpus: 8, start: 2024-01-01, term: 1y, usd_per_gpu_hour: 2}]"
     "\npricing:", "contracts[0].start", "the contract's term ends on 2025-01-01, before the horizon's start "
     "(2026-01-01)"),
])
def test_an_event_dated_where_it_has_no_effect_is_warned(tmp_path, written, slipped, path, words):
    text = BASE.replace(written, slipped)
    assert text != BASE
    out = tmp_path / "out"
    result = cli("run", write(tmp_path, text), "--out", out, "-q", "--no-report")
    assert result.exit_code == 0, result.output
    warning = result.stderr.strip()
    anchor = {"orders": "2026-06-01", "changes": "changes:", "training": "jobs:", "contracts": "contracts:"}
    line = line_of(text, next(value for key, value in anchor.items() if key in path))
    assert warning.startswith(f"warning: {path}: ") and "\n" not in warning, warning
    assert words in warning and warning.endswith(f"(if meant, pass --accept horizon) (line {line})"), warning
    notes = yaml.safe_load((out / "scenario.resolved.yaml").read_text())["plausibility_notes"]
    assert notes == [f"horizon: {warning.removeprefix('warning: ')}"]


def test_a_horizon_shortened_by_an_override_warns_only_of_dates_the_overrides_set(tmp_path):
    scenario = write(tmp_path, BASE)  # its order (2026-02-01) is inside the file's horizon, past a 10-day one
    quick = cli("validate", scenario, "--set", "horizon.duration=10d")
    assert quick.exit_code == 0 and quick.stderr.startswith("ok: "), quick.output
    moved = cli("validate", scenario, "--set", "horizon.duration=10d", "--set", "fleet.pools[0].orders[0].at=2026-01-20")
    assert moved.exit_code == 0, moved.output
    assert moved.stderr.startswith("warning: fleet.pools[0].orders[0].at: 2026-01-20 is at or after the horizon's "
                                   "end (2026-01-11)"), moved.stderr


def test_accept_reaches_every_command_that_loads_a_scenario():
    for command in ("validate", "run", "sweep", "sensitivity", "plan"):
        text = cli(command, "--help").output
        assert "--accept" in text, command
        assert all(name in " ".join(text.split()) for name in CHECKS), command


def test_an_unknown_check_name_is_refused_with_the_closest(tmp_path):
    result = cli("validate", write(tmp_path, BASE), "--accept", "growht")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith("error: --accept: unknown check 'growht'")  # an option: no YAML line
    assert "did you mean 'growth'?" in result.stderr and "(line" not in result.stderr


# --- names: did you mean ------------------------------------------------------------------------

@pytest.mark.parametrize(("written", "slipped", "path", "words"), [
    ("pools: [h100-owned]", "pools: [h100-ownd]", "models[0].pools[0]",
     "unknown pool 'h100-ownd'; pools: h100-owned; did you mean 'h100-owned'?"),
    ("gpu: H100", "gpu: H10", "fleet.pools[0].gpu", "unknown GPU 'H10'; known: "),
    ("pricing:", "trainng:\n  jobs: [{name: j, pool: h100-owned, gpus: 8, duration: {dist: lognormal, median: 2h, "
     "p90: 4h}}]\npricing:", "trainng", "unknown field (did you mean 'training'?)"),
    ("    demand:", "    demnad:", "models[0].demnad", "unknown field (did you mean 'demand'?)"),
])
def test_a_misspelt_name_or_key_is_named_with_the_closest_one(tmp_path, written, slipped, path, words):
    text = BASE.replace(written, slipped)
    result = cli("validate", write(tmp_path, text))
    anchor = slipped.split(":")[0].strip() if path != "models[0].pools[0]" else "pools: [h100-ownd]"
    assert_refused(result, path, line_of(text, anchor), words)
    if path.endswith("gpu"):
        assert result.stderr.rstrip().endswith(f"did you mean 'H100'? (line {line_of(text, 'gpu: H10')})")


def test_a_misspelt_llm_is_named_with_the_closest_one(tmp_path):
    text = SERVED.replace("model: llama-3.1-8b", "model: llama-3.1-8c")
    result = cli("validate", write(tmp_path, text))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith("error: models[0].serving.model: unknown model 'llama-3.1-8c'")
    assert "did you mean 'llama-3.1-8b'?" in result.stderr


def test_the_python_api_takes_accept_and_a_programs_mapping_is_taken_as_it_is(tmp_path):
    path = write(tmp_path, BASE.replace("rate_per_month: 0.08", "rate_per_month: 8"))
    with pytest.raises(simulator.ScenarioError, match=r"\+800% a month"):
        simulator.load_scenario(path)
    scenario = simulator.load_scenario(path, accept=["growth"])
    assert scenario.accept == ["growth"]
    data = yaml.safe_load(BASE.replace("rate_per_month: 0.08", "rate_per_month: 8"))
    assert validate_only(data).plausibility_notes == []  # a program's mapping (per-path draws): no one typed it
    assert validate_only(data, ["models[0].demand.growth.rate_per_month=9"]).models[0].demand.growth.rate_per_month == 9
    with pytest.raises(simulator.ScenarioError, match=r"\+900% a month"):  # what --set puts on a file is checked
        validate_only(path, ["models[0].demand.growth.rate_per_month=9"], accept=["price"])


def test_the_json_schema_lets_an_editor_write_a_share_or_a_rate_as_a_percentage():
    # The schema allows "8%" exactly where the loader reads it: a growth rate, a share bounded
    # within [0, 1]; not a plain number of another kind (a PUE of 130%).
    import jsonschema

    from simulator.scenario.jsonschema import scenario_json_schema

    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    data = base_scenario()
    data["models"][0]["demand"]["growth"] = {"kind": "exponential", "rate_per_month": "8%"}
    assert list(validator.iter_errors(data)) == []
    assert simulator.load_scenario(data).models[0].demand.growth.rate_per_month == 0.08
    data["energy"]["pue"] = "130%"
    errors = list(validator.iter_errors(data))
    assert len(errors) == 1 and list(errors[0].absolute_path) == ["energy", "pue"]


def test_a_latency_written_with_its_unit_is_taken_and_the_run_reads_back(tmp_path):
    # tpot_s: 30s is unambiguous: the resolved scenario (which writes the number 30.0) carries
    # `latency` in its accept, so it validates again as it ran.
    source = write(tmp_path, SERVED)
    out = tmp_path / "run"
    done = cli("run", source, "--set", "models[0].serving.slo.tpot_s=30s", "--paths", "1", "--no-report",
               "-q", "--out", out)
    assert done.exit_code == 0, done.output
    written = yaml.safe_load((out / "scenario.resolved.yaml").read_text())
    assert written["models"][0]["serving"]["slo"]["tpot_s"] == 30.0 and "latency" in written["accept"]
    assert cli("validate", out / "scenario.resolved.yaml").exit_code == 0


def test_a_slip_in_the_uncertain_section_is_refused_as_where_the_field_is(tmp_path):
    text = BASE + "uncertain:\n  models[0].demand.growth.rate_per_month: {dist: uniform, low: 6, high: 10}\n"
    source = write(tmp_path, text)
    assert_refused(cli("validate", source), "uncertain.models[0].demand.growth.rate_per_month",
                   line_of(text, "models[0].demand.growth.rate_per_month"), "did you mean 6%")
    percent = text.replace("low: 6, high: 10", "low: 6%, high: 10%")
    assert cli("validate", write(tmp_path, percent, "p.yaml")).exit_code == 0
