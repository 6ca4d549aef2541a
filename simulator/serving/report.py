"""What ``fleetcast serving`` computes and prints: one workload on one serving configuration."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from simulator.serving.config import operator_model
from simulator.serving.iteration import ServingConfigError
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.model_config import load_model_config
from simulator.serving.operators import OperatorIterationModel
from simulator.serving.replica import simulate_router
from simulator.serving.serving_setup import Speculation, acceptance_rng
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm
from simulator.serving.workload import Workload, synthetic_workload, trace_workload


def replica_model(*, llm: str | None, gpu: str, tp: int, dtype: str, kv_dtype: str | None,
                  model_config: str | None = None, dp: int = 1, pp: int = 1, ep: int = 1,
                  gpu_memory_utilization: float = 0.9) -> OperatorIterationModel:
    """The operator iteration model of a catalog model (``llm``) or of a ``config.json``."""
    if (llm is None) == (model_config is None):
        raise ServingConfigError("give exactly one of --model (a catalog name) and --model-config (a config.json)")
    llms = None
    if model_config is not None:
        spec = load_model_config(model_config)
        llm, llms = spec.name, {spec.name: spec}
    return operator_model(llm, gpu, tp, dtype, kv_dtype, llms=llms, dp=dp, pp=pp, ep=ep,
                          gpu_memory_utilization=gpu_memory_utilization)


def check_layout(model: OperatorIterationModel, scheduler: str) -> None:
    """Data-parallel ranks and pipeline stages are modelled with vLLM's scheduling only."""
    if scheduler != "vllm" and (model.dp > 1 or model.pp > 1):
        raise ServingConfigError("dp and pp apply to vllm batching (ranks and stages scheduled as vLLM does)")


def describe_replica(model: OperatorIterationModel, dtype: str) -> str:
    """``llama-3.1-70b on 4×H100 fp8`` (``TP2 × EP16`` when more than TP)."""
    par = model.parallelism
    layout = "" if par.describe() == f"TP{par.tp}" else f" ({par.describe()})"
    return f"{model.llm.name} on {model.gpus}×{model.gpu_name}{layout} {dtype}"


