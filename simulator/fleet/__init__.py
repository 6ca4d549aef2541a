"""The fleet as SimPy sees it: pools of GPUs whose counts change at events."""

from simulator.fleet.state import FleetState

__all__ = ["FleetState"]
