"""Python face of the vLLM V1 scheduling policy (:mod:`simulator.serving.vllm_engine`).

:func:`simulate_vllm` serves requests on one replica (or several behind a router) the way
vLLM V1 schedules them: a per-iteration token budget (``max_num_batched_tokens``, default
8192) shared by decodes and chunked prefill, an optional prefix cache over 16-token blocks and
KV blocks allocated as tokens are generated, with preemption and recomputation of the newest
request when they run out (or, with ``kv_preemption=False``, a reservation of each request's
whole prompt + output at admission). The model's ``frontend_s`` (operator model), or the
``frontend_s`` given, is added to every request's TTFT and E2E: the request reaches the
scheduler that much after it was sent.

``simulate_replica`` keeps the contract's whole-prompt semantics; this is the policy used for
derived capacities and by ``fleetcast serving``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.serving.iteration import IterationModel, ServingConfigError
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.prefix import BLOCK_TOKENS, block_keys
from simulator.serving.replica import ServingResult, closed_loop_arrivals
from simulator.serving.routing import AFFINITY_LOAD_FACTOR, ROUTINGS, affinity_ranking, route_keys
from simulator.serving.speculative import SpeculativeDecoding
from simulator.serving.vllm_engine import serve_vllm_loop
from simulator.serving.vllm_layout import (
    F_LOAD_S_PER_TOKEN,
    F_PREFILL_FIRST,
    F_PRELOADED,
    F_SPEC_K,
    F_SPILL,
    FEATURES,
)

DEFAULT_MAX_BATCHED_TOKENS = 8192


def simulate_vllm(
    arrival_s: Any,
    prompt_tokens: Any,
    output_tokens: Any,
    model: IterationModel,
    max_num_seqs: int = 256,
    max_num_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS,
    kv_capacity_tokens: int | None = None,
    prefix_caching: bool = True,
    kv_preemption: bool = True,
    prefix_id: Any = None,
    prefix_tokens: Any = None,
    prompt_id: Any = None,
    replicas: int = 1,
    policy: str = "least_outstanding",
    frontend_s: float | None = None,
    block_size: int = BLOCK_TOKENS,
    affinity_load_factor: float = AFFINITY_LOAD_FACTOR,
    users: int | None = None,
    speculative: SpeculativeDecoding | None = None,
    draft: IterationModel | None = None,
    host_kv: HostKvTier | None = None,
    kv_arrives: bool = False,
    rng: np.random.Generator | None = None,
    prefill_first: bool = False,
) -> ServingResult:
    """Serve requests with vLLM V1 scheduling (module docstring).

    ``users=N``: a closed loop of N users instead of ``arrival_s`` (see
    :func:`simulator.serving.replica.simulate_router`).

    Args:
        arrival_s, prompt_tokens, output_tokens: per request, as :func:`simulate_replica`.
        model: an iteration-time model.
        max_num_seqs: most requests running at once (vLLM ``max_num_seqs``).
        max_num_batched_tokens: token budget of one iteration (>= 1).
        kv_capacity_tokens: KV-cache tokens per replica (rounded down to whole blocks); default:
            the model's own capacity when it has one, else unlimited.
        prefix_caching: reuse cached prompt blocks (needs ``prefix_id``/``prompt_id`` to share).
        kv_preemption: allocate blocks as tokens are computed and preempt the newest request when
            they run out (vLLM); False reserves prompt + output blocks at admission.
        prefix_id, prefix_tokens, prompt_id: prompt content labels (:mod:`simulator.serving.prefix`).
        replicas, policy: replicas behind a router: ``least_outstanding`` (alias ``least_loaded``),
            ``round_robin`` or ``prefix_affinity`` (:mod:`simulator.serving.routing`).
        frontend_s: per-request front-end latency; default the model's ``frontend_s`` or 0.
        block_size: tokens per KV block.
        affinity_load_factor: with ``prefix_affinity``, no replica takes a request while it holds
            ``ceil(factor × mean outstanding after it)`` or more (>= 1; ``inf``: pure consistent hashing).

        speculative: speculative decoding (:mod:`simulator.serving.speculative`); ``draft``: the
            draft model's iteration model when its method is ``draft_model``; acceptances are
            drawn from ``rng`` (default ``numpy.random.default_rng(0)``).
        host_kv: a host-memory KV tier per replica (:mod:`simulator.serving.kv_offload`).
        kv_arrives: each request arrives with its prompt's KV and first token (the decode side
            of a disaggregated deployment, :mod:`simulator.serving.disaggregated`); it only decodes,
            and its first token's time is its arrival.
        prefill_first: vLLM V0's scheduler instead of V1's (no chunked prefill): an iteration
            prefills the waiting prompts that fit, whole, while every decode waits, or else decodes
            (:mod:`simulator.serving.vllm_engine`); ``max_num_batched_tokens`` must then hold every
            request's prompt + output, as V0 requires it to hold ``max_model_len``.

    The result's ``cached_tokens`` holds the prompt tokens each request took from the prefix
    cache when first admitted, ``host_tokens`` those it loaded from the host tier, and
    ``verify_steps`` (speculating) its verification steps.

    A model with pipeline stages (``pp > 1``, :mod:`simulator.serving.parallelism`) keeps ``pp``
    batches in flight, one per stage, each iteration passing through every stage. It is served as
    ``pp`` engines per replica, each holding ``1 / pp`` of the KV cache and of ``max_num_seqs``
    (vLLM V1's one scheduler bounds the running requests of all batches together) with its own
    token budget; the router's policy spreads requests over all engines. Splitting the cache
    statically (and the prefix cache with it) is the approximation: vLLM shares one pool. With
    data-parallel attention (``dp > 1``) ``max_num_seqs`` and ``max_num_batched_tokens`` are per
    rank, as in vLLM: the replica's engine runs ``dp`` times as many (the ranks step together), and
    a request must fit one rank's cache.
    """
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    arrival = closed_loop_arrivals(len(prompt), users) if users is not None else np.asarray(arrival_s, dtype=np.float64)
    n = len(arrival)
    if not (arrival.ndim == prompt.ndim == output.ndim == 1) or not (n == len(prompt) == len(output)):
        raise ValueError("arrival_s, prompt_tokens and output_tokens must be 1-D and of equal length")
    if users is None and n and not np.isfinite(arrival).all():
        raise ValueError("arrival times must be finite")
    if (prompt < 1).any() or (output < 1).any():
        raise ValueError("every request needs at least 1 prompt token and 1 output token")
    if policy not in ROUTINGS:
        raise ValueError(f"policy must be one of {', '.join(ROUTINGS)}, got {policy!r}")
    if not affinity_load_factor >= 1:
        raise ValueError(f"affinity_load_factor must be >= 1, got {affinity_load_factor}")
    if replicas < 1 or max_num_seqs < 1 or max_num_batched_tokens < 1 or block_size < 1:
        raise ValueError("replicas, max_num_seqs, max_num_batched_tokens and block_size must be >= 1")
    if kv_arrives and (output < 2).any():
        raise ValueError("requests that arrive with their KV must owe at least one more token (output >= 2)")
    if prefill_first and n and int((prompt + output).max()) > max_num_batched_tokens:
        raise ValueError(f"prefill_first needs max_num_batched_tokens ({max_num_batched_tokens:,}) to hold every "
                         f"request's prompt + output ({int((prompt + output).max()):,} tokens)")
    frontend = float(getattr(model, "frontend_s", 0.0) or 0.0) if frontend_s is None else float(frontend_s)
    if kv_capacity_tokens is None:
        kv_capacity_tokens = getattr(model, "kv_capacity_tokens", None)
    start, count, keys, n_keys = block_keys(prompt, prefix_id, prefix_tokens, prompt_id, block_size)
    per_request = (prompt + output + block_size - 1) // block_size
    largest = int(per_request.max(initial=0))
    stages = int(getattr(model, "pp", 1) or 1)
    ranks = int(getattr(model, "dp", 1) or 1)
    engines = int(replicas) * stages
    max_num_seqs = max(1, -(-max_num_seqs * ranks // stages))
    max_num_batched_tokens = max_num_batched_tokens * ranks
    if kv_capacity_tokens is None:
        blocks = int(per_request.max(initial=1)) * max_num_seqs + n_keys + 1
    else:
        blocks = int(kv_capacity_tokens) // block_size // stages
        rank_blocks = blocks // ranks
        if largest > rank_blocks:
            where = ("a replica" if ranks == stages == 1 else
                     f"each {'data-parallel rank' if stages == 1 else 'rank of a pipeline engine'} of a replica")
            raise ServingConfigError(
                f"a request needs {largest * block_size:,} tokens of KV cache but {where} holds "
                f"{rank_blocks * block_size:,}; shorten the requests, use more GPUs per replica (tp) or fp8"
            )
    order = np.argsort(arrival, kind="stable")
    affine = policy == "prefix_affinity" and engines > 1
    none = (np.full(n, -1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    route_key, raw_keys = route_keys(n, prefix_id, prompt_id) if affine else none
    ranking = affinity_ranking(raw_keys, engines)
    admit, first, finish = (np.full(n, np.nan) for _ in range(3))
    replica = np.zeros(n, dtype=np.int64)
    preempted = np.zeros(n, dtype=np.int64)
    cached = np.zeros(n, dtype=np.int64)
    features = np.zeros(FEATURES)
    features[F_PRELOADED] = 1.0 if kv_arrives else 0.0
    features[F_PREFILL_FIRST] = 1.0 if prefill_first else 0.0
    accepted, draw_start, draft_params = np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(3)
    if speculative is not None:
        features[F_SPEC_K] = speculative.k
        # Drawn in the requests' given order: a request's acceptances do not depend on when it arrives.
        accepted, draw_start = speculative.draws(output, rng if rng is not None else np.random.default_rng(0))
        draw_start = draw_start[order]
        draft_params = speculative.draft_params(model, draft)
    host_blocks = 0
    if host_kv is not None:
        host_blocks = host_kv.blocks(block_size) // stages
        features[F_LOAD_S_PER_TOKEN] = host_kv.load_s_per_token(float(getattr(model, "kv_bytes_per_token", 0.0)),
                                                                int(getattr(model, "tp", 1)) * stages)
        features[F_SPILL] = 1.0 if host_kv.spill_preempted else 0.0
    loaded = np.zeros(n, dtype=np.int64)
    steps = np.zeros((n, 2), dtype=np.int64)
    engine_arrival = arrival[order] + frontend
    iterations = serve_vllm_loop(
        engine_arrival, prompt[order], output[order], start[order], count[order],
        keys, n_keys, model.params, int(max_num_seqs),
        int(max_num_batched_tokens), blocks, int(block_size), bool(prefix_caching), bool(kv_preemption),
        engines, ROUTINGS[policy], route_key[order], ranking, float(affinity_load_factor),
        admit, first, finish, replica, preempted, cached, frontend,
        features, accepted, draw_start, np.asarray(draft_params, dtype=np.float64), int(host_blocks), loaded, steps,
    )
    back = np.empty_like(order)
    back[order] = np.arange(n)
    if users is not None:  # the engine wrote the closed loop's arrivals
        arrival = engine_arrival[back] - frontend
    first = first[back]
    if kv_arrives:  # the first token came with the KV: TPOT counts from the arrival
        first = arrival.copy()
    return ServingResult(arrival, prompt, output, admit[back], first, finish[back], replica[back] // stages,
                         int(iterations), int(replicas), preempted[back], cached[back],
                         host_tokens=loaded[back] if host_kv is not None else None,
                         verify_steps=steps[back, 0] if speculative is not None else None,
                         verified_tokens=steps[back, 1] if speculative is not None else None)

