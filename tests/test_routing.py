"""Routing over replicas with prefix caching: least loaded against prefix affinity.

A replica reuses a prefix only if it computed it before, so each replica's first request of a
prefix misses. With P prefixes on R replicas, prefix affinity keeps each prefix on its home
replica (P misses, as on one replica); a least-loaded router sends a prefix's requests wherever
there is room (up to P × R misses). The counts below are made by hand from the routing; the
session trace ``tests/data/doc_sessions.csv`` (made by :func:`doc_sessions`) is the workload
where that costs capacity: questions on 2,048-token documents, four per document.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.serving import LinearIterationModel
from simulator.serving.config import operator_model
from simulator.serving.prefix import block_keys
from simulator.serving.routing import affinity_ranking
from simulator.serving.vllm import simulate_vllm
from simulator.serving.vllm_engine import serve_vllm
from tests.helpers import base_scenario

TRACE = Path(__file__).parent / "data" / "doc_sessions.csv"
DOC = 2048
MODEL = LinearIterationModel(0.01, 1e-4)


def doc_sessions(sessions: int = 800, questions: int = 4, seed: int = 1) -> str:
    """The session trace: document s (``prefix_id`` s, 2,048 shared tokens) gets ``questions``
    questions (32–199 more prompt tokens, 50–249 output tokens), the k-th about 5k sessions after
    the document's first, so several documents are open at once; unit-rate Poisson timestamps."""
    rng = np.random.default_rng(seed)
    session = np.repeat(np.arange(sessions), questions)
    turn = np.tile(np.arange(questions), sessions)
    order = np.argsort(session + 5.0 * turn + rng.uniform(0, 1, sessions * questions), kind="stable")
    n = sessions * questions
    prompt = DOC + rng.integers(32, 200, n)
    output = rng.integers(50, 250, n)
    seconds = np.cumsum(np.random.default_rng(0).exponential(1.0, n))
    stamps = pd.Timestamp("2024-01-01") + pd.to_timedelta(seconds, unit="s")
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens,prefix_id,prefix_tokens"]
    lines += [f"{stamp},{p},{o},{s},{DOC}" for stamp, p, o, s in zip(stamps, prompt, output, session[order], strict=True)]
    return "\n".join(lines) + "\n"


def test_the_shipped_session_trace_is_the_generators():
    assert TRACE.read_text() == doc_sessions()


def _burst(policy: str, **options):
    """40 requests at time 0 on 4 replicas; request k shares a 32-token prefix (2 blocks) with
    every request of prefix k mod 5; 48-token prompts, so a hit is exactly 32 tokens."""
    k = np.arange(40)
    return simulate_vllm(np.zeros(40), np.full(40, 48), np.full(40, 4), MODEL, max_num_seqs=64,
                         max_num_batched_tokens=4096, kv_capacity_tokens=100_000, prefix_id=k % 5,
                         prefix_tokens=np.full(40, 32), replicas=4, policy=policy, **options)


@pytest.mark.parametrize("policy", ["least_loaded", "least_outstanding", "round_robin"])
def test_a_load_spreading_router_misses_each_prefix_once_per_replica(policy):
    r = _burst(policy)
    # Nothing has left at time 0: each arrival finds replica k mod 4 the least loaded.
    assert r.replica.tolist() == [k % 4 for k in range(40)]
    # (k mod 5, k mod 4) runs through all 20 pairs twice (5 and 4 are coprime): 20 first
    # requests miss, the 20 others take their prefix's 32 tokens from the cache.
    assert r.cached_tokens.tolist() == [0] * 20 + [32] * 20
    assert r.prefix_cache_hit_rate == pytest.approx(20 * 32 / (40 * 48))


def test_pure_prefix_affinity_misses_each_prefix_once():
    r = _burst("prefix_affinity", affinity_load_factor=math.inf)
    homes = {p: set(r.replica[np.arange(40) % 5 == p].tolist()) for p in range(5)}
    assert all(len(replicas) == 1 for replicas in homes.values())  # each prefix on one replica
    assert r.cached_tokens.tolist() == [0] * 5 + [32] * 35  # 5 misses, one per prefix
    assert r.prefix_cache_hit_rate == pytest.approx(35 * 32 / (40 * 48))


