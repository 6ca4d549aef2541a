"""The training event loop, compiled: gang scheduling between the steps of the step clock.

The same world as the SimPy processes of :mod:`simulator.path.training.scheduler` and
:mod:`~simulator.path.training.jobs` (kept as the reference the tests compare with), run as
one event heap in numba inside the step loop: job submissions, each checkpoint segment's end,
failures, restarts, queue reviews, and at each step's start the preemption of jobs whose GPUs
inference needs. An event at ``t`` sees the fleet as integrated up to the step it falls in and
the inference need of the first step starting at or after ``t``, exactly as a SimPy event
would; what it changes takes effect from that step. Events at one instant run in the order
SimPy gives them: urgent (a process starting) before normal, then by creation. Training's
events are numbered from SimPy's own event counter, so the order holds across the two
heaps: a delivery, an order or an autoscaling decision at the instant a job ends comes
before or after it as it would among SimPy processes.

State lives in arrays (:class:`~simulator.path.training.loop_state.TrainingState`) so that
one compiled call can go on from where the last one stopped; a call stops early only when a
job that a launch waits for ends (the engine then starts the launch, a SimPy event).

The state's layout is :mod:`~simulator.path.training.loop_layout`, its event heap
:mod:`~simulator.path.training.event_heap`. (numba's on-disk cache notices a change of a
function's own file only; the cache folder is keyed by every compiled source instead,
:mod:`simulator.compiled_cache`.)
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from simulator.path.jit_options import NO_REFCOUNT
from simulator.path.kernels import KERNEL_STOP_FROM, integrate_interval, step_scratch
from simulator.path.placement import open_to_inference, place_replicas
from simulator.path.training.event_heap import drop_void, pop, push
from simulator.path.training.loop_layout import (
    C_CAPPED,
    C_HEAP,
    C_LAUNCH_ID,
    C_NEED_STEP,
    C_NEXT_JOB,
    C_QUEUED,
    C_RUNNING,
    C_SEQ,
    C_SHARED_PREEMPT,
    C_STOPPED_JOB,
    EV_JOB_FAILED,
    EV_JOB_INIT,
    EV_JOB_RESTARTED,
    EV_JOB_SEGMENT,
    EV_REVIEW,
    EV_REVIEW_INIT,
    EV_SUBMIT,
    F_CKPT,
    F_CKPT_TIME,
    F_DONE,
    F_END,
    F_HELD,
    F_RATE,
    F_RESTART,
    F_SEGMENT,
    F_SINCE,
    F_START,
    F_SUBMIT,
    F_WORK,
    I_INTERRUPTIONS,
    I_LAUNCH,
    I_PREEMPTIONS,
    I_RESTART,
    I_RUNNING,
    I_VERSION,
    LAUNCH_JOB_ENDED,
    MODE_DEDICATED,
    MODE_PREEMPT,
    NORMAL,
    REACHED,
    URGENT,
)
from simulator.path.training.preemption_caps import (
    count_preemption,
    is_protected,
    next_midnight_step,
    protect,
)
from simulator.path.training.queue_choice import chosen_to_start

_ALL_STEPS = 1 << 40  # a step bound past any horizon
_AFTER_STOP_FROM = KERNEL_STOP_FROM + 1  # (a constant, so that numba slices the arguments' tuple statically)


@njit(cache=True, inline="always")
def _step_of(seconds, step_s):
    """The first step that starts at or after ``seconds`` (as ``CompiledScenario.step_at_or_after``)."""
    return max(0, math.ceil(seconds / step_s - 1e-9))


@njit(cache=True, **NO_REFCOUNT)
def _need(now, step_s, st, serve, fleet):
    """GPUs per pool inference places in the step a change made at ``now`` takes effect, into
    ``st[14]`` (kept until the fleet or the GPUs jobs hold outside ``preempt`` pools change):
    :func:`~simulator.path.placement.inference_gpus`, on the working arrays ``serve`` carries."""
    counters, need = st[13], st[14]
    step = _step_of(now, step_s)
    if counters[C_NEED_STEP] == step:
        return
    demand, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst, free, taken, load, unplaced = \
        serve
    installed, failed, out_of_service, training, training_floor, preempt = fleet
    for p in range(need.shape[0]):
        need[p] = 0
    if step < demand.shape[0]:
        open_to_inference(installed, failed, out_of_service, training, training_floor, preempt, free)
        place_replicas(demand, step, capacity_per_step, gpus_per_replica, companion, preferences, api_mode, burst,
                       training, training_floor, preempt, free, need, taken, load, unplaced)
    counters[C_NEED_STEP] = step


@njit(cache=True, **NO_REFCOUNT)
def _free(p, now, step_s, st, serve, fleet):
    modes, partitions, lengths = st[5], st[6], st[9]
    installed, failed, out_of_service = fleet[0], fleet[1], fleet[2]
    available = installed[p] - failed[p] - out_of_service[p]
    held = lengths[p, 2]
    if modes[p] == MODE_DEDICATED:
        return max(min(partitions[p], available) - held, 0)
    _need(now, step_s, st, serve, fleet)
    return max(available - held - st[14][p], 0)


@njit(cache=True, inline="always")
def _schedule(st, now, kind, arg, priority=NORMAL):
    heap_time, heap_key, heap_event, counters = st[10], st[11], st[12], st[13]
    if counters[C_HEAP] == heap_time.shape[0]:  # full of void events: at most one live per job
        drop_void(heap_time, heap_key, heap_event, counters, st[4])
    version = st[4][arg, I_VERSION] if kind >= EV_JOB_INIT else 0
    push(heap_time, heap_key, heap_event, counters, now, priority, kind, arg, version)


@njit(cache=True, inline="always")
def _set_training(p, now, st, fleet):
    """The GPUs jobs hold in pool ``p``, as the fleet (and the step kernel) sees them, and
    those of them kept from inference (:mod:`~simulator.path.training.preemption_caps`)."""
    fleet[3][p] = st[9][p, 2]
    if st[5][p] != MODE_PREEMPT:  # what inference may use there changed
        st[13][C_NEED_STEP] = -1
    elif st[13][C_SHARED_PREEMPT]:  # caps or a model preempting last: inference sees jobs' GPUs here too
        if st[13][C_CAPPED]:
            protect(p, now, st, fleet)
        st[13][C_NEED_STEP] = -1


@njit(cache=True, inline="always")
def _remove(jobs, lengths, p, which, j):
    """Take job ``j`` out of pool ``p``'s list ``jobs`` (its queue or its running set, whose
    length is ``lengths[p, which]``), keeping the others' order."""
    n = lengths[p, which]
    i = 0
    while jobs[p, i] != j:
        i += 1
    for r in range(i, n - 1):
        jobs[p, r] = jobs[p, r + 1]
    lengths[p, which] = n - 1


