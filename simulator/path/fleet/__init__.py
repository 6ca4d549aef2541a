"""The fleet as SimPy sees it: pools of GPUs whose counts change at events."""

from simulator.path.fleet.state import FleetState

__all__ = ["FleetState"]
