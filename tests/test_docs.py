"""The documentation site builds, its commands run, and its references cover the code.

Every fenced ``bash``/``sh``/``console`` block of every page under ``docs/`` (and README)
holds commands: each ``fleetcast`` command runs here, in a scratch directory holding a copy of
``scenarios/``, and exits 0, and in a ``console`` block each line of output shown is a line the
command printed; each ``make`` target exists in the Makefile. A block that cannot run here is
marked just before it with ``<!-- not run: reason -->``; one that takes long, with ``<!-- slow:
reason -->`` (run by the slow test only). In the tutorials, Python blocks run too, and the
``text`` block after one is its output. The generated references are compared with the JSON
Schema and the click commands they are written from.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "hooks"))

import cli_reference  # noqa: E402
import scenario_examples  # noqa: E402
import scenario_reference  # noqa: E402

PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
COMMAND_LANGS = {"bash", "sh", "shell", "console"}
MARKER = re.compile(r"<!--\s*(not run|slow)\s*:?(.*?)-->", re.S)
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass
class Block:
    lang: str
    lines: list[str]
    line: int  # 1-based line of the opening fence
    marker: str | None  # "not run" or "slow"
    reason: str


def blocks(text: str) -> list[Block]:
    found: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.fullmatch(before)
        found.append(Block(m.group(2), lines[i + 1:j], i + 1, marker.group(1) if marker else None,
                           marker.group(2).strip() if marker else ""))
        i = j + 1
    return found


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """``(command, shown output lines)`` of a block: in ``console`` the lines after ``$ ``
    (joined over trailing backslashes) with the lines that follow them; elsewhere every
    line that is not a comment."""
    found: list[tuple[str, list[str]]] = []
    pending = ""
    for line in block.lines:
        if pending:
            pending += " " + line.strip()
        elif block.lang == "console" and line.startswith("$ "):
            pending = line[2:].strip()
        elif block.lang != "console" and line.strip() and not line.lstrip().startswith("#"):
            pending = line.strip()
        elif block.lang == "console" and found:
            found[-1][1].append(line)
            continue
        else:
            continue
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        found.append((pending, []))
        pending = ""
    return found


def program(command: str) -> str:
    return Path(shlex.split(command, comments=True)[0]).name


def shown_lines(output: list[str]) -> list[str]:
    return [line.strip() for line in output if line.strip() and line.strip() != "…"]


def test_every_command_block_runs_or_says_why_not():
    problems = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for marker in MARKER.finditer(text):
            if not marker.group(2).strip():
                problems.append(f"{page.name}: a '{marker.group(1)}' marker without a reason")
        for block in blocks(text):
            where = f"{page.relative_to(ROOT)}:{block.line}"
            if block.lang == "" and any(re.match(r"\s*(\$ )?fleetcast\b", line) for line in block.lines):
                problems.append(f"{where}: a command in an untagged block (tag it console or bash)")
            if block.lang not in COMMAND_LANGS or block.marker == "not run":
                continue
            for command, _ in commands(block):
                name = program(command)
                if name == "make":
                    target = shlex.split(command, comments=True)[1]
                    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
                    if not re.search(rf"^{re.escape(target)}:", makefile, re.M):
                        problems.append(f"{where}: make {target}: no such target")
                elif name != "fleetcast":
                    problems.append(f"{where}: {command!r} cannot run here; mark the block 'not run: reason'")
    assert problems == []


def _pages_with_commands(include_slow: bool) -> list[Path]:
    pages = []
    for page in PAGES:
        found = [b for b in blocks(page.read_text(encoding="utf-8"))
                 if b.lang in COMMAND_LANGS and b.marker != "not run"
                 and any(program(c) == "fleetcast" for c, _ in commands(b))]
        if any(b.marker == "slow" for b in found) if include_slow else any(b.marker is None for b in found):
            pages.append(page)
    return pages


def _run_page(page: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, include_slow: bool) -> None:
    from simulator.cli import main

    shutil.copytree(ROOT / "scenarios", workdir / "scenarios")
    monkeypatch.chdir(workdir)
    runner = CliRunner()
    page_blocks = blocks(page.read_text(encoding="utf-8"))
    for index, block in enumerate(page_blocks):
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if block.marker == "not run" or block.marker == "slow" and not include_slow:
            continue
        if block.lang == "python" and page.parent.name == "tutorials":
            done = subprocess.run([sys.executable, "-c", "\n".join(block.lines)], cwd=workdir,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{where}: {done.stderr[-2000:]}"
            after = page_blocks[index + 1] if index + 1 < len(page_blocks) else None
            if after is not None and after.lang == "text":
                printed = {line.strip() for line in done.stdout.splitlines()}
                missing = [line for line in shown_lines(after.lines) if line not in printed]
                assert missing == [], f"{where}: shown but not printed: {missing}"
            continue
        if block.lang not in COMMAND_LANGS:
            continue
        for command, output in commands(block):
            if program(command) != "fleetcast":
                continue
            result = runner.invoke(main, shlex.split(command, comments=True)[1:], env={"COLUMNS": "80"})
            assert result.exit_code == 0, f"{where}: {command}: exit {result.exit_code}\n{result.output[-3000:]}"
            printed = {line.strip() for line in result.output.splitlines()}
            missing = [line for line in shown_lines(output) if line not in printed]
            assert missing == [], f"{where}: {command}: shown but not printed: {missing}"


@pytest.mark.parametrize("page", _pages_with_commands(False), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_commands_on_a_page_run_and_print_what_it_shows(page, tmp_path, monkeypatch):
    _run_page(page, tmp_path, monkeypatch, include_slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_commands(True), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_slow_commands_on_a_page_run_and_print_what_it_shows(page, tmp_path, monkeypatch):
    _run_page(page, tmp_path, monkeypatch, include_slow=True)


def test_each_tutorial_runs_a_shipped_scenario():
    tutorials = sorted((DOCS / "tutorials").glob("*.md"))
    assert {p.stem for p in tutorials} >= {"infrastructure-lead", "founder", "investor"}
    for page in tutorials:
        if page.stem == "index":
            continue
        named = {word for block in blocks(page.read_text(encoding="utf-8")) if block.lang == "console"
                 for command, _ in commands(block) for word in shlex.split(command, comments=True)
                 if word.startswith("scenarios/") and word.endswith(".yaml")}
        assert named, page.name
        assert all((ROOT / path).is_file() for path in named), named


def test_the_site_builds_strictly(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'id="obj-pool"' in (site / "reference" / "scenario" / "index.html").read_text(encoding="utf-8")
    assert "fleetcast run" in (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "simulate_replica" in (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert not (site / "hooks").exists()


# The scenario reference, against an independent walk of the schema.

def _schema() -> dict[str, Any]:
    from simulator.scenario.jsonschema import scenario_json_schema

    return scenario_json_schema()


def _schema_paths(schema: dict[str, Any]) -> set[str]:
    """Every field path, written as in the reference (``[]`` for list items, ``<name>`` for map
    keys), found by following ``$ref``s from the top; distributions (``Uncertain``) apart."""
    definitions = schema["$defs"]
    paths: set[str] = set()

    def targets(node: Any, suffix: str) -> list[tuple[str, str]]:
        if not isinstance(node, dict):
            return []
        out = [(suffix, node["$ref"].split("/")[-1])] if "$ref" in node else []
        for option in node.get("anyOf", []) + node.get("oneOf", []) + node.get("allOf", []):
            out += targets(option, suffix)
        if node.get("type") == "array" or "items" in node:
            out += targets(node.get("items"), suffix + "[]")
        if isinstance(node.get("additionalProperties"), dict):
            out += targets(node["additionalProperties"], suffix + ".<name>")
        return out

    def walk(properties: dict[str, Any], prefix: str, seen: tuple[str, ...]) -> None:
        for key, prop in properties.items():
            paths.add(prefix + key)
            for suffix, name in targets(prop, ""):
                if name != "Uncertain" and name not in seen and "properties" in definitions[name]:
                    walk(definitions[name]["properties"], prefix + key + suffix + ".", (*seen, name))

    walk(schema["properties"], "", ())
    return paths


def _reference_rows(markdown: str) -> tuple[set[str], dict[str, list[list[str]]]]:
    """Field paths the reference gives (each section's "Appears at" × its table's fields),
    and each section's table rows."""
    paths: set[str] = set()
    tables: dict[str, list[list[str]]] = {}
    for section in re.split(r"^## ", markdown, flags=re.M)[1:]:
        title = section.split("\n", 1)[0].split(" {")[0].strip()
        appears = re.search(r"^Appears at: (.*)$", section, re.M)
        rows = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
                for line in section.splitlines() if line.startswith("| `")]
        tables[title] = rows
        fields = [row[0].strip("`") for row in rows]
        for at in re.findall(r"`([^`]+)`", appears.group(1)):
            if at == "(top level)":
                paths.update(fields)
            elif not at.startswith("("):
                paths.update(f"{at}.{name}" for name in fields)
    return paths, tables


