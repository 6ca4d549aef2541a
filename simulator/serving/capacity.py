"""Capacity curves: the highest request rate one replica sustains within a latency SLO.

For a serving configuration, the requests to serve (a length mix, or a trace's requests as
given: :mod:`simulator.serving.probe`) and an SLO such as "TTFT p90 ≤ 2 s and TPOT p99 ≤
200 ms", the sustainable rate is found by bisection: Poisson arrivals at rate λ per replica
are served by the batching engine and the SLO percentiles are measured after a warm-up.
Every probe uses the same random draws (the first ``R × (warm-up + requests)`` draws of
Exp(1) from ``numpy.random.default_rng(seed)`` as inter-arrival gaps, divided by ``R × λ``;
the same requests), so the measured percentiles move smoothly with λ and bisection is stable.

With ``replicas`` R > 1 the probe serves R times as many requests at R times the rate over R
replicas behind a router (``routing``, :mod:`simulator.serving.routing`), and the capacity is
the group's per replica: how routing spreads a prefix over replicas, and so the prefix-cache
hits each keeps, is in the figure.

The curve also tabulates *SLO attainment* — the share of requests that individually meet
both latency targets — against load ρ = λ / capacity, which the fleet's step kernels use to
turn served requests into requests served within the SLO.

Curves are cached on disk in the capacity cache (``<cache root>/capacity``, the root being
``$FLEETCAST_CACHE_DIR`` or the user's cache folder: :mod:`simulator.cache_dirs`), keyed by a
hash of every input.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from simulator.cache_dirs import capacity_cache
from simulator.serving.disaggregated import DisaggregatedResult, Unit, simulate_disaggregated
from simulator.serving.iteration import IterationModel, ServingConfigError
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.probe import TraceRequests, request_arrays
from simulator.serving.replica import POLICIES, simulate_router
from simulator.serving.routing import AFFINITY_LOAD_FACTOR, ROUTINGS
from simulator.serving.serving_setup import Speculation, acceptance_rng
from simulator.serving.trace import LengthMix
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm

SCHEDULERS = ("vllm", "whole_prompt")

CACHE_VERSION = 4
TANDEM_VERSION = 3  # a disaggregated unit's derivation (3: its bracket raised past its offline throughput)
WARMUP_REQUESTS = 500  # per replica, left out of the percentiles
LOAD_GRID = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)


class SloUnreachable(ServingConfigError):
    """The SLO cannot be met at any rate on this configuration."""


@dataclass(frozen=True)
class Slo:
    """Latency targets, each a percentile bound."""

    ttft_s: float = 2.0
    ttft_percentile: float = 90.0
    tpot_s: float = 0.2
    tpot_percentile: float = 99.0


@dataclass(frozen=True)
class CapacityCurve:
    """Sustainable rate per replica and SLO attainment against load."""

    capacity_rps: float
    load: tuple[float, ...]
    attainment: tuple[float, ...]
    ttft_at_capacity_s: float
    tpot_at_capacity_s: float
    requests: int
    hit_rate_at_capacity: float = 0.0  # share of prompt tokens taken from the prefix cache
    figures: dict | None = None  # at capacity: a unit's split figures, tokens per step, host-tier hits


def cache_dir() -> Path:
    return capacity_cache()


def capacity_curve(
    model: IterationModel,
    mix: LengthMix | TraceRequests,
    slo: Slo,
    max_batch: int,
    kv_capacity_tokens: int | None = None,
    prefill_chunk_tokens: int | None = None,
    requests: int = 4000,
    warmup: int = WARMUP_REQUESTS,
    seed: int = 0,
    use_cache: bool = True,
    scheduler: str = "vllm",
    max_batched_tokens: int | None = None,
    prefix_caching: bool = True,
    kv_preemption: bool = True,
    replicas: int = 1,
    routing: str = "least_outstanding",
    speculation: Speculation | None = None,
    host_kv: HostKvTier | None = None,
    unit: Unit | None = None,
) -> CapacityCurve:
    """Find the sustainable rate per replica by bisection and tabulate attainment against load.

    ``scheduler="vllm"`` (default) serves with vLLM V1 scheduling (:func:`simulate_vllm`:
    token budget ``max_batched_tokens``, default ``prefill_chunk_tokens`` or 8192, prefix cache,
    KV preemption); ``"whole_prompt"`` with the contract semantics of :func:`simulate_router`.
    ``replicas`` and ``routing`` (a :data:`~simulator.serving.routing.ROUTINGS` name; only
    ``least_outstanding`` and ``round_robin`` without a prefix cache): the replicas probed
    together behind one router (module docstring); ``requests`` and ``warmup`` are per replica.
    ``speculation`` and ``host_kv`` (vLLM scheduling): speculative decoding and a host KV tier;
    ``unit``: a disaggregated unit (its prefill side's host tier, its decode side's speculation),
    whose capacity is the unit's (``model`` is then its prefill side's, ``replicas`` must be 1).
    Acceptance draws are the same at every probe (``seed``'s second stream).
    """
    if (speculation is not None or host_kv is not None or unit is not None) and scheduler != "vllm":
        raise ValueError("speculative decoding, a host KV tier and disaggregation need the vllm scheduler")
    if unit is not None and replicas != 1:
        raise ValueError("a disaggregated unit is probed alone (its sides have their own replicas)")
    if scheduler not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(SCHEDULERS)}, got {scheduler!r}")
    if not 1 <= replicas <= 4096:
        raise ValueError(f"replicas must be between 1 and 4096, got {replicas}")
    valid = sorted(ROUTINGS if scheduler == "vllm" else POLICIES.keys() | {"least_loaded"})
    if routing not in valid:
        raise ValueError(f"routing must be one of {', '.join(valid)} with the {scheduler} scheduler, got {routing!r}")
    policy = "least_outstanding" if replicas == 1 or routing == "least_loaded" else routing
    budget = max_batched_tokens or prefill_chunk_tokens or DEFAULT_MAX_BATCHED_TOKENS
    if scheduler != "vllm" and (getattr(model, "dp", 1) > 1 or getattr(model, "pp", 1) > 1):
        raise ValueError("dp and pp apply to the vllm scheduler (ranks and stages scheduled as vLLM does)")
    if kv_capacity_tokens is None and hasattr(model, "kv_memory"):  # vLLM's accounting at these settings
        kv_capacity_tokens = model.kv_memory(max_num_batched_tokens=budget, max_num_seqs=max_batch).replica_kv_tokens
    options = (scheduler, budget, prefix_caching, kv_preemption, mix.shared_prefix_tokens, mix.distinct_prompts,
               replicas, policy, AFFINITY_LOAD_FACTOR)
    if speculation is not None or host_kv is not None or unit is not None:
        options += (_features_key(speculation, host_kv, unit, model),)
    key = _cache_key(model, mix, slo, max_batch, kv_capacity_tokens, prefill_chunk_tokens, requests, warmup, seed,
                     options)
    path = cache_dir() / f"{key}.json"
    if use_cache and path.exists():
        try:
            data = json.loads(path.read_text())
            return CapacityCurve(**{**data, "load": tuple(data["load"]), "attainment": tuple(data["attainment"])})
        except (OSError, ValueError, TypeError):
            pass
    rng = np.random.default_rng(seed)
    total = replicas * (requests + warmup)
    warmup = replicas * warmup  # the requests left out of the percentiles
    unit_gaps = rng.exponential(1.0, total)
    drawn = mix.sample_requests(total, rng)
    prompt, output = drawn["prompt_tokens"], drawn["output_tokens"]

    spec = speculation.spec if speculation is not None else None
    draft = speculation.draft if speculation is not None else None

    def run(arrival):
        if unit is not None:
            return simulate_disaggregated(arrival, prompt, output, unit.prefill, unit.decode, unit.link,
                                          prefix_caching=prefix_caching, prefix_id=drawn["prefix_id"],
                                          prefix_tokens=drawn["prefix_tokens"], prompt_id=drawn["prompt_id"],
                                          speculative=spec, draft=draft, host_kv=host_kv,
                                          rng=acceptance_rng(seed), kv_preemption=kv_preemption)
        if scheduler == "vllm":
            return simulate_vllm(arrival, prompt, output, model, max_num_seqs=max_batch,
                                 max_num_batched_tokens=budget, kv_capacity_tokens=kv_capacity_tokens,
                                 prefix_caching=prefix_caching, kv_preemption=kv_preemption,
                                 prefix_id=drawn["prefix_id"], prefix_tokens=drawn["prefix_tokens"],
                                 prompt_id=drawn["prompt_id"], replicas=replicas, policy=policy,
                                 speculative=spec, draft=draft, host_kv=host_kv, rng=acceptance_rng(seed))
        return simulate_router(arrival, prompt, output, model, replicas=replicas, policy=policy,
                               max_batch=max_batch, kv_capacity_tokens=kv_capacity_tokens,
                               prefill_chunk_tokens=prefill_chunk_tokens)

    def serve_run(rate: float):
        """Poisson arrivals at ``rate`` per replica (a unit's run keeps its sides')."""
        return run(np.cumsum(unit_gaps) / (rate * replicas))

    def serve(rate: float):
        """The requests' times at ``rate`` (a unit's merged over its sides)."""
        served = serve_run(rate)
        return served.result if unit is not None else served

    def percentiles(result) -> tuple[float, float]:
        ttft = result.ttft_s[warmup:]
        tpot = result.tpot_s[warmup:]
        tpot = tpot[np.isfinite(tpot)]
        return (float(np.percentile(ttft, slo.ttft_percentile)),
                float(np.percentile(tpot, slo.tpot_percentile)) if len(tpot) else 0.0)

    def meets(rate: float) -> bool:
        ttft, tpot = percentiles(serve(rate))
        return ttft <= slo.ttft_s and tpot <= slo.tpot_s

    offline = run(np.zeros(total))
    offline = offline.result if unit is not None else offline
    high = total / offline.duration_s / replicas  # nothing sustains more than the offline throughput
    low = high * 1e-3
    if not meets(low):
        ttft, tpot = percentiles(serve(low))
        raise SloUnreachable(
            f"the SLO cannot be met even at {low:.3g} req/s: TTFT p{slo.ttft_percentile:g} = {ttft:.3g} s "
            f"(target {slo.ttft_s:g} s), TPOT p{slo.tpot_percentile:g} = {tpot:.3g} s (target {slo.tpot_s:g} s)"
        )
    if meets(high):
        low = high
        # A unit's offline run fills and drains its pipeline (every prompt, then the decodes): a
        # stream can go beyond it. Raise the bracket while the SLO holds (at most 2.4×).
        for _ in range(4 if unit is not None else 0):
            if not meets(high * 1.25):
                high *= 1.25
                break
            high *= 1.25
            low = high
    while high - low > 0.005 * low:
        middle = 0.5 * (low + high)
        if meets(middle):
            low = middle
        else:
            high = middle
    capacity = low
    attainment = []
    for rho in LOAD_GRID:
        result = serve(rho * capacity)
        ok = (result.ttft_s <= slo.ttft_s) & ~(result.tpot_s > slo.tpot_s)
        attainment.append(float(ok[warmup:].mean()))
    at_run = serve_run(capacity)
    at_capacity = at_run.result if unit is not None else at_run
    ttft_cap, tpot_cap = percentiles(at_capacity)
    hits = 0.0
    if at_capacity.cached_tokens is not None:
        hits = float(at_capacity.cached_tokens[warmup:].sum() / at_capacity.prompt_tokens[warmup:].sum())
    curve = CapacityCurve(capacity, LOAD_GRID, tuple(attainment), ttft_cap, tpot_cap, requests, hits,
                          _figures(at_run, warmup))
    if use_cache:
        _store(path, curve)
    return curve


def _figures(run, warmup: int) -> dict | None:
    """What a run at capacity says beyond latency: a unit's split, tokens per step, host-tier hits."""
    figures: dict = {}
    if isinstance(run, DisaggregatedResult):
        summary = run.summary()
        figures.update({key: summary[key] for key in ("prefill_tokens_per_s_per_gpu", "decode_tokens_per_s_per_gpu",
                                                      "kv_transfer_gbps", "prefill_replicas", "decode_replicas",
                                                      "prefill_gpus", "decode_gpus", "kv_link")})
        run = run.result
    if run.verify_steps is not None and run.verified_tokens is not None and run.verify_steps[warmup:].sum():
        figures["tokens_per_step"] = float(run.verified_tokens[warmup:].sum() / run.verify_steps[warmup:].sum())
    if run.host_tokens is not None:
        figures["host_kv_hit_rate"] = float(run.host_tokens[warmup:].sum() / run.prompt_tokens[warmup:].sum())
    return figures or None