def memory_report(model: OperatorIterationModel, max_num_batched_tokens: int, max_num_seqs: int) -> dict[str, Any]:
    """``kv_cache_tokens`` (per DP rank, vLLM's figure) and one GPU's memory budget in GB."""
    memory = model.kv_memory(max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    return {"kv_cache_tokens": memory.kv_cache_tokens, "gpus_per_replica": model.gpus,
            "memory_per_gpu_gb": {k: round(v, 3) for k, v in memory.as_dict().items()
                                  if k.endswith("_gb") or k == "gpu_memory_utilization"}}


def serving_report(*, llm: str | None, gpu: str, tp: int, dtype: str, kv_dtype: str | None, max_batch: int,
                   chunk: int | None, trace: str | None, rate_scale: float | None,
                   input_len: int | None, output_len: int | None, num_requests: int | None,
                   rate: float | None, replicas: int, router: str, seed: int, scheduler: str = "vllm",
                   max_batched_tokens: int | None = None, prefix_caching: bool = True,
                   kv_preemption: bool = True, shared_prefix_tokens: int = 0,
                   distinct_prompts: int = 0, model_config: str | None = None, dp: int = 1, pp: int = 1,
                   ep: int = 1, gpu_memory_utilization: float = 0.9, speculation: Speculation | None = None,
                   host_kv: HostKvTier | None = None) -> dict[str, Any]:
    """Run the workload and return the JSON object of ``fleetcast serving --json``.

    ``scheduler="vllm"`` serves with vLLM V1 scheduling (token budget ``max_batched_tokens``,
    or ``chunk``, default 8192); ``"whole_prompt"`` with the contract semantics (``chunk`` or
    ``max_batched_tokens``, when given: the chunked-prefill budget). ``speculation`` and
    ``host_kv`` (vLLM scheduling only): speculative decoding and a host-memory KV tier.
    """
    if scheduler != "vllm" and (speculation is not None or host_kv is not None):
        raise ServingConfigError("speculative decoding and a host KV tier apply to vllm batching")
    budget = max_batched_tokens or chunk
    if router == "prefix_affinity" and scheduler != "vllm":
        raise ServingConfigError("prefix_affinity routing needs vllm batching (a prefix cache to be affine to)")
    policy = "least_outstanding" if router == "least_loaded" else router
    if budget is not None and budget < max_batch:
        flag = "--max-batched-tokens" if max_batched_tokens else "--chunk"
        raise ServingConfigError(f"{flag} ({budget}) must be >= --max-batch ({max_batch}): every running "
                                 "request needs a token of the iteration's budget")
    model = replica_model(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, model_config=model_config,
                          dp=dp, pp=pp, ep=ep, gpu_memory_utilization=gpu_memory_utilization)
    check_layout(model, scheduler)
    if trace is not None:
        workload = trace_workload(trace, rate=rate, rate_scale=rate_scale, seed=seed,
                                  shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts)
    else:
        assert input_len and output_len and num_requests
        workload = synthetic_workload(input_len, output_len, num_requests, rate, seed,
                                      shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts)
    memory = model.kv_memory(max_num_batched_tokens=budget or DEFAULT_MAX_BATCHED_TOKENS, max_num_seqs=max_batch)
    if scheduler == "vllm":
        budget = budget or DEFAULT_MAX_BATCHED_TOKENS
        result = simulate_vllm(workload.arrival_s, workload.prompt_tokens, workload.output_tokens, model,
                               max_num_seqs=max_batch, max_num_batched_tokens=budget, prefix_caching=prefix_caching,
                               kv_capacity_tokens=memory.replica_kv_tokens,
                               kv_preemption=kv_preemption, prefix_id=workload.prefix_id,
                               prefix_tokens=workload.prefix_tokens, prompt_id=workload.prompt_id,
                               replicas=replicas, policy=policy,
                               speculative=speculation.spec if speculation is not None else None,
                               draft=speculation.draft if speculation is not None else None,
                               host_kv=host_kv, rng=acceptance_rng(seed))
    else:
        result = simulate_router(workload.arrival_s, workload.prompt_tokens, workload.output_tokens,
                                 model, replicas=replicas, policy=policy, max_batch=max_batch,
                                 prefill_chunk_tokens=budget, kv_capacity_tokens=memory.replica_kv_tokens)
    report = result.summary(gpus_per_replica=model.gpus)
    report.update(memory_report(model, budget or DEFAULT_MAX_BATCHED_TOKENS, max_batch))
    report.update(
        config=f"{describe_replica(model, dtype)}, max batch {max_batch}, "
        f"{scheduler.replace('_', '-')} batching"
        + (f" ({budget} tokens per iteration)" if scheduler == "vllm" else "")
        + (f", {replicas} replicas ({router})" if replicas > 1 else ""),
        workload=workload.description,
        model=model.llm.name, gpu=model.gpu_name, tp=tp, dp=dp, pp=pp, ep=ep, dtype=dtype, kv_dtype=model.kv_dtype,
        max_batch=max_batch, kv_capacity_tokens=memory.replica_kv_tokens, scheduler=scheduler,
        max_batched_tokens=budget, prefix_caching=prefix_caching, kv_preemption=kv_preemption,
    )
    if speculation is not None:
        report.update(speculative=speculation.describe(), tokens_per_step_expected=speculation.spec.tokens_per_step)
        report["config"] += f", {speculation.describe()}"
    if host_kv is not None:
        report.update(host_kv_tokens=host_kv.capacity_tokens, host_kv_gbps=host_kv.bandwidth_gbps)
        report["config"] += f", host KV tier {host_kv.capacity_tokens:,} tokens"
    return {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
            for key, value in report.items()}


def report_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The readable table of a report."""

    def ms(key: str) -> str:
        value = report.get(key)
        return "—" if value is None else f"{value * 1000:,.1f} ms"

    rows = [
        ("workload", report["workload"]),
        ("requests", f"{report['requests']:,}"),
        ("duration", f"{report['duration_s']:,.2f} s"),
        ("throughput", f"{report['throughput_req_s']:,.2f} req/s"),
        ("output tokens/s", f"{report['output_tokens_per_s']:,.0f} ({report['output_tokens_per_s_per_gpu']:,.0f} per GPU)"),
        ("TTFT p50 / p90 / p99", f"{ms('ttft_p50_s')} / {ms('ttft_p90_s')} / {ms('ttft_p99_s')}"),
        ("TPOT p50 / p99", f"{ms('tpot_p50_s')} / {ms('tpot_p99_s')}"),
        ("E2E p50 / p99", f"{ms('e2e_p50_s')} / {ms('e2e_p99_s')}"),
        ("TTFT / E2E / ITL mean", f"{ms('ttft_mean_s')} / {ms('e2e_mean_s')} / {ms('itl_mean_s')}"),
        ("KV cache", f"{report['kv_capacity_tokens']:,} tokens per replica"
                     + (f" ({report['kv_cache_tokens']:,} per DP rank)" if report.get("dp", 1) > 1 else "")),
        ("iterations", f"{report['iterations']:,}"),
    ]
    if report.get("prefix_cache_hit_rate") is not None:
        rows.append(("prefix cache hit rate", f"{report['prefix_cache_hit_rate']:.1%} of prompt tokens"))
    if report.get("host_kv_hit_rate") is not None:
        rows.append(("host KV hit rate", f"{report['host_kv_hit_rate']:.1%} of prompt tokens"))
    if report.get("tokens_per_step") is not None:
        rows.append(("tokens per decode step", f"{report['tokens_per_step']:.2f} "
                     f"(expected {report.get('tokens_per_step_expected', float('nan')):.2f})"))
    for key, label, unit in (("prefill_tokens_per_s_per_gpu", "prefill tokens/s per GPU", ""),
                             ("decode_tokens_per_s_per_gpu", "decode tokens/s per GPU", ""),
                             ("kv_transfer_gbps", "KV transfer", " GB/s")):
        if report.get(key) is not None:
            rows.append((label, f"{report[key]:,.1f}{unit}"))
    return rows


def concurrency_report(*, llm: str | None, gpu: str, tp: int, dtype: str, kv_dtype: str | None, max_batch: int,
                       concurrencies: list[int], trace: str | None, input_len: int | None,
                       output_len: int | None, num_requests: int | None, seed: int,
                       scheduler: str = "vllm", max_batched_tokens: int | None = None,
                       prefix_caching: bool = True, kv_preemption: bool = True, replicas: int = 1,
                       router: str = "least_outstanding", shared_prefix_tokens: int = 0,
                       distinct_prompts: int = 0, model_config: str | None = None, dp: int = 1, pp: int = 1,
                       ep: int = 1, gpu_memory_utilization: float = 0.9) -> list[dict[str, Any]]:
    """The rows of ``fleetcast serving --concurrency``: one closed-loop run per concurrency.

    Requests per point: ``num_requests``, default 10 × N (InferenceX's convention); a trace gives
    its length mix (its timestamps ignored), cut to that many requests.
    """
    from simulator.serving.concurrency import concurrency_curve

    if max_batched_tokens is not None and max_batched_tokens < max_batch:
        raise ServingConfigError(f"--max-batched-tokens ({max_batched_tokens}) must be >= --max-batch ({max_batch})")
    model = replica_model(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, model_config=model_config,
                          dp=dp, pp=pp, ep=ep, gpu_memory_utilization=gpu_memory_utilization)
    check_layout(model, scheduler)
    labels = {"shared_prefix_tokens": shared_prefix_tokens, "distinct_prompts": distinct_prompts}

    def workload_for(users: int):
        count = num_requests or 10 * users
        if trace is not None:
            whole = trace_workload(trace, seed=seed, **labels)
            reps = -(-count // len(whole.prompt_tokens))
            pick = np.tile(np.arange(len(whole.prompt_tokens)), reps)[:count]
            cut = {name: (None if getattr(whole, name) is None else getattr(whole, name)[pick])
                   for name in ("prefix_id", "prefix_tokens", "prompt_id")}
            return Workload(whole.arrival_s[pick], whole.prompt_tokens[pick], whole.output_tokens[pick],
                            whole.description, **cut)
        assert input_len and output_len
        return synthetic_workload(input_len, output_len, count, None, seed, **labels)

    kv = model.kv_memory(max_num_batched_tokens=max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS,
                         max_num_seqs=max_batch).replica_kv_tokens
    rows = concurrency_curve(concurrencies, workload_for, model, gpus_per_replica=model.gpus, scheduler=scheduler,
                             max_batch=max_batch, max_batched_tokens=max_batched_tokens, replicas=replicas,
                             kv_capacity_tokens=kv,
                             policy="least_outstanding" if router == "least_loaded" else router,
                             **({"prefix_caching": prefix_caching, "kv_preemption": kv_preemption}
                                if scheduler == "vllm" else {}))
    config = (f"{describe_replica(model, dtype)}, max batch {max_batch}, "
              f"{scheduler.replace('_', '-')} batching, closed loop")
    memory = memory_report(model, max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS, max_batch)
    return [{key: (None if isinstance(value, float) and not math.isfinite(value) else value)
             for key, value in dict(row, config=config, model=model.llm.name, gpu=model.gpu_name, tp=tp, dp=dp,
                                    pp=pp, ep=ep, dtype=dtype, scheduler=scheduler, **memory).items()}
            for row in rows]


CURVE_COLUMNS = (("N", "concurrency", None), ("requests", "requests", None),
                 ("TTFT p50 ms", "ttft_p50_s", 1000), ("TTFT p90 ms", "ttft_p90_s", 1000),
                 ("TTFT p99 ms", "ttft_p99_s", 1000), ("TPOT p50 ms", "tpot_p50_s", 1000),
                 ("TPOT p99 ms", "tpot_p99_s", 1000), ("E2E p50 ms", "e2e_p50_s", 1000),
                 ("E2E p99 ms", "e2e_p99_s", 1000), ("tok/s/GPU", "output_tokens_per_s_per_gpu", 1),
                 ("tok/s/user", "output_tokens_per_s_per_user", 1))


def curve_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the concurrency curve's table."""
    def cell(row: dict[str, Any], key: str, scale: float | None) -> str:
        value = row.get(key)
        if value is None:
            return "—"
        return f"{value:,}" if scale is None else f"{value * scale:,.1f}"

    return ([label for label, _, _ in CURVE_COLUMNS],
            [[cell(row, key, scale) for _, key, scale in CURVE_COLUMNS] for row in rows])
