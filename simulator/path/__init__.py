"""One Monte Carlo path: the scenario compiled to arrays, the SimPy engine that moves it event
by event, the numba step kernel that integrates between events, and the processes the engine
runs (:mod:`~simulator.path.fleet`: deliveries, failures, autoscaling, procurement;
:mod:`~simulator.path.training`: job streams, schedulers, preemption). Random draws come from
the streams of :mod:`simulator.path.streams`.

Nothing here knows YAML, files, or other paths: a path is a function of a
:class:`~simulator.path.compiled.CompiledScenario`, a seed and its index.
"""