def test_bounded_loads_follow_the_rule_by_hand():
    # The rule, replayed by hand: a request goes to the least loaded of the replicas its prefix
    # was sent to (the first d of the prefix's ranking) if it holds fewer than
    # ceil(1.25 × (requests outstanding + 1) / 4), else to the next replica in the ranking under
    # that bound, which joins them. At time 0 nothing leaves.
    ranking = affinity_ranking(2 * np.arange(5), 4).tolist()  # a prefix id p's key is 2p
    held, depth, expected = [0, 0, 0, 0], [0] * 5, []
    for k in range(40):
        p, cap = k % 5, -(-5 * (sum(held) + 1) // 16)
        holders = ranking[p][:depth[p]]
        replica = min(holders, key=held.__getitem__) if holders else None
        if replica is None or held[replica] >= cap:
            j = next(j for j in range(depth[p], 4) if held[ranking[p][j]] < cap)
            replica, depth[p] = ranking[p][j], j + 1
        held[replica] += 1
        expected.append(replica)
    r = _burst("prefix_affinity")
    assert r.replica.tolist() == expected
    assert max(held) <= math.ceil(1.25 * 40 / 4)
    # Each (prefix, replica) pair's first request misses; every other request hits its 32 tokens.
    pairs = len({(k % 5, expected[k]) for k in range(40)})
    assert 5 < pairs < 20
    assert r.cached_tokens.sum() == 32 * (40 - pairs)


def test_a_prefix_goes_to_the_least_loaded_replica_holding_it():
    # Two replicas, one prefix, iterations of 1 s. At t = 0: A and B go home (cap 1, then 2);
    # C finds home at the cap (2 held, ceil(1.25 × 3 / 2) = 2) and goes to the other replica,
    # which now holds the prefix too. A and C leave at t = 1; at t = 1.5 D finds home with B
    # (1 held) and the other replica empty: both hold the prefix, so D goes to the empty one.
    home, other = affinity_ranking(np.array([0]), 2)[0].tolist()
    r = simulate_vllm([0, 0, 0, 1.5], [48] * 4, [1, 10, 1, 1], LinearIterationModel(1.0, 0.0), max_num_seqs=8,
                      max_num_batched_tokens=4096, prefix_id=[0] * 4, prefix_tokens=[32] * 4, replicas=2,
                      policy="prefix_affinity")
    assert r.replica.tolist() == [home, home, other, other]
    assert r.finish_s.tolist() == [1.0, 10.0, 1.0, 2.5]
    # A and C are their replica's first of the prefix; B (admitted after A) and D hit 2 blocks.
    assert r.cached_tokens.tolist() == [0, 32, 0, 32]


def test_without_prefix_labels_prefix_affinity_is_the_least_loaded_router():
    rng = np.random.default_rng(3)
    n = 400
    arrival = np.cumsum(rng.exponential(0.02, n))
    prompt, output = rng.integers(1, 300, n), rng.integers(1, 60, n)
    runs = [simulate_vllm(arrival, prompt, output, MODEL, max_num_seqs=16, max_num_batched_tokens=512,
                          replicas=3, policy=policy) for policy in ("prefix_affinity", "least_loaded")]
    for name in ("admit_s", "first_token_s", "finish_s", "replica", "cached_tokens"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))


@pytest.mark.parametrize("seed", range(3))
def test_the_routed_kernel_equals_its_python_function(seed):
    rng = np.random.default_rng(seed)
    n, replicas = 40, 1 + seed
    arrival = np.sort(rng.exponential(0.3, n).cumsum())
    prompt, output = rng.integers(1, 60, n), rng.integers(1, 30, n)
    start, count, keys, n_keys = block_keys(prompt, rng.integers(-1, 3, n), rng.integers(0, 40, n))
    route_key = rng.integers(-1, 3, n)
    ranking = affinity_ranking(np.arange(3), replicas)
    outs = []
    for fn in (serve_vllm, serve_vllm.py_func):
        arrays = [np.full(n, np.nan) for _ in range(3)] + [np.zeros(n, dtype=np.int64) for _ in range(3)]
        iterations = fn(arrival, prompt, output, start, count, keys, n_keys, MODEL.params, 6, 64, 40, 16,
                        True, seed != 1, replicas, 2, route_key, ranking, 1.25, *arrays)
        outs.append((iterations, arrays))
    assert outs[0][0] == outs[1][0]
    for a, b in zip(outs[0][1], outs[1][1], strict=True):
        np.testing.assert_array_equal(a, b)


def _sessions(policy: str, replicas: int, **options):
    table = pd.read_csv(TRACE)
    n = len(table)
    arrival = np.cumsum(np.random.default_rng(5).exponential(1 / (6.0 * replicas), n))
    r = simulate_vllm(arrival, table["ContextTokens"], table["GeneratedTokens"], operator_model("llama-2-7b", "H100"),
                      max_num_seqs=128, kv_capacity_tokens=10_000_000, prefix_id=table["prefix_id"],
                      prefix_tokens=table["prefix_tokens"], replicas=replicas, policy=policy, **options)
    return table, r


