"""Inputs an attacker or a hurried user writes: each is refused with exit 2 and one line, and
nothing is written or damaged (the cases of the second hardening round's adversarial pass)."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulator.cli import main
from tests.helpers import fed_a_stream_that_never_ends

ROOT = Path(__file__).parents[1]
LAUNCH = ROOT / "scenarios" / "launch.yaml"
QUICK = ["--paths", "1", "--no-report", "-q", "--set", "horizon.duration=3d", "--set", "training.streams=[]"]


def _refused(result, *words: str) -> str:
    """The one line of a refusal (exit 2), checked to hold ``words``."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    line = result.stderr
    assert line.startswith("error: ") and line.count("\n") == 1 and "Traceback" not in line, line
    for word in words:
        assert word in line, line
    return line


def _files(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _launch_with(tmp_path: Path, old: str, new: str) -> Path:
    text = LAUNCH.read_text()
    assert old in text
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text.replace(old, new))
    return scenario


@pytest.mark.parametrize("name", ["/tmp/fleetcast-victim", "../../escape", "..", ".", "a/b", "v" * 61, "x\\y"])
def test_a_variant_name_that_is_a_path_is_refused_and_nothing_is_written_anywhere(tmp_path, name):
    # The name is the variant's folder: "/tmp/x" wrote a whole run into /tmp/x, "../../x" beside
    # the output, ".." lost the variant's files while comparison.csv listed it. (An absolute
    # name points inside this test's folder, so that older code cannot write outside it.)
    name = name.replace("/tmp/fleetcast-victim", str(tmp_path / "victim"))
    scenario = _launch_with(tmp_path, "  buy-more-early:", f"  {json.dumps(name)}:")
    out = tmp_path / "deep" / "er" / "out"
    result = CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), *QUICK])
    line = LAUNCH.read_text().splitlines().index("  buy-more-early:") + 1  # the variant's line in launch.yaml
    _refused(result, "variants.", f"(line {line})")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize("text", ['"chat\\x01"', '"chat\\x1b[31m"', '"a\\x00b"'])
def test_a_control_character_in_a_name_is_refused_before_it_reaches_a_spreadsheet_or_a_terminal(tmp_path, text):
    scenario = _launch_with(tmp_path, "  - name: chat-70b", f"  - name: {text}")
    line = _refused(CliRunner().invoke(main, ["run", str(scenario), "--out", str(tmp_path / "o"), *QUICK]),
                    "models[0].name: holds a control character")
    assert "\x1b" not in line and not (tmp_path / "o").exists()


@pytest.mark.parametrize(("text", "words"), [
    ("[" * 600 + "]" * 600, "nested too deeply"),
    ("name: x\ndescription: &a [*a]\n", "nested too deeply"),
])
def test_values_nested_past_reason_are_refused(tmp_path, text, words):
    scenario = tmp_path / "deep.yaml"
    scenario.write_text(text)
    _refused(CliRunner().invoke(main, ["validate", str(scenario)]), words)


def test_an_override_nested_past_reason_is_refused():
    deep = "[" * 2000 + "]" * 2000
    _refused(CliRunner().invoke(main, ["validate", str(LAUNCH), "--set", f"description={deep}"]), "nested too deeply")


@pytest.mark.parametrize(("old", "new", "field"), [
    ("duration: 18mo", "duration: 1" + "0" * 400 + "d", "horizon.duration"),
    ("step: 1h", "step: 1" + "0" * 400 + "ms", "horizon.step"),
    ("restart_time: 10min}", "restart_time: 1" + "0" * 400 + "min}", "training.jobs[0].restart_time"),
    ("start: 2026-03-01", "start: 9999-12-01", "horizon.start"),
    ("start: 2026-03-01", "start: 1600-03-01", "horizon.start"),
    ("start: 2026-03-01", "start: 2262-04-01", "horizon.start"),
    ("duration: 18mo", "duration: 300y", "horizon"),
])
def test_durations_and_dates_past_what_a_clock_holds_are_refused(tmp_path, old, new, field):
    # 10**400 days overflowed a float and 9999-12-01 pandas' nanoseconds: both exited 1.
    scenario = _launch_with(tmp_path, old, new)
    for command in ("validate", "run"):
        _refused(CliRunner().invoke(main, [command, str(scenario), "--out", str(tmp_path / "o"), "-q"][
            : 2 if command == "validate" else None]), f"error: {field}")
    assert not (tmp_path / "o").exists()


