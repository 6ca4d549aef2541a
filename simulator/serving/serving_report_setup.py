"""``fleetcast serving``'s options for speculation, a host KV tier and disaggregation, turned
into the objects :func:`simulator.serving.report.serving_report` and
:func:`simulator.serving.disaggregated_report.disaggregated_report` take."""

from __future__ import annotations

from typing import Any

from simulator.serving.disaggregated_report import disaggregated_report
from simulator.serving.iteration import ServingConfigError
from simulator.serving.report import replica_model
from simulator.serving.serving_setup import host_tier, parse_split, speculation
from simulator.serving.workload import synthetic_workload, trace_workload


def extras_for(*, llm, gpu, tp, dtype, kv_dtype, layout, spec_k, acceptance, draft, host_kv_tokens, host_kv_gbps,
               spill_preempted) -> dict[str, Any]:
    """``speculation`` and ``host_kv`` for :func:`~simulator.serving.report.serving_report`."""
    host = host_tier(host_kv_tokens, host_kv_gbps, spill_preempted)
    spec = None
    if spec_k is not None:
        target = replica_model(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, **layout)
        spec = speculation(spec_k, acceptance, draft, target, gpu)
    return {"speculation": spec, "host_kv": host}


def _sides(llm, gpu, tp, dtype, kv_dtype, layout, decode_gpu, decode_tp, decode_dp, decode_ep, max_batch,
           max_batched_tokens):
    """The prefill and decode replicas' iteration models of ``--disaggregate`` (checked as the P:D and
    search forms share them)."""
    if layout.get("pp", 1) > 1:
        raise ServingConfigError("--disaggregate takes tensor, data and expert parallelism per side; not --pp")
    if max_batched_tokens is not None and max_batched_tokens < max_batch:
        raise ServingConfigError(f"--max-batched-tokens ({max_batched_tokens}) must be >= --max-batch ({max_batch})")
    prefill = replica_model(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, **layout)
    decode_layout = dict(layout, dp=decode_dp or layout.get("dp", 1), ep=decode_ep or layout.get("ep", 1))
    decode = replica_model(llm=llm, gpu=decode_gpu or gpu, tp=decode_tp or tp, dtype=dtype, kv_dtype=kv_dtype,
                           **decode_layout)
    return prefill, decode


def disaggregated_serving(split_text: str, *, llm, gpu, tp, dtype, kv_dtype, max_batch, max_batched_tokens, trace,
                          rate_scale, input_len, output_len, num_requests, rate, seed, prefix_caching, kv_preemption,
                          shared_prefix_tokens, distinct_prompts, layout, decode_gpu, decode_tp, decode_dp,
                          decode_ep, link, spec_k, acceptance, draft, host_kv_tokens, host_kv_gbps,
                          spill_preempted, router="least_outstanding") -> dict[str, Any]:
    """The JSON object of ``fleetcast serving --disaggregate P:D``."""
    split = parse_split(split_text)
    prefill, decode = _sides(llm, gpu, tp, dtype, kv_dtype, layout, decode_gpu, decode_tp, decode_dp, decode_ep,
                             max_batch, max_batched_tokens)
    budget = max_batched_tokens
    if trace is not None:
        workload = trace_workload(trace, rate=rate, rate_scale=rate_scale, seed=seed,
                                  shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts)
    else:
        workload = synthetic_workload(input_len, output_len, num_requests, rate, seed,
                                      shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts)
    spec = speculation(spec_k, acceptance, draft, decode, decode.gpu_name) if spec_k is not None else None
    return disaggregated_report(workload, prefill, decode, split, max_batch=max_batch, max_batched_tokens=budget,
                                prefix_caching=prefix_caching, kv_preemption=kv_preemption, link=link, seed=seed,
                                speculation=spec, host_kv=host_tier(host_kv_tokens, host_kv_gbps, spill_preempted),
                                dtype=dtype, router=router)


def split_search_rows(*, llm, gpu, tp, dtype, kv_dtype, max_batch, max_batched_tokens, trace, input_len, output_len,
                      num_requests, seed, prefix_caching, kv_preemption, layout, decode_gpu, decode_tp, decode_dp,
                      decode_ep, link, spec_k, acceptance, draft, host_kv_tokens, host_kv_gbps, spill_preempted,
                      slo_ttft, slo_tpot, max_prefill, max_decode, shared_prefix_tokens=0, distinct_prompts=0,
                      router="least_outstanding") -> list[dict[str, Any]]:
    """The rows of ``fleetcast serving --disaggregate search``: each split tried, best first."""
    from dataclasses import replace as _replace

    from simulator.serving.capacity import Slo
    from simulator.serving.disaggregated import Side, Unit
    from simulator.serving.probe import trace_requests
    from simulator.serving.serving_setup import kv_link
    from simulator.serving.split_search import search_split
    from simulator.serving.trace import LengthMix
    from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS

    prefill, decode = _sides(llm, gpu, tp, dtype, kv_dtype, layout, decode_gpu, decode_tp, decode_dp, decode_ep,
                             max_batch, max_batched_tokens)
    budget = max_batched_tokens or DEFAULT_MAX_BATCHED_TOKENS
    policy = "least_outstanding" if router == "least_loaded" else router
    sides = [Side(m, 1, max_num_seqs=max_batch, max_num_batched_tokens=budget,
                  kv_capacity_tokens=m.kv_memory(max_num_batched_tokens=budget, max_num_seqs=max_batch).replica_kv_tokens,
                  policy=policy if m is prefill else "least_outstanding")
             for m in (prefill, decode)]
    # The link of the largest split tried: NVLink (by default) only if every split fits one domain.
    unit = Unit(sides[0], sides[1], kv_link(prefill, decode, link,
                                            unit_gpus=max_prefill * prefill.gpus + max_decode * decode.gpus))
    labels = {"shared_prefix_tokens": shared_prefix_tokens, "distinct_prompts": distinct_prompts}
    mix = (trace_requests(trace, seed=seed, **labels) if trace is not None
           else _replace(LengthMix.fixed(input_len, output_len), **labels))
    spec = speculation(spec_k, acceptance, draft, decode, decode.gpu_name) if spec_k is not None else None
    slo = Slo(ttft_s=slo_ttft, tpot_s=slo_tpot)
    tried = search_split(unit, mix, slo, max_prefill, max_decode, requests=num_requests or 2000, seed=seed,
                         prefix_caching=prefix_caching, kv_preemption=kv_preemption, speculation=spec,
                         host_kv=host_tier(host_kv_tokens, host_kv_gbps, spill_preempted))
    rows = []
    for c in tried:
        figures = (c.curve.figures or {}) if c.curve is not None else {}
        rows.append({"split": c.split, "prefill_replicas": c.prefill_replicas, "decode_replicas": c.decode_replicas,
                     "gpus": c.gpus, "capacity_rps": c.capacity_rps, "rps_per_gpu": c.rps_per_gpu,
                     "ttft_at_capacity_s": c.curve.ttft_at_capacity_s if c.curve is not None else None,
                     "tpot_at_capacity_s": c.curve.tpot_at_capacity_s if c.curve is not None else None,
                     "kv_transfer_gbps": figures.get("kv_transfer_gbps"), "kv_link": unit.link.kind,
                     "slo": f"TTFT p{slo.ttft_percentile:g} <= {slo.ttft_s:g} s, TPOT p{slo.tpot_percentile:g} "
                            f"<= {slo.tpot_s:g} s", "model": prefill.llm.name, "gpu": prefill.gpu_name,
                     "decode_gpu": decode.gpu_name})
    return rows
