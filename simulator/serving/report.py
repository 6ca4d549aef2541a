"""What ``fleetcast serving`` computes and prints: one workload on one serving configuration."""

from __future__ import annotations

import math
from typing import Any

from simulator.serving.config import roofline_model
from simulator.serving.replica import simulate_router
from simulator.serving.workload import synthetic_workload, trace_workload


def serving_report(*, llm: str, gpu: str, tp: int, dtype: str, kv_dtype: str | None, max_batch: int,
                   chunk: int | None, trace: str | None, rate_scale: float | None,
                   input_len: int | None, output_len: int | None, num_requests: int | None,
                   rate: float | None, replicas: int, router: str, seed: int) -> dict[str, Any]:
    """Run the workload and return the JSON object of ``fleetcast serving --json``."""
    model = roofline_model(llm, gpu, tp, dtype, kv_dtype)
    if trace is not None:
        workload = trace_workload(trace, rate=rate, rate_scale=rate_scale)
    else:
        assert input_len and output_len and num_requests
        workload = synthetic_workload(input_len, output_len, num_requests, rate, seed)
    result = simulate_router(workload.arrival_s, workload.prompt_tokens, workload.output_tokens,
                             model, replicas=replicas, policy=router, max_batch=max_batch,
                             prefill_chunk_tokens=chunk)
    report = result.summary(gpus_per_replica=tp)
    report.update(
        config=f"{model.llm.name} on {tp}×{model.gpu_name} {dtype}, max batch {max_batch}"
        + (f", {replicas} replicas ({router})" if replicas > 1 else ""),
        workload=workload.description,
        model=model.llm.name, gpu=model.gpu_name, tp=tp, dtype=dtype, kv_dtype=model.kv_dtype,
        max_batch=max_batch, kv_capacity_tokens=model.kv_capacity_tokens,
    )
    return {key: (None if isinstance(value, float) and not math.isfinite(value) else value)
            for key, value in report.items()}


def report_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The readable table of a report."""

    def ms(key: str) -> str:
        value = report.get(key)
        return "—" if value is None else f"{value * 1000:,.1f} ms"

    return [
        ("workload", report["workload"]),
        ("requests", f"{report['requests']:,}"),
        ("duration", f"{report['duration_s']:,.2f} s"),
        ("throughput", f"{report['throughput_req_s']:,.2f} req/s"),
        ("output tokens/s", f"{report['output_tokens_per_s']:,.0f} ({report['output_tokens_per_s_per_gpu']:,.0f} per GPU)"),
        ("TTFT p50 / p90 / p99", f"{ms('ttft_p50_s')} / {ms('ttft_p90_s')} / {ms('ttft_p99_s')}"),
        ("TPOT p50 / p99", f"{ms('tpot_p50_s')} / {ms('tpot_p99_s')}"),
        ("E2E p50 / p99", f"{ms('e2e_p50_s')} / {ms('e2e_p99_s')}"),
        ("KV cache", f"{report['kv_capacity_tokens']:,} tokens per replica"),
        ("iterations", f"{report['iterations']:,}"),
    ]