@njit(cache=True, **NO_REFCOUNT)
def _start(j, now, st, fleet):
    pools, gpus, floats, ints, queue, running, lengths, counters = st[0], st[1], st[3], st[4], st[7], st[8], st[9], \
        st[13]
    p = pools[j]
    _remove(queue, lengths, p, 0, j)
    running[p, lengths[p, 1]] = j
    lengths[p, 1] += 1
    lengths[p, 2] += gpus[j]
    counters[C_QUEUED] -= 1
    counters[C_RUNNING] += 1
    if math.isnan(floats[j, F_START]):
        floats[j, F_START] = now
    floats[j, F_SINCE] = now
    ints[j, I_RUNNING] = 1
    _set_training(p, now, st, fleet)
    ints[j, I_VERSION] += 1  # a new run: events of an earlier one are void
    _schedule(st, now, EV_JOB_INIT, j, URGENT)


@njit(cache=True, **NO_REFCOUNT)
def _release(j, now, st, fleet):
    pools, gpus, floats, ints, running, lengths, counters = st[0], st[1], st[3], st[4], st[8], st[9], st[13]
    p = pools[j]
    _remove(running, lengths, p, 1, j)
    lengths[p, 2] -= gpus[j]
    counters[C_RUNNING] -= 1
    ints[j, I_RUNNING] = 0
    ints[j, I_VERSION] += 1
    floats[j, F_HELD] += (now - floats[j, F_SINCE]) * gpus[j]
    _set_training(p, now, st, fleet)


