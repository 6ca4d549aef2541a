"""The numba serving engine equals two independent references request by request.

``tests/serving_reference.py`` (a plain-Python event loop) and ``benchmarks/serving_simpy.py``
(one SimPy process per request) are written from the continuous-batching specification, not
from ``simulator.serving``. On 20,000-request workloads that build queues, every request's
TTFT and end-to-end latency (and its admit / first-token / finish times, queueing delay and
TPOT) from ``simulate_replica`` / ``simulate_router`` must equal the plain-Python reference's to
1e-9 s, and the engine must equal the SimPy model likewise. Small hand-worked cases pin the
references themselves (and the engine), and a tie-heavy fuzz checks all three on exact binary
times where iteration ends coincide with arrivals.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from serving_simpy import simpy_replica, simpy_router  # noqa: E402

from simulator.serving import LinearIterationModel, simulate_replica, simulate_router  # noqa: E402
from tests.serving_reference import (  # noqa: E402
    OUTPUT_KEYS,
    POLICIES,
    make_workload,
    reference_replica,
    reference_router,
)

TOL_S = 1e-9
N = 20_000
BASE_S, PER_TOKEN_S = 0.01, 2e-5
ENGINE_KEYS = OUTPUT_KEYS  # every per-request output the semantics define


# ----------------------------------------------------------------------------- adapters


def engine_replica(arrival, prompt, output, base_s, per_token_s, max_batch,
                   kv_capacity_tokens=None, prefill_chunk_tokens=None):
    r = simulate_replica(
        np.asarray(arrival, dtype=float), np.asarray(prompt, dtype=np.int64),
        np.asarray(output, dtype=np.int64), LinearIterationModel(base_s=base_s, per_token_s=per_token_s),
        max_batch=max_batch, kv_capacity_tokens=kv_capacity_tokens,
        prefill_chunk_tokens=prefill_chunk_tokens,
    )
    return {k: np.asarray(getattr(r, k), dtype=float) for k in ENGINE_KEYS}


def engine_router(arrival, prompt, output, base_s, per_token_s, max_batch,
                  kv_capacity_tokens=None, prefill_chunk_tokens=None, *, replicas, policy):
    r = simulate_router(
        np.asarray(arrival, dtype=float), np.asarray(prompt, dtype=np.int64),
        np.asarray(output, dtype=np.int64), LinearIterationModel(base_s=base_s, per_token_s=per_token_s),
        replicas=replicas, policy=policy, max_batch=max_batch,
        kv_capacity_tokens=kv_capacity_tokens, prefill_chunk_tokens=prefill_chunk_tokens,
    )
    res = {k: np.asarray(getattr(r, k), dtype=float) for k in ENGINE_KEYS}
    res["replica"] = np.asarray(r.replica)
    return res


REPLICA_IMPLS = {"reference": reference_replica, "simpy": simpy_replica, "engine": engine_replica}
ROUTER_IMPLS = {"reference": reference_router, "simpy": simpy_router, "engine": engine_router}


def differences(got: dict, want: dict, keys=OUTPUT_KEYS) -> list[str]:
    """One line per key whose arrays differ by more than TOL_S (or in where they are NaN)."""
    problems = []
    for key in keys:
        a, b = np.asarray(got[key], dtype=float), np.asarray(want[key], dtype=float)
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} vs {b.shape}")
            continue
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            i = int(np.flatnonzero(nan_a != nan_b)[0])
            problems.append(f"{key}: NaN pattern differs, first at request {i}: {a[i]!r} vs {b[i]!r}")
            continue
        diff = np.abs(np.where(nan_a, 0.0, a - b))
        worst = float(diff.max()) if diff.size else 0.0
        if worst > TOL_S:
            bad = np.flatnonzero(diff > TOL_S)
            i = int(bad[0])
            problems.append(
                f"{key}: max abs diff {worst:.3e} s on {bad.size} of {a.size} requests; "
                f"first at request {i}: {a[i]!r} vs {b[i]!r}"
            )
    if "replica" in want and "replica" in got and not np.array_equal(got["replica"], want["replica"]):
        i = int(np.flatnonzero(np.asarray(got["replica"]) != np.asarray(want["replica"]))[0])
        problems.append(f"replica: differs, first at request {i}: {got['replica'][i]} vs {want['replica'][i]}")
    return problems


def assert_same(got: dict, want: dict, what: str) -> None:
    problems = differences(got, want)
    # The headline numbers, stated explicitly.
    for key in ("ttft_s", "e2e_s"):
        assert np.nanmax(np.abs(got[key] - want[key])) <= TOL_S, f"{what}: {key} differs: {problems}"
    assert not problems, f"{what}:\n  " + "\n  ".join(problems)


# ----------------------------------------------------------------------------- hand-worked

# All hand cases use base_s = 1.0 and per_token_s = 0.25 (exact binary fractions), so every
# time below is exact: dt = 1 + (prefill_tokens + decode_requests) / 4.
HB, HT = 1.0, 0.25
NAN = float("nan")

HAND_REPLICA = {
    # 3 requests at t=0, prompts 4, 8, 4, outputs 2, 1, 3, max_batch 2.
    # t=0: admit r0, r1 (batch full). prefill 4+8=12, decode 0: dt=1+3=4 -> end 4;
    #      r0, r1 first token at 4; r1 (output 1) leaves at 4.
    # t=4: admit r2. prefill 4, decode 1 (r0): dt=1+1.25=2.25 -> 6.25; r0 token 2, leaves;
    #      r2 first token at 6.25.
    # t=6.25: r2 decodes alone: dt=1.25 -> 7.5 (token 2); t=7.5 -> 8.75 (token 3), leaves.
    "batch_limit": (
        dict(arrival=[0, 0, 0], prompt=[4, 8, 4], output=[2, 1, 3], max_batch=2),
        dict(admit_s=[0, 0, 4], first_token_s=[4, 4, 6.25], finish_s=[6.25, 4, 8.75],
             tpot_s=[2.25, NAN, 1.25]),
    ),
    # Arrival exactly at an iteration end is admitted at that boundary; then an idle gap.
    # t=0: r0 (prompt 4, output 2): dt=1+1=2 -> 2, first token at 2.
    # t=2: r1 arrives at 2 and is admitted. prefill 8, decode 1: dt=1+2.25=3.25 -> 5.25;
    #      r0 token 2 leaves, r1 first token (output 1) leaves at 5.25.
    # t=5.25: nothing runs or waits: idle until r2 arrives at 10. prefill 4: dt=2 -> 12.
    "tie_and_idle": (
        dict(arrival=[0, 2, 10], prompt=[4, 8, 4], output=[2, 1, 1], max_batch=4),
        dict(admit_s=[0, 2, 10], first_token_s=[2, 5.25, 12], finish_s=[5.25, 5.25, 12],
             tpot_s=[3.25, NAN, NAN]),
    ),
    # KV capacity 22, reservations prompt+output = 8, 12, 6, 2.
    # t=0: admit r0 (8), r1 (20); r2 would make 26 > 22: stop. r3 (20+2=22) would fit but
    #      there is no skipping. prefill 12: dt=4 -> 4, first tokens of r0, r1.
    # t=4, 5.5, 7: r2 still blocked; decode 2: dt=1.5 -> 5.5, 7, 8.5 (tokens 2, 3, 4):
    #      r0 and r1 leave at 8.5.
    # t=8.5: admit r2 (6), r3 (8). prefill 4+1=5: dt=2.25 -> 10.75; first tokens, r3 leaves.
    # t=10.75: r2 decodes: dt=1.25 -> 12, leaves.
    "kv_head_of_line": (
        dict(arrival=[0, 0, 0, 0], prompt=[4, 8, 4, 1], output=[4, 4, 2, 1], max_batch=4,
             kv_capacity_tokens=22),
        dict(admit_s=[0, 0, 8.5, 8.5], first_token_s=[4, 4, 10.75, 10.75],
             finish_s=[8.5, 8.5, 12, 10.75], tpot_s=[1.5, 1.5, 1.25, NAN]),
    ),
    # Chunked prefill, budget 8, max_batch 2; prompts 10, 5, 3, outputs 3, 2, 1.
    # t=0: admit r0, r1. No decodes, budget 8: r0 gets 8 (2 left), r1 gets 0 but holds its
    #      slot. prefill 8: dt=3 -> 3.
    # t=3: no decodes; r0 gets 2 (done), r1 gets 5 (done). prefill 7: dt=2.75 -> 5.75;
    #      first tokens of r0, r1 at 5.75.
    # t=5.75: decode r0, r1, budget 6 unused. dt=1.5 -> 7.25: r0 token 2, r1 token 2 leaves.
    # t=7.25: admit r2. decode r0 (1), budget 7: r2 gets 3 (done). dt=1+1=2 -> 9.25:
    #      r0 token 3 leaves, r2 first token (output 1) leaves.
    "chunked": (
        dict(arrival=[0, 0, 0], prompt=[10, 5, 3], output=[3, 2, 1], max_batch=2,
             prefill_chunk_tokens=8),
        dict(admit_s=[0, 0, 7.25], first_token_s=[5.75, 5.75, 9.25],
             finish_s=[9.25, 7.25, 9.25], tpot_s=[1.75, 1.5, NAN]),
    ),
    # Chunk budget shared with decodes: budget 4, max_batch 4, prompts 2, 6, outputs 3, 1.
    # t=0: admit r0 (arr 0). budget 4: r0 gets 2 (done). dt=1.5 -> 1.5, r0 first token.
    # t=1.5: admit r1 (arr 1). decode r0 -> budget 3: r1 gets 3 (3 left). prefill 3 + decode 1:
    #        dt=2 -> 3.5: r0 token 2.
    # t=3.5: decode r0 -> budget 3: r1 gets 3 (done). dt=2 -> 5.5: r0 token 3 leaves, r1 first
    #        token (output 1) leaves.
    "chunk_budget_minus_decodes": (
        dict(arrival=[0, 1], prompt=[2, 6], output=[3, 1], max_batch=4, prefill_chunk_tokens=4),
        dict(admit_s=[0, 1.5], first_token_s=[1.5, 5.5], finish_s=[5.5, 5.5], tpot_s=[2.0, NAN]),
    ),
}


def _check_hand(res, arrival, expected):
    arrival = np.asarray(arrival, dtype=float)
    for key, values in expected.items():
        np.testing.assert_array_equal(res[key], np.asarray(values, dtype=float), err_msg=key)
    np.testing.assert_array_equal(res["ttft_s"], res["first_token_s"] - arrival)
    np.testing.assert_array_equal(res["e2e_s"], res["finish_s"] - arrival)
    np.testing.assert_array_equal(res["queue_s"], res["admit_s"] - arrival)


@pytest.mark.parametrize("impl", sorted(REPLICA_IMPLS))
@pytest.mark.parametrize("case", sorted(HAND_REPLICA))
def test_hand_worked_replica(impl, case):
    inputs, expected = HAND_REPLICA[case]
    kwargs = {k: v for k, v in inputs.items() if k not in ("arrival", "prompt", "output")}
    res = REPLICA_IMPLS[impl](inputs["arrival"], inputs["prompt"], inputs["output"], HB, HT, **kwargs)
    _check_hand(res, inputs["arrival"], expected)


# Router, max_batch 4: r0 (t=0, prompt 8), r1 (t=0, prompt 4), r2 and r3 (t=2, prompt 4), all
# with output 1 (so each leaves after its prefill iteration: dt = 1 + prompt/4).
# least_outstanding: r0 -> replica 0 (tie, lowest index), runs 0 -> 3. r1 -> replica 1 (counts
#   1, 0), runs 0 -> 2. At t=2 replica 1's iteration ends first (r1 leaves), so r2 sees counts
#   1, 0 -> replica 1, admitted at the boundary 2, runs 2 -> 4. r3 sees 1, 1 -> replica 0, waits
#   until replica 0's boundary at 3, runs 3 -> 5. (Were arrivals handled before iteration ends,
#   r2 would see 1, 1 and go to replica 0.)
# round_robin: replicas 0, 1, 0, 1: r2 waits on replica 0 until 3 (-> 5), r3 is admitted on
#   replica 1 at 2 (-> 4).
HAND_ROUTER = {
    "least_outstanding": dict(replica=[0, 1, 1, 0], admit_s=[0, 0, 2, 3], finish_s=[3, 2, 4, 5]),
    "round_robin": dict(replica=[0, 1, 0, 1], admit_s=[0, 0, 3, 2], finish_s=[3, 2, 5, 4]),
}


@pytest.mark.parametrize("impl", sorted(ROUTER_IMPLS))
@pytest.mark.parametrize("policy", POLICIES)
def test_hand_worked_router(impl, policy):
    arrival, prompt, output = [0, 0, 2, 2], [8, 4, 4, 4], [1, 1, 1, 1]
    res = ROUTER_IMPLS[impl](arrival, prompt, output, HB, HT, 4, replicas=2, policy=policy)
    want = HAND_ROUTER[policy]
    np.testing.assert_array_equal(res["replica"], want["replica"])
    _check_hand(res, arrival, {"admit_s": want["admit_s"], "first_token_s": want["finish_s"],
                               "finish_s": want["finish_s"], "tpot_s": [NAN] * 4})


def test_reference_validation():
    with pytest.raises(ValueError):
        reference_replica([0, 0], [4, 4], [1, 1], HB, HT, 4, prefill_chunk_tokens=2)  # C < B
    with pytest.raises(ValueError):
        reference_replica([0], [4], [4], HB, HT, 4, kv_capacity_tokens=7)  # never fits
    with pytest.raises(ValueError):
        reference_replica([1, 0], [4, 4], [1, 1], HB, HT, 4)  # unsorted
    with pytest.raises(ValueError):
        reference_replica([0], [0], [1], HB, HT, 4)  # empty prompt


# ----------------------------------------------------------------------------- tie-heavy fuzz


def _fuzz_cases(count: int, seed: int):
    """Small workloads on a half-second grid with exact binary iteration times: many ties."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 30))
        max_batch = int(rng.integers(1, 5))
        arrival = np.sort(rng.integers(0, 20, n)) * 0.5
        prompt = rng.integers(1, 12, n)
        output = rng.integers(1, 6, n)
        kv = None if rng.random() < 0.5 else int((prompt + output).max() + rng.integers(0, 20))
        chunk = None if rng.random() < 0.5 else int(max_batch + rng.integers(0, 8))
        replicas = int(rng.integers(1, 4))
        policy = POLICIES[int(rng.integers(0, 2))]
        yield arrival, prompt, output, max_batch, kv, chunk, replicas, policy


