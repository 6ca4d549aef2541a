"""The accelerator catalog: every entry sourced and dated, the contract's names, spot figures
against the values their cited sources give, and room for per-generation efficiencies."""

from __future__ import annotations

import re
import statistics

import pytest

import simulator
from simulator.scenario.catalog import (
    BUILTIN_GPUS,
    CALIBRATED_GENERATIONS,
    CATALOG_AS_OF,
    GENERATION_EFFICIENCY,
    HOPPER_EFFICIENCY,
    GpuSpec,
    canonical_gpu_name,
)
from simulator.serving.config import resolve_gpu
from tests.helpers import base_scenario

CONTRACT_NAMES = ("A100-80GB", "H100", "H200", "B200", "MI300X", "L40S")  # shared/DESIGN.md
MONTH = re.compile(r"^(20\d\d)-(0[1-9]|1[0-2])$")
SPECS = {name: GpuSpec(**fields) for name, fields in BUILTIN_GPUS.items()}


def test_the_catalog_holds_the_accelerators_of_late_2026():
    assert set(BUILTIN_GPUS) == {
        "A100-80GB", "H100", "H200", "B200", "B300", "GB200-NVL72", "GB300-NVL72",
        "MI300X", "MI325X", "MI355X", "TPU-v5e", "TPU-v6e", "TPU-v7", "L40S",
    }


@pytest.mark.parametrize("name", sorted(BUILTIN_GPUS))
def test_every_figure_group_names_its_source_and_month(name):
    spec = SPECS[name]
    for text in (spec.source, spec.network_source, spec.price_source, spec.cloud_price_source):
        assert len(text.strip()) > 10, f"{name}: a figure group without a source"
    for month in (spec.as_of, spec.price_as_of, spec.cloud_price_as_of):
        assert MONTH.match(month), f"{name}: {month!r} is not YYYY-MM"
        assert month <= CATALOG_AS_OF, f"{name}: quoted after the catalog's date"


@pytest.mark.parametrize("name", CONTRACT_NAMES)
def test_the_contract_names_resolve_without_regard_to_case(name):
    for spelling in (name, name.lower(), name.upper(), f"  {name.swapcase()} "):
        assert canonical_gpu_name(spelling) == name
    canonical, spec = resolve_gpu(name.lower())
    assert canonical == name and spec == SPECS[name]


def test_a_pool_without_a_price_takes_the_catalogs_refreshed_prices():
    data = base_scenario()
    data["fleet"]["pools"][0]["acquisition"] = {"type": "owned"}
    data["fleet"]["pools"].append({"name": "r", "gpu": "b200", "acquisition": {"type": "on_demand"}, "count": 8})
    data["models"][0]["pools"] = ["a"]
    pools = simulator.load_scenario(data).fleet.pools
    assert pools[0].acquisition.price_usd == 25_000  # H100 street price, Q1 2026
    assert pools[1].gpu == "B200" and pools[1].acquisition.usd_per_gpu_hour == 6.89  # 2026-09 median