@njit(cache=True, **NO_REFCOUNT)
def _enqueue(j, st):
    """Put job ``j`` in its pool's queue, which stays in submission order."""
    pools, queue, lengths, counters = st[0], st[7], st[9], st[13]
    p = pools[j]
    n = lengths[p, 0]
    i = n
    while i > 0 and queue[p, i - 1] > j:
        queue[p, i] = queue[p, i - 1]
        i -= 1
    queue[p, i] = j
    lengths[p, 0] = n + 1
    counters[C_QUEUED] += 1


@njit(cache=True, **NO_REFCOUNT)
def _try_start(p, now, policy, step_s, st, serve, fleet):
    if st[9][p, 0] == 0:
        return
    count = chosen_to_start(p, _free(p, now, step_s, st, serve, fleet), now, policy, st)
    for i in range(count):
        _start(st[15][i], now, st, fleet)


@njit(cache=True, **NO_REFCOUNT)
def _next_segment(j, now, rng, st):
    """Job ``j`` works on: schedule the end of its next checkpoint segment or the failure that
    cuts it short; return whether its work is done (nothing scheduled)."""
    floats = st[3]
    left = floats[j, F_WORK] - floats[j, F_DONE]
    if left <= 1e-9:
        return True
    segment = min(floats[j, F_CKPT], left)
    wall = segment + (floats[j, F_CKPT_TIME] if segment < left - 1e-9 else 0.0)
    rate = floats[j, F_RATE] * st[1][j]
    to_failure = rng.exponential(1.0 / rate) if rate > 0 else np.inf
    if to_failure < wall:
        _schedule(st, now + to_failure, EV_JOB_FAILED, j)
    else:
        floats[j, F_SEGMENT] = segment
        _schedule(st, now + wall, EV_JOB_SEGMENT, j)
    return False


@njit(cache=True, **NO_REFCOUNT)
def _restart_or_work(j, now, rng, st):
    """A run of job ``j`` goes on from ``now``: its restart first if it needs one; return
    whether its work is done."""
    if st[4][j, I_RESTART]:
        _schedule(st, now + st[3][j, F_RESTART], EV_JOB_RESTARTED, j)
        return False
    return _next_segment(j, now, rng, st)


@njit(cache=True, **NO_REFCOUNT)
def _handle(kind, arg, now, policy, review_s, step_s, rng, st, serve, fleet):
    """Run one event; return whether a job a launch waits for ended."""
    pools, floats, ints, counters = st[0], st[3], st[4], st[13]
    n_jobs = pools.shape[0]
    done = False
    j = arg
    if kind == EV_SUBMIT:  # the submitter: the job it waited for, then every job due now
        first = True
        while counters[C_NEXT_JOB] < n_jobs:
            nxt = counters[C_NEXT_JOB]
            submit = floats[nxt, F_SUBMIT]
            if not (first and arg >= 0) and submit > now:
                _schedule(st, now + (submit - now), EV_SUBMIT, nxt)
                return False
            first = False
            counters[C_NEXT_JOB] = nxt + 1
            _enqueue(nxt, st)
            _try_start(pools[nxt], now, policy, step_s, st, serve, fleet)
        return False
    if kind == EV_REVIEW_INIT:
        _schedule(st, now + review_s, EV_REVIEW, arg)
        return False
    if kind == EV_REVIEW:
        _try_start(arg, now, policy, step_s, st, serve, fleet)
        _schedule(st, now + review_s, EV_REVIEW, arg)
        return False
    if kind == EV_JOB_INIT:
        done = _restart_or_work(j, now, rng, st)
    elif kind == EV_JOB_RESTARTED:
        ints[j, I_RESTART] = 0
        done = _next_segment(j, now, rng, st)
    elif kind == EV_JOB_FAILED:
        ints[j, I_INTERRUPTIONS] += 1
        ints[j, I_RESTART] = 1
        done = _restart_or_work(j, now, rng, st)
    elif kind == EV_JOB_SEGMENT:
        floats[j, F_DONE] += floats[j, F_SEGMENT]
        done = _next_segment(j, now, rng, st)
    if not done:
        return False
    floats[j, F_DONE] = floats[j, F_WORK]
    floats[j, F_END] = now
    _release(j, now, st, fleet)
    if ints[j, I_LAUNCH]:  # the id SimPy gives the event of its end, before the starts it allows
        counters[C_STOPPED_JOB] = j
        counters[C_LAUNCH_ID] = counters[C_SEQ]
        counters[C_SEQ] += 1
    _try_start(pools[j], now, policy, step_s, st, serve, fleet)
    return ints[j, I_LAUNCH] != 0


