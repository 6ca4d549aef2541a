"""The compiled training loop's state: a path's jobs, queues, running sets and event heap as
arrays that :mod:`simulator.path.training.loop` reads and writes, call after call."""

from __future__ import annotations

import numpy as np

from simulator.path.training.event_heap import push
from simulator.path.training.loop_layout import (
    C_CAPPED,
    C_DAY_OFFSET,
    C_NEED_STEP,
    C_SHARED_PREEMPT,
    C_STOPPED_JOB,
    EV_REVIEW_INIT,
    EV_SUBMIT,
    F_CKPT,
    F_CKPT_TIME,
    F_DONE,
    F_END,
    F_HELD,
    F_RATE,
    F_RESTART,
    F_SINCE,
    F_START,
    F_SUBMIT,
    F_WORK,
    I_CAP,
    I_DAY,
    I_INTERRUPTIONS,
    I_LAUNCH,
    I_PREEMPTIONS,
    I_RESTART,
    I_RUNNING,
    MODE_CODES,
    MODE_DEDICATED,
    N_COUNTERS,
    N_INT_COLUMNS,
    URGENT,
)


class TrainingState:
    """A path's jobs (in submission order), queues, running sets and event heap, as arrays."""

    def __init__(self, jobs, n_pools: int, n_steps: int, modes, partitions, review_s: float, launch_jobs,
                 day_offset_s: float = 0.0, preempt_last: bool = False) -> None:
        """``jobs``: a :class:`~simulator.path.training.job_table.JobTable`; ``day_offset_s``: the
        horizon's start in seconds after its UTC midnight; ``preempt_last``: some model uses
        other pools before preempting training (``preempt_after``)."""
        n = len(jobs)
        c = jobs.columns
        self.n_jobs = n
        self.pool, self.gpus, self.priority = c["pool"], c["gpus"], c["priority"]
        self.floats = np.zeros((n, 13))  # columns F_*
        f = self.floats
        for column, name in ((F_SUBMIT, "submit_s"), (F_WORK, "work_s"), (F_CKPT, "checkpoint_s"),
                             (F_CKPT_TIME, "checkpoint_time_s"), (F_RESTART, "restart_s"),
                             (F_RATE, "failure_rate_gpu_s")):
            f[:, column] = c[name]
        f[:, F_START] = np.nan
        f[:, F_END] = np.nan
        self.ints = np.zeros((n, N_INT_COLUMNS), dtype=np.int64)  # columns I_* (and preemption_caps')
        self.ints[:, I_CAP] = c["max_preemptions_per_day"]
        self.ints[:, I_DAY] = -1
        if launch_jobs:  # a launch waits for the last job of its name (as the reference's by-name lookup)
            last = {name: index for index, name in enumerate(jobs.names) if name in launch_jobs}
            self.ints[list(last.values()), I_LAUNCH] = 1
        self.modes = np.array([MODE_CODES[m] for m in modes], dtype=np.int64)
        self.partitions = np.asarray(partitions, dtype=np.int64)
        self.review_s = float(review_s)
        self.queue = np.zeros((n_pools, max(n, 1)), dtype=np.int64)
        self.running = np.zeros((n_pools, max(n, 1)), dtype=np.int64)
        self.lengths = np.zeros((n_pools, 3), dtype=np.int64)  # queue length, running count, GPUs held
        size = 2 * n + 2 * n_pools + 8
        self.heap_time = np.zeros(size)
        self.heap_key = np.zeros(size, dtype=np.int64)
        self.heap_event = np.zeros((size, 3), dtype=np.int64)  # kind, job or pool, job version
        self.counters = np.zeros(N_COUNTERS, dtype=np.int64)
        self.counters[C_NEED_STEP] = -1
        self.counters[C_DAY_OFFSET] = round(day_offset_s)
        self.counters[C_CAPPED] = int(bool((c["max_preemptions_per_day"] >= 0).any()))
        self.counters[C_SHARED_PREEMPT] = int(bool(self.counters[C_CAPPED]) or preempt_last)
        self.need = np.zeros(n_pools, dtype=np.int64)  # inference's GPUs per pool in step C_NEED_STEP
        self.scratch = (np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1), np.zeros(n + 1, dtype=np.int64))
        self.queued_per_step = np.zeros(n_steps, dtype=np.int64)
        self.running_per_step = np.zeros(n_steps, dtype=np.int64)

    def start(self) -> None:
        """Start the pools' reviews and the submitter at time 0 (urgent, as SimPy starts a
        process), numbered from ``counters[C_SEQ]``."""
        if not self.n_jobs:
            return
        for p in {int(p) for p in self.pool.tolist()}:  # the set, built as the reference builds it, in its order
            if self.modes[p] != MODE_DEDICATED:
                push(self.heap_time, self.heap_key, self.heap_event, self.counters, 0.0, URGENT, EV_REVIEW_INIT, p, 0)
        push(self.heap_time, self.heap_key, self.heap_event, self.counters, 0.0, URGENT, EV_SUBMIT, -1, 0)

    def stopped_job(self) -> int:
        return int(self.counters[C_STOPPED_JOB])

    def finish(self, jobs) -> None:
        """Set each job's outcome on ``jobs`` (the JobTable it was built from)."""
        f, i = self.floats, self.ints
        jobs.outcome = {
            "done_s": f[:, F_DONE].copy(), "start_s": f[:, F_START].copy(), "end_s": f[:, F_END].copy(),
            "held_gpu_s": f[:, F_HELD].copy(), "running_since": f[:, F_SINCE].copy(),
            "preemptions": i[:, I_PREEMPTIONS].copy(), "interruptions": i[:, I_INTERRUPTIONS].copy(),
            "needs_restart": i[:, I_RESTART].astype(bool), "running": i[:, I_RUNNING].astype(bool),
        }
