"""``fleetcast report``, ``compare`` and ``schema``: thin commands over the library."""

from __future__ import annotations

import json
from pathlib import Path

import click

from simulator.cli.app import console, main


@main.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def report(directory: Path) -> None:
    """Render DIRECTORY/report.html and DIRECTORY/plots/ again from the run's files."""
    from simulator.report import render_report

    path = render_report(directory)
    console.print(f"wrote {path}", markup=False, highlight=False)


@main.command()
@click.argument("directories", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("outputs") / "compare",
              show_default=True, help="Directory of the comparison report.")
def compare(directories: tuple[Path, ...], out: Path) -> None:
    """Compare runs side by side: overlaid fan charts and a table of headline differences.

    Give two or more run directories, or one run with variants (its variants come along).
    """
    from simulator.report.compare import render_comparison

    path = render_comparison(list(directories), out)
    console.print(f"wrote {path}", markup=False, highlight=False)


@main.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: standard output).")
def schema(out: Path | None) -> None:
    """Print the scenario JSON Schema (for completion and checking in editors)."""
    from simulator.output import write_text_atomically
    from simulator.scenario.jsonschema import scenario_json_schema

    text = json.dumps(scenario_json_schema(), indent=2) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(out, text)
        console.print(f"wrote {out}", markup=False, highlight=False)