def test_fuzz_references_agree_with_each_other_and_the_engine():
    failures = []
    for k, (a, p, o, b, kv, c, r, pol) in enumerate(_fuzz_cases(400, seed=11)):
        ref = reference_router(a, p, o, HB, HT, b, kv, c, replicas=r, policy=pol)
        for name, impl in (("simpy", simpy_router), ("engine", engine_router)):
            got = impl(a, p, o, HB, HT, b, kv, c, replicas=r, policy=pol)
            for line in differences(got, ref):
                failures.append(f"case {k} ({name}, B={b}, kv={kv}, C={c}, R={r}, {pol}): {line}")
        if r == 1:  # one replica behind a router is the single replica
            for name, impl in REPLICA_IMPLS.items():
                got = impl(a, p, o, HB, HT, b, kv, c)
                for line in differences(got, ref, OUTPUT_KEYS):
                    failures.append(f"case {k} ({name} replica, B={b}, kv={kv}, C={c}): {line}")
        if pol == "round_robin":  # each replica sees exactly its own requests
            for rep in range(r):
                m = ref["replica"] == rep
                if m.any():
                    alone = reference_replica(a[m], p[m], o[m], HB, HT, b, kv, c)
                    sub = {key: ref[key][m] for key in OUTPUT_KEYS}
                    for line in differences(sub, alone):
                        failures.append(f"case {k} (round_robin split, replica {rep}): {line}")
    assert not failures, "\n".join(failures[:20])