def test_the_scenario_reference_covers_every_field_path_of_the_schema():
    schema = _schema()
    expected = _schema_paths(schema)
    given, tables = _reference_rows(scenario_reference.render(schema))
    assert len(expected) > 500
    assert given == expected, (sorted(expected - given)[:20], sorted(given - expected)[:20])
    # Every field of every object (distributions included) has its row.
    for name, definition in schema["$defs"].items():
        if "properties" in definition and name in tables:
            assert [row[0].strip("`") for row in tables[name]] == list(definition["properties"]), name


def test_every_field_in_the_scenario_reference_has_a_description():
    _, tables = _reference_rows(scenario_reference.render(_schema()))
    missing = [f"{section}.{row[0]}" for section, rows in tables.items() for row in rows if row[5] == "—"]
    assert missing == []


def test_examples_are_the_values_shipped_scenarios_write_at_each_path(tmp_path):
    (tmp_path / "a.yaml").write_text("fleet: {pools: [{name: p, count: 5, changes: [{at: 30d, add: 2}]}]}\n"
                                     "gpus: {MyChip: {tdp_w: 700}}\nname: " + "x" * 80 + "\n")
    (tmp_path / "b.yaml").write_text("fleet: {pools: [{name: q, count: 9}]}\nseed: 3\n")
    known = {"name", "seed", "fleet", "fleet.pools", "fleet.pools[].name", "fleet.pools[].count",
             "fleet.pools[].changes", "fleet.pools[].changes[].at", "fleet.pools[].changes[].add",
             "gpus", "gpus.<name>.tdp_w"}
    found = scenario_examples.shipped_examples(tmp_path, known)
    assert found["fleet.pools[].count"] == "5" and found["seed"] == "3"  # the first file that gives it
    assert found["fleet.pools[].changes"] == "[{at: 30d, add: 2}]"
    assert found["gpus.<name>.tdp_w"] == "700"  # a map's keys are any name
    assert "name" not in found  # longer than an example is shown
    schema = _schema()
    rendered = scenario_reference.render(schema, scenario_examples.shipped_examples(
        ROOT / "scenarios", scenario_reference.field_paths(schema)))
    pool = rendered[rendered.index("## Pool {"):]
    assert re.search(r"^\| `count` \|.*\| `64` \|", pool, re.M)  # growth.yaml's first pool, the first file


