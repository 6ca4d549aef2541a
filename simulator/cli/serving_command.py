"""``fleetcast serving``: the request-level engine on one replica (or a few behind a router)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from simulator.cli.app import console, main


@main.command()
@click.option("--model", "llm", help="Model name from the catalog, e.g. llama-3.1-70b (case-insensitive).")
@click.option("--model-config", type=click.Path(dir_okay=False),
              help="A Hugging Face config.json to read the model from (instead of --model).")
@click.option("--gpu", required=True, help="GPU name, e.g. H100 (case-insensitive).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel GPUs per rank.")
@click.option("--dp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Data-parallel attention ranks per replica (each its own requests and KV cache).")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True, help="Pipeline stages per replica.")
@click.option("--ep", type=click.IntRange(min=1), default=1, show_default=True,
              help="Expert-parallel GPUs for MoE layers: 1, or tp × dp (experts spread over every GPU of a stage).")
@click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp8", "fp4"]), default="bf16", show_default=True,
              help="Weight precision (fp4: NVFP4, Blackwell).")
@click.option("--gpu-memory-utilization", type=click.FloatRange(min=0, max=1, min_open=True), default=0.9,
              show_default=True, help="vLLM's share of device memory for weights, activations and KV cache.")
@click.option("--kv-dtype", type=click.Choice(["bf16", "fp16", "fp8"]),
              help="KV-cache dtype (default: --dtype; fp8 with --dtype fp4).")
@click.option("--max-batch", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--chunk", "chunk", type=click.IntRange(min=1),
              help="Token budget per iteration (chunked prefill); the same as --max-batched-tokens.")
@click.option("--batching", type=click.Choice(["whole-prompt", "vllm"]), default="whole-prompt", show_default=True,
              help="whole-prompt: the contract semantics; vllm: V1 token budget, chunked prefill, prefix cache, "
              "KV preemption (what derived capacities use).")
@click.option("--max-batched-tokens", type=click.IntRange(min=1),
              help="vLLM max_num_batched_tokens per iteration (default 8192).")
@click.option("--prefix-caching", type=click.Choice(["on", "off"]),
              help="With --batching vllm: reuse cached prompt blocks (default on).")
@click.option("--kv-preemption", type=click.Choice(["on", "off"]),
              help="With --batching vllm: KV blocks allocated as generated, newest request preempted when "
              "full (default on); off: reserve prompt + output at admission.")
@click.option("--shared-prefix-tokens", type=click.IntRange(min=0), default=0, show_default=True,
              help="A system prompt of this many tokens shared by every request.")
@click.option("--distinct-prompts", type=click.IntRange(min=0), default=0, show_default=True,
              help="Requests repeat this many distinct prompts (0: every prompt distinct).")
@click.option("--trace", help="Azure-format trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens), or azure-conv.")
@click.option("--rate-scale", type=click.FloatRange(min=0, min_open=True), help="Replay the trace at K times its rate.")
@click.option("--input-len", type=click.IntRange(min=1), help="Prompt tokens per request (without --trace).")
@click.option("--output-len", type=click.IntRange(min=1), help="Output tokens per request (without --trace).")
@click.option("--num-requests", type=click.IntRange(min=1, max=10_000_000), help="Requests (without --trace).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Poisson arrival rate, req/s (default: all at time 0).")
@click.option("--replicas", type=click.IntRange(min=1, max=10_000), default=1, show_default=True, help="Replicas behind a router.")
@click.option("--router", "--routing", "router", default="least_outstanding", show_default=True,
              type=click.Choice(["least_outstanding", "least_loaded", "round_robin", "prefix_affinity"]),
              help="How --replicas share the requests: fewest outstanding (least_loaded is its other name), "
              "round robin, or prefix_affinity (a prefix's requests to its home replica while its load is "
              "within 1.25x the mean; --batching vllm).")
@click.option("--concurrency", help="Closed loop of N users (zero think time), or a sweep N1,N2,...: "
              "one row per N (requests per N: --num-requests, default 10×N). Excludes --rate.")
@click.option("--speculative", "spec_k", type=click.IntRange(min=1, max=32),
              help="Speculative decoding with K draft tokens per step (--batching vllm).")
@click.option("--acceptance", default="0.7", show_default=True,
              help="Draft acceptance: one rate, or one per draft position (0.8,0.7,0.6).")
@click.option("--draft", default="eagle", show_default=True,
              help="Draft: eagle, mtp (a one-layer head), ngram (free), or a catalog model name (a draft model).")
@click.option("--host-kv-tokens", type=click.IntRange(min=16),
              help="A host-memory KV tier of this many tokens per replica (prefix blocks evicted from the GPU).")
@click.option("--host-kv-gbps", type=click.FloatRange(min=0, min_open=True),
              help="Host-to-GPU bandwidth of the tier per GPU, GB/s (default 50: PCIe 5.0 x16).")
@click.option("--spill-preempted", is_flag=True, help="Preempted requests write their KV to the host tier "
              "and reload it instead of recomputing.")
@click.option("--disaggregate", "split", metavar="P:D|search",
              help="Serve on a disaggregated unit of P prefill and D decode replicas (--batching vllm); "
              "search: the split with the most SLO capacity per GPU (--slo-ttft, --slo-tpot).")
@click.option("--slo-ttft", type=click.FloatRange(min=0, min_open=True), default=2.0, show_default=True,
              help="With --disaggregate search: TTFT p90 target, seconds.")
@click.option("--slo-tpot", type=click.FloatRange(min=0, min_open=True), default=0.2, show_default=True,
              help="With --disaggregate search: TPOT p99 target, seconds.")
@click.option("--max-prefill", type=click.IntRange(min=1, max=64), default=4, show_default=True,
              help="With --disaggregate search: most prefill replicas per unit.")
@click.option("--max-decode", type=click.IntRange(min=1, max=64), default=8, show_default=True,
              help="With --disaggregate search: most decode replicas per unit.")
@click.option("--decode-gpu", help="With --disaggregate: the decode replicas' GPU (default --gpu).")
@click.option("--decode-tp", type=click.IntRange(min=1), help="With --disaggregate: decode tensor-parallel GPUs.")
@click.option("--decode-dp", type=click.IntRange(min=1), help="With --disaggregate: decode data-parallel ranks.")
@click.option("--decode-ep", type=click.IntRange(min=1), help="With --disaggregate: decode expert-parallel GPUs.")
@click.option("--kv-link", type=click.Choice(["nvlink", "rdma"]),
              help="With --disaggregate: the KV link (default nvlink when both sides fit one scale-up domain).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table "
              "(with --concurrency: a list of objects, one per N).")
def serving(llm, model_config, gpu, tp, dp, pp, ep, dtype, gpu_memory_utilization, kv_dtype, max_batch, chunk,
            batching, max_batched_tokens, prefix_caching, kv_preemption, shared_prefix_tokens, distinct_prompts, trace,
            rate_scale, input_len, output_len, num_requests, rate, replicas, router, concurrency, spec_k, acceptance,
            draft, host_kv_tokens, host_kv_gbps, spill_preempted, split, slo_ttft, slo_tpot, max_prefill, max_decode,
            decode_gpu, decode_tp, decode_dp, decode_ep, kv_link, seed, as_json) -> None:
    """Serve a workload on one replica (or several) with the request-level engine.

    Without --rate (and without a trace) all requests arrive at time 0: offline throughput.
    With --concurrency N, N users each send a request when their previous one finishes.
    """
    from simulator.serving.report import report_rows, serving_report

    if (llm is None) == (model_config is None):
        raise click.UsageError("give exactly one of --model (a catalog name) and --model-config (a config.json)")
    extras = [flag for flag, value in (("--speculative", spec_k), ("--host-kv-tokens", host_kv_tokens),
                                       ("--host-kv-gbps", host_kv_gbps), ("--spill-preempted", spill_preempted or None),
                                       ("--disaggregate", split)) if value is not None]
    if extras and batching != "vllm":
        raise click.UsageError(f"{' and '.join(extras)} apply to --batching vllm")
    if extras and concurrency is not None:
        raise click.UsageError(f"{' and '.join(extras)} and --concurrency exclude each other")
    decode_flags = [flag for flag, value in (("--decode-gpu", decode_gpu), ("--decode-tp", decode_tp),
                                             ("--decode-dp", decode_dp), ("--decode-ep", decode_ep),
                                             ("--kv-link", kv_link)) if value is not None]
    if decode_flags and split is None:
        raise click.UsageError(f"{' and '.join(decode_flags)} apply to --disaggregate")
    layout = dict(model_config=model_config, dp=dp, pp=pp, ep=ep, gpu_memory_utilization=gpu_memory_utilization)
    if (pp > 1 or dp > 1) and batching != "vllm":
        raise click.UsageError("--dp and --pp apply to --batching vllm (data-parallel ranks and pipeline "
                               "stages are scheduled as vLLM schedules them)")
    if concurrency is not None:
        _serve_concurrency(concurrency, layout, llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype,
                           max_batch=max_batch, chunk=chunk, batching=batching,
                           max_batched_tokens=max_batched_tokens, prefix_caching=prefix_caching,
                           kv_preemption=kv_preemption, shared_prefix_tokens=shared_prefix_tokens,
                           distinct_prompts=distinct_prompts, trace=trace, rate_scale=rate_scale,
                           input_len=input_len, output_len=output_len, num_requests=num_requests, rate=rate,
                           replicas=replicas, router=router, seed=seed, as_json=as_json)
        return
    if split == "search" and trace is None and None in (input_len, output_len):
        raise click.UsageError("give --trace, or --input-len and --output-len (the requests the search probes)")
    if split != "search" and trace is None and None in (input_len, output_len, num_requests):
        raise click.UsageError("give --trace, or all of --input-len, --output-len and --num-requests")
    if trace is not None and (input_len or output_len or num_requests):
        raise click.UsageError("--trace replaces --input-len, --output-len and --num-requests")
    if trace is None and rate_scale is not None:
        raise click.UsageError("--rate-scale applies to a --trace; use --rate for synthetic requests")
    vllm_only = [flag for flag, value in (("--prefix-caching", prefix_caching), ("--kv-preemption", kv_preemption))
                 if value is not None]
    if batching != "vllm" and vllm_only:
        raise click.UsageError(f"{' and '.join(vllm_only)} apply to --batching vllm")
    if batching != "vllm" and router == "prefix_affinity":
        raise click.UsageError("--routing prefix_affinity applies to --batching vllm (the prefix cache's batching)")
    if split is not None and replicas > 1:
        raise click.UsageError("--disaggregate sets the unit's replicas (P:D); leave --replicas out")
    extra = dict(spec_k=spec_k, acceptance=acceptance, draft=draft, host_kv_tokens=host_kv_tokens,
                 host_kv_gbps=host_kv_gbps, spill_preempted=spill_preempted)
    if split == "search":
        if rate_scale is not None:
            raise click.UsageError("--disaggregate search finds each split's capacity itself; leave --rate-scale out")
        _search_split(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, max_batch=max_batch,
                      shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts, router=router,
                      max_batched_tokens=max_batched_tokens or chunk, trace=trace, input_len=input_len,
                      output_len=output_len, num_requests=num_requests, seed=seed,
                      prefix_caching=prefix_caching != "off", kv_preemption=kv_preemption != "off", layout=layout,
                      decode_gpu=decode_gpu, decode_tp=decode_tp, decode_dp=decode_dp, decode_ep=decode_ep,
                      link=kv_link, slo_ttft=slo_ttft, slo_tpot=slo_tpot, max_prefill=max_prefill,
                      max_decode=max_decode, as_json=as_json, rate=rate, **extra)
        return
    if split is not None:
        from simulator.serving.serving_report_setup import disaggregated_serving

        report = disaggregated_serving(
            split, llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, max_batch=max_batch,
            max_batched_tokens=max_batched_tokens or chunk, trace=trace, rate_scale=rate_scale, input_len=input_len,
            output_len=output_len, num_requests=num_requests, rate=rate, seed=seed,
            prefix_caching=prefix_caching != "off", kv_preemption=kv_preemption != "off",
            shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts, layout=layout,
            decode_gpu=decode_gpu, decode_tp=decode_tp, decode_dp=decode_dp, decode_ep=decode_ep, link=kv_link,
            router=router, **extra)
    else:
        from simulator.serving.serving_report_setup import extras_for

        report = serving_report(
            llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, max_batch=max_batch, chunk=chunk,
            trace=trace, rate_scale=rate_scale, input_len=input_len, output_len=output_len,
            num_requests=num_requests, rate=rate, replicas=replicas, router=router, seed=seed,
            scheduler=batching.replace("-", "_"), max_batched_tokens=max_batched_tokens,
            prefix_caching=prefix_caching != "off", kv_preemption=kv_preemption != "off",
            shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts, **layout,
            **extras_for(llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, layout=layout, **extra),
        )
    if as_json:
        click.echo(json.dumps(report, allow_nan=False))
        return
    table = Table(title=report["config"], show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in report_rows(report):
        table.add_row(label, value)
    console.print(table)


def _search_split(*, as_json, rate, **options) -> None:
    """``--disaggregate search``: run the search, print each split tried."""
    from simulator.serving.serving_report_setup import split_search_rows

    if rate is not None:
        raise click.UsageError("--disaggregate search finds each split's capacity itself; leave --rate out")
    rows = split_search_rows(**options)
    if as_json:
        click.echo(json.dumps(rows, allow_nan=False))
        return
    first = rows[0] if rows else {}
    table = Table(title=f"P:D splits of {first.get('model')} on {first.get('gpu')}/{first.get('decode_gpu')} "
                        f"({first.get('slo')}), best capacity per GPU first")
    for label in ("P:D", "GPUs", "req/s per unit", "req/s per GPU", "TTFT p90 ms", "TPOT p99 ms", "KV GB/s"):
        table.add_column(label, justify="right")
    def ms(value):
        return "—" if value is None else f"{value * 1000:,.1f}"

    for row in rows:
        table.add_row(row["split"], f"{row['gpus']}", f"{row['capacity_rps']:,.2f}", f"{row['rps_per_gpu']:,.3f}",
                      ms(row["ttft_at_capacity_s"]), ms(row["tpot_at_capacity_s"]),
                      "—" if row["kv_transfer_gbps"] is None else f"{row['kv_transfer_gbps']:,.2f}")
    console.print(table)


def _serve_concurrency(text, layout, *, llm, gpu, tp, dtype, kv_dtype, max_batch, chunk, batching, max_batched_tokens,
                       prefix_caching, kv_preemption, shared_prefix_tokens, distinct_prompts, trace, rate_scale,
                       input_len, output_len, num_requests, rate, replicas, router, seed, as_json) -> None:
    """``--concurrency``: check the flags, run the curve, print it."""
    from simulator.serving.concurrency import parse_concurrency
    from simulator.serving.report import concurrency_report, curve_table

    if rate is not None:
        raise click.UsageError("--concurrency and --rate exclude each other (a closed loop sets its own arrivals)")
    if rate_scale is not None:
        raise click.UsageError("--concurrency and --rate-scale exclude each other (a closed loop sets its own arrivals)")
    if trace is None and None in (input_len, output_len):
        raise click.UsageError("give --trace, or --input-len and --output-len")
    if trace is not None and (input_len or output_len):
        raise click.UsageError("--trace replaces --input-len and --output-len")
    vllm_only = [flag for flag, value in (("--prefix-caching", prefix_caching), ("--kv-preemption", kv_preemption))
                 if value is not None]
    if batching != "vllm" and (vllm_only or router == "prefix_affinity"):
        raise click.UsageError(f"{' and '.join(vllm_only) or '--routing prefix_affinity'} apply to --batching vllm")
    try:
        concurrencies = parse_concurrency(text)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    rows = concurrency_report(
        llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, max_batch=max_batch, concurrencies=concurrencies,
        trace=trace, input_len=input_len, output_len=output_len, num_requests=num_requests, seed=seed,
        scheduler=batching.replace("-", "_"), max_batched_tokens=max_batched_tokens or chunk,
        prefix_caching=prefix_caching != "off", kv_preemption=kv_preemption != "off", replicas=replicas,
        router=router, shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts, **layout,
    )
    if as_json:
        click.echo(json.dumps(rows, allow_nan=False))
        return
    header, cells = curve_table(rows)
    table = Table(title=rows[0]["config"] if rows else "")
    for label in header:
        table.add_column(label, justify="right")
    for line in cells:
        table.add_row(*line)
    console.print(table)