def test_out_with_a_summary_json_fleetcast_did_not_write_is_never_replaced(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "summary.json").write_text("garbage")
    (project / "src" / "main.py").write_text("print('mine')")
    before = _files(project)
    _refused(CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(project), *QUICK]),
             "not a Fleetcast run directory")
    assert _files(project) == before


def test_a_run_is_not_written_over_the_scenario_it_reads(tmp_path):
    out = tmp_path / "run"
    assert CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *QUICK]).exit_code == 0
    scenario = out / "mine.yaml"
    scenario.write_text(LAUNCH.read_text())
    before = _files(out)
    _refused(CliRunner().invoke(main, ["run", str(scenario), "--out", str(out), *QUICK]), "holds", "mine.yaml")
    assert _files(out) == before


def test_out_at_a_dangling_symbolic_link_is_refused(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    _refused(CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(tmp_path / "link"), *QUICK]),
             "symbolic link to nothing")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
def test_schema_out_never_replaces_a_device_a_pipe_or_a_link(tmp_path, kind):
    # `schema --out /dev/full` replaced the device with a regular file (as root).
    target = tmp_path / "target"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        (tmp_path / "real.json").write_text("keep")
        target.symlink_to(tmp_path / "real.json")
    else:  # a device of its own, never the system's (a test of older code replaced /dev/null)
        try:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device needs root")
    _refused(CliRunner().invoke(main, ["schema", "--out", str(target)]), "not a regular file")
    if kind == "fifo":
        assert stat.S_ISFIFO(target.lstat().st_mode)
    elif kind == "symlink":
        assert target.is_symlink() and (tmp_path / "real.json").read_text() == "keep"
    else:
        assert stat.S_ISCHR(target.stat().st_mode)


@pytest.mark.parametrize("args", [
    ["run", str(LAUNCH), "--paths", "0"], ["run", str(LAUNCH), "--workers", "0"], ["run", str(LAUNCH), "--seed", "-1"],
    ["run", str(LAUNCH), "--bogus"], ["run"], ["frobnicate"], ["run", str(LAUNCH), "--out", str(LAUNCH)],
    ["run", str(ROOT / "scenarios")], ["sensitivity", str(LAUNCH), "--samples", "1"],
    ["serving", "--model", "llama-3.1-70b", "--gpu", "H100", "--num-requests", "99999999999999999999"],
    ["serving", "--model", "llama-3.1-70b", "--gpu", "H100", "--replicas", "100000000"],
])
def test_a_misused_option_is_one_line_not_clicks_usage_screen(args):
    # Click printed "Usage: …", "Try …", a blank line and "Error: …"; huge counts exited 1.
    _refused(CliRunner().invoke(main, args), "--help")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    result = CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), "--paths", "2", "-q", "--no-report",
                                       "--set", "horizon.duration=7d", "--set", "training.streams=[]"])
    assert result.exit_code == 0, result.output
    return out


def _corrupt(run_dir: Path, tmp_path: Path, name: str, content: str | None) -> Path:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    target = copy / name
    if content is None:  # a directory where a file goes
        target.unlink(missing_ok=True)
        target.mkdir()
    elif content == "pnl":  # a table of another shape
        shutil.copy(copy / "pnl.parquet", target)
    else:
        target.write_text(content)
    return copy


@pytest.mark.parametrize(("name", "content", "words"), [
    ("summary.json", "[]", "summary.json holds a list"),
    ("summary.json", "null", "summary.json holds a NoneType"),
    ("summary.json", "{}", "summary.json lacks"),
    ("summary.json", '{"scenario": "x", "paths": "many"}', "summary.json lacks"),
    ("summary.json", "[" * 100_000 + "]" * 100_000, "cannot read the run"),
    ("bands.parquet", "pnl", "bands.parquet lacks the columns"),
    ("scenario.resolved.yaml", "name: [unclosed\n", "cannot read the run"),
    ("report.html", None, "exists and is not a file"),
])
def test_report_and_compare_refuse_a_run_directory_of_another_shape(run_dir, tmp_path, name, content, words):
    # Each exited 1 ("internal error: KeyError: 'start'", a ParserError over 8 lines, …).
    corrupt = _corrupt(run_dir, tmp_path, name, content)
    before = _files(corrupt)
    _refused(CliRunner().invoke(main, ["report", str(corrupt)]), words)
    assert _files(corrupt) == before
    if name != "report.html":
        _refused(CliRunner().invoke(main, ["compare", str(run_dir), str(corrupt), "--out", str(tmp_path / "c")]))
        assert not (tmp_path / "c").exists()