def test_units_are_read_from_the_field_names_and_forms():
    duration = {"anyOf": [{"type": "string", "examples": ["90d", "2h"]}, {"const": 0}]}
    assert scenario_reference.unit_text("lead_time", duration) == "duration"
    assert scenario_reference.unit_text("usd_per_gpu_hour", {"type": "number"}) == "$/GPU-hour"
    assert scenario_reference.unit_text("output_usd_per_1m", {"type": "number"}) == "$ per 1M tokens"
    assert scenario_reference.unit_text("price_usd", {"type": "number"}) == "USD"
    assert scenario_reference.unit_text("base_rps", {"type": "number"}) == "requests/s"
    assert scenario_reference.unit_text("rate_per_month", {"type": "number"}) == "per month"
    assert scenario_reference.unit_text("ttft_s", {"type": "number"}) == "s"
    assert scenario_reference.unit_text("pue", {"type": "number", "minimum": 1}) == "ratio (facility / IT power)"
    assert scenario_reference.unit_text("seed", {"type": "integer", "minimum": 0}) == "—"
    assert scenario_reference.unit_text("tp", {"type": "integer", "minimum": 1}) == "GPUs"
    assert scenario_reference.unit_text("mfu", {"type": "number", "exclusiveMinimum": 0, "maximum": 1}) == "share 0–1"
    share_list = {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}}
    assert scenario_reference.unit_text("attainment", share_list) == "share 0–1"
    assert scenario_reference.unit_text("name", {"type": "string"}) == "—"
    assert scenario_reference.unit_text("draw_fraction", {"type": "number", "minimum": 0, "maximum": 1}) == "share 0–1"
    assert scenario_reference.unit_text("start", {"type": "string", "format": "date"}) == "date (UTC)"


def test_the_cli_reference_covers_every_command_and_option():
    from simulator.cli import main

    text = cli_reference.render(main)
    sections = {s.split("\n", 1)[0].strip(): s for s in re.split(r"^## ", text, flags=re.M)[1:]}
    for name, command in cli_reference.commands(main):
        section = sections[f"fleetcast {name}"]
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            for flag in cli_reference.param_names(param):
                assert f"`{flag}`" in section, (name, flag)
    assert len(sections) == len(cli_reference.commands(main)) + 1


def test_readme_is_short_shows_the_shipped_minimal_scenario_and_links_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    example = next(b for b in blocks(readme) if b.lang == "yaml")
    assert "\n".join(example.lines) + "\n" == (ROOT / "scenarios" / "minimal.yaml").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and all((ROOT / link).is_file() for link in links), links
    assert "make docs" in readme


def test_the_markers_and_command_parsing_read_what_a_page_says():
    page = ("<!-- not run: needs a cluster -->\n```bash\ndask scheduler &\n```\n\n"
            "```console\n$ fleetcast run a.yaml \\\n    --paths 2\nwrote x\n…\n$ fleetcast report x\n```\n")
    first, second = blocks(page)
    assert (first.marker, first.reason) == ("not run", "needs a cluster")
    assert second.marker is None
    assert commands(second) == [("fleetcast run a.yaml --paths 2", ["wrote x", "…"]), ("fleetcast report x", [])]
    assert shown_lines(["wrote x", "…", "  "]) == ["wrote x"]
