"""The ``fleetcast`` command group: exit codes, one-line errors, signals, shared options.

The commands themselves are in :mod:`simulator.cli.run_commands`,
:mod:`simulator.cli.serving_command` and :mod:`simulator.cli.report_commands`; each is a thin
shell over the library.

Exit codes: 0 success; 2 invalid input (one line on stderr naming the field path and YAML
line, never a traceback); 1 internal error; 130 interrupted. Set ``FLEETCAST_DEBUG=1`` to
see the traceback of an internal error.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
import threading
import time
import traceback
import warnings

import click
from rich.console import Console

from simulator import output
from simulator.errors import InputError, RunFailedError

console = Console()
errors = Console(stderr=True, emoji=False)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception so every ``finally`` runs."""


#: Set once SIGINT or SIGTERM arrived: a library that turns the interrupt into an error of
#: its own (a C extension reports "invalid bounding box" when interrupted mid-call) still
#: ends the command as interrupted.
_interrupted = False


def _outputs_in_place() -> bool:
    """Once the command's outputs are being put in place, or are, it has succeeded: an
    interrupt then is dropped rather than reported as "nothing was written"."""
    return output.committing() or output.committed()


def _on_sigterm(signum: int, frame: object) -> None:
    global _interrupted
    if _outputs_in_place():
        return
    _interrupted = True
    if not _in_hook:
        raise _Terminated()


def _on_sigint(signum: int, frame: object) -> None:
    global _interrupted
    if _outputs_in_place():
        return
    _interrupted = True
    if not _in_hook:
        raise KeyboardInterrupt


#: Set once the interrupt reached the command: a later one swallowed in a finalizer is moot.
_delivered = False

#: True while :func:`_on_unraisable` runs: a signal handled then must not raise inside it.
_in_hook = False

#: The hook :func:`install_interrupt_handlers` replaced; anything but an interrupt goes on to it.
_previous_unraisablehook = sys.unraisablehook


def _deliver_again(signum: int) -> None:
    while _in_hook:
        time.sleep(0.001)
    # A real signal to the main thread: it also wakes a main thread blocked in a wait.
    signal.pthread_kill(threading.main_thread().ident, signum)


def _on_unraisable(unraisable: object) -> None:
    """An interrupt that landed in a weakref callback or ``__del__`` is raised again.

    Python cannot propagate an exception out of a finalizer: it prints "Exception ignored"
    with a traceback and carries on, so the command would neither stop nor stay quiet. The
    signal is delivered once more from another thread once this hook has returned, so that
    its handler raises in the main flow (called from the main thread it would run here).
    """
    global _in_hook
    exc = getattr(unraisable, "exc_value", None)
    if not (_interrupted and isinstance(exc, KeyboardInterrupt)):
        _previous_unraisablehook(unraisable)
        return
    if _delivered:
        return
    _in_hook = True
    signum = signal.SIGTERM if isinstance(exc, _Terminated) else signal.SIGINT
    threading.Thread(target=_deliver_again, args=(signum,), daemon=True).start()
    _in_hook = False


def install_interrupt_handlers() -> None:
    """SIGINT and SIGTERM raise in the main flow, so every ``finally`` runs (for one command:
    :func:`remove_unraisable_hook` puts the previous unraisable hook back)."""
    global _interrupted, _delivered, _previous_unraisablehook
    _interrupted = _delivered = False
    output.reset_commit_state()
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigint)
    if sys.unraisablehook is not _on_unraisable:
        _previous_unraisablehook = sys.unraisablehook
    sys.unraisablehook = _on_unraisable


def remove_unraisable_hook() -> None:
    sys.unraisablehook = _previous_unraisablehook


#: Why a write failed when the disk, a quota or a file-size limit (``ulimit -f``) is the cause.
_NO_ROOM = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "a file would pass the file-size limit",
            errno.EDQUOT: "the disk quota is exceeded"}


