"""Serving at a fixed concurrency: a closed loop of N users, as public serving benchmarks report it.

N users each send their next request the moment their previous one finishes (zero think time);
all N start at time 0, until the workload's requests have all been sent (vLLM's
``benchmark_serving --max-concurrency``, InferenceX, MLPerf Interactive). The engines learn
completion times as they run (:func:`simulator.serving.batching.run_batching_loop`,
:func:`simulator.serving.vllm_engine.serve_vllm_loop`): request ``k >= N`` is sent at the
``k − N + 1``-th completion, by the user whose request just finished. Request lengths are the
workload's, in order (fixed, random or a trace's mix; its arrival times are ignored).

Per-user throughput is InferenceX's *interactivity*: tokens/s/user = 1 / mean TPOT, with TPOT
of a request = (E2E − TTFT) / (output tokens − 1), the decode rate one user sees.
``e2e_tokens_per_s_per_user`` is also given: the mean over requests of output tokens / E2E.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from simulator.serving.iteration import IterationModel
from simulator.serving.replica import ServingResult, simulate_router
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm

CURVE_KEYS = ("concurrency", "requests", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
              "e2e_p50_s", "e2e_p99_s", "e2e_mean_s", "throughput_req_s", "output_tokens_per_s",
              "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user", "e2e_tokens_per_s_per_user")


def serve_closed_loop(users: int, prompt_tokens: Any, output_tokens: Any, model: IterationModel, *,
                      scheduler: str = "vllm", max_batch: int = 256, max_batched_tokens: int | None = None,
                      replicas: int = 1, policy: str = "least_outstanding", prefix_caching: bool = True,
                      kv_preemption: bool = True, prefix_id: Any = None, prefix_tokens: Any = None,
                      prompt_id: Any = None, kv_capacity_tokens: int | None = None) -> ServingResult:
    """Serve the requests as a closed loop of ``users``; per-request result (arrivals filled in).

    ``scheduler``: ``"vllm"`` (:func:`simulate_vllm`) or ``"whole_prompt"`` (:func:`simulate_router`,
    ``max_batched_tokens`` then being the chunked-prefill budget, None for none).
    ``kv_capacity_tokens``: the replica's KV cache (default: the model's own).
    """
    if users < 1:
        raise ValueError(f"concurrency must be >= 1, got {users}")
    if scheduler == "vllm":
        return simulate_vllm(None, prompt_tokens, output_tokens, model, max_num_seqs=max_batch,
                             max_num_batched_tokens=max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS,
                             prefix_caching=prefix_caching, kv_preemption=kv_preemption, prefix_id=prefix_id,
                             prefix_tokens=prefix_tokens, prompt_id=prompt_id, replicas=replicas,
                             policy=policy, users=users, kv_capacity_tokens=kv_capacity_tokens)
    if scheduler != "whole_prompt":
        raise ValueError(f"scheduler must be vllm or whole_prompt, got {scheduler!r}")
    return simulate_router(None, prompt_tokens, output_tokens, model, replicas=replicas, policy=policy,
                           max_batch=max_batch, prefill_chunk_tokens=max_batched_tokens, users=users,
                           kv_capacity_tokens=kv_capacity_tokens)


def concurrency_point(result: ServingResult, users: int, gpus_per_replica: int = 1) -> dict[str, Any]:
    """One row of the curve: the run's summary plus the per-user rates (module docstring)."""
    row = result.summary(gpus_per_replica=gpus_per_replica)
    row["concurrency"] = int(users)
    tpot_mean = row.get("tpot_mean_s")
    row["output_tokens_per_s_per_user"] = 1.0 / tpot_mean if tpot_mean else None
    with np.errstate(divide="ignore", invalid="ignore"):
        per_request = result.output_tokens / result.e2e_s
    finite = per_request[np.isfinite(per_request)]
    row["e2e_tokens_per_s_per_user"] = float(finite.mean()) if len(finite) else None
    return row


def serve_at_concurrency(users: int, prompt_tokens: Any, output_tokens: Any, model: IterationModel,
                         gpus_per_replica: int = 1, **options: Any) -> dict[str, Any]:
    """The curve's row for ``users`` concurrent users (options: :func:`serve_closed_loop`'s)."""
    result = serve_closed_loop(users, prompt_tokens, output_tokens, model, **options)
    return concurrency_point(result, users, gpus_per_replica)


def concurrency_curve(concurrencies: Iterable[int], workload_for: Any, model: IterationModel,
                      gpus_per_replica: int = 1, **options: Any) -> list[dict[str, Any]]:
    """Rows for each concurrency; ``workload_for(N)`` returns the requests served at N.

    ``workload_for`` returns a :class:`simulator.serving.workload.Workload` (its arrivals ignored).
    """
    rows = []
    for users in concurrencies:
        workload = workload_for(int(users))
        labels = {"prefix_id": workload.prefix_id, "prefix_tokens": workload.prefix_tokens,
                  "prompt_id": workload.prompt_id} if options.get("scheduler", "vllm") == "vllm" else {}
        rows.append(serve_at_concurrency(int(users), workload.prompt_tokens, workload.output_tokens, model,
                                         gpus_per_replica, **labels, **options))
    return rows


def parse_concurrency(text: str) -> list[int]:
    """``"1,4,16"`` -> ``[1, 4, 16]``; ValueError naming the bad entry."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ValueError(f"--concurrency takes integers >= 1 separated by commas, got {part!r}")
        values.append(int(part))
    return values
