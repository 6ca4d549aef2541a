"""Invalid scenarios: exit 2, one line naming the field path and YAML line, nothing written."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulator.cli import main

LAUNCH = (Path(__file__).parents[1] / "scenarios" / "launch.yaml").read_text()


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in scenario")


# (case id, edit of launch.yaml as (old, new), expected field path, text on the expected line,
#  words the message must contain)
CASES = [
    ("typo top level", ("paths: 20", "pathz: 20"), "pathz", "pathz", "did you mean 'paths'"),
    ("typo horizon", ("  step: 1h", "  stepp: 1h"), "horizon.stepp", "stepp", "did you mean 'step'"),
    ("typo fleet", ("fleet:\n  pools:", "fleet:\n  pool:"), "fleet.pool", "  pool:", "did you mean 'pools'"),
    ("typo pool", ("      count: 256", "      cout: 256"), "fleet.pools[0].cout", "cout", "did you mean 'count'"),
    ("typo acquisition", ("price_usd: 33000", "prices_usd: 33000"), "fleet.pools[0].acquisition.prices_usd", "prices_usd", "price_usd"),
    ("typo change", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, ad: 128}"), "fleet.pools[0].changes[0].ad", "ad: 128", "did you mean 'add'"),
    ("typo model", ("capacity_rps: 5.0", "capacity: 6.0"), "models[0].capacity", "capacity: 6.0", "capacity_rps"),
    ("typo demand", ("base_rps: 80", "base_rate: 80"), "models[0].demand.base_rate", "base_rate", "base_rps"),
    ("typo growth", ("rate_per_month: 0.15", "rate_per_mnth: 0.15"), "models[0].demand.growth.rate_per_mnth", "rate_per_mnth", "rate_per_month"),
    ("typo seasonality", ("daily_amplitude: 0.35", "daily_amp: 0.35"), "models[0].demand.seasonality.daily_amp", "daily_amp", "daily_amplitude"),
    ("typo pricing", ("input_usd_per_1m: 0.90", "input_per_1m: 2.00"), "pricing.input_per_1m", "input_per_1m", "input_usd_per_1m"),
    ("typo energy", ("pue: 1.3", "peu: 1.3"), "energy.peu", "peu", "pue"),
    ("typo facility", ("usd_per_kw_month: 184", "usd_kw_month: 184"), "facility.usd_kw_month", "usd_kw_month", "usd_per_kw_month"),
    ("typo gpu override", ("fleet:\n", "gpus:\n  H100: {tdp: 700}\nfleet:\n"), "gpus.H100.tdp", "tdp: 700", "tdp_w"),
    ("wrong type", ("count: 256", "count: lots"), "fleet.pools[0].count", "count: lots", "valid integer"),
    ("negative count", ("count: 64", "count: -8"), "fleet.pools[1].count", "count: -8", "greater than or equal to 0"),
    ("unknown gpu", ("gpu: H100\n      acquisition: {type: on_demand", "gpu: H1000\n      acquisition: {type: on_demand"), "fleet.pools[1].gpu", "H1000", "known: A100-80GB, B200, H100"),
    ("end before start", ("duration: 18mo", "end: 2025-01-01"), "horizon", "horizon:", "not after start"),
    ("malformed duration", ("step: 1h", "step: 1 fortnight"), "horizon.step", "fortnight", "expected a duration"),
    ("uneven steps", ("step: 1h", "step: 7h"), "horizon", "horizon:", "whole number"),
    ("unknown pool", ("pools: [h100-owned, h100-cloud]", "pools: [h100-owned, h100-clod]"), "models[0].pools[1]", "h100-clod", "unknown pool"),
    ("unknown growth kind", ("kind: exponential", "kind: exponentail"), "models[0].demand.growth", "exponentail", "expected tags"),
    ("remove too many", ("{at: 2026-09-01, add: 128}", "{at: 2026-09-01, remove: 1000}"), "fleet.pools[0].changes[0].remove", "remove: 1000", "only 256"),
    ("change before start", ("{at: 2026-09-01, add: 128}", "{at: 2025-09-01, add: 128}"), "fleet.pools[0].changes[0].at", "2025-09-01", "before the start"),
    ("zero capacity", ("capacity_rps: 5.0", "capacity_rps: 0"), "models[0].capacity_rps", "capacity_rps: 0", "greater than 0"),
    ("amplitude above one", ("daily_amplitude: 0.35", "daily_amplitude: 1.5"), "models[0].demand.seasonality.daily_amplitude", "daily_amplitude", "less than or equal to 1"),
    ("pue below one", ("pue: 1.3", "pue: 0.9"), "energy.pue", "pue: 0.9", "greater than or equal to 1"),
    ("missing name", ("name: launch\n", ""), "name", "", "required"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_invalid_scenario_exits_2_with_path_and_line(case, tmp_path):
    _, (old, new), path, line_text, words = case
    assert old in LAUNCH, f"edit does not apply: {old!r}"
    text = LAUNCH.replace(old, new, 1)
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), "--quiet"])
    assert result.exit_code == 2, result.output
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"error: {path}: "), message
    assert words in message
    if line_text:
        assert message.endswith(f"(line {_line_of(text, line_text)})"), message
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.yaml"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("- a\n- b\n", "expected a mapping"),
        ("42\n", "expected a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_empty_and_non_mapping_files(text, words, tmp_path):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert result.exit_code == 2
    assert words in result.stderr and "Traceback" not in result.stderr


def test_python_tag_never_executes(tmp_path):
    marker = tmp_path / "pwned"
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(f'name: !!python/object/apply:os.system ["touch {marker}"]\n')
    proc = subprocess.run(
        [sys.executable, "-m", "simulator.cli", "run", str(scenario), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "tags never construct objects" in proc.stderr and "(line 1)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists() and not (tmp_path / "o").exists()


def test_billion_laughs_is_refused_quickly(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    scenario = tmp_path / "laughs.yaml"
    scenario.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["validate", str(scenario)])
    assert time.perf_counter() - started < 1.0
    assert result.exit_code == 2 and "refusing to expand" in result.stderr


def test_missing_file_exits_2(tmp_path):
    result = CliRunner().invoke(main, ["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2


def test_bad_set_override_names_the_field(tmp_path):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(LAUNCH)
    result = CliRunner().invoke(main, ["validate", str(scenario), "--set", "fleet.pools[0].count=-3"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: fleet.pools[0].count: input should be greater than or equal to 0")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--set", "horizon.start=2026-13-01"], "horizon.start"),
        (["--set", "horizon.step=1ms"], "use a coarser step"),
        (["--set", "models[0].demand.growth.rate_per_month=10"], "grows to"),
        (["--set", "fleet.pools[0].orders=[{at: 2026-05-01, count: 8, lead_time: -5d}]"], "cannot be negative"),
        (["--set", "fleet.pools[1].acquisition={type: reserved, usd_per_gpu_hour: 2, term: 0d}"], "positive duration"),
        (["--set", "models[0].gpus_per_replica=512"], "never hold more than"),
        (["--out", "/proc/fleetcast-cannot-write"], "cannot write"),
        (["--scheduler", "garbage"], "expected an address"),
    ],
)
def test_review_findings_exit_2_with_one_line(args, words, tmp_path):
    out = [] if "--out" in args else ["--out", str(tmp_path / "o")]
    result = CliRunner().invoke(main, ["run", str(Path(__file__).parents[1] / "scenarios" / "launch.yaml"), *out, *args, "-q"])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and "\n" not in result.stderr.strip() and "Traceback" not in result.stderr


def test_duplicate_keys_and_impossible_dates_in_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nname: y\n")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "error: name: appears twice in the same mapping (line 2)" in result.stderr
    bad.write_text("name: x\nhorizon: {start: 2026-13-01, duration: 1d}\n")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2 and "month must be in 1..12" in result.stderr


def test_custom_gpu_types_are_usable(tmp_path):
    scenario = tmp_path / "chip.yaml"
    scenario.write_text(
        "name: chip\nhorizon: {start: 2026-01-01, duration: 2d}\n"
        "gpus:\n  MyChip: {tflops_bf16: 500, memory_gb: 96, memory_tbps: 3.0, tdp_w: 600, price_usd: 20000, cloud_usd_per_gpu_hour: 2.0}\n"
        "fleet:\n  pools:\n    - {name: p, gpu: mychip, count: 8}\n"
        "models:\n  - {name: m, pools: [p], capacity_rps: 1, demand: {base_rps: 2}}\n")
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 0, result.output
