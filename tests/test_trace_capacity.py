"""A serving block's capacity from a trace as given: its requests, in order, with their prefix columns.

The derivation (``lengths: TRACE.csv``) must serve the trace's requests exactly as ``fleetcast
serving --trace TRACE.csv --batching vllm`` does, prefix labels included, so the capacity it
derives is the rate at which that command meets the SLO; and it must differ with prefix caching
on and off. The trace here is the first 800 requests of ``tests/data/doc_sessions.csv``
(questions on 2,048-token documents, four per document, ``prefix_id`` the document), with its
timestamps replaced by the probe's own arrival draws, so the two serve the same arrivals.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import simulator
from simulator.scenario import dump_scenario
from simulator.serving.capacity import Slo, _cache_key
from simulator.serving.config import operator_model
from simulator.serving.probe import trace_requests
from simulator.serving.vllm import simulate_vllm
from simulator.serving.workload import trace_workload
from tests.helpers import base_scenario

DATA = Path(__file__).parent / "data"
WARMUP, PROBE = 500, 300  # the derivation's warm-up (per replica) and the block's probe_requests
SLO = {"ttft_s": 0.5, "tpot_s": 0.05}
LLM, GPU, MAX_BATCH = "llama-2-7b", "H100", 128


def probe_trace(path: Path, rows: int = WARMUP + PROBE, columns: bool = True) -> Path:
    """The first ``rows`` requests of the session trace, arriving at the probe's unit-rate Poisson
    draws (``default_rng(seed 0)``, Exp(1) gaps): at rate-scale λ, the arrivals of a probe at λ."""
    table = pd.read_csv(DATA / "doc_sessions.csv", nrows=rows)
    seconds = np.cumsum(np.random.default_rng(0).exponential(1.0, rows))
    table["TIMESTAMP"] = [str(t) for t in pd.Timestamp("2024-01-01") + pd.to_timedelta(seconds, unit="s")]
    if not columns:
        table = table.drop(columns=["prefix_id", "prefix_tokens"])
    table.to_csv(path, index=False)
    return path


def scenario(trace: Path, **serving) -> dict:
    data = base_scenario()
    model = data["models"][0]
    model.pop("capacity_rps")
    model.pop("gpus_per_replica")
    model["serving"] = {"model": LLM, "max_batch": MAX_BATCH, "probe_requests": PROBE, "slo": SLO,
                        "lengths": trace.name, **serving}
    return data


def derived(trace: Path, **serving) -> float:
    loaded = simulator.load_scenario(scenario(trace, **serving), base_dir=trace.parent)
    return loaded.models[0].replicas["a"].capacity_rps


def serving_capacity(trace: Path, caching: bool, shared: int = 0, distinct: int = 0) -> float:
    """The highest rate-scale at which the trace, read and labelled as ``fleetcast serving`` reads
    it, served by the engine ``fleetcast serving --batching vllm`` runs, meets the SLO on the
    requests after the warm-up (bisection to 0.1%, from brackets checked here)."""
    model = operator_model(LLM, GPU)

    def meets(rate: float) -> bool:
        w = trace_workload(str(trace), rate_scale=rate, seed=0, shared_prefix_tokens=shared,
                           distinct_prompts=distinct)
        r = simulate_vllm(w.arrival_s, w.prompt_tokens, w.output_tokens, model, max_num_seqs=MAX_BATCH,
                          max_num_batched_tokens=8192, prefix_caching=caching, prefix_id=w.prefix_id,
                          prefix_tokens=w.prefix_tokens, prompt_id=w.prompt_id)
        tpot = r.tpot_s[WARMUP:]
        return (np.percentile(r.ttft_s[WARMUP:], 90) <= SLO["ttft_s"]
                and np.percentile(tpot[np.isfinite(tpot)], 99) <= SLO["tpot_s"])

    low, high = 1.0, 40.0
    assert meets(low) and not meets(high)
    while high - low > 0.001 * low:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if meets(middle) else (low, middle)
    return low


@pytest.mark.parametrize("serving", [
    {"prefix_caching": "enabled"},
    {"prefix_caching": "disabled"},
    {"prefix_caching": "enabled", "shared_prefix_tokens": 256, "distinct_prompts": 40},
], ids=["caching-on", "caching-off", "shared-prefix-and-repeats"])
def test_the_derived_capacity_is_the_rate_fleetcast_serving_meets_the_slo_at(tmp_path, serving):
    trace = probe_trace(tmp_path / "sessions.csv")
    capacity = derived(trace, **serving)
    reference = serving_capacity(trace, serving["prefix_caching"] == "enabled",
                                 serving.get("shared_prefix_tokens", 0), serving.get("distinct_prompts", 0))
    # The derivation's bisection stops within 0.5% below the rate where the SLO breaks; the
    # reference's within 0.1%.
    assert reference / 1.006 <= capacity <= reference * 1.001


def test_prefix_caching_changes_the_capacity_only_with_the_prefix_columns(tmp_path):
    trace = probe_trace(tmp_path / "sessions.csv")
    bare = probe_trace(tmp_path / "bare.csv", columns=False)
    on, off = derived(trace), derived(trace, prefix_caching="disabled")
    # Three of every four questions reuse their document's 2,048 cached tokens: far cheaper prefill.
    assert on > 1.3 * off
    # Without the columns (what the derivation used to read) nothing can hit: on equals off, and
    # equals the labelled trace with caching off (the same schedule).
    assert derived(bare) == derived(bare, prefix_caching="disabled") == off


def test_the_cache_key_follows_the_prefix_columns(tmp_path):
    trace = probe_trace(tmp_path / "sessions.csv")
    other = tmp_path / "other.csv"
    table = pd.read_csv(trace)
    table["prefix_id"] = np.arange(len(table))  # every question on its own document: no sharing
    table.to_csv(other, index=False)
    model = operator_model(LLM, GPU)
    keys = {_cache_key(model, trace_requests(str(path)), Slo(), 128, None, None,
                       PROBE, WARMUP, 0, ()) for path in (trace, other)}
    assert len(keys) == 2
    assert derived(other) < 0.8 * derived(trace)


def test_the_resolved_scenario_shows_the_workload_and_loads_back_equal(tmp_path):
    trace = probe_trace(tmp_path / "sessions.csv")
    data = scenario(trace, router_replicas=2, routing="least_loaded")
    loaded = simulator.load_scenario(data, base_dir=tmp_path)
    text = dump_scenario(loaded)
    entry = yaml.safe_load(text)["models"][0]["replicas"]["a"]
    shares = pd.read_csv(trace)
    share = (shares["prefix_tokens"].sum() / shares["ContextTokens"].sum())
    assert entry["derived_workload"].startswith(
        f"trace {tmp_path / 'sessions.csv'} (800 requests), taken in order from its start, prefix columns used "
        f"({shares['prefix_id'].nunique()} prefixes, {share:.1%} of prompt tokens in a shared prefix); "
        f"Poisson arrivals, 2 × (500 warm-up + 300) requests over 2 replicas, least_loaded routing; "
        "prefix-cache hit rate at capacity ")
    again = simulator.load_scenario(yaml.safe_load(text), base_dir=tmp_path)
    assert again == loaded
    assert dump_scenario(again) == text


@pytest.mark.parametrize(("field", "value", "words"), [
    ("routing", "nearest", "models[0].serving.routing: "),
    ("router_replicas", 0, "models[0].serving.router_replicas: "),
    ("lengths", "missing.csv", "models[0].serving.lengths: "),
])
def test_bad_serving_fields_are_one_line_errors_naming_the_field(tmp_path, field, value, words):
    trace = probe_trace(tmp_path / "sessions.csv")
    with pytest.raises(simulator.ScenarioError) as error:
        simulator.load_scenario(scenario(trace, **{field: value}), base_dir=tmp_path)
    assert str(error.value).startswith(words) and "\n" not in str(error.value)
