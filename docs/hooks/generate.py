"""MkDocs hook: fill the generated reference pages at build time.

A page holds a marker, ``<!-- generated: scenario-reference -->`` or ``<!-- generated:
cli-reference -->``, which is replaced by the reference written from the JSON Schema of
the scenario or from the click commands (see the two modules beside this one).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_reference  # noqa: E402
import scenario_examples  # noqa: E402
import scenario_reference  # noqa: E402

MARKERS = {
    "<!-- generated: scenario-reference -->": "scenario",
    "<!-- generated: cli-reference -->": "cli",
}


def generated(kind: str) -> str:
    if kind == "scenario":
        from simulator.scenario.jsonschema import scenario_json_schema

        schema = scenario_json_schema()
        scenarios = Path(__file__).resolve().parents[2] / "scenarios"
        examples = scenario_examples.shipped_examples(scenarios, scenario_reference.field_paths(schema))
        return scenario_reference.render(schema, examples)
    from simulator.cli import main

    return cli_reference.render(main)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 - MkDocs' hook signature
    for marker, kind in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generated(kind))
    return markdown
