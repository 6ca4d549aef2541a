"""Built-in GPU catalog: the accelerators a scenario can name without describing them.

Figures are dense (no sparsity) peak throughput, memory, thermal design power and prices,
each with its source and date; prices move fast, so a scenario can override any field
(``gpus: {H100: {price_usd: 28000}}``) or add a GPU of its own. Names are matched without
regard to case.

Sources: NVIDIA H100/H200/B200 and A100 datasheets; AMD MI300X datasheet; Epoch AI,
``epoch-research/training-cost-trends`` (hardware prices); neocloud on-demand list prices
collected 2024-25. See ``shared/data/reference_hardware.md`` of the project.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from simulator.scenario.types import Frozen, Positive


class GpuSpec(Frozen):
    """One accelerator type: peak throughput per dtype, memory, power and prices."""

    tflops_bf16: Positive = Field(description="Dense BF16 peak, TFLOP/s")
    tflops_fp8: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Dense FP8 peak, TFLOP/s (none where unsupported)"
    )
    memory_gb: Positive
    memory_tbps: Positive = Field(description="Memory bandwidth, TB/s")
    tdp_w: Positive = Field(description="Thermal design power of one GPU, watts")
    price_usd: Annotated[float, Field(ge=0)] = Field(description="Purchase price per GPU")
    cloud_usd_per_gpu_hour: Annotated[float, Field(ge=0)] = Field(
        description="Typical on-demand rental price per GPU-hour"
    )
    source: str = ""
    as_of: str = ""
    generation: str = Field(default="hopper", description="GPU generation: sets serving efficiencies")
    interconnect: str = Field(default="", description="GPU-to-GPU link within a server")
    link_gbps: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="GPU-to-GPU bandwidth per direction, GB/s (tensor-parallel all-reduce)"
    )
    allreduce_latency_us: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="Fixed latency of one small all-reduce, microseconds"
    )


BUILTIN_GPUS: dict[str, dict[str, object]] = {
    "A100-80GB": dict(
        tflops_bf16=312, tflops_fp8=None, memory_gb=80, memory_tbps=2.04, tdp_w=400,
        price_usd=18_000, cloud_usd_per_gpu_hour=1.79,
        source="NVIDIA A100 datasheet; Epoch AI hardware prices; neocloud list prices",
        as_of="2025-03", generation="ampere", interconnect="NVLink 3 (600 GB/s bidirectional)",
        link_gbps=300, allreduce_latency_us=10,
    ),
    "H100": dict(
        tflops_bf16=989, tflops_fp8=1979, memory_gb=80, memory_tbps=3.35, tdp_w=700,
        price_usd=33_000, cloud_usd_per_gpu_hour=2.99,
        source="NVIDIA H100 SXM datasheet; Epoch AI hardware prices; neocloud list prices",
        as_of="2025-03", generation="hopper", interconnect="NVLink 4 (900 GB/s bidirectional)",
        link_gbps=450, allreduce_latency_us=28.8,
    ),
    "H200": dict(
        tflops_bf16=989, tflops_fp8=1979, memory_gb=141, memory_tbps=4.8, tdp_w=700,
        price_usd=40_000, cloud_usd_per_gpu_hour=3.79,
        source="NVIDIA H200 datasheet; Epoch AI hardware prices",
        as_of="2025-03", generation="hopper", interconnect="NVLink 4 (900 GB/s bidirectional)",
        link_gbps=450, allreduce_latency_us=28.8,
    ),
    "B200": dict(
        tflops_bf16=2250, tflops_fp8=4500, memory_gb=192, memory_tbps=8.0, tdp_w=1000,
        price_usd=47_400, cloud_usd_per_gpu_hour=5.99,
        source="NVIDIA B200 datasheet; Epoch AI hardware prices (DGX B200 share, Dec 2024)",
        as_of="2024-12", generation="blackwell", interconnect="NVLink 5 (1.8 TB/s bidirectional)",
        link_gbps=900, allreduce_latency_us=8,
    ),
    "MI300X": dict(
        tflops_bf16=1307, tflops_fp8=2615, memory_gb=192, memory_tbps=5.3, tdp_w=750,
        price_usd=25_700, cloud_usd_per_gpu_hour=4.99,
        source="AMD MI300X datasheet; 8-GPU listing Feb 2025; neocloud list price",
        as_of="2025-02", generation="cdna3", interconnect="Infinity Fabric (7 links, 896 GB/s bidirectional)",
        link_gbps=448, allreduce_latency_us=12,
    ),
    "L40S": dict(
        tflops_bf16=362, tflops_fp8=733, memory_gb=48, memory_tbps=0.864, tdp_w=350,
        price_usd=12_000, cloud_usd_per_gpu_hour=0.99,
        source="NVIDIA L40S datasheet; neocloud list prices (purchase price unverified)",
        as_of="2025-03", generation="ada", interconnect="PCIe Gen4 x16 (no NVLink)",
        link_gbps=32, allreduce_latency_us=25,
    ),
}


#: Serving efficiencies per GPU generation, used by the operator iteration model
#: (``simulator.serving.operators``): achieved share of peak for GEMMs, of HBM bandwidth for
#: weight and KV reads, of peak for prefill attention; the fixed CPU/launch time of one
#: iteration and of one layer in it, and the per-request front-end (HTTP/API server) latency added to TTFT.
#: Hopper's values are fitted by ``benchmarks/fit_serving.py`` to 13 vLLM v0.15.1 runs on H100
#: (shared/data/vllm_h100_trainval); the other generations have no calibration data here and
#: take Hopper's efficiencies (an assumption, stated in README "Serving fidelity").
HOPPER_EFFICIENCY: dict[str, float] = dict(
    gemm_efficiency=0.459, memory_efficiency=0.742, attention_efficiency=0.800,
    overhead_s=0.000516, frontend_s=0.0195, layer_overhead_s=4.76e-6,
)
GENERATION_EFFICIENCY: dict[str, dict[str, float]] = {
    "hopper": HOPPER_EFFICIENCY,
    "ampere": HOPPER_EFFICIENCY,
    "blackwell": HOPPER_EFFICIENCY,
    "cdna3": HOPPER_EFFICIENCY,
    "ada": HOPPER_EFFICIENCY,
}
#: Generations whose efficiencies were fitted to measurements (the rest are assumed).
CALIBRATED_GENERATIONS = ("hopper",)


def canonical_gpu_name(name: str, known: dict[str, object] | None = None) -> str | None:
    """The catalog's spelling of ``name`` (matched case-insensitively), or None."""
    table = BUILTIN_GPUS if known is None else known
    folded = name.strip().casefold()
    for canonical in table:
        if canonical.casefold() == folded:
            return canonical
    return None
