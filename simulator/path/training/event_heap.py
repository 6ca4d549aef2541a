"""The compiled training loop's event heap: a binary heap of ``(time, key)`` over arrays.

An event's key is ``priority × SEQ_BITS + sequence``: at one instant, urgent events (a process
starting) come before normal ones, then by creation, as SimPy orders them; keys are unique,
so the order is total and runs are deterministic. An event of a job carries the job's run
version: events of a run that was preempted stay in the heap until they come up (and are
skipped) or until the heap is full and :func:`drop_void` clears them.
"""

from __future__ import annotations

from numba import njit

from simulator.path.jit_options import NO_REFCOUNT
from simulator.path.training.loop_layout import C_HEAP, C_SEQ, EV_JOB_INIT, I_VERSION, SEQ_BITS


@njit(cache=True, inline="always")
def _move(heap_time, heap_key, heap_event, to, source):
    """Copy heap entry ``source`` over entry ``to``."""
    heap_time[to] = heap_time[source]
    heap_key[to] = heap_key[source]
    for c in range(3):
        heap_event[to, c] = heap_event[source, c]


@njit(cache=True, inline="always")
def _put(heap_time, heap_key, heap_event, i, time, key, kind, arg, version):
    heap_time[i] = time
    heap_key[i] = key
    heap_event[i, 0], heap_event[i, 1], heap_event[i, 2] = kind, arg, version


@njit(cache=True, inline="always")
def push(heap_time, heap_key, heap_event, counters, time, priority, kind, arg, version):
    seq = counters[C_SEQ]
    counters[C_SEQ] = seq + 1
    key = priority * SEQ_BITS + seq
    i = counters[C_HEAP]
    counters[C_HEAP] = i + 1
    while i > 0:
        parent = (i - 1) // 2
        if heap_time[parent] < time or (heap_time[parent] == time and heap_key[parent] < key):
            break
        _move(heap_time, heap_key, heap_event, i, parent)
        i = parent
    _put(heap_time, heap_key, heap_event, i, time, key, kind, arg, version)


@njit(cache=True, **NO_REFCOUNT)
def _sift_down(heap_time, heap_key, heap_event, i, n):
    """Move entry ``i`` down the first ``n`` entries until both children come after it."""
    time, key = heap_time[i], heap_key[i]
    e0, e1, e2 = heap_event[i, 0], heap_event[i, 1], heap_event[i, 2]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        right = child + 1
        if right < n and (heap_time[right] < heap_time[child] or (
                heap_time[right] == heap_time[child] and heap_key[right] < heap_key[child])):
            child = right
        if time < heap_time[child] or (time == heap_time[child] and key < heap_key[child]):
            break
        _move(heap_time, heap_key, heap_event, i, child)
        i = child
    _put(heap_time, heap_key, heap_event, i, time, key, e0, e1, e2)


@njit(cache=True, **NO_REFCOUNT)
def pop(heap_time, heap_key, heap_event, counters):
    """Remove the earliest event; return (kind, arg, version)."""
    kind, arg, version = heap_event[0, 0], heap_event[0, 1], heap_event[0, 2]
    n = counters[C_HEAP] - 1
    counters[C_HEAP] = n
    if n > 0:
        _move(heap_time, heap_key, heap_event, 0, n)
        _sift_down(heap_time, heap_key, heap_event, 0, n)
    return kind, arg, version


@njit(cache=True, **NO_REFCOUNT)
def drop_void(heap_time, heap_key, heap_event, counters, ints):
    """Remove the events of runs that were preempted (left in place until they come up) and
    rebuild the heap. Keys are unique, so the order events come out in does not change."""
    kept = 0
    for i in range(counters[C_HEAP]):
        kind, arg = heap_event[i, 0], heap_event[i, 1]
        if kind >= EV_JOB_INIT and heap_event[i, 2] != ints[arg, I_VERSION]:
            continue
        _move(heap_time, heap_key, heap_event, kept, i)
        kept += 1
    counters[C_HEAP] = kept
    for i in range(kept // 2 - 1, -1, -1):
        _sift_down(heap_time, heap_key, heap_event, i, kept)