@pytest.mark.parametrize(("policy", "options"), [
    ("least_loaded", {}), ("prefix_affinity", {}), ("prefix_affinity", {"affinity_load_factor": math.inf})])
def test_session_hits_are_every_request_but_each_replicas_first_of_a_document(policy, options):
    # 3,200 questions on 800 documents over 4 replicas at 6 req/s each, a KV cache too large to
    # evict: a question hits its document's 2,048 tokens unless it is the first of its document
    # on its replica.
    table, r = _sessions(policy, 4, **options)
    pairs = len(set(zip(table["prefix_id"], r.replica.tolist(), strict=True)))
    assert r.cached_tokens.sum() == DOC * (len(table) - pairs)
    one = _sessions(policy, 1)[1]
    assert one.cached_tokens.sum() == DOC * (3200 - 800)  # alone: one miss per document
    if options:  # pure affinity: each document on one replica, exactly as alone
        assert pairs == 800
    elif policy == "prefix_affinity":  # bounded loads spill some questions to a second choice
        assert 800 < pairs < 1.4 * 800
    else:  # least loaded ignores content: like 4 questions placed at random on 4 replicas,
        # a document touches 4 × (1 − (3/4)^4) = 2.73 replicas on average
        assert pairs == pytest.approx(800 * 4 * (1 - 0.75**4), rel=0.05)


def _capacity(tmp_path, **serving) -> tuple[float, str]:
    data = base_scenario()
    model = data["models"][0]
    model.pop("capacity_rps")
    model.pop("gpus_per_replica")
    model["serving"] = {"model": "llama-2-7b", "max_batch": 128, "probe_requests": 300, "lengths": str(TRACE),
                        "slo": {"ttft_s": 0.5, "tpot_s": 0.05}, **serving}
    shape = simulator.load_scenario(data, base_dir=tmp_path).models[0].replicas["a"]
    return shape.capacity_rps, shape.derived_workload


def test_four_replicas_keep_one_replicas_capacity_only_under_prefix_affinity(tmp_path):
    alone, text_alone = _capacity(tmp_path)
    affine, text_affine = _capacity(tmp_path, router_replicas=4)  # prefix_affinity is the default
    spread, text_spread = _capacity(tmp_path, router_replicas=4, routing="least_loaded")
    hits = {name: float(text.rsplit(" ", 1)[1].rstrip("%")) / 100
            for name, text in (("alone", text_alone), ("affine", text_affine), ("spread", text_spread))}
    # Alone, 3 of 4 questions hit 2,048 of their ~2,164 prompt tokens: about 71%.
    assert hits["alone"] == pytest.approx(0.75 * DOC / 2163.5, abs=0.02)
    assert hits["affine"] == pytest.approx(hits["alone"], abs=0.06)
    assert hits["spread"] < 0.5 * hits["alone"]
    # Per replica, capacity: four replicas under prefix affinity serve within 5% of four alone;
    # least loaded loses the hits and serves well below.
    assert affine == pytest.approx(alone, rel=0.05)
    assert spread < 0.9 * alone
    assert "over 4 replicas, prefix_affinity routing" in text_affine


def test_fleetcast_serving_takes_routing_with_replicas():
    base = ["serving", "--model", "llama-2-7b", "--gpu", "H100", "--max-batch", "128", "--trace", str(TRACE),
            "--rate-scale", "24", "--replicas", "4", "--json"]
    out = {}
    for routing in ("least_loaded", "prefix_affinity"):
        result = CliRunner().invoke(main, [*base, "--batching", "vllm", "--routing", routing])
        assert result.exit_code == 0, result.output
        out[routing] = json.loads(result.stdout)
    older = CliRunner().invoke(main, [*base, "--batching", "vllm", "--router", "least_outstanding"])
    assert json.loads(older.stdout) == out["least_loaded"] | {"config": json.loads(older.stdout)["config"]}
    assert out["prefix_affinity"]["prefix_cache_hit_rate"] > 1.5 * out["least_loaded"]["prefix_cache_hit_rate"]
    refused = CliRunner().invoke(main, [*base, "--routing", "prefix_affinity"])
    assert refused.exit_code == 2 and "--routing prefix_affinity applies to --batching vllm" in refused.stderr
