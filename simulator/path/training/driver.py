"""Compiled training on a path: the event loop of :mod:`simulator.path.training.loop`, driven
by the step clock, and the launches that wait on its jobs.

The step clock hands every advance to :meth:`CompiledTraining.advance`, which runs training's
events and integrates the steps between them up to that instant in one compiled call. When a
job that a launch waits for ends, the call returns and the launch becomes a SimPy event
``delay`` after the job's end, as in :func:`simulator.path.training.runtime.start_training`.
"""

from __future__ import annotations

import heapq
import itertools
from contextlib import contextmanager

import numpy as np
import simpy

from simulator.path.streams import STREAM_TRAINING
from simulator.path.training.job_table import JobTable
from simulator.path.training.loop import train_and_integrate
from simulator.path.training.loop_layout import (
    C_LAUNCH_ID,
    C_SEQ,
    F_END,
    LAUNCH_JOB_ENDED,
    NORMAL,
    POLICY_CODES,
    SEQ_BITS,
)
from simulator.path.training.loop_state import TrainingState
from simulator.path.training.runtime import launch_demand, launch_inputs
from simulator.path.training.sources import stream_job_arrays


class CompiledTraining:
    """A path's jobs, scheduled by the compiled loop between the steps of ``clock``."""

    def __init__(self, env: simpy.Environment, clock, fleet, plan, generator) -> None:
        self.env, self.plan = env, plan
        for pool, floor in enumerate(plan.training_partition):
            fleet.training_floor[pool] = floor
        self.jobs = JobTable.build(plan.jobs, [(stream, stream_job_arrays(stream, generator(STREAM_TRAINING, stream.key)))
                                               for stream in plan.job_streams])
        self.launches = launch_inputs(plan, generator)  # job name -> [(model, delay, factor, rng)]
        self.state = TrainingState(self.jobs, len(plan.pool_names), plan.n_steps, plan.training_mode,
                                   plan.training_partition, plan.training_review_s, set(self.launches),
                                   plan.day_offset_s, bool((plan.burst > 0).any()))
        self.policy = POLICY_CODES[plan.training_policy]
        # Working arrays of the loop's placements (GPUs open per pool; replicas, load per slot; unplaced).
        self.placement = (np.zeros(len(plan.pool_names), dtype=np.int64), np.zeros(plan.preferences.shape, dtype=np.int64),
                          np.zeros(plan.preferences.shape), np.zeros(plan.preferences.shape[0]))
        self.rng = generator(STREAM_TRAINING, 0)  # failures of every job, drawn in event order
        self.done_until = (-np.inf, -1)
        with self._numbered():
            self.state.start()

    @contextmanager
    def _numbered(self):
        """Number training's new events from SimPy's event counter (``Environment._eid``, the
        id SimPy orders same-instant events by), and hand the counter back after."""
        counters = self.state.counters
        counters[C_SEQ] = next(self.env._eid)
        try:
            yield
        finally:
            self.env._eid = itertools.count(int(counters[C_SEQ]))

    def advance(self, clock, until_s: float, until_key: int = -1) -> None:
        """Run training's events before SimPy's next event, at ``until_s`` with key ``until_key``
        (-1: none at that instant), and integrate the steps that start before ``until_s``."""
        if (until_s, until_key) <= self.done_until:
            return
        plan, state, fleet = self.plan, self.state, clock.fleet
        serve = (clock.demand, plan.capacity_per_step, plan.gpus_per_replica, plan.companion, plan.preferences,
                 plan.api_mode, plan.burst, *self.placement)
        fleet_arrays = (fleet.installed, fleet.failed, fleet.out_of_service, fleet.training, fleet.training_floor,
                        plan.preempt)
        arrays = (state.pool, state.gpus, state.priority, state.floats, state.ints, state.modes, state.partitions,
                  state.queue, state.running, state.lengths, state.heap_time, state.heap_key, state.heap_event,
                  state.counters, state.need, *state.scratch)
        while True:
            end = max(min(plan.step_at_or_after(until_s), plan.n_steps), clock.next_step)
            clock.outages.prepare(clock.next_step, end, fleet.installed)
            with self._numbered():
                reached, code = train_and_integrate(
                    clock.next_step, end, float(until_s), until_key, self.policy, state.review_s, self.rng, arrays, serve,
                    fleet_arrays, state.queued_per_step, state.running_per_step, clock.kernel_args(plan.n_steps + 1))
            clock.kernel_calls += 1
            clock.next_step = int(reached)
            if code != LAUNCH_JOB_ENDED:
                self.done_until = (until_s, until_key)
                return
            ended = float(state.floats[state.stopped_job(), F_END])
            launch_id = int(state.counters[C_LAUNCH_ID])
            self._job_ended(clock, ended, launch_id, self.launches[self.jobs.names[state.stopped_job()]])
            # SimPy now runs that event before training goes on past it.
            until_s, until_key = min((until_s, until_key), (ended, NORMAL * SEQ_BITS + launch_id))

    def _job_ended(self, clock, ended_s: float, event_id: int, launches) -> None:
        """The event of a launch's job ending, put in SimPy's queue at the job's end with the id
        the loop reserved for it (``Environment._queue``: the reference's ``finished`` event).
        When it runs, each launch waits its delay, then its demand starts."""
        env, plan = self.env, self.plan
        ended = env.event()
        ended._ok, ended._value = True, None  # triggered: SimPy runs its callbacks when it comes up

        def wait(_event, model, delay, factor, rng):
            if ended_s + delay < plan.horizon_s:
                env.timeout(delay).callbacks.append(lambda _: launch_demand(clock, plan, model, factor, rng))

        for model, delay, factor, rng in launches:
            ended.callbacks.append(lambda event, m=model, d=delay, f=factor, r=rng: wait(event, m, d, f, r))
        heapq.heappush(env._queue, (ended_s, NORMAL, event_id, ended))

    def finish(self):
        """The log the tables read: per-step counts, and each job's outcome on its record."""
        self.state.finish(self.jobs)
        return self.state.queued_per_step, self.state.running_per_step, self.jobs

