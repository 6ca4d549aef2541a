"""``python -m simulator``: the ``fleetcast`` command."""

from simulator.entry import main

main()
