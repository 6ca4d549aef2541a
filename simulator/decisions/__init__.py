"""What compares or searches over runs: a scenario's named variants (common random numbers),
parameter sweeps, sensitivity of the outcome to each uncertain input, and the planner that
looks for the cheapest purchases meeting a risk target.

Each takes a way to run a scenario and works on the summaries it returns.
"""