# Spot figures, each against the value its cited source gives (per GPU; rack figures divided
# by the GPUs in the rack, sparse figures halved).
SPOT = [
    ("B200", "memory_gb", 192), ("B200", "memory_tbps", 8.0), ("B200", "tflops_bf16", 2250),
    ("B200", "tflops_fp8", 4500), ("B200", "tflops_fp4", 9000), ("B200", "tdp_w", 1000),
    ("H100", "tflops_bf16", 989), ("H100", "tflops_fp8", 1979), ("H100", "memory_tbps", 3.35),
    ("H100", "link_gbps", 900 / 2), ("H200", "memory_gb", 141), ("H200", "memory_tbps", 4.8),
    ("B300", "tflops_fp4", 108_000 / 8), ("B300", "tflops_fp8", 72_000 / 8 / 2), ("B300", "memory_gb", 288),
    ("GB200-NVL72", "tflops_fp4", 1_440_000 / 72 / 2), ("GB200-NVL72", "tflops_bf16", 360_000 / 72 / 2),
    ("GB200-NVL72", "memory_gb", round(13_400 / 72)), ("GB200-NVL72", "memory_tbps", 576 / 72),
    ("GB200-NVL72", "scale_up_domain", 72), ("GB200-NVL72", "link_gbps", 1800 / 2),
    ("GB300-NVL72", "tflops_fp4", 1_080_000 / 72), ("GB300-NVL72", "tflops_fp8", 360_000 / 72),
    ("GB300-NVL72", "scale_up_domain", 72), ("GB300-NVL72", "scale_out_gbps", 800 / 8), ("GB300-NVL72", "tdp_w", 1400),
    ("MI300X", "tflops_bf16", 1307), ("MI300X", "memory_gb", 192), ("MI300X", "scale_up_domain", 8),
    ("MI325X", "memory_gb", 256), ("MI325X", "memory_tbps", 6.0), ("MI325X", "tdp_w", 1000),
    ("MI355X", "tflops_fp4", 10_000), ("MI355X", "tflops_fp8", 5000), ("MI355X", "memory_gb", 288),
    ("MI355X", "memory_tbps", 8.0), ("MI355X", "tdp_w", 1400),
    ("TPU-v5e", "tflops_bf16", 197), ("TPU-v5e", "tops_int8", 393), ("TPU-v5e", "memory_gb", 16),
    ("TPU-v5e", "memory_tbps", 0.819), ("TPU-v5e", "link_gbps", 400 / 2), ("TPU-v5e", "scale_up_domain", 256),
    ("TPU-v6e", "tflops_bf16", 918), ("TPU-v6e", "tops_int8", 1836), ("TPU-v6e", "memory_gb", 32),
    ("TPU-v6e", "memory_tbps", 1.638), ("TPU-v6e", "link_gbps", 800 / 2), ("TPU-v6e", "scale_up_domain", 256),
    ("TPU-v7", "tflops_bf16", 2307), ("TPU-v7", "tflops_fp8", 4614), ("TPU-v7", "memory_gb", 192),
    ("TPU-v7", "memory_tbps", 7.37), ("TPU-v7", "link_gbps", 1200 / 2), ("TPU-v7", "scale_up_domain", 9216),
    ("L40S", "memory_gb", 48), ("L40S", "memory_tbps", 0.864), ("A100-80GB", "tflops_bf16", 312),
    # Prices, against the quotes cited in the entries. Rental: medians of the 2026-09-25 snapshot
    # of RunPod Community/Secure, Lambda and Nebius list prices (silybench-data, derived/cost.json).
    ("H100", "cloud_usd_per_gpu_hour", statistics.median([2.69, 3.49, 3.85, 4.29])),
    ("H200", "cloud_usd_per_gpu_hour", statistics.median([3.59, 4.50, 4.59])),
    ("B200", "cloud_usd_per_gpu_hour", statistics.median([5.98, 6.79, 6.99, 7.15])),
    ("A100-80GB", "cloud_usd_per_gpu_hour", statistics.median([1.39, 1.59, 2.79])),
    ("L40S", "cloud_usd_per_gpu_hour", statistics.median([0.79, 1.09, 1.55])),
    ("B300", "cloud_usd_per_gpu_hour", 7.89),  # RunPod, 2026-10-07
    ("GB200-NVL72", "cloud_usd_per_gpu_hour", 42.00 / 4 * 6.89 / (68.80 / 8)),  # CoreWeave list, rescaled
    ("GB300-NVL72", "cloud_usd_per_gpu_hour", 8.41 * 7.89 / 6.79),
    ("MI355X", "cloud_usd_per_gpu_hour", 6.89 * 1.99 / 2.99),
    ("MI300X", "cloud_usd_per_gpu_hour", 1.99), ("MI325X", "cloud_usd_per_gpu_hour", 1.95),
    ("TPU-v5e", "cloud_usd_per_gpu_hour", 1.20), ("TPU-v6e", "cloud_usd_per_gpu_hour", 2.70),
    # Purchase: street prices per GPU, NVL72 racks over 72 GPUs.
    ("H100", "price_usd", 25_000), ("H200", "price_usd", (28_000 + 31_000) / 2),
    ("B200", "price_usd", (40_000 + 43_000) / 2), ("B300", "price_usd", round(41_500 * 53 / 50, -3)),
    ("GB200-NVL72", "price_usd", round((3.0e6 + 3.9e6) / 2 / 72, -2)),
    ("GB300-NVL72", "price_usd", round((3.7e6 + 5.0e6) / 2 / 72, -2)),
]


