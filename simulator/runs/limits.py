"""Defaults of a run that the command line shows in its help, in a module that imports
nothing, so ``fleetcast --help`` need not load the numerical libraries."""

#: Paths whose full series a run keeps unless told otherwise (``--keep-paths``).
DEFAULT_KEEP_PATHS = 20
#: With ``--paths auto``: the most paths added before stopping, met or not (``--max-paths``).
DEFAULT_MAX_PATHS = 5000

__all__ = ["DEFAULT_KEEP_PATHS", "DEFAULT_MAX_PATHS"]