def _features_key(speculation, host_kv, unit, model) -> list:
    key: list = [None, None, None]
    if speculation is not None:
        spec = speculation.spec
        target = unit.decode.model if unit is not None else model  # the model that speculates
        key[0] = [spec.k, spec.accepted_distribution().tolist(), spec.draft_params(target, speculation.draft).tolist()]
    if host_kv is not None:
        key[1] = [host_kv.capacity_tokens, host_kv.bandwidth_gbps, host_kv.spill_preempted,
                  getattr(model, "kv_bytes_per_token", 0.0)]
    if unit is not None:
        key[2] = [TANDEM_VERSION, unit.key()]
    return key


def _cache_key(model, mix, slo, max_batch, kv, chunk, requests, warmup, seed, options) -> str:
    digest = hashlib.sha256()
    layout = [getattr(model, "dp", 1), getattr(model, "pp", 1), getattr(model, "kv_capacity_tokens", None)]
    digest.update(json.dumps([CACHE_VERSION, model.params.tolist(), layout, getattr(model, "frontend_s", 0.0),
                              asdict(slo), max_batch, kv, chunk, requests, warmup, seed, list(options)]).encode())
    for values in request_arrays(mix):
        digest.update(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return digest.hexdigest()[:32]


def _store(path: Path, curve: CapacityCurve) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
            json.dump(asdict(curve), handle)
        os.replace(handle.name, path)
    except OSError:
        pass  # a read-only cache only costs recomputation
