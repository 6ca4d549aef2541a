"""Python face of the batching engine: validate inputs, run, and summarise latencies.

``simulate_replica`` serves requests on one replica; ``simulate_router`` spreads them over
several behind a round-robin or least-outstanding-requests router. Both return a
:class:`ServingResult` with per-request arrays in the order the requests were given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.serving.batching import (
    POLICY_LEAST_OUTSTANDING,
    POLICY_ROUND_ROBIN,
    run_batching_loop,
)
from simulator.serving.iteration import IterationModel, ServingConfigError

POLICIES = {"round_robin": POLICY_ROUND_ROBIN, "least_outstanding": POLICY_LEAST_OUTSTANDING}
PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class ServingResult:
    """Per-request times (seconds) of a simulated workload, in input order."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    admit_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    replica: np.ndarray
    iterations: int
    replicas: int = 1
    preemptions: np.ndarray | None = None  # times each request was preempted (vLLM policy)
    cached_tokens: np.ndarray | None = None  # prompt tokens taken from the prefix cache (vLLM policy)
    host_tokens: np.ndarray | None = None  # prompt tokens loaded from the host KV tier
    verify_steps: np.ndarray | None = None  # speculative verification steps per request
    verified_tokens: np.ndarray | None = None  # tokens those steps emitted
    ttft_s: np.ndarray = field(init=False)
    e2e_s: np.ndarray = field(init=False)
    queue_s: np.ndarray = field(init=False)
    tpot_s: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ttft_s", self.first_token_s - self.arrival_s)
        object.__setattr__(self, "e2e_s", self.finish_s - self.arrival_s)
        object.__setattr__(self, "queue_s", self.admit_s - self.arrival_s)
        decode = self.output_tokens - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            tpot = np.where(decode > 0, (self.finish_s - self.first_token_s) / decode, np.nan)
        object.__setattr__(self, "tpot_s", tpot)

    @property
    def duration_s(self) -> float:
        """From the first arrival to the last request's last token."""
        if not len(self.arrival_s):
            return 0.0
        return float(self.finish_s.max() - self.arrival_s.min())

    def summary(self, gpus_per_replica: int = 1) -> dict[str, Any]:
        """Throughput and latency percentiles (the keys of ``fleetcast serving --json``)."""
        duration = self.duration_s
        out_tokens = float(self.output_tokens.sum())
        rate = out_tokens / duration if duration > 0 else float("nan")
        stats: dict[str, Any] = {
            "requests": int(len(self.arrival_s)),
            "replicas": self.replicas,
            "duration_s": duration,
            "throughput_req_s": len(self.arrival_s) / duration if duration > 0 else float("nan"),
            "output_tokens_per_s": rate,
            "output_tokens_per_s_per_gpu": rate / (gpus_per_replica * self.replicas),
            "iterations": self.iterations,
        }
        for name, values in (("ttft", self.ttft_s), ("tpot", self.tpot_s), ("e2e", self.e2e_s),
                             ("queue", self.queue_s)):
            finite = values[np.isfinite(values)]
            for p in PERCENTILES:
                stats[f"{name}_p{p}_s"] = float(np.percentile(finite, p)) if len(finite) else None
            stats[f"{name}_mean_s"] = float(finite.mean()) if len(finite) else None
        # ITL as the calibration data defines it: (mean E2E - mean TTFT) / (mean output tokens - 1).
        decode_tokens = float(self.output_tokens.mean()) - 1.0 if len(self.output_tokens) else 0.0
        stats["itl_mean_s"] = ((stats["e2e_mean_s"] - stats["ttft_mean_s"]) / decode_tokens
                               if decode_tokens > 0 and stats["e2e_mean_s"] is not None else None)
        if self.preemptions is not None:
            stats["preemptions"] = int(self.preemptions.sum())
        if self.cached_tokens is not None:
            stats["prefix_cache_hit_rate"] = self.prefix_cache_hit_rate
        if self.host_tokens is not None:
            prompt = float(self.prompt_tokens.sum())
            stats["host_kv_hit_rate"] = float(self.host_tokens.sum()) / prompt if prompt else 0.0
        if self.verify_steps is not None:
            stats["tokens_per_step"] = self.tokens_per_step
        return stats

    @property
    def tokens_per_step(self) -> float:
        """Speculating: tokens emitted per verification step (others: nan)."""
        if self.verify_steps is None or self.verified_tokens is None or not self.verify_steps.sum():
            return float("nan")
        return float(self.verified_tokens.sum() / self.verify_steps.sum())

    @property
    def prefix_cache_hit_rate(self) -> float:
        """Share of prompt tokens taken from the prefix cache at admission (vLLM policy; else 0)."""
        prompt = float(self.prompt_tokens.sum())
        if self.cached_tokens is None or prompt == 0:
            return 0.0
        return float(self.cached_tokens.sum()) / prompt


