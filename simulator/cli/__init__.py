"""The ``fleetcast`` command, a thin shell over the library.

``main`` is the click group with every command registered; it is imported on first use, so
that :mod:`simulator.cli.entry` can install its Ctrl-C handler before click, rich and the
numerical libraries load.
"""

from __future__ import annotations

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":
        from simulator.cli import (  # noqa: F401 - register
            cache_command,
            fit_command,
            plan_command,
            report_commands,
            run_commands,
            serving_command,
        )
        from simulator.cli.app import main

        globals()["main"] = main
        return main
    raise AttributeError(f"module 'simulator.cli' has no attribute {name!r}")