@njit(cache=True, **NO_REFCOUNT)
def run_events(last_step, until_s, until_key, policy, review_s, step_s, rng, st, serve, fleet):
    """Run the events that fall in steps up to ``last_step`` and come before SimPy's next event
    (at ``until_s``, with key ``until_key``, or -1 for none to run at that instant), in order;
    return whether it stopped after a job a launch waits for ended."""
    heap_time, heap_key, heap_event, counters = st[10], st[11], st[12], st[13]
    while counters[C_HEAP] > 0:
        now = heap_time[0]
        if now > until_s or (now == until_s and heap_key[0] >= until_key) or _step_of(now, step_s) > last_step:
            return False
        kind, arg, version = pop(heap_time, heap_key, heap_event, counters)
        if kind >= EV_JOB_INIT and version != st[4][arg, I_VERSION]:
            continue  # the run it belonged to was preempted
        if _handle(kind, arg, now, policy, review_s, step_s, rng, st, serve, fleet):
            return True
    return False


@njit(cache=True, **NO_REFCOUNT)
def _first_step_with_effect(k1, step_s, st):
    """A step before which no event in the heap, nor any it leads to, changes the fleet or
    reads it (at most ``k1``): the steps before it are integrated in one kernel call and
    those events run after, in their order (so every draw and event id is as it was).

    Such events: a review of a pool whose queue is empty (it only schedules the next one;
    only an event, or a preemption, which stops the kernel, can fill a queue), and a job's
    events short of its end (a checkpoint saved, a failure, a restart: they schedule the
    job's next event, drawing from the loop's stream). A job cannot end before the work it
    has left is done, one second of margin for rounding, so that bounds the step too. Void
    events are passed over.
    """
    heap_time, heap_event, counters, floats, ints, lengths = st[10], st[12], st[13], st[3], st[4], st[9]
    first = math.inf
    for i in range(counters[C_HEAP]):
        at, kind, arg = heap_time[i], heap_event[i, 0], heap_event[i, 1]
        if at >= first or (kind == EV_REVIEW and lengths[arg, 0] == 0):
            continue
        if kind >= EV_JOB_INIT:
            if heap_event[i, 2] != ints[arg, I_VERSION]:
                continue
            left = floats[arg, F_WORK] - floats[arg, F_DONE]
            if kind == EV_JOB_SEGMENT:
                left = floats[arg, F_WORK] - (floats[arg, F_DONE] + floats[arg, F_SEGMENT])  # as _next_segment
                if left > 1e-9:
                    at += left - 1.0
            else:
                at += left - 1.0
        first = min(first, at)
    return k1 if first == math.inf else min(k1, _step_of(first, step_s))


