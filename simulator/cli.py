"""The ``fleetcast`` command: a thin shell over the library.

Exit codes: 0 success; 2 invalid input (one line on stderr naming the field path and YAML
line, never a traceback); 1 internal error; 130 interrupted. Set ``FLEETCAST_DEBUG=1`` to
see the traceback of an internal error.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from simulator.errors import InputError

console = Console()
errors = Console(stderr=True)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception so every ``finally`` runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def _fail(message: str, code: int) -> None:
    errors.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


class FleetcastGroup(click.Group):
    """Maps library exceptions to exit codes and one-line messages."""

    def invoke(self, ctx: click.Context) -> object:
        signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            return super().invoke(ctx)
        except InputError as exc:
            _fail(str(exc), 2)
        except KeyboardInterrupt:
            _fail("interrupted; nothing was written and earlier outputs are untouched", 130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("FLEETCAST_DEBUG"):
                traceback.print_exc()
            _fail(f"internal error: {type(exc).__name__}: {exc} (FLEETCAST_DEBUG=1 shows the traceback)", 1)
        return None


@click.group(cls=FleetcastGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetcast")
def main() -> None:
    """Fleetcast: capacity planning for AI compute.

    Simulate a GPU fleet against growing demand: when it runs short, what it costs,
    and what margin is left, with Monte Carlo risk bands.
    """


_SET_HELP = "Override a scenario field before validation, e.g. --set horizon.duration=90d (repeatable)."


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
def validate(scenario: Path, overrides: tuple[str, ...]) -> None:
    """Check SCENARIO and print what it resolved to (every default filled in)."""
    from simulator.scenario import dump_scenario, load_scenario

    resolved = load_scenario(scenario, overrides)
    click.echo(dump_scenario(resolved), nl=False)
    h = resolved.horizon
    gpus = sum(pool.count for pool in resolved.fleet.pools)
    errors.print(
        f"ok: {resolved.name}: {h.n_steps:,} steps of {h.step_s:g}s, "
        f"{len(resolved.fleet.pools)} pools ({gpus:,} GPUs at start), {len(resolved.models)} models",
        markup=False,
        highlight=False,
    )


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory (default outputs/<scenario name>/).")
@click.option("--paths", type=click.IntRange(min=1), help="Monte Carlo paths (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (default: the scenario's).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: CPU count).")
@click.option("--scheduler", metavar="ADDR", help="Run paths on a Dask cluster, e.g. tcp://10.0.0.5:8786.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def run(
    scenario: Path,
    out: Path | None,
    paths: int | None,
    seed: int | None,
    workers: int | None,
    scheduler: str | None,
    overrides: tuple[str, ...],
    quiet: bool,
) -> None:
    """Simulate SCENARIO and write its run directory."""
    from simulator.output import check_output_directory
    from simulator.runner import run_scenario
    from simulator.scenario import load_scenario
    from simulator.summary import headline

    resolved = load_scenario(scenario, overrides)
    directory = out or Path("outputs") / _safe_dir_name(resolved.name)
    check_output_directory(directory)
    results = run_scenario(
        resolved, paths=paths, seed=seed, workers=workers, scheduler=scheduler, show_progress=not quiet
    )
    results.save(directory)
    if quiet:
        return
    table = Table(title=f"{resolved.name}: {results.summary['paths']} paths", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for label, text in headline(results.summary):
        table.add_row(label, text)
    console.print(table)
    console.print(f"wrote {directory}/", markup=False, highlight=False)


def _safe_dir_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return cleaned or "scenario"


if __name__ == "__main__":  # pragma: no cover
    main()