@pytest.mark.parametrize(("name", "field", "cited"), SPOT)
def test_spot_figures_match_their_cited_sources(name, field, cited):
    assert getattr(SPECS[name], field) == pytest.approx(cited, rel=0.005)


@pytest.mark.parametrize(("name", "group"), [
    ("B300", "price_source"), ("GB200-NVL72", "cloud_price_source"), ("GB300-NVL72", "cloud_price_source"),
    ("MI325X", "price_source"),
    ("MI355X", "price_source"), ("MI355X", "cloud_price_source"), ("TPU-v7", "cloud_price_source"),
    ("TPU-v6e", "source"), ("TPU-v7", "source"),  # TDPs Google does not publish
])
def test_figures_that_are_not_public_say_they_are_assumed_and_why(name, group):
    text = getattr(SPECS[name], group)
    assert "assumed" in text and len(text) > 60


def test_fp4_only_where_the_hardware_has_it():
    with_fp4 = {name for name, spec in SPECS.items() if spec.tflops_fp4 is not None}
    assert with_fp4 == {"B200", "B300", "GB200-NVL72", "GB300-NVL72", "MI355X"}
    for spec in SPECS.values():  # dense peaks grow as the dtype narrows
        rates = [r for r in (spec.tflops_bf16, spec.tflops_fp8, spec.tflops_fp4) if r is not None]
        assert rates == sorted(rates)


def test_tpus_are_not_for_sale_and_say_so():
    for name in ("TPU-v5e", "TPU-v6e", "TPU-v7"):
        assert SPECS[name].price_usd == 0 and "not sold" in SPECS[name].price_source
        assert SPECS[name].generation == "tpu"


def test_every_generation_has_efficiencies_and_hopper_blackwell_and_ampere_are_fitted():
    generations = {spec.generation for spec in SPECS.values()}
    assert {"hopper", "blackwell", "blackwell-ultra", "cdna3", "cdna4", "tpu"} <= generations
    assert generations <= set(GENERATION_EFFICIENCY)
    assert CALIBRATED_GENERATIONS == ("hopper", "blackwell", "ampere")
    assert GENERATION_EFFICIENCY["hopper"] is HOPPER_EFFICIENCY
    assert HOPPER_EFFICIENCY["gemm_efficiency"] == 0.459  # the fit on vllm_h100_trainval, unchanged
    # Blackwell has its own fit (inferencex_trainval's B200 points); Blackwell Ultra borrows it;
    # Ampere has its own (benchmarks/fit_ampere.py), the rest borrow Hopper's.
    assert GENERATION_EFFICIENCY["blackwell"] is not HOPPER_EFFICIENCY
    assert GENERATION_EFFICIENCY["blackwell-ultra"] is GENERATION_EFFICIENCY["blackwell"]
    assert GENERATION_EFFICIENCY["ampere"] is not HOPPER_EFFICIENCY
    for generation in ("ada", "cdna3", "cdna4", "tpu"):
        assert GENERATION_EFFICIENCY[generation] is HOPPER_EFFICIENCY
