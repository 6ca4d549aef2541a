"""What ``fleetcast serving --disaggregate P:D`` computes: one workload on a disaggregated unit."""

from __future__ import annotations

import math
from typing import Any

from simulator.serving.disaggregated import Side, simulate_disaggregated
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.operators import OperatorIterationModel
from simulator.serving.report import describe_replica
from simulator.serving.serving_setup import Speculation, acceptance_rng, kv_link
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS
from simulator.serving.workload import Workload


def disaggregated_report(workload: Workload, prefill: OperatorIterationModel, decode: OperatorIterationModel,
                         split: tuple[int, int], *, max_batch: int, max_batched_tokens: int | None,
                         prefix_caching: bool, kv_preemption: bool, link: str | None, seed: int,
                         speculation: Speculation | None = None, host_kv: HostKvTier | None = None,
                         dtype: str = "bf16", router: str = "least_outstanding") -> dict[str, Any]:
    """Serve ``workload`` on ``split[0]`` prefill and ``split[1]`` decode replicas (``router``: the
    prefill side's; the decode side spreads by outstanding requests); the JSON object
    of ``fleetcast serving --json`` for the unit (per GPU: over both sides' GPUs) with the split's
    own figures (tokens per second per GPU on each side, the KV link and the bandwidth used)."""
    budget = max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS
    sides = []
    for model, replicas in ((prefill, split[0]), (decode, split[1])):
        kv = model.kv_memory(max_num_batched_tokens=budget, max_num_seqs=max_batch).replica_kv_tokens
        policy = ("least_outstanding" if router == "least_loaded" else router) if model is prefill else (
            "least_outstanding")
        sides.append(Side(model, replicas, max_num_seqs=max_batch, max_num_batched_tokens=budget,
                          kv_capacity_tokens=kv, policy=policy))
    chosen = kv_link(prefill, decode, link, unit_gpus=sides[0].gpus + sides[1].gpus)
    run = simulate_disaggregated(workload.arrival_s, workload.prompt_tokens, workload.output_tokens, sides[0],
                                 sides[1], chosen, prefix_caching=prefix_caching, prefix_id=workload.prefix_id,
                                 prefix_tokens=workload.prefix_tokens, prompt_id=workload.prompt_id,
                                 speculative=speculation.spec if speculation is not None else None,
                                 draft=speculation.draft if speculation is not None else None, host_kv=host_kv,
                                 rng=acceptance_rng(seed), kv_preemption=kv_preemption)
    report = run.summary()
    config = (f"disaggregated {split[0]}:{split[1]}: prefill {describe_replica(prefill, dtype)}, decode "
              f"{describe_replica(decode, dtype)}, KV over {chosen.kind} ({chosen.bandwidth_gbps:g} GB/s per GPU), "
              f"max batch {max_batch}, vllm batching ({budget} tokens per iteration)")
    if speculation is not None:
        config += f", {speculation.describe()}"
        report.update(speculative=speculation.describe(), tokens_per_step_expected=speculation.spec.tokens_per_step)
    report.update(
        config=config, workload=workload.description, model=prefill.llm.name, gpu=prefill.gpu_name,
        decode_gpu=decode.gpu_name, tp=prefill.tp, decode_tp=decode.tp, dtype=dtype, split=f"{split[0]}:{split[1]}",
        kv_capacity_tokens=sides[1].kv_capacity_tokens, prefill_kv_capacity_tokens=sides[0].kv_capacity_tokens,
        gpus_per_replica=report["gpus"], max_batch=max_batch, max_batched_tokens=budget, scheduler="vllm",
        prefix_caching=prefix_caching, kv_preemption=kv_preemption, kv_link_gbps=chosen.bandwidth_gbps,
    )
    return {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
            for key, value in report.items()}
