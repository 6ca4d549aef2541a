"""Many paths: executors (a local process pool or a Dask cluster), the digest a worker sends
back per path, per-step quantile bands in bounded memory, the memory check before a run, the
headline summary, the Monte Carlo error of its figures (:mod:`simulator.runs.intervals`), and
:class:`~simulator.runs.results.Results`.

``simulate`` (:mod:`simulator.runs.montecarlo`) is the public entry point; results do not
depend on how many workers ran the paths.
"""