# ----------------------------------------------------------------------------- 20,000 requests

# name -> (workload kwargs, simulation kwargs)
CASES = {
    "batch1": (dict(seed=101, utilisation=0.9, max_batch=1), dict(max_batch=1)),
    "batch64": (dict(seed=102, utilisation=0.93, max_batch=64), dict(max_batch=64)),
    # KV capacity of 36,000 tokens binds well before 64 requests run (mean prompt + output
    # is ~435 tokens, up to 5,000): admission is KV-limited much of the time.
    "batch64_kv": (dict(seed=103, utilisation=0.9, max_batch=64),
                   dict(max_batch=64, kv_capacity_tokens=36_000)),
    "batch64_chunk512": (dict(seed=104, utilisation=0.93, max_batch=64),
                         dict(max_batch=64, prefill_chunk_tokens=512)),
}
ROUTER_CASES = {
    policy: (dict(seed=105, utilisation=0.92, max_batch=64, replicas=4),
             dict(max_batch=64, replicas=4, policy=policy))
    for policy in POLICIES
}

_cache: dict = {}


def _workload(wkw):
    key = tuple(sorted(wkw.items()))
    if key not in _cache:
        _cache[key] = make_workload(N, base_s=BASE_S, per_token_s=PER_TOKEN_S, **wkw)
    return _cache[key]


