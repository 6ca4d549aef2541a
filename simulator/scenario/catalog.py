"""Built-in accelerator catalog: the GPUs and TPUs a scenario can name without describing them.

Figures are dense (no sparsity) peak throughput per dtype, memory, scale-up and scale-out
bandwidth, thermal design power and prices. Every entry carries its sources per figure group —
``source`` (compute, memory, power), ``network_source`` (scale-up and scale-out), ``price_source``
and ``cloud_price_source`` — and the month each group was quoted (``as_of``, ``price_as_of``,
``cloud_price_as_of``). A figure that is not public is marked "assumed" in its group's source
with the reason. Prices move fast, so a scenario can override any field
(``gpus: {H100: {price_usd: 28000}}``) or add an accelerator of its own. Names are matched
without regard to case; the names of the public contract (A100-80GB, H100, H200, B200, MI300X,
L40S) keep their meaning.

Conventions. Rental prices are on-demand list prices of neoclouds (GPU-specialist clouds), per
GPU-hour: where one snapshot covers the GPU, the median over RunPod (Community and Secure),
Lambda and Nebius on 2026-09-25 (:data:`_SILY_2026`); hyperscaler lists run 1.5-3x higher. Purchase prices are reported street
prices of one GPU (for NVL72 racks: the rack price over its 72 GPUs, so the Grace CPUs, NVLink
switches and rack come with it). TPUs are not sold: their ``price_usd`` is 0 and an owned TPU
pool needs a price of its own. Bandwidths are GB/s per GPU and per direction (a "1.8 TB/s
bidirectional" NVLink 5 is 900). The catalog as a whole is dated :data:`CATALOG_AS_OF`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from simulator.scenario.types import Frozen, Positive

#: The month the catalog's figures were last checked against their sources.
CATALOG_AS_OF = "2026-12"

_Month = str  # "YYYY-MM" in the catalog (tests/test_catalog.py checks it); free text in a scenario


class GpuSpec(Frozen):
    """One accelerator type: peak throughput per dtype, memory, interconnect, power and prices."""

    tflops_bf16: Positive = Field(description="Dense BF16 peak, TFLOP/s")
    tflops_fp8: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Dense FP8 peak, TFLOP/s (none where unsupported)"
    )
    tflops_fp4: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Dense FP4 peak (NVFP4 on Blackwell, MXFP4 on CDNA4), TFLOP/s; none where unsupported"
    )
    tops_int8: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Dense INT8 peak, TOP/s (given for TPUs, whose low-precision path it is)"
    )
    memory_gb: Positive = Field(description="High-bandwidth memory per GPU, GB")
    memory_visible_gib: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Device memory the driver reports (nvidia-smi total), GiB; vLLM's "
        "gpu_memory_utilization is a share of it. Default: memory_gb read as GiB less 0.5%"
    )
    memory_tbps: Positive = Field(description="Memory bandwidth, TB/s")
    tdp_w: Positive = Field(description="Thermal design power of one GPU, watts")
    price_usd: Annotated[float, Field(ge=0)] = Field(description="Purchase price per GPU")
    cloud_usd_per_gpu_hour: Annotated[float, Field(ge=0)] = Field(
        description="Typical on-demand rental price per GPU-hour"
    )
    source: str = Field(default="", description="Sources of the compute, memory and power figures")
    as_of: _Month = Field(default="", description="Month the compute, memory and power figures were checked (YYYY-MM)")
    price_source: str = Field(default="", description="Source of the purchase price")
    price_as_of: _Month = Field(default="", description="Month the purchase price was quoted (YYYY-MM)")
    cloud_price_source: str = Field(default="", description="Source of the rental price")
    cloud_price_as_of: _Month = Field(default="", description="Month the rental price was quoted (YYYY-MM)")
    generation: str = Field(default="hopper", description="GPU generation: sets serving efficiencies")
    interconnect: str = Field(default="", description="GPU-to-GPU link within the scale-up domain")
    link_gbps: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Scale-up bandwidth per GPU and direction, GB/s (tensor-parallel all-reduce)"
    )
    scale_up_domain: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="GPUs that reach each other at link_gbps: 8 on HGX/MI3xx, 72 on NVL72, the ICI slice on TPUs"
    )
    scale_out_gbps: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Scale-out (back-end network) bandwidth per GPU and direction, GB/s (400 Gb/s NIC = 50)"
    )
    network_source: str = Field(default="", description="Sources of the scale-up and scale-out figures")
    allreduce_latency_us: Annotated[float, Field(ge=0)] | None = Field(
        default=None, description="Fixed latency of one small all-reduce, microseconds"
    )


# Source strings used by several entries.
_NV_HOPPER_NET = ("NVLink 4 900 GB/s bidirectional per GPU, 8 per HGX (NVIDIA H100/H200 datasheets); "
                  "DGX H100/H200: one ConnectX-7 400 Gb/s NIC per GPU")
_EPOCH_2025 = "Epoch AI, epoch-research/training-cost-trends (Hardware prices.csv), via shared/data/reference_hardware.md"
_CLIFF_2026 = ("cliffcenter.com research note 'AMD inference economics' (2026-05-18): MI300X median $1.99/GPU-h "
               "(TensorWave 1.50, Vultr 1.85; Azure/Oracle ~6), MI325X at TensorWave $1.95, H100 at Lambda $2.99")
_ORNN_2026 = ("Ornn GPU rental benchmark, 'NVIDIA B200 vs B300' (ornnai.com, 2026; article undated, month assumed): "
              "B200 SXM OEM ~$50k, B300 ~$53k per GPU; GB200 NVL72 rack $3.0-3.9M, GB300 NVL72 $3.7-5.0M+; "
              "on-demand B200 $4.50 neocloud / $7.00 hyperscaler, B300 $5.00-7.25 neocloud")
_RUNLOCAL_2026 = ("runlocalai.co 'NVIDIA B200 production ramps' (Q1 2026): used H100 SXM $22-25k, "
                  "H200 SXM $28-31k retail, B200 $40-43k")
_SILY_2026 = ("on-demand list prices of RunPod, Lambda and Nebius checked 2026-09-25 "
              "(github.com/tgarg01/silybench-data, derived/cost.json)")
_GCP_TPU_NET = "Google Cloud TPU docs (docs.cloud.google.com/tpu/docs/{v5e,v6e,tpu7x}): bidirectional ICI per chip, pod size"

BUILTIN_GPUS: dict[str, dict[str, object]] = {
    "A100-80GB": dict(
        tflops_bf16=312, tflops_fp8=None, memory_gb=80, memory_visible_gib=80.0, memory_tbps=2.04, tdp_w=400,
        source="NVIDIA A100 80GB SXM datasheet", as_of="2026-12", generation="ampere",
        interconnect="NVLink 3 (600 GB/s bidirectional)", link_gbps=300, scale_up_domain=8,
        scale_out_gbps=25, allreduce_latency_us=95,
        network_source=("NVIDIA A100 datasheet (NVLink 3, 8 per HGX); DGX A100: one ConnectX-6 200 Gb/s NIC per GPU; "
                        "all-reduce latency fitted with AMPERE_EFFICIENCY (benchmarks/fit_ampere.py)"),
        price_usd=18_000, price_as_of="2025-03",
        price_source=f"{_EPOCH_2025}: $17.3k-18.5k (2023-25); no later street price found, kept",
        cloud_usd_per_gpu_hour=1.59, cloud_price_as_of="2026-09",
        cloud_price_source=(f"median of RunPod Community 1.39, RunPod Secure 1.59, Lambda (8x) 2.79: {_SILY_2026}; "
                            "RunPod Secure read $1.79 on 2026-10-19 and 2026-11-09"),
    ),
    "H100": dict(
        tflops_bf16=989, tflops_fp8=1979, memory_gb=80, memory_visible_gib=81559 / 1024, memory_tbps=3.35,
        tdp_w=700, source="NVIDIA H100 SXM datasheet; nvidia-smi total 81,559 MiB", as_of="2026-12", generation="hopper",
        interconnect="NVLink 4 (900 GB/s bidirectional)", link_gbps=450, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=28.8, network_source=_NV_HOPPER_NET,
        price_usd=25_000, price_as_of="2026-03",
        price_source=(f"{_RUNLOCAL_2026}; digiterialabs.com 'NVIDIA Blackwell pricing' (GTC 2026): "
                      "H100 street price $25,000"),
        cloud_usd_per_gpu_hour=3.67, cloud_price_as_of="2026-09",
        cloud_price_source=(f"median of RunPod Community 2.69, RunPod Secure 3.49, Nebius 3.85, Lambda 4.29: "
                            f"{_SILY_2026}; earlier in 2026: Lambda $2.99 (2026-05, {_CLIFF_2026}); SemiAnalysis "
                            "rental index rebound $1.70 (2025-10) to $2.35 (2026-03, 1-yr contracts)"),
    ),
    "H200": dict(
        tflops_bf16=989, tflops_fp8=1979, memory_gb=141, memory_visible_gib=143771 / 1024, memory_tbps=4.8,
        tdp_w=700, source="NVIDIA H200 SXM datasheet; nvidia-smi total 143,771 MiB", as_of="2026-12", generation="hopper",
        interconnect="NVLink 4 (900 GB/s bidirectional)", link_gbps=450, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=28.8, network_source=_NV_HOPPER_NET,
        price_usd=29_500, price_as_of="2026-03",
        price_source=f"{_RUNLOCAL_2026}: midpoint of H200 SXM $28-31k",
        cloud_usd_per_gpu_hour=4.50, cloud_price_as_of="2026-09",
        cloud_price_source=(f"median of RunPod Community 3.59, Nebius 4.50, RunPod Secure 4.59: {_SILY_2026}; "
                            "Mercatus (2026-05): specialty clouds $3.50-4.50"),
    ),
    "B200": dict(
        tflops_bf16=2250, tflops_fp8=4500, tflops_fp4=9000, memory_gb=192, memory_visible_gib=183359 / 1024,
        memory_tbps=8.0, tdp_w=1000,
        source=("NVIDIA B200 / HGX B200 datasheet: 2.25/4.5/9 PFLOPS dense BF16/FP8/FP4, 192 GB HBM3e at 8 TB/s, "
                "1,000 W (DGX B200 exposes 180 GB per GPU: nvidia-smi total 183,359 MiB, NVIDIA/TensorRT-LLM "
                "issue 10278)"),
        as_of="2026-12", generation="blackwell",
        interconnect="NVLink 5 (1.8 TB/s bidirectional)", link_gbps=900, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=5.9,
        network_source="NVIDIA HGX B200: NVLink 5 1.8 TB/s per GPU, 8 per board; 0.8 TB/s networking per 8 GPUs (400 Gb/s per GPU)",
        price_usd=41_500, price_as_of="2026-03",
        price_source=(f"{_RUNLOCAL_2026}: midpoint of B200 $40-43k; digiterialabs (GTC 2026) ~$37k in volume; "
                      "Ornn ~$50k OEM"),
        cloud_usd_per_gpu_hour=6.89, cloud_price_as_of="2026-09",
        cloud_price_source=(f"median of RunPod Community 5.98, RunPod Secure 6.79, Lambda 6.99, Nebius 7.15: "
                            f"{_SILY_2026}; earlier: lyceum.technology (2026-03) $4.50-6.00, Spheron (2026-03) $6.03, "
                            "CoreWeave list (2026-02) $8.60 (8x $68.80)"),
    ),
    "B300": dict(
        tflops_bf16=2250, tflops_fp8=4500, tflops_fp4=13_500, memory_gb=288, memory_tbps=8.0, tdp_w=1100,
        source=("NVIDIA HGX B300 (Blackwell Ultra) spec, per 8 GPUs: FP4 108 PFLOPS dense, FP8 72 and BF16 36 PFLOPS "
                "with sparsity (halved here); 288 GB HBM3e (12-high, 270 GB exposed in HGX) at 8 TB/s; "
                "1,100 W (verda.com 'GB300 NVL72 architecture' per-GPU table)"),
        as_of="2026-12", generation="blackwell-ultra",
        interconnect="NVLink 5 (1.8 TB/s bidirectional)", link_gbps=900, scale_up_domain=8,
        scale_out_gbps=100, allreduce_latency_us=5.9,
        network_source=("NVIDIA HGX B300: NVLink 5 1.8 TB/s per GPU, 8 GPUs per board; ConnectX-8 800 Gb/s per GPU; "
                        "all-reduce latency assumed equal to B200's (no measurement)"),
        price_usd=44_000, price_as_of="2026-03",
        price_source=("assumed: B200's $41.5k street price (runlocalai, Q1 2026) times Ornn's B300/B200 OEM ratio "
                      f"53/50; no B300 street price found. {_ORNN_2026}"),
        cloud_usd_per_gpu_hour=7.89, cloud_price_as_of="2026-10",
        cloud_price_source=("RunPod Pods B300 $7.89/h, page read 2026-10-07 (github.com/api-evangelist/runpod, "
                            "plans/runpod-plans-pricing.yml; same page: B200 $6.79); Ornn (2026): neocloud "
                            "range $5.00-7.25"),
    ),
    "GB200-NVL72": dict(
        tflops_bf16=2500, tflops_fp8=5000, tflops_fp4=10_000, memory_gb=186, memory_tbps=8.0, tdp_w=1200,
        source=("NVIDIA GB200 NVL72 spec per rack of 72 GPUs: FP4 1,440, FP8 720, BF16 360 PFLOPS with sparsity "
                "(halved here), 13.4 TB HBM3e (186 GB per GPU) at 576 TB/s (8 TB/s per GPU); 1,200 W per GPU "
                "(verda.com per-GPU table; SemiAnalysis)"),
        as_of="2026-12", generation="blackwell",
        interconnect="NVLink 5 + NVLink Switch, 72-GPU domain (1.8 TB/s bidirectional per GPU)",
        link_gbps=900, scale_up_domain=72, scale_out_gbps=50, allreduce_latency_us=5.9,
        network_source=("NVIDIA GB200 NVL72: 130 TB/s NVLink over 72 GPUs; one 400 Gb/s ConnectX-7 per GPU in the "
                        "reference compute tray; all-reduce latency assumed equal to B200's"),
        price_usd=47_900, price_as_of="2026-06",
        price_source=f"rack price over 72 GPUs, midpoint of $3.0-3.9M: {_ORNN_2026}; fetchlogic.net: ~$3.1M per rack",
        cloud_usd_per_gpu_hour=8.41, cloud_price_as_of="2026-09",
        cloud_price_source=("assumed from CoreWeave's list (2026-02): $42.00 per 4-GPU GB200 slice = $10.50/GPU-h "
                            "(kaelresearch.com 'GPU economics 2026'), times the B200 neocloud median over CoreWeave's "
                            "B200 list (6.89/8.60), since no neocloud snapshot lists GB200 per GPU; "
                            "Spheron 2026-03: $9.08 per 2-GPU superchip"),
    ),
    "GB300-NVL72": dict(
        tflops_bf16=2500, tflops_fp8=5000, tflops_fp4=15_000, memory_gb=288, memory_tbps=8.0, tdp_w=1400,
        source=("NVIDIA GB300 NVL72 spec per rack: FP4 1,080 PFLOPS dense (15 per GPU), FP8 360 and BF16 180 PFLOPS "
                "dense, 20 TB HBM3e at 576 TB/s; 288 GB HBM3e per GPU (279 GB exposed); 1,400 W "
                "(verda.com 'GB300 NVL72 architecture', glennklockwood.com/garden/processors/B300)"),
        as_of="2026-12", generation="blackwell-ultra",
        interconnect="NVLink 5 + NVLink Switch, 72-GPU domain (1.8 TB/s bidirectional per GPU)",
        link_gbps=900, scale_up_domain=72, scale_out_gbps=100, allreduce_latency_us=5.9,
        network_source=("NVIDIA GB300 NVL72: 130 TB/s NVLink, 72 ConnectX-8 SuperNICs at 800 Gb/s (one per GPU); "
                        "all-reduce latency assumed equal to B200's"),
        price_usd=60_400, price_as_of="2026-06",
        price_source=f"rack price over 72 GPUs, midpoint of $3.7-5.0M: {_ORNN_2026}",
        cloud_usd_per_gpu_hour=9.77, cloud_price_as_of="2026-10",
        cloud_price_source=("assumed: no per-GPU on-demand list price found; GB200's $8.41 times RunPod's B300/B200 "
                            "ratio (7.89/6.79, 2026-10)"),
    ),
    "MI300X": dict(
        tflops_bf16=1307, tflops_fp8=2615, memory_gb=192, memory_tbps=5.3, tdp_w=750,
        source="AMD Instinct MI300X datasheet", as_of="2026-12", generation="cdna3",
        interconnect="Infinity Fabric (7 links, 896 GB/s bidirectional)", link_gbps=448, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=12,
        network_source=("AMD MI300X platform: 8 OAMs fully connected by 7 Infinity Fabric links; scale-out assumed one "
                        "400 Gb/s NIC per GPU, the usual MI300X server build (e.g. MLPerf v4.1 AMD systems use ConnectX-7)"),
        price_usd=25_700, price_as_of="2025-02",
        price_source="8-GPU listing, Feb 2025 (shared/data/reference_hardware.md); no later street price found, kept",
        cloud_usd_per_gpu_hour=1.99, cloud_price_as_of="2026-05", cloud_price_source=_CLIFF_2026,
    ),
    "MI325X": dict(
        tflops_bf16=1307, tflops_fp8=2615, memory_gb=256, memory_tbps=6.0, tdp_w=1000,
        source=("AMD Instinct MI325X spec: CDNA3 compute as MI300X (1,307.4 BF16 / 2,614.9 FP8 TFLOPS dense), "
                "256 GB HBM3E at 6 TB/s, 1,000 W (amd.com; awesomeagents.ai/hardware/amd-mi325x)"),
        as_of="2026-12", generation="cdna3",
        interconnect="Infinity Fabric (7 links, 896 GB/s bidirectional)", link_gbps=448, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=12,
        network_source=("AMD MI325X platform: drop-in for MI300X, 8 OAMs on 7 Infinity Fabric links; scale-out and "
                        "all-reduce latency assumed as MI300X"),
        price_usd=25_700, price_as_of="2026-12",
        price_source=("assumed: no street price public; set to MI300X's reported $25.7k (same compute silicon, "
                      "AMD's drop-in upgrade)"),
        cloud_usd_per_gpu_hour=1.95, cloud_price_as_of="2026-05",
        cloud_price_source=f"TensorWave on-demand, per {_CLIFF_2026}; awesomeagents.ai: $2.00-2.25",
    ),
    "MI355X": dict(
        tflops_bf16=2500, tflops_fp8=5000, tflops_fp4=10_000, memory_gb=288, memory_tbps=8.0, tdp_w=1400,
        source=("The Register 2025-06-12 'AMD MI355X': 10 PFLOPS FP4 (MXFP4) dense, 288 GB HBM3E at 8 TB/s, 1.4 kW; "
                "AMD at ISSCC 2026 (world-today-news.com): 5 PFLOPS FP8; BF16 = half of FP8 on CDNA4 matrix cores "
                "(AMD's 2.5 PFLOPS figure); Tom's Hardware: 1,400 W TBP"),
        as_of="2026-12", generation="cdna4",
        interconnect="Infinity Fabric 4 (7 links, 1,075 GB/s bidirectional)", link_gbps=537.6, scale_up_domain=8,
        scale_out_gbps=50, allreduce_latency_us=12,
        network_source=("AMD MI355X: 8-GPU platforms (Tom's Hardware: scale-up world size 8); 7 x 153.6 GB/s "
                        "Infinity Fabric links from AMD's spec sheet (not re-checked here); 400 Gb/s Pollara NIC per GPU "
                        "(jaredwatkins.com MI350 notes); all-reduce latency assumed as MI300X"),
        price_usd=25_000, price_as_of="2026-12",
        price_source=("assumed: no street price found; ~$25k is the press-reported MI350-series price (2025), "
                      "close to MI300X's; not verified"),
        cloud_usd_per_gpu_hour=4.59, cloud_price_as_of="2026-12",
        cloud_price_source=("assumed: no public on-demand list price found; B200's $6.89 times 0.666, the discount at "
                            f"which AMD parts rented against their NVIDIA peers in 2026-05 (MI300X $1.99 vs H100 $2.99): "
                            f"{_CLIFF_2026}"),
    ),
    "TPU-v5e": dict(
        tflops_bf16=197, tflops_fp8=None, tops_int8=393, memory_gb=16, memory_tbps=0.819, tdp_w=140,
        source=("Google Cloud TPU v5e docs: 197 TFLOPs BF16, 393 TOPs INT8, 16 GB HBM2 at 819 GB/s; TDP not published, "
                "~140 W from Epoch AI's chip dataset (shared/data/reference_hardware.md)"),
        as_of="2026-12", generation="tpu",
        interconnect="ICI 2D torus (400 GB/s bidirectional per chip), 256-chip pod",
        link_gbps=200, scale_up_domain=256, scale_out_gbps=3.125, allreduce_latency_us=10,
        network_source=(f"{_GCP_TPU_NET}: v5e 400 GBps ICI, 256 chips, 2 x 100 Gbps NIC per 8-chip host "
                        "(25 Gb/s per chip); all-reduce latency assumed (no measurement)"),
        price_usd=0, price_as_of="2026-12", price_source="not sold: TPUs are rented on Google Cloud only",
        cloud_usd_per_gpu_hour=1.20, cloud_price_as_of="2025-03",
        cloud_price_source=("Google Cloud TPU pricing, v5e on-demand $1.20 per chip-hour (US regions; $1.20-1.56 by "
                            "region, shared/data/reference_hardware.md)"),
    ),
    "TPU-v6e": dict(
        tflops_bf16=918, tflops_fp8=918, tops_int8=1836, memory_gb=32, memory_tbps=1.638, tdp_w=390,
        source=("Google Cloud TPU v6e (Trillium) docs: 918 TFLOPs BF16 (FP8 runs at the BF16 rate, TPU7x docs table), "
                "1,836 TOPs INT8, 32 GB HBM at 1,638 GBps. TDP assumed ~390 W: not published; v5e's ~140 W times "
                "Google's 4.7x compute over 1.67x energy efficiency"),
        as_of="2026-12", generation="tpu",
        interconnect="ICI 2D torus (800 GB/s bidirectional per chip), 256-chip pod",
        link_gbps=400, scale_up_domain=256, scale_out_gbps=None, allreduce_latency_us=10,
        network_source=(f"{_GCP_TPU_NET}: v6e 800 GBps ICI, 4 ports, 256 chips; data-centre network per chip not "
                        "found, left unset; all-reduce latency assumed"),
        price_usd=0, price_as_of="2026-12", price_source="not sold: TPUs are rented on Google Cloud only",
        cloud_usd_per_gpu_hour=2.70, cloud_price_as_of="2025-01",
        cloud_price_source=("Google Cloud TPU pricing page, v6e on-demand $2.70 per chip-hour (US) at GA; "
                            "not re-checked for late 2026"),
    ),
    "TPU-v7": dict(
        tflops_bf16=2307, tflops_fp8=4614, memory_gb=192, memory_tbps=7.37, tdp_w=980,
        source=("Google Cloud TPU7x (Ironwood) docs: 2,307 TFLOPs BF16, 4,614 FP8, 192 GiB HBM (given as GB here); "
                "7.37 TB/s HBM (Google Ironwood launch blog, 2025-04). TDP assumed ~980 W: not published; "
                "v6e's ~390 W times 5x FP8 compute over Google's 2x performance per watt"),
        as_of="2026-12", generation="tpu",
        interconnect="ICI 3D torus with optical circuit switches (1.2 TB/s bidirectional per chip), 9,216-chip pod",
        link_gbps=600, scale_up_domain=9216, scale_out_gbps=None, allreduce_latency_us=10,
        network_source=(f"{_GCP_TPU_NET}: TPU7x pod of 9,216 chips; ICI 1.2 TBps bidirectional (Google Ironwood blog); "
                        "data-centre network per chip not found, left unset; all-reduce latency assumed"),
        price_usd=0, price_as_of="2026-12", price_source="not sold: TPUs are rented on Google Cloud only",
        cloud_usd_per_gpu_hour=6.89, cloud_price_as_of="2026-12",
        cloud_price_source=("assumed: no public on-demand price per chip found (capacity sold by reservation); set to "
                            "B200's $6.89, the accelerator of its class (192 GB, 7-8 TB/s, 4.5 PFLOPS FP8)"),
    ),
    "L40S": dict(
        tflops_bf16=362, tflops_fp8=733, memory_gb=48, memory_visible_gib=46068 / 1024, memory_tbps=0.864,
        tdp_w=350,
        source="NVIDIA L40S datasheet (48 GB GDDR6, 864 GB/s, 350 W)", as_of="2026-12", generation="ada",
        interconnect="PCIe Gen4 x16 (no NVLink)", link_gbps=32, scale_up_domain=8, scale_out_gbps=None,
        allreduce_latency_us=25,
        network_source=("PCIe Gen4 x16 = 32 GB/s per direction, 8 per server (typical OVX L40S build); scale-out "
                        "varies by server build, left unset"),
        price_usd=12_000, price_as_of="2025-03",
        price_source="shared/data/reference_hardware.md: ~$12k, unverified; no later street price found, kept",
        cloud_usd_per_gpu_hour=1.09, cloud_price_as_of="2026-09",
        cloud_price_source=(f"median of RunPod Community 0.79, RunPod Secure 1.09, Nebius 1.55: {_SILY_2026}; "
                            "modal.com (2025-08): AWS g6e $1.86, CoreWeave $2.25"),
    ),
}


#: Serving efficiencies per GPU generation, used by the operator iteration model
#: (``simulator.serving.operators``): achieved share of peak for GEMMs, of HBM bandwidth for
#: weight and KV reads, of peak for prefill attention; the fixed CPU/launch time of one
#: iteration and of one layer in it, and the per-request front-end (HTTP/API server) latency added to TTFT.
#: Hopper's values are fitted by ``benchmarks/fit_serving.py`` to 13 vLLM v0.15.1 runs on H100
#: (shared/data/vllm_h100_trainval). Every generation but Blackwell and Ampere is ASSUMED to reach Hopper's
#: efficiencies: no calibration data here for ada (L40S), cdna3 (MI300X, MI325X),
#: cdna4 (MI355X) or tpu (v5e, v6e, TPU7x; TPUs run XLA, not vLLM's CUDA kernels, so this is the
#: weakest of the assumptions). Blackwell ('blackwell': B200, GB200 NVL72) is fitted on the B200
#: points of shared/data/inferencex_trainval/ (benchmarks/fit_inferencex.py: GEMM and memory
#: efficiency, the two overheads, B200's all-reduce latency and the achieved share of link bandwidth,
#: which at 0.18 also carries what is lost as TP grows; attention efficiency and the front end kept
#: from Hopper, whose link_efficiency is 1: its fit had no such term); 'blackwell-ultra' (B300, GB300 NVL72) takes Blackwell's (assumed: same
#: software, no measurements here). Hopper's widened_expert_efficiency (gpt-oss's MXFP4 experts
#: dequantized to multiply in 16 bits) is fitted on the H100 gpt-oss points of the same set.
#: Ampere (A100) is fitted by benchmarks/fit_ampere.py on DistServe's published vLLM profile of
#: OPT-13B/66B on A100-80GB (TP 1-4) and scored on Splitwise's DGX-A100 measurements held out
#: (Llama-2-70B TP 2/4/8, BLOOM-176B TP8: median |error| 8.7%, against 29% with Hopper's values):
#: GEMM and memory efficiency, the step overhead and, with A100's allreduce_latency_us, the cost
#: of tensor parallelism (the per-layer overhead went to its floor: at TP > 1 the all-reduces carry
#: it; memory efficiency sits at its ceiling, 0.95). The data are of late-2023 software (vLLM
#: 0.2-era), whose per-step costs the overheads keep; a current vLLM on A100 is likely faster.
#: The names are kept distinct so that a fit for one does not silently apply to another.
HOPPER_EFFICIENCY: dict[str, float] = dict(
    gemm_efficiency=0.459, memory_efficiency=0.742, attention_efficiency=0.800,
    overhead_s=0.000516, frontend_s=0.0195, layer_overhead_s=4.76e-6, widened_expert_efficiency=0.122,
)
AMPERE_EFFICIENCY: dict[str, float] = dict(
    gemm_efficiency=0.541, memory_efficiency=0.95, attention_efficiency=0.800,
    overhead_s=0.0099, frontend_s=0.0195, layer_overhead_s=1e-7,
)
BLACKWELL_EFFICIENCY: dict[str, float] = dict(
    gemm_efficiency=0.375, memory_efficiency=0.756, attention_efficiency=0.800,
    overhead_s=4.9e-5, frontend_s=0.0195, layer_overhead_s=5.22e-5, link_efficiency=0.184,
)
GENERATION_EFFICIENCY: dict[str, dict[str, float]] = {
    "hopper": HOPPER_EFFICIENCY,  # fitted (H100, vLLM v0.15.1)
    "ampere": AMPERE_EFFICIENCY,  # fitted (A100, DistServe's vLLM profile; Splitwise's held out)
    "ada": HOPPER_EFFICIENCY,  # assumed: Hopper's
    "blackwell": BLACKWELL_EFFICIENCY,  # fitted (B200, vLLM 0.22-0.29, InferenceX points)
    "blackwell-ultra": BLACKWELL_EFFICIENCY,  # assumed: Blackwell's (no B300/GB300 measurements here)
    "cdna3": HOPPER_EFFICIENCY,  # assumed: Hopper's
    "cdna4": HOPPER_EFFICIENCY,  # assumed: Hopper's
    "tpu": HOPPER_EFFICIENCY,  # assumed: Hopper's (different software stack: XLA)
}
#: Generations whose efficiencies were fitted to measurements (the rest are assumed).
CALIBRATED_GENERATIONS = ("hopper", "blackwell", "ampere")


def canonical_gpu_name(name: str, known: dict[str, object] | None = None) -> str | None:
    """The catalog's spelling of ``name`` (matched case-insensitively), or None."""
    table = BUILTIN_GPUS if known is None else known
    folded = name.strip().casefold()
    for canonical in table:
        if canonical.casefold() == folded:
            return canonical
    return None
