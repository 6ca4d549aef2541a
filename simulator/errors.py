"""Errors that mean "the user's input is wrong" (exit code 2), as opposed to a bug (1)."""

from __future__ import annotations

from simulator.output import OutputError
from simulator.scenario.errors import ScenarioError
from simulator.serving.iteration import ServingConfigError
from simulator.serving.trace import TraceError


class RunConfigurationError(ValueError):
    """A run option that cannot work (an unreachable scheduler, say)."""


class RunFailedError(RuntimeError):
    """A run that could not finish for a reason outside the program (a Dask cluster that kept
    losing the workers running a path, say). Nothing was written."""


#: Every exception type the CLI reports as invalid input.
InputError = (ScenarioError, OutputError, RunConfigurationError, ServingConfigError, TraceError)
