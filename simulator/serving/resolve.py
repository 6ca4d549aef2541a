"""A scenario ready to simulate: validated, with each served model's capacity derived.

:func:`load_scenario` (``simulator.load_scenario``) validates a scenario and then derives what
it leaves to the serving model.

A model that says ``serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, slo: …}`` (or
``model_config: PATH``, a Hugging Face ``config.json`` relative to the scenario file, read by
:func:`simulator.serving.model_config.load_model_config`) instead of ``capacity_rps`` gets, on
each of its pools, a replica's capacity and SLO-attainment curve
from :func:`simulator.serving.capacity.capacity_curve` run on that pool's GPU (an H200
replica serves more than an H100 one). They are written into the model's ``replicas``, one
entry per pool with ``derived_on`` naming the GPU, so ``scenario.resolved.yaml`` shows them;
reading such a file derives them again (from the on-disk cache while the inputs are the
same), so a changed GPU, serving block or variant never keeps a stale figure. A pool's own
``replicas: {POOL: {serving: {tp: 2}}}`` changes only what it names.

The probe serves the demand's mean lengths (``lengths: fixed``) or a trace's requests as given,
with their prefix columns (:mod:`simulator.serving.probe`), on ``router_replicas`` replicas
behind the block's ``routing``; each entry's ``derived_workload`` says which, in words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from simulator.scenario import Scenario, ScenarioError
from simulator.scenario import load_scenario as _validate
from simulator.scenario.served import ReplicaShape, ServedModel, ServingSpec, SloCurve
from simulator.serving.capacity import WARMUP_REQUESTS, CapacityCurve, Slo, capacity_curve
from simulator.serving.config import operator_model, resolve_gpu
from simulator.serving.disaggregated import Side, Unit
from simulator.serving.iteration import ServingConfigError
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.model_config import ModelConfigError, load_model_config
from simulator.serving.probe import TraceRequests, describe_mix, trace_requests
from simulator.serving.serving_setup import kv_link
from simulator.serving.serving_setup import speculation as build_speculation
from simulator.serving.trace import LengthMix, TraceError
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS


def load_scenario(
    source: str | Path | Mapping[str, Any] | Scenario,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    base_dir: str | Path | None = None,
    accept: Iterable[str] = (),
) -> Scenario:
    """Validate a scenario (file path, dict or Scenario) and derive serving capacities.

    Args:
        source: a YAML file path, a mapping of the same structure, or a Scenario.
        overrides: ``{"horizon.duration": "30d"}`` or ``["fleet.pools[0].count=64"]``.
        base_dir: the folder relative file names (growth CSVs, job traces) are read from when
            ``source`` is a mapping (default: the current folder; a file's own folder otherwise).
        accept: plausibility checks confirmed, as ``--accept`` names them (``growth``, ``price``, …).

    Raises:
        simulator.ScenarioError: the first problem, with its field path and YAML line.
    """
    scenario = _validate(source, overrides, resolve=resolve_serving, base_dir=base_dir, accept=accept)
    return resolve_serving(scenario) if isinstance(source, Scenario) and not overrides else scenario


def resolve_serving(scenario: Scenario, base_dir: Path = Path(".")) -> Scenario:
    """The scenario with each (model, pool) replica's capacity and SLO curve derived from its
    ``serving`` block, on that pool's GPU, where no capacity was given."""
    models = list(scenario.models)
    changed = False
    for index, model in enumerate(models):
        if model.api_only:
            continue
        resolved = _resolve_model(scenario, index, model, base_dir)
        if resolved is not model:
            models[index] = resolved
            changed = True
    return scenario.model_copy(update={"models": models}) if changed else scenario


def _resolve_model(scenario: Scenario, index: int, model: ServedModel, base_dir: Path) -> ServedModel:
    replicas = dict(model.replicas)
    for pool_name in model.pools:
        shape = replicas.get(pool_name)
        if shape is not None and shape.capacity_rps is not None:
            continue  # given for this pool (a mapping's derived values were dropped on reading)
        own = shape is not None and shape.serving is not None
        if model.capacity_rps is not None and not own:
            continue  # the model's typed capacity applies on this pool
        spec = model.serving_on(pool_name)
        assert spec is not None  # ServedModel checks that every pool has a capacity or a serving block
        loc = ("models", index, "replicas", pool_name, "serving") if own else ("models", index, "serving")
        replicas[pool_name] = _derive(scenario, model, pool_name, spec, loc, base_dir)
    return model if replicas == model.replicas else model.model_copy(update={"replicas": replicas})


def _derive(scenario: Scenario, model: ServedModel, pool_name: str, spec: ServingSpec, loc: tuple,
            base_dir: Path) -> ReplicaShape:
    """One pool's replica: capacity and SLO curve from the request-level engine on the pool's GPU."""
    pool = next(p for p in scenario.fleet.pools if p.name == pool_name)
    if spec.model is not None and spec.model_config_file is not None:
        raise ScenarioError((*loc, "model_config"), "give exactly one of 'model' and 'model_config'")
    if spec.model is None and spec.model_config_file is None:
        raise ScenarioError((*loc, "model"), "name the LLM the replica serves, e.g. llama-3.1-70b")
    name, llms = spec.model, None
    if spec.model_config_file is not None:
        try:
            llm = load_model_config(base_dir / spec.model_config_file)
        except ModelConfigError as exc:
            raise ScenarioError((*loc, "model_config"), str(exc)) from None
        name, llms = llm.name, {llm.name: llm}
    if spec.gpu is not None:
        own = model.replicas.get(pool_name)
        where = loc if own is not None and own.serving is not None and own.serving.gpu is not None else (
            "models", loc[1], "serving")
        if _gpu_name(spec.gpu, scenario, (*where, "gpu")) != _gpu_name(pool.gpu, scenario, (*where, "gpu")):
            raise ScenarioError((*where, "gpu"), f"is {spec.gpu} but pool {pool_name!r} holds {pool.gpu}; a replica "
                                "runs on its pool's GPU (leave serving.gpu out, or give the pool its own block)")
    iteration = None if spec.disaggregation is not None else _iteration_model(
        scenario, name, llms, pool, spec, spec.tp, spec.dp, spec.ep, loc, pool_name)
    mix = _requests(spec, model, base_dir, loc)
    slo = Slo(spec.slo.ttft_s, spec.slo.ttft_percentile, spec.slo.tpot_s, spec.slo.tpot_percentile)
    try:
        unit = _unit(scenario, name, llms, pool, spec, loc, pool_name) if spec.disaggregation is not None else None
        target = unit.decode.model if unit is not None else iteration
        speculation = None
        if spec.speculative is not None:
            s = spec.speculative
            speculation = build_speculation(s.k, s.acceptance, s.draft, target, target.gpu_name,
                                            tuple(s.accepted_distribution) if s.accepted_distribution else None,
                                            s.draft_share, gpus=scenario.gpus)
        host = None
        if spec.kv_offload is not None:
            host = HostKvTier(spec.kv_offload.host_tokens, spec.kv_offload.bandwidth_gbps,
                              spec.kv_offload.spill_preempted == "enabled")
        curve = capacity_curve(unit.prefill.model if unit is not None else iteration, mix, slo, spec.max_batch,
                               prefill_chunk_tokens=spec.prefill_chunk_tokens,
                               requests=spec.probe_requests, seed=spec.seed,
                               max_batched_tokens=spec.max_batched_tokens,
                               prefix_caching=spec.prefix_caching == "enabled",
                               kv_preemption=spec.kv_preemption == "enabled",
                               replicas=spec.router_replicas if unit is None else 1, routing=spec.routing,
                               speculation=speculation, host_kv=host, unit=unit)
    except ScenarioError:
        raise  # a side's own error, already named by its field
    except (ServingConfigError, ValueError) as exc:
        raise ScenarioError(loc, f"{exc} (pool {pool_name!r})") from None
    own = model.replicas.get(pool_name)
    elsewhere = spec.disaggregation.elsewhere if spec.disaggregation is not None else None
    return ReplicaShape(
        gpus_per_replica=spec.gpus,
        companion_pool=getattr(spec.disaggregation, elsewhere).pool if elsewhere else None,
        companion_gpus=spec.side_gpus(elsewhere) if elsewhere else None,
        capacity_rps=round(curve.capacity_rps, 6),
        serving=own.serving if own is not None else None,
        slo_curve=SloCurve(load=list(curve.load), attainment=list(curve.attainment)),
        derived_on=pool.gpu,
        derived_workload=derived_workload(spec, mix, curve),
    )


def _iteration_model(scenario, name, llms, pool, spec: ServingSpec, tp: int, dp: int, ep: int, loc: tuple,
                     pool_name: str):
    """The operator model of a replica (or of one side of a unit) on the pool's GPU."""
    try:
        return operator_model(name, pool.gpu, tp, spec.dtype, spec.kv_dtype, gpus=scenario.gpus, llms=llms,
                              dp=dp, pp=spec.pp, ep=ep, gpu_memory_utilization=spec.gpu_memory_utilization)
    except ServingConfigError as exc:
        text = str(exc)
        field = ("model" if "unknown model" in text else "gpu" if "unknown GPU" in text
                 else "kv_dtype" if text.startswith("kv_dtype") else "dtype" if text.startswith("dtype")
                 or "no FP8 support" in text or "no FP4 tensor cores" in text
                 else "ep" if text.startswith(("ep ", "ep_", "ep must")) else "pp" if text.startswith("pp ")
                 else "gpu_memory_utilization" if text.startswith("gpu_memory_utilization") else "tp")
        raise ScenarioError((*loc, field), f"{text} (pool {pool_name!r})") from None


def _side_pool(scenario, listed, named: str | None):
    """The pool a side of a unit runs on: the one it names (checked to be another pool of the fleet
    with the scenario's references), else the one the model lists."""
    return listed if named is None else next(p for p in scenario.fleet.pools if p.name == named)


def _unit(scenario, name, llms, pool, spec: ServingSpec, loc: tuple, pool_name: str) -> Unit:
    """A disaggregated unit on the pool's GPUs: both sides' models, engines and the KV link."""
    sides = []
    budget = spec.max_batched_tokens or spec.prefill_chunk_tokens or DEFAULT_MAX_BATCHED_TOKENS
    for side in ("prefill", "decode"):
        own = getattr(spec.disaggregation, side)
        tp, dp, ep = spec.side_layout(side)
        model = _iteration_model(scenario, name, llms, _side_pool(scenario, pool, own.pool), spec, tp, dp, ep,
                                 (*loc, "disaggregation", side), pool_name)
        seqs = own.max_batch or spec.max_batch
        tokens = own.max_batched_tokens or budget
        kv = model.kv_memory(max_num_batched_tokens=tokens, max_num_seqs=seqs).replica_kv_tokens
        policy = "least_outstanding" if side == "decode" or spec.routing == "least_loaded" else spec.routing
        sides.append(Side(model, own.replicas, max_num_seqs=seqs, max_num_batched_tokens=tokens,
                          kv_capacity_tokens=kv, policy=policy))
    kind = spec.disaggregation.kv_link
    if spec.disaggregation.elsewhere is not None:  # two pools: two sets of machines, joined by the network
        if kind == "nvlink":
            raise ScenarioError((*loc, "disaggregation", "kv_link"), "is nvlink, but the sides run on two pools; "
                                "a unit across pools sends its KV over the scale-out network (rdma)")
        kind = "rdma"
    try:
        link = kv_link(sides[0].model, sides[1].model, kind, scenario.gpus, sides[0].gpus + sides[1].gpus)
    except ServingConfigError as exc:
        raise ScenarioError((*loc, "disaggregation", "kv_link"), f"{exc} (pool {pool_name!r})") from None
    return Unit(sides[0], sides[1], link)


def derived_workload(spec: ServingSpec, mix: LengthMix | TraceRequests, curve: CapacityCurve) -> str:
    """What a derivation served, in words (a pool's ``derived_workload`` in ``scenario.resolved.yaml``)."""
    replicas = spec.router_replicas
    text = (f"{describe_mix(mix)}; Poisson arrivals, {replicas} × ({WARMUP_REQUESTS:,} warm-up + "
            f"{spec.probe_requests:,}) requests")
    text += f" over {replicas} replicas, {spec.routing} routing" if replicas > 1 else " on one replica"
    if spec.prefix_caching == "enabled":
        text += f"; prefix-cache hit rate at capacity {curve.hit_rate_at_capacity:.1%}"
    figures = curve.figures or {}
    if "prefill_replicas" in figures:
        text = text.replace(" on one replica", " on one disaggregated unit")
        text += (f"; P:D {figures['prefill_replicas']}:{figures['decode_replicas']} ({figures['prefill_gpus']} + "
                 f"{figures['decode_gpus']} GPUs), at capacity {figures['prefill_tokens_per_s_per_gpu']:,.0f} prompt "
                 f"tokens/s per prefill GPU, {figures['decode_tokens_per_s_per_gpu']:,.0f} output tokens/s per decode "
                 f"GPU, KV {figures['kv_transfer_gbps']:,.2f} GB/s over {figures['kv_link']}")
        elsewhere = spec.disaggregation.elsewhere if spec.disaggregation is not None else None
        if elsewhere:
            text += f"; the {elsewhere} side on pool {getattr(spec.disaggregation, elsewhere).pool!r}"
    if "tokens_per_step" in figures:
        text += f"; speculative decoding {figures['tokens_per_step']:.2f} tokens per step at capacity"
    if "host_kv_hit_rate" in figures:
        text += f"; host KV tier hit rate at capacity {figures['host_kv_hit_rate']:.1%}"
    return text


def _gpu_name(name: str, scenario: Scenario, loc: tuple) -> str:
    try:
        return resolve_gpu(name, scenario.gpus)[0]
    except ServingConfigError as exc:
        raise ScenarioError(loc, str(exc)) from None


def _requests(spec: ServingSpec, model: ServedModel, base_dir: Path, loc: tuple) -> LengthMix | TraceRequests:
    """What the probe serves: the demand's mean lengths, or the trace's requests as given."""
    if spec.lengths == "fixed":
        return replace(LengthMix.fixed(model.demand.input_tokens, model.demand.output_tokens),
                       shared_prefix_tokens=spec.shared_prefix_tokens, distinct_prompts=spec.distinct_prompts)
    path = spec.lengths if spec.lengths == "azure-conv" else str(base_dir / spec.lengths)
    try:
        return trace_requests(path, seed=spec.seed, shared_prefix_tokens=spec.shared_prefix_tokens,
                              distinct_prompts=spec.distinct_prompts)
    except TraceError as exc:
        raise ScenarioError((*loc, "lengths"), str(exc)) from None
