"""How late a training job finished: against its own uninterrupted run.

A job that nothing interrupts runs ``work`` in checkpoint segments of ``checkpoint_interval``
and writes a checkpoint after each but the last (:mod:`simulator.path.training.jobs`), so its
uninterrupted wall time is ``work + writes × checkpoint_time`` with
``writes = ceil(work / checkpoint_interval) − 1`` (0 without checkpoints). Its uninterrupted
finish is its submission plus that wall time; it is late by how much later it ended: the
queue wait, the work lost to preemptions and failures, and the restarts. A job that started
on submission and ran through is 0 s late, however many checkpoints it wrote.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: The tolerance of the runtime's segment arithmetic (a last segment within it is no segment).
_SEGMENT_TOLERANCE = 1e-9


def uninterrupted_wall_s(work_s: ArrayLike, checkpoint_s: ArrayLike, checkpoint_time_s: ArrayLike) -> np.ndarray:
    """Each job's wall time from start to end when nothing interrupts it (seconds);
    ``checkpoint_s`` is the work between checkpoints (``inf`` or ``0``: none)."""
    work = np.asarray(work_s, dtype=float)
    interval = np.asarray(checkpoint_s, dtype=float)
    checkpointed = np.isfinite(interval) & (interval > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        segments = np.ceil(work / np.where(checkpointed, interval, 1.0) - _SEGMENT_TOLERANCE)
    writes = np.where(checkpointed, np.maximum(segments - 1.0, 0.0), 0.0)
    return work + writes * np.asarray(checkpoint_time_s, dtype=float)


def late_s(submit_s: ArrayLike, end_s: ArrayLike, uninterrupted_s: ArrayLike) -> np.ndarray:
    """How long after its uninterrupted finish (submission + uninterrupted wall time) each job
    ended (seconds, to the microsecond: the runtime's sums of segments drift by less; NaN for a
    job that did not finish)."""
    late = np.asarray(end_s, dtype=float) - np.asarray(submit_s, dtype=float) - np.asarray(uninterrupted_s, dtype=float)
    return np.round(late, 6) + 0.0  # + 0.0: no "-0.0"
