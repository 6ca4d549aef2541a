"""Changes inside a step: the step's figures are the time-weighted mix of the fleets it saw.

Step ``k`` covers ``[k·Δ, (k+1)·Δ)``. A fleet change at ``t = (k + f)·Δ`` inside it (GPUs
delivered, an autoscaler's request coming into service, a removal, GPUs taken out of or back
into service, a power cap, the end of a cohort's depreciation) serves the part of the step
after ``t``: the step's every figure, amounts (requests, GPU-hours, energy, cost, revenue)
and levels (GPUs, replicas) alike, is ``f`` × its value with the fleet before ``t`` plus
``(1 − f)`` × its value with the fleet after. With several changes in one step each gets its
share, ``f₁·A + (f₂ − f₁)·B + (1 − f₂)·C``. Demand is one rate over the step, so the mix is
exactly what integrating the two parts of the step separately would give. One figure is not
a mean: ``shortfall_gpus`` is the most GPUs missing in any part of the step, what it would
take to serve all of it (so it is positive exactly when a request went unserved).

When the change happens the clock has already integrated step ``k`` with the fleet before
it (an event at ``t`` first integrates every step starting before ``t``). So the step is
integrated again with the fleet after, into a one-row buffer, and its row is corrected by
``(1 − f) × (after − last)``, where ``last`` is the row's value for the fleet it held before
this change. Training's own events (a job starting, ending, being preempted) keep their
rule: they take effect from the first step starting at or after them.
"""

from __future__ import annotations

import inspect

import numpy as np

from simulator.path.kernels import MODEL_SHORTFALL_GPUS, integrate_interval

# A change this close to a step's start or end is at the boundary: nothing to mix.
_BOUNDARY = 1e-9
_NEVER = 1 << 40  # a stop_from past any horizon: a step mixed after a change is never stopped


class IntraStepMixer:
    """Corrects a step already integrated when the fleet changes inside it."""

    def __init__(self, clock) -> None:
        self.clock = clock
        plan = clock.plan
        n_pools, n_models = len(plan.pool_names), len(plan.model_names)
        self.step = -1  # the step whose last fleet's values ``self.last_*`` hold
        self.pool_row = np.zeros((1, n_pools, clock.pool_out.shape[2]))
        self.model_row = np.zeros((1, n_models, clock.model_out.shape[2]))
        self.other_row = np.zeros(1)
        self.last_pool = np.zeros((n_pools, clock.pool_out.shape[2]))
        self.last_model = np.zeros((n_models, clock.model_out.shape[2]))
        self.last_other = 0.0
        self.mixes = 0

    def after_change(self, now_s: float) -> None:
        """The fleet has just changed at ``now_s``: mix the step it falls in, if integrated."""
        clock = self.clock
        plan = clock.plan
        k = int(now_s // plan.step_s)
        into = now_s / plan.step_s - k
        if into <= _BOUNDARY or into >= 1.0 - _BOUNDARY or k >= plan.n_steps or k >= clock.next_step:
            return
        if self.step != k:  # the first change in this step: the row holds the fleet before it
            self.step = k
            self.last_pool[:] = clock.pool_out[k]
            self.last_model[:] = clock.model_out[k]
            self.last_other = float(clock.other_out[k])
        self._integrate_step(k)
        after = 1.0 - into
        most_short = np.maximum(clock.model_out[k, :, MODEL_SHORTFALL_GPUS], self.model_row[0, :, MODEL_SHORTFALL_GPUS])
        clock.pool_out[k] += after * (self.pool_row[0] - self.last_pool)
        clock.model_out[k] += after * (self.model_row[0] - self.last_model)
        clock.other_out[k] += after * (self.other_row[0] - self.last_other)
        clock.model_out[k, :, MODEL_SHORTFALL_GPUS] = most_short
        self.last_pool[:] = self.pool_row[0]
        self.last_model[:] = self.model_row[0]
        self.last_other = float(self.other_row[0])
        self.mixes += 1

    def _integrate_step(self, k: int) -> None:
        """Step ``k``'s values with the fleet as it is now, into the one-row buffers."""
        clock = self.clock
        args = list(clock.kernel_args(_NEVER))
        # The per-step inputs, sliced to the step, and the one-row outputs.
        args[_DEMAND] = clock.demand[k:k + 1]
        args[_REVENUE] = args[_REVENUE][k:k + 1]
        args[_FIXED_REVENUE] = args[_FIXED_REVENUE][k:k + 1]
        args[-3:] = [self.pool_row, self.model_row, self.other_row]
        clock.outages.prepare(k, k + 1, clock.fleet.installed)
        integrate_interval(0, 1, *args, clock.scratch, k)
        clock.kernel_calls += 1


# Where the per-step inputs stand among the kernel's arguments after ``k0, k1``.
_ARGUMENTS = list(inspect.signature(integrate_interval.py_func).parameters)[2:]
_DEMAND, _REVENUE, _FIXED_REVENUE = (_ARGUMENTS.index(name) for name in ("demand", "revenue_per_request", "fixed_revenue"))

__all__ = ["IntraStepMixer"]