def _reference(name):
    if name not in _cache:
        if name in CASES:
            wkw, skw = CASES[name]
            _cache[name] = reference_replica(*_workload(wkw), BASE_S, PER_TOKEN_S, **skw)
        else:
            wkw, skw = ROUTER_CASES[name]
            _cache[name] = reference_router(*_workload(wkw), BASE_S, PER_TOKEN_S, **skw)
    return _cache[name]


def test_workloads_build_queues():
    """The large cases are not trivially idle: requests wait for admission."""
    for name in ("batch1", "batch64", "batch64_kv", "batch64_chunk512"):
        ref = _reference(name)
        wkw, _ = CASES[name]
        _, prompt, output = _workload(wkw)
        assert prompt.min() >= 1 and prompt.max() <= 4000 and output.min() >= 1 and output.max() <= 1000
        # Waiting longer than one full-batch iteration means the replica was saturated.
        saturated = ref["queue_s"] > BASE_S + PER_TOKEN_S * (4000 + 64)
        assert saturated.mean() > 0.05, (name, saturated.mean())


@pytest.mark.parametrize("name", list(CASES))
def test_engine_replica_equals_reference(name):
    wkw, skw = CASES[name]
    arrival, prompt, output = _workload(wkw)
    got = engine_replica(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    assert_same(got, _reference(name), f"engine vs reference, {name}")


@pytest.mark.parametrize("policy", POLICIES)
def test_engine_router_equals_reference(policy):
    wkw, skw = ROUTER_CASES[policy]
    arrival, prompt, output = _workload(wkw)
    got = engine_router(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    ref = _reference(policy)
    assert np.bincount(ref["replica"], minlength=4).min() > 0
    assert_same(got, ref, f"engine vs reference, router {policy}")


@pytest.mark.parametrize("name", ["batch64", "batch64_kv", "batch64_chunk512"])
def test_engine_replica_equals_simpy(name):
    wkw, skw = CASES[name]
    arrival, prompt, output = _workload(wkw)
    engine = engine_replica(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    model = simpy_replica(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    assert_same(engine, model, f"engine vs SimPy, {name}")


@pytest.mark.parametrize("policy", POLICIES)
def test_engine_router_equals_simpy(policy):
    wkw, skw = ROUTER_CASES[policy]
    arrival, prompt, output = _workload(wkw)
    engine = engine_router(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    model = simpy_router(arrival, prompt, output, BASE_S, PER_TOKEN_S, **skw)
    assert_same(engine, model, f"engine vs SimPy, router {policy}")
