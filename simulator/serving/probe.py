"""What a capacity probe serves: requests drawn from a length mix, or a trace's requests as given.

A capacity probe (:func:`simulator.serving.capacity.capacity_curve`) serves
``R × (warm-up + requests)`` requests arriving as one Poisson process over ``R`` replicas.
Which requests:

* a :class:`~simulator.serving.trace.LengthMix` (a serving block's ``lengths: fixed``): drawn
  with replacement from the mix, labelled by its ``shared_prefix_tokens`` / ``distinct_prompts``;
* a :class:`TraceRequests` (``lengths:`` a trace CSV or ``azure-conv``): the trace's requests in
  the trace's order (from its start again when the probe needs more), each with the labels
  ``fleetcast serving --trace`` gives it (:func:`simulator.serving.workload.trace_workload`,
  the same code): the trace's ``prefix_id, prefix_tokens`` columns, replaced by a
  ``shared_prefix_tokens`` system prompt when one is given, and ``distinct_prompts`` prompt ids
  drawn as that command draws them from the serving block's seed. The order is kept because it
  carries the trace's locality: a conversation's turns, or the questions on one document, come
  close together, which is what a prefix cache and prefix-affinity routing live on. Only the
  arrival times are the probe's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.serving.trace import LengthMix
from simulator.serving.workload import trace_workload


@dataclass(frozen=True)
class TraceRequests:
    """A trace's requests in trace order, labelled as ``fleetcast serving --trace`` labels them."""

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_id: np.ndarray | None
    prefix_tokens: np.ndarray | None
    prompt_id: np.ndarray | None
    source: str
    prefix_columns: bool = False  # the trace's own prefix columns label the requests
    shared_prefix_tokens: int = 0
    distinct_prompts: int = 0

    def sample_requests(self, n: int, rng: np.random.Generator | None = None) -> dict[str, np.ndarray | None]:
        """The first ``n`` requests, the trace repeated from its start as needed (``rng`` unused)."""
        take = np.arange(n) % len(self.prompt_tokens)

        def pick(values: np.ndarray | None) -> np.ndarray | None:
            return None if values is None else values[take]

        return dict(prompt_tokens=self.prompt_tokens[take], output_tokens=self.output_tokens[take],
                    prefix_id=pick(self.prefix_id), prefix_tokens=pick(self.prefix_tokens),
                    prompt_id=pick(self.prompt_id))

    def describe(self) -> str:
        """The workload in words, for ``scenario.resolved.yaml``."""
        text = f"trace {self.source} ({len(self.prompt_tokens):,} requests), taken in order from its start"
        if self.prefix_columns:
            assert self.prefix_id is not None and self.prefix_tokens is not None
            labelled = self.prefix_id >= 0
            shared = np.minimum(self.prefix_tokens, self.prompt_tokens)[labelled].sum()
            text += (f", prefix columns used ({len(np.unique(self.prefix_id[labelled])):,} prefixes, "
                     f"{shared / self.prompt_tokens.sum():.1%} of prompt tokens in a shared prefix)")
        return text + _labels_text(self.shared_prefix_tokens, self.distinct_prompts)


def trace_requests(trace: str, seed: int = 0, shared_prefix_tokens: int = 0,
                   distinct_prompts: int = 0) -> TraceRequests:
    """A trace's requests as ``fleetcast serving --trace TRACE --seed SEED
    [--shared-prefix-tokens S] [--distinct-prompts D]`` serves them (raises TraceError)."""
    workload = trace_workload(trace, seed=seed, shared_prefix_tokens=shared_prefix_tokens,
                              distinct_prompts=distinct_prompts)
    return TraceRequests(workload.prompt_tokens, workload.output_tokens, workload.prefix_id,
                         workload.prefix_tokens, workload.prompt_id, trace,
                         prefix_columns=workload.prefix_id is not None and shared_prefix_tokens == 0,
                         shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts)


def describe_mix(mix: LengthMix | TraceRequests) -> str:
    """What the probe draws its requests from, in words."""
    if isinstance(mix, TraceRequests):
        return mix.describe()
    if mix.source == "fixed" and len(mix.prompt_tokens) == 1:
        text = f"fixed {int(mix.prompt_tokens[0])}+{int(mix.output_tokens[0])} tokens"
    else:
        text = f"lengths of {mix.source}, {len(mix.prompt_tokens):,} requests drawn with replacement"
    return text + _labels_text(mix.shared_prefix_tokens, mix.distinct_prompts)


def request_arrays(mix: LengthMix | TraceRequests) -> list[np.ndarray]:
    """Every array the probe's requests depend on (for the capacity cache key)."""
    if not isinstance(mix, TraceRequests):
        return [mix.prompt_tokens, mix.output_tokens]
    empty = np.zeros(0, dtype=np.int64)
    return [np.array([-1]), mix.prompt_tokens, mix.output_tokens,
            *(empty if values is None else values
              for values in (mix.prefix_id, np.array([-2]), mix.prefix_tokens, np.array([-3]), mix.prompt_id))]


def _labels_text(shared_prefix_tokens: int, distinct_prompts: int) -> str:
    text = f", a {shared_prefix_tokens:,}-token prefix shared by every request" if shared_prefix_tokens else ""
    return text + (f", {distinct_prompts:,} distinct prompts repeated" if distinct_prompts else "")
