"""``python -m simulator``: the ``fleetcast`` command."""

from simulator.cli.entry import main

main()
