"""Errors that mean "the user's input is wrong" (exit code 2), as opposed to a bug (1).

Every room raises its own input errors (:class:`simulator.scenario.ScenarioError`,
:class:`simulator.serving.ServingConfigError`, …); each derives from :class:`InputError`,
so the command reports them all the same way without knowing where they came from.
"""

from __future__ import annotations


class InputError(ValueError):
    """Input that cannot be used as given: the message says what and where (exit code 2)."""


class RunConfigurationError(InputError):
    """A run option that cannot work (an unreachable scheduler, say)."""


class RunFailedError(RuntimeError):
    """A run that could not finish for a reason outside the program (a Dask cluster that kept
    losing the workers running a path, say). Nothing was written."""