def _out_of_space(exc: OSError) -> str | None:
    """The reason, when ``exc`` says the disk is full (pyarrow and forked writers may give only its text)."""
    if exc.errno in _NO_ROOM:
        return _NO_ROOM[exc.errno]
    found = re.search(r"errno (\d+)", str(exc), re.IGNORECASE)
    return _NO_ROOM.get(int(found.group(1))) if found else None


def _fail_internal(exc: BaseException) -> None:
    if os.environ.get("FLEETCAST_DEBUG"):
        traceback.print_exc()
    _fail(f"internal error: {type(exc).__name__}: {exc} (FLEETCAST_DEBUG=1 shows the traceback)", 1)


def _fail(message: str, code: int) -> None:
    errors.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


_default_showwarning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Notes about a run (fewer workers than asked, say) as one plain line on stderr."""
    if category.__name__ == "FleetcastNote":
        errors.print(f"note: {message}", markup=False, highlight=False, soft_wrap=True)
    elif category.__name__ == "ScenarioWarning":
        errors.print(f"warning: {message}", markup=False, highlight=False, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


class FleetcastGroup(click.Group):
    """Maps library exceptions to exit codes and one-line messages."""

    def invoke(self, ctx: click.Context) -> object:
        global _delivered
        install_interrupt_handlers()
        warnings.showwarning = _show_warning
        try:
            return super().invoke(ctx)
        except InputError as exc:
            _fail(str(exc), 2)
        except KeyboardInterrupt:
            _delivered = True
            _fail("interrupted; nothing was written and earlier outputs are untouched", 130)
        except RunFailedError as exc:
            _fail(f"{exc}; nothing was written and earlier outputs are untouched", 1)
        except click.UsageError as exc:  # one line, as every other refusal (click prints four)
            where = exc.ctx.command_path if exc.ctx is not None else "fleetcast"
            _fail(f"{exc.format_message()} (see '{where} --help')", 2)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except OSError as exc:
            if _interrupted:
                _delivered = True
                _fail("interrupted; nothing was written and earlier outputs are untouched", 130)
            if not _out_of_space(exc):
                _fail_internal(exc)
            _fail(f"cannot write: {_out_of_space(exc)}; nothing was written and earlier outputs are untouched", 2)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if _interrupted:
                _delivered = True
                _fail("interrupted; nothing was written and earlier outputs are untouched", 130)
            _fail_internal(exc)
        finally:
            remove_unraisable_hook()
        return None


@click.group(cls=FleetcastGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetcast")
def main() -> None:
    """Fleetcast: capacity planning for AI compute.

    Simulate a GPU fleet against growing demand: when it runs short, what it costs,
    and what margin is left, with Monte Carlo risk bands.
    """


class KeepPaths(click.ParamType):
    """A count of paths, or ``all`` (None)."""

    name = "N|all"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text == "all":
            return None
        if text.isascii() and text.isdigit():
            return int(text)
        self.fail(f"expected a number of paths or 'all', got {value!r}", param, ctx)
        return None


class PathCount(click.ParamType):
    """A count of paths (at least 1), or ``auto``."""

    name = "N|auto"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | str | None:
        if value is None or isinstance(value, int) and value >= 1:
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        if text.isascii() and text.isdigit() and int(text) >= 1:
            return int(text)
        self.fail(f"expected a number of paths (1 or more) or 'auto', got {value!r}", param, ctx)
        return None


SET_HELP = "Override a scenario field before validation, e.g. --set horizon.duration=90d (repeatable)."
ACCEPT_HELP = ("Confirm the values a plausibility check flags as meant: growth, percentile, latency, price or "
               "horizon, as its message names it (repeatable).")


def safe_dir_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return cleaned or "scenario"


def cell(value: object) -> str:
    if value is None or isinstance(value, float) and value != value:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)[:10] if isinstance(value, str) and "T" in value else str(value)
