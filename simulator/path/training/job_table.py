"""A path's training jobs as columns: what the compiled loop reads and what it writes back.

The SimPy reference keeps one :class:`~simulator.path.training.jobs.Job` object per job; a
path of ``launch.yaml`` draws about 6,500, and building, scheduling and pickling that many
objects cost more than scheduling them in the compiled loop. A :class:`JobTable` holds the
same fields as arrays, in submission order (submission time, ties in the order given:
explicit jobs and trace rows, then each stream), and still reads as a sequence of ``Job``
records for code that wants them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from simulator.path.training.jobs import Job
from simulator.path.training.sources import JobSpec, StreamSpec

SPEC_COLUMNS = ("pool", "gpus", "submit_s", "priority", "work_s", "checkpoint_s", "checkpoint_time_s", "restart_s",
                "failure_rate_gpu_s", "max_preemptions_per_day")
OUTCOME_COLUMNS = ("done_s", "start_s", "end_s", "held_gpu_s", "running_since", "preemptions", "interruptions",
                   "needs_restart", "running")


class JobTable(Sequence):
    """Jobs in submission order: the specification columns, and the outcome once set."""

    def __init__(self, names: list[str], named: np.ndarray, columns: dict[str, np.ndarray]) -> None:
        self.names = names
        self.named = named
        self.columns = columns
        self.outcome: dict[str, np.ndarray] = {}

    @classmethod
    def build(cls, specs: Sequence[JobSpec], streams: Sequence[tuple[StreamSpec, dict[str, np.ndarray]]]) -> JobTable:
        """Explicit jobs and trace rows ``specs``, then each stream's drawn jobs (as
        :func:`~simulator.path.training.sources.stream_job_arrays` gives them), ordered as
        :func:`~simulator.path.training.sources.make_jobs` orders them."""
        parts = [{
            "pool": np.array([s.pool for s in specs], dtype=np.int64),
            "gpus": np.array([s.gpus for s in specs], dtype=np.int64),
            "submit_s": np.array([s.submit_s for s in specs], dtype=float),
            "priority": np.array([s.priority for s in specs], dtype=np.int64),
            "work_s": np.array([s.work_s for s in specs], dtype=float),
            "checkpoint_s": np.array([s.checkpoint_s for s in specs], dtype=float),
            "checkpoint_time_s": np.array([s.checkpoint_time_s for s in specs], dtype=float),
            "restart_s": np.array([s.restart_s for s in specs], dtype=float),
            "failure_rate_gpu_s": np.array([s.failure_rate_gpu_s for s in specs], dtype=float),
            "max_preemptions_per_day": np.array([s.max_preemptions_per_day for s in specs], dtype=np.int64),
        }]
        names = [s.name for s in specs]
        named = [s.named for s in specs]
        for stream, drawn in streams:
            n = len(drawn["submit_s"])
            parts.append({
                "pool": np.full(n, stream.pool, dtype=np.int64), "gpus": drawn["gpus"].astype(np.int64),
                "submit_s": drawn["submit_s"], "priority": np.full(n, stream.priority, dtype=np.int64),
                "work_s": drawn["work_s"], "checkpoint_s": np.full(n, stream.checkpoint_s, dtype=float),
                "checkpoint_time_s": np.full(n, stream.checkpoint_time_s, dtype=float),
                "restart_s": np.full(n, stream.restart_s, dtype=float),
                "failure_rate_gpu_s": np.full(n, stream.failure_rate_gpu_s, dtype=float),
                "max_preemptions_per_day": np.full(n, stream.max_preemptions_per_day, dtype=np.int64),
            })
            names.extend(f"{stream.name}-{i}" for i in range(n))
            named.extend([False] * n)
        columns = {name: np.concatenate([part[name] for part in parts]) for name in SPEC_COLUMNS}
        order = np.argsort(columns["submit_s"], kind="stable")  # ties: the order given
        columns = {name: values[order] for name, values in columns.items()}
        columns["checkpoint_s"] = np.where(columns["checkpoint_s"] > 0, columns["checkpoint_s"], math.inf)
        return cls([names[i] for i in order], np.asarray(named, dtype=bool)[order], columns)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):  # a Job record, built when asked for
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        c = self.columns
        job = Job(self.names[index], int(c["pool"][index]), int(c["gpus"][index]), float(c["submit_s"][index]),
                  int(c["priority"][index]), float(c["work_s"][index]), float(c["checkpoint_s"][index]),
                  float(c["checkpoint_time_s"][index]), float(c["restart_s"][index]),
                  float(c["failure_rate_gpu_s"][index]), int(index), bool(self.named[index]),
                  max_preemptions_per_day=int(c["max_preemptions_per_day"][index]))
        if self.outcome:
            o = self.outcome
            job.done_s, job.held_gpu_s = float(o["done_s"][index]), float(o["held_gpu_s"][index])
            start, end = float(o["start_s"][index]), float(o["end_s"][index])
            job.start_s = None if math.isnan(start) else start
            job.end_s = None if math.isnan(end) else end
            job.running_since = float(o["running_since"][index])
            job.preemptions, job.interruptions = int(o["preemptions"][index]), int(o["interruptions"][index])
            job.needs_restart, job.running = bool(o["needs_restart"][index]), bool(o["running"][index])
        return job

    def __iter__(self) -> Iterator[Job]:
        return (self[i] for i in range(len(self)))