def simulate_replica(
    arrival_s: Any,
    prompt_tokens: Any,
    output_tokens: Any,
    model: IterationModel,
    max_batch: int = 256,
    kv_capacity_tokens: int | None = None,
    prefill_chunk_tokens: int | None = None,
) -> ServingResult:
    """Serve requests on one replica with continuous batching.

    Args:
        arrival_s: arrival times in seconds (any order; ties keep input order).
        prompt_tokens, output_tokens: tokens per request (>= 1 each).
        model: an iteration-time model (:class:`LinearIterationModel` or roofline).
        max_batch: most requests running at once.
        kv_capacity_tokens: KV-cache tokens; admission reserves prompt+output tokens. Default:
            the model's own capacity when it has one (roofline), else unlimited.
        prefill_chunk_tokens: per-iteration token budget for chunked prefill (>= max_batch).
    """
    return simulate_router(arrival_s, prompt_tokens, output_tokens, model, replicas=1,
                           policy="round_robin", max_batch=max_batch,
                           kv_capacity_tokens=kv_capacity_tokens,
                           prefill_chunk_tokens=prefill_chunk_tokens)


def simulate_router(
    arrival_s: Any,
    prompt_tokens: Any,
    output_tokens: Any,
    model: IterationModel,
    replicas: int = 1,
    policy: str = "least_outstanding",
    max_batch: int = 256,
    kv_capacity_tokens: int | None = None,
    prefill_chunk_tokens: int | None = None,
    users: int | None = None,
) -> ServingResult:
    """Serve requests on ``replicas`` identical replicas behind a router.

    With ``users=N`` the arrivals are a closed loop (``arrival_s`` is ignored; pass None):
    requests 0..N-1 are sent at time 0 and each finish sends the next request in index order
    at that instant (zero think time), so N requests are always outstanding until all are sent.

    ``policy`` is ``"round_robin"`` (request k in arrival order to replica k mod R) or
    ``"least_outstanding"`` (to the replica with the fewest waiting + running requests,
    ties to the lowest index). Other arguments as :func:`simulate_replica`. A model with a
    ``frontend_s`` (the operator model) has it added to every request's TTFT and E2E: requests
    reach the replica that much after they were sent.
    """
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    arrival = closed_loop_arrivals(len(prompt), users) if users is not None else np.asarray(arrival_s, dtype=np.float64)
    if not (arrival.ndim == prompt.ndim == output.ndim == 1) or not (len(arrival) == len(prompt) == len(output)):
        raise ValueError("arrival_s, prompt_tokens and output_tokens must be 1-D and of equal length")
    if users is None and len(arrival) and not np.isfinite(arrival).all():
        raise ValueError("arrival times must be finite")
    if (prompt < 1).any() or (output < 1).any():
        raise ValueError("every request needs at least 1 prompt token and 1 output token")
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if replicas < 1 or max_batch < 1:
        raise ValueError("replicas and max_batch must be >= 1")
    if kv_capacity_tokens is None:
        kv_capacity_tokens = getattr(model, "kv_capacity_tokens", None)
    if kv_capacity_tokens is not None and len(prompt):
        largest = int((prompt + output).max())
        if largest > kv_capacity_tokens:
            raise ServingConfigError(
                f"a request needs {largest:,} tokens of KV cache but a replica holds {kv_capacity_tokens:,}; "
                "shorten the requests, use more GPUs per replica (tp) or fp8"
            )
    if prefill_chunk_tokens is not None and prefill_chunk_tokens < max_batch:
        raise ValueError(f"prefill_chunk_tokens ({prefill_chunk_tokens}) must be >= max_batch ({max_batch})")
    order = np.argsort(arrival, kind="stable")
    sorted_arrival = arrival[order]
    n = len(arrival)
    admit, first, finish = (np.full(n, np.nan) for _ in range(3))
    replica = np.zeros(n, dtype=np.int64)
    frontend = float(getattr(model, "frontend_s", 0.0) or 0.0)
    engine_arrival = sorted_arrival + frontend
    iterations = run_batching_loop(
        engine_arrival, prompt[order], output[order], model.params, int(max_batch),
        -1 if kv_capacity_tokens is None else int(kv_capacity_tokens),
        -1 if prefill_chunk_tokens is None else int(prefill_chunk_tokens),
        int(replicas), POLICIES[policy], admit, first, finish, replica, frontend,
    )
    back = np.empty_like(order)
    back[order] = np.arange(n)
    if users is not None:  # the engine wrote the closed loop's arrivals
        arrival = engine_arrival[back] - frontend
    return ServingResult(arrival, prompt, output, admit[back], first[back], finish[back],
                         replica[back], int(iterations), int(replicas))


def closed_loop_arrivals(n: int, users: int) -> np.ndarray:
    """Engine arrivals of a closed loop of ``users``: ``users`` zeros, then NaN (sent on a finish)."""
    if users < 1:
        raise ValueError(f"users must be >= 1, got {users}")
    arrival = np.full(n, np.nan)
    arrival[: min(users, n)] = 0.0
    return arrival
