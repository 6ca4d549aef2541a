"""A client of a Dask cluster to run paths on, checked before any work is sent.

An address that nothing listens at, or where something other than a Dask scheduler answers,
is reported in one line within seconds instead of hanging the run.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

from simulator.errors import RunConfigurationError


@contextlib.contextmanager
def dask_executor(address: str, timeout_s: float = 10.0) -> Iterator[Any]:
    """A client of the Dask cluster at ``address``; raise a clear error if unreachable."""
    from distributed import Client

    _check_reachable(address, min(timeout_s, 5.0))
    # Something listening that is not a Dask scheduler never completes the handshake, whatever
    # Client's own timeout says: connect in a daemon thread and give up after ``timeout_s``.
    outcome: list = []

    def connect() -> None:
        try:
            outcome.append(Client(address, timeout=timeout_s, set_as_default=False))
        except Exception as exc:  # noqa: BLE001 - reported below as one line
            outcome.append(exc)

    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(timeout_s + 2.0)
    if not outcome:
        raise RunConfigurationError(f"--scheduler {address}: no Dask scheduler answered within {timeout_s:g} s")
    if isinstance(outcome[0], Exception):
        raise RunConfigurationError(f"--scheduler {address}: cannot connect ({outcome[0]})") from None
    client = outcome[0]
    try:
        with _quiet_client_logs():
            yield client
    finally:
        with _quiet_client_logs(), contextlib.suppress(Exception):  # a scheduler that is gone cannot be told
            client.close(timeout=timeout_s)


@contextlib.contextmanager
def _quiet_client_logs() -> Iterator[None]:
    """While the run uses the cluster, a lost scheduler is the run's one-line error
    (raised by the run as a RunFailedError), not the client's tracebacks on stderr."""
    names = [name for name in logging.root.manager.loggerDict if name.split(".")[0] in ("distributed", "asyncio")]
    loggers = [logging.getLogger(name) for name in {"distributed", "asyncio", *names}]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _check_reachable(address: str, timeout_s: float) -> None:
    """Fail fast, with one line, when nothing listens at ``[tcp://]host:port``."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RunConfigurationError(f"--scheduler {address}: expected an address such as tcp://10.0.0.5:8786")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RunConfigurationError(f"--scheduler {address}: cannot connect ({exc.strerror or exc})") from None