@njit(cache=True)
def preempt_for_inference(k, policy, step_s, st, serve, fleet):
    """At step ``k``'s start, preempt jobs in ``preempt`` pools whose GPUs inference needs
    (lowest priority, then latest started, then latest submitted first; never a job that has
    used up today's preemptions), then let those pools' queues start what still fits."""
    priority, floats, ints, running, lengths, modes = st[2], st[3], st[4], st[8], st[9], st[5]
    installed, failed, out_of_service = fleet[0], fleet[1], fleet[2]
    n_pools = installed.shape[0]
    now = k * step_s
    need = np.zeros(0, dtype=np.int64)
    touched = np.zeros(n_pools, dtype=np.bool_)
    for p in range(n_pools):
        if modes[p] != MODE_PREEMPT or lengths[p, 1] == 0:
            continue
        if need.shape[0] == 0:
            _need(now, step_s, st, serve, fleet)
            need = st[14]
        deficit = need[p] - (installed[p] - failed[p] - out_of_service[p] - lengths[p, 2])
        while deficit > 0 and lengths[p, 1] > 0:
            victim, best = -1, (0, 0.0, 0)
            for r in range(lengths[p, 1]):
                job = running[p, r]
                key = (priority[job], -floats[job, F_SINCE], -job)
                if (victim < 0 or key < best) and not is_protected(job, now, st):
                    victim, best = job, key
            if victim < 0:  # only protected jobs left (inference was never open to their GPUs)
                break
            count_preemption(victim, now, st)
            _release(victim, now, st, fleet)
            ints[victim, I_PREEMPTIONS] += 1
            ints[victim, I_RESTART] = 1
            _enqueue(victim, st)
            deficit -= st[1][victim]
            touched[p] = True
    for p in range(n_pools):
        if touched[p]:
            _try_start(p, now, policy, step_s, st, serve, fleet)


@njit(cache=True)
def train_and_integrate(k0, k1, until_s, until_key, policy, review_s, rng, st, serve, fleet, queued_out, running_out,
                        kernel_args):
    """Integrate steps ``k0 <= k < k1`` with training's events run between them, then the events
    after the last step that come before SimPy's next event (at ``until_s``: those at that
    instant too if their key, priority then creation, is below ``until_key``); return
    ``(next step, code)``.

    Before step ``k`` is integrated, every training event falling in it runs (those at or
    before its start). Steps with no event between them are integrated in one call, which
    stops at a step where inference needs GPUs that jobs hold in a ``preempt`` pool: the jobs
    are preempted at its start (and what that starts runs) before it is integrated, as the
    SimPy engine does. ``kernel_args`` are :func:`~simulator.path.kernels.integrate_interval`'s
    arguments after ``k0, k1`` (``stop_from`` among them is replaced). The code is
    ``LAUNCH_JOB_ENDED`` when a job a launch waits for ended (the engine starts the launch,
    then calls again).
    """
    step_s = kernel_args[0]
    counters = st[13]
    installed = fleet[0]
    scratch = step_scratch(installed.shape[0], serve[0].shape[1], serve[3].shape[1])
    k = k0
    checked = -1  # the step whose preemptions ran already
    counters[C_NEED_STEP] = -1  # the fleet or the demand may have changed since the last call
    while k < k1:
        if run_events(k, until_s, until_key, policy, review_s, step_s, rng, st, serve, fleet):
            return k, LAUNCH_JOB_ENDED
        last = k1
        if counters[C_HEAP] > 0:
            last = min(k1, max(k + 1, _first_step_with_effect(k1, step_s, st)))
        if counters[C_CAPPED]:  # protections end at midnight: recompute them at each day's first step
            for p in range(installed.shape[0]):
                if st[5][p] == MODE_PREEMPT:
                    protect(p, k * step_s, st, fleet)
            counters[C_NEED_STEP] = -1
            last = min(last, next_midnight_step(k, step_s, st))
        queued_out[k:last] = counters[C_QUEUED]
        running_out[k:last] = counters[C_RUNNING]
        stop_from = k + 1 if checked == k else k
        reached = integrate_interval(k, last, *kernel_args[:KERNEL_STOP_FROM], stop_from,
                                     *kernel_args[_AFTER_STOP_FROM:], scratch, 0)
        counters[C_NEED_STEP] = -1  # failures in those steps changed the fleet
        if reached < last:
            # The events passed over up to that step come first, as they would have run
            # before it was integrated (they cannot end a job: none is a job's last).
            run_events(reached, until_s, until_key, policy, review_s, step_s, rng, st, serve, fleet)
            preempt_for_inference(reached, policy, step_s, st, serve, fleet)
            checked = reached
            k = reached
        else:
            k = last
    if run_events(k1 + _ALL_STEPS, until_s, until_key, policy, review_s, step_s, rng, st, serve, fleet):
        return k1, LAUNCH_JOB_ENDED
    return k1, REACHED
