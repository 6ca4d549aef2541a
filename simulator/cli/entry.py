"""The ``fleetcast`` executable: quiet on Ctrl-C from its first instant.

Loading the libraries takes a second or two; an interrupt in that time ends the process with
exit code 130 and no traceback (nothing has been written yet). Once a command runs, the CLI
turns SIGINT and SIGTERM into exceptions so that every cleanup runs.
"""

from __future__ import annotations

import os
import signal


def _quit_before_start(signum: int, frame: object) -> None:
    os._exit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _quit_before_start)
    signal.signal(signal.SIGTERM, _quit_before_start)
    from simulator.cli import main as fleetcast

    try:
        fleetcast()
    finally:
        # The command's outcome is decided (and its files written or not): a signal while the
        # interpreter shuts down must neither print a traceback nor change the exit code.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
