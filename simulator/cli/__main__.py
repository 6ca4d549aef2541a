"""``python -m simulator.cli``: the ``fleetcast`` command."""

from simulator.cli.entry import main

main()
