"""The random streams of a path: which draws come from which generator.

A path draws from independent streams, one per source of randomness (demand noise, failures,
spot preemptions, order slips, repairs of GPUs taken out of service, training arrivals, uncertain inputs, day-to-day demand
volatility), each keyed further by a pool's, model's or job stream's name. A stream's draws never shift another's, and variants
that change one source share every other (common random numbers). Every module that draws
takes its generator from here.
"""

from __future__ import annotations

import zlib

import numpy as np

STREAM_DEMAND = 0
STREAM_FAILURES = 1
STREAM_PREEMPTION = 2
STREAM_ORDERS = 3
STREAM_TRAINING = 4
STREAM_INPUTS = 5
STREAM_VOLATILITY = 6  # day-to-day demand factor, keyed by the model's name
STREAM_SERVICE = 7  # repair times of GPUs taken out of service, keyed by the pool's name
STREAM_CONTRACTS = 8  # contract renewals, defaults and pipeline arrivals, keyed by the contract's name
STREAM_MARKETS = 9  # rental rate paths, keyed by the pool's name
STREAM_FORECAST = 10  # a fitted demand forecast's path, keyed by the model's name


def stream_key(name: str) -> int:
    """A stable number for a pool, model or job-stream name, used to key its random streams."""
    return zlib.crc32(name.encode("utf-8"))


def path_generator(seed: int, path: int, stream: int, *extra: int) -> np.random.Generator:
    """The generator of one stream of one path: child ``(path, stream, ...)`` of ``seed``.

    ``SeedSequence(seed, spawn_key=(path,))`` is the ``path``-th child of
    ``SeedSequence(seed).spawn(...)``, so a path's draws depend only on the seed and its index,
    never on how many workers ran or in which order.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(path, stream, *extra)))
