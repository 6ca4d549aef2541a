"""Queue policies behind one interface: which waiting jobs start now.

Every policy sees the waiting jobs (in submission order), the GPUs free for training now,
and the running jobs' expected ends, and returns the jobs to start. ``fifo``, ``priority``
and ``shortest_first`` order the queue (submission order; highest priority first; least
remaining work first) and start jobs from the head while they fit: the first job that does
not fit blocks the rest (no overtaking, so no starvation). ``easy_backfill`` is FIFO with
EASY backfilling: when the head does not fit, it gets a reservation at the earliest time
enough GPUs will be free (the *shadow time*, from running jobs' expected ends), and later
jobs may start now if they fit and either end by the shadow time or use only GPUs the head
will not need then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from simulator.path.training.jobs import Job

Policy = Callable[[Sequence[Job], int, float, Sequence[tuple[float, int]]], list[Job]]


def _head_of_line(ordered: Sequence[Job], free: int) -> list[Job]:
    started = []
    for job in ordered:
        if job.gpus > free:
            break
        started.append(job)
        free -= job.gpus
    return started


def fifo(queue: Sequence[Job], free: int, now: float, running: Sequence[tuple[float, int]]) -> list[Job]:
    return _head_of_line(queue, free)


def priority(queue: Sequence[Job], free: int, now: float, running: Sequence[tuple[float, int]]) -> list[Job]:
    return _head_of_line(sorted(queue, key=lambda job: (-job.priority, job.order)), free)


def shortest_first(queue: Sequence[Job], free: int, now: float, running: Sequence[tuple[float, int]]) -> list[Job]:
    return _head_of_line(sorted(queue, key=lambda job: (job.remaining_wall_s, job.order)), free)


def easy_backfill(queue: Sequence[Job], free: int, now: float, running: Sequence[tuple[float, int]]) -> list[Job]:
    started = []
    waiting = list(queue)
    while waiting and waiting[0].gpus <= free:  # FIFO while the head fits
        job = waiting.pop(0)
        started.append(job)
        free -= job.gpus
        running = [*running, (now + job.remaining_wall_s, job.gpus)]
    if not waiting:
        return started
    head = waiting[0]
    # Shadow time: when enough running jobs have ended for the head to fit.
    available, shadow, extra = free, float("inf"), 0
    for end, gpus in sorted(running):
        available += gpus
        if available >= head.gpus:
            shadow, extra = end, available - head.gpus
            break
    for job in waiting[1:]:
        if job.gpus > free:
            continue
        ends_in_time = now + job.remaining_wall_s <= shadow + 1e-9
        if ends_in_time or job.gpus <= extra:
            started.append(job)
            free -= job.gpus
            if not ends_in_time:
                extra -= job.gpus
    return started


POLICIES: dict[str, Policy] = {
    "fifo": fifo,
    "priority": priority,
    "shortest_first": shortest_first,
    "easy_backfill": easy_backfill,
}