def test_a_report_with_an_unreadable_variant_rewrites_no_report(tmp_path):
    # The base run's report.html and plots/ were rewritten before the variant failed.
    out = tmp_path / "run"
    assert CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *QUICK[:-2]]).exit_code == 0
    (out / "variants" / "buy-more-early" / "bands.parquet").write_text("junk")
    before = _files(out)
    _refused(CliRunner().invoke(main, ["report", str(out)]), "buy-more-early", "cannot read the run")
    assert _files(out) == before


def test_a_full_disk_is_one_line_and_leaves_the_earlier_run(tmp_path):
    # `ulimit -f` (a file-size limit) fails writes as a full disk does: "internal error: OSError".
    out = tmp_path / "run"
    assert CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(out), *QUICK, "--set", "variants={}"]
                              ).exit_code == 0
    before = _files(out)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    done = subprocess.run([sys.executable, "-m", "simulator", "run", str(LAUNCH), "--out", str(out), "--paths", "2",
                           "-q", "--set", "horizon.duration=20d", "--set", "variants={}"],
                          capture_output=True, text=True, timeout=300, preexec_fn=small_files)
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: cannot write: a file would pass the file-size limit; nothing was written and "
                           "earlier outputs are untouched\n")
    assert _files(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_a_history_that_never_ends_is_refused_at_the_csv_limit(tmp_path):
    # /dev/zero as a history grew to 24 GB.
    fifo = tmp_path / "history.csv"
    code, stderr = fed_a_stream_that_never_ends(["fit-demand", str(fifo)], fifo,
                                                b"date,rps\n" + b"2026-01-01,1\n" * 80_000, 128)
    assert code == 2, stderr
    assert stderr.startswith("error: ") and stderr.count("\n") == 1 and "holds more than 100,000,000 bytes" in stderr


def test_a_sweep_value_nested_past_reason_is_refused(tmp_path):
    deep = "[" * 600 + "]" * 600
    _refused(CliRunner().invoke(main, ["sweep", str(LAUNCH), "--param", f"description={deep}", "--out",
                                       str(tmp_path / "s")]), "nested too deeply")
    assert not (tmp_path / "s").exists()


def test_a_plan_order_past_any_fleet_is_refused_before_the_search(tmp_path):
    # A MAX of 10**400 ran the whole search, then overflowed writing the workbook (exit 1).
    _refused(CliRunner().invoke(main, ["plan", str(LAUNCH), "--order", f"h100-owned:8:{10**400}", "--out",
                                       str(tmp_path / "p")]), "MAX <= 10,000,000")


def test_a_variant_named_base_is_refused(tmp_path):
    # It replaced the run without variants: the top-level files held the variant's figures.
    scenario = _launch_with(tmp_path, "  buy-more-early:", "  base:")
    _refused(CliRunner().invoke(main, ["validate", str(scenario)]), "variants.base", "'base' names the run")


def test_a_step_longer_than_the_horizon_is_refused(tmp_path):
    # validate said "0 steps of 100000000 days" and run exited 1 (an integer overflow).
    for command in ("validate", "run"):
        _refused(CliRunner().invoke(main, [command, str(LAUNCH), "--set", "horizon.duration=30d", "--set",
                                           "horizon.step=100000000d"]), "horizon", "longer than the horizon")


def test_a_summary_json_that_only_names_a_scenario_is_not_taken_for_a_run(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "summary.json").write_text('{"scenario": "mine"}')
    (folder / "notes.txt").write_text("keep")
    before = _files(folder)
    _refused(CliRunner().invoke(main, ["run", str(LAUNCH), "--out", str(folder), *QUICK]), "not a Fleetcast run")
    assert _files(folder) == before


def test_a_report_that_cannot_be_written_leaves_no_new_charts(run_dir, tmp_path):
    # On a full disk, report left a new plots/ beside no report.html and said nothing was written.
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    before = _files(copy)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    done = subprocess.run([sys.executable, "-m", "simulator", "report", str(copy)], capture_output=True, text=True,
                          timeout=300, preexec_fn=small_files)
    assert done.returncode == 2 and done.stderr.startswith("error: cannot write"), done.stderr
    assert _files(copy) == before and sorted(p.name for p in copy.iterdir()) == sorted(
        p.name for p in run_dir.iterdir())
