"""Per-request SimPy model of prefill/decode disaggregation with speculative decoding.

The reference for ``simulator.serving.disaggregated.simulate_disaggregated`` (two vLLM-policy
engines in tandem, :mod:`simulator.serving.vllm_engine`) in the configuration
``benchmarks/bench_disaggregated.py`` times, written the way one would model the system in
SimPy without caring about speed, from the policy as the engine's docstrings state it:

* every request is a SimPy process: it sleeps until its arrival, is routed to a prefill
  replica's waiting queue, waits for its prompt to be prefilled (the event its replica
  triggers), sleeps the KV transfer, is routed to a decode replica's waiting queue and waits
  for its last token;
* every replica is a process that runs iterations: at a boundary it sizes the iteration from
  its token budget (running requests first, in admission order, then waiting requests
  admitted first come first served while budget is left and fewer than ``max_num_seqs`` run),
  sleeps ``base_s + per_token_s × tokens`` (plus the draft passes), then hands out the tokens.

Restrictions (what the benchmark uses): linear iteration models, no prefix cache, a KV cache
never short (``kv_capacity_tokens`` unset: the engine sizes it for ``max_num_seqs`` of the
largest request, so neither preemption nor a refused admission can happen, with or without
``kv_preemption``), no host tier, least-outstanding routing on both sides (ties to the lowest
replica index), no front-end latency.

The policy per side:

* **prefill** (every request, as one of 1 output token): a running request with prompt left
  gets ``min(prompt left, budget left)``; an admitted request likewise. The iteration that
  computes a prompt's last token samples its first token; the request leaves the prefill
  replica at that iteration's end.
* **KV transfer**: ``latency + prompt × KV bytes per token / (bandwidth × 1e9 × senders)``;
  ``ready = prefill end + transfer`` is the request's first-token time (TTFT) and its arrival at
  the decode side. A request of one output token is finished at the prefill end (no KV is sent).
* **decode** (requests of >= 2 output tokens, first token already generated): the iteration
  that admits a request computes one plain token for it (the engine's admission schedules
  ``min(known − computed, budget) = 1`` token and no drafts); every later step of a running
  request processes ``1 + d`` tokens, ``d = max(min(k, tokens still owed − 1, budget left − 1), 0)``,
  and emits ``1 + min(a, d)`` tokens, ``a`` the request's next acceptance draw (one draw per
  step with ``d > 0``). Draws are the engine's: ``accepted[draw_start[p] + step]``, ``p`` the
  request's position among the decode side's requests in their given order. The
  iteration costs ``base + per_token × Σ(1 + d)`` plus ``max d × (draft_base + draft_per_token
  × sequences speculating)`` (zero for the n-gram method).

Ordering of simultaneous events, as the engine's loop (iteration ends, then arrivals, then
replicas start iterations): an iteration end is an ``URGENT`` event; arrivals at a prefill
replica happen at ``NORMAL`` priority (timeouts created at t=0 in index order, so equal
arrival times route in index order); arrivals at the decode side are buffered and routed by
one event of priority :data:`ROUTE_DECODE` in (index) order — the engine's decode side sorts
its arrivals stably; a replica sizes its next iteration at priority
:data:`serving_simpy.AFTER_ARRIVALS`, after every arrival at that instant.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path

import numpy as np
import simpy
from simpy.core import NORMAL, URGENT

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving_simpy import AFTER_ARRIVALS, _After  # noqa: E402

#: priority of the event that routes the decode side's arrivals of one instant, in index order:
#: after the NORMAL transfer ends, before replicas size their iterations (AFTER_ARRIVALS)
ROUTE_DECODE = NORMAL + 0.5
assert NORMAL < ROUTE_DECODE < AFTER_ARRIVALS


class _Request:
    __slots__ = ("index", "arrival", "prompt", "output", "transfer", "left", "owed", "sched", "drafts",
                 "rank", "steps", "prefilled", "done")

    def __init__(self, env, index, arrival, prompt, output, transfer):
        self.index = index
        self.arrival = arrival
        self.prompt = prompt
        self.output = output
        self.transfer = transfer
        self.left = prompt  # prompt tokens still to prefill
        self.owed = output - 1  # tokens still to generate after the first
        self.sched = 0  # tokens in the iteration in progress
        self.drafts = 0  # draft tokens verified in it
        self.rank = -1  # position among the decode side's requests in their given order
        self.steps = 0  # verification steps taken
        self.prefilled = env.event()
        self.done = env.event()


class _Replica:
    """A replica process; ``decode`` selects the side's policy (module docstring)."""

    def __init__(self, env, decode, base_s, per_token_s, max_num_seqs, budget, k=0, accepted=None,
                 draw_start=None, draft_base_s=0.0, draft_per_token_s=0.0, admit=None):
        self.env = env
        self.decode = decode
        self.admit = admit  # receives each request's admission time (None: not recorded)
        self.base_s = base_s
        self.per_token_s = per_token_s
        self.max_num_seqs = max_num_seqs
        self.budget = budget
        self.k = k
        self.accepted = accepted
        self.draw_start = draw_start
        self.draft_base_s = draft_base_s
        self.draft_per_token_s = draft_per_token_s
        self.waiting: deque[_Request] = deque()
        self.running: list[_Request] = []
        self.wake = None
        self.iterations = 0
        env.process(self.run())

    def outstanding(self) -> int:
        return len(self.waiting) + len(self.running)

    def enqueue(self, req: _Request) -> None:
        self.waiting.append(req)
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()

    def _size(self) -> tuple[int, int, int]:
        """Schedule the running requests, then admit; return (tokens, sequences speculating, most drafts)."""
        room = self.budget
        tokens = spec_seqs = depth = 0
        for r in self.running:
            if room == 0:
                break
            if not self.decode:
                size = min(r.left, room)
            else:  # every running request decodes: it had its plain token in its admission iteration
                d = max(min(self.k, r.owed - 1, room - 1), 0) if self.k else 0
                size = 1 + d
                r.drafts = d
                if d:
                    spec_seqs += 1
                    depth = max(depth, d)
            r.sched = size
            room -= size
            tokens += size
        while self.waiting and room > 0 and len(self.running) < self.max_num_seqs:
            r = self.waiting.popleft()
            size = min(r.left, room) if not self.decode else 1  # decode: one plain token, no drafts
            r.sched = size
            r.drafts = 0
            room -= size
            tokens += size
            self.running.append(r)
            if self.admit is not None:
                self.admit[r.index] = self.env.now
        return tokens, spec_seqs, depth

    def _finish(self) -> None:
        """The iteration's end: tokens computed and emitted, requests done leave."""
        kept = []
        for r in self.running:
            if r.sched:
                if not self.decode:
                    r.left -= r.sched
                elif r.drafts:
                    a = self.accepted[self.draw_start[r.rank] + r.steps]
                    r.steps += 1
                    r.owed -= 1 + min(a, r.drafts)
                else:
                    r.owed -= 1
                r.sched = r.drafts = 0
            if not self.decode and r.left == 0:
                r.prefilled.succeed()
            elif self.decode and r.owed == 0:
                r.done.succeed()
            else:
                kept.append(r)
        self.running = kept

    def run(self):
        env = self.env
        while True:
            if not self.running and not self.waiting:
                self.wake = env.event()  # idle until a request is routed here
                yield self.wake
                self.wake = None
            yield _After(env, 0, AFTER_ARRIVALS)  # every arrival at this instant routed first
            tokens, spec_seqs, depth = self._size()
            dt = self.base_s + self.per_token_s * tokens
            if spec_seqs:
                dt += depth * (self.draft_base_s + self.draft_per_token_s * spec_seqs)
            self.iterations += 1
            yield _After(env, dt, URGENT)
            self._finish()


class _Router:
    """Least outstanding (waiting + running), ties to the lowest replica index."""

    def __init__(self, replicas: list[_Replica], chosen: np.ndarray):
        self.replicas = replicas
        self.chosen = chosen

    def route(self, req: _Request) -> None:
        counts = [rep.outstanding() for rep in self.replicas]
        r = counts.index(min(counts))
        self.chosen[req.index] = r
        self.replicas[r].enqueue(req)


class _DecodeRouter(_Router):
    """Buffers one instant's arrivals and routes them in index order (the decode engine's stable
    sort of its arrival times)."""

    def __init__(self, env, replicas, chosen, draw_start):
        super().__init__(replicas, chosen)
        self.env = env
        self.pending: list[_Request] = []
        self.draw_start = draw_start

    def arrive(self, req: _Request) -> None:
        if not self.pending:
            _After(self.env, 0, ROUTE_DECODE).callbacks.append(self._flush)
        self.pending.append(req)

    def _flush(self, _event) -> None:
        batch, self.pending = sorted(self.pending, key=lambda q: q.index), []
        for req in batch:
            self.route(req)


def _request(env, req: _Request, prefill: _Router, decode: _DecodeRouter, out):
    yield env.timeout(req.arrival)
    prefill.route(req)
    yield req.prefilled  # its first token is sampled with the prompt's last chunk
    out["prefill_done_s"][req.index] = env.now
    yield env.timeout(req.transfer)  # the prompt's KV crosses the link
    out["first_token_s"][req.index] = env.now
    if req.output == 1:  # it leaves at the prefill side
        out["finish_s"][req.index] = env.now
        return
    decode.arrive(req)
    yield req.done
    out["finish_s"][req.index] = env.now
    out["verify_steps"][req.index] = req.steps


def transfer_seconds(prompt, latency_s: float, bandwidth_gbps: float, kv_bytes_per_token: float,
                     senders: int = 1) -> np.ndarray:
    """The KV transfer of each request: latency + prompt bytes over the senders' links."""
    prompt = np.asarray(prompt, dtype=np.int64)
    return latency_s + prompt * kv_bytes_per_token / (bandwidth_gbps * 1e9 * max(senders, 1))


def simpy_disaggregated(arrival_s, prompt_tokens, output_tokens, *,
                        prefill_base_s: float, prefill_per_token_s: float,
                        decode_base_s: float, decode_per_token_s: float,
                        prefill_replicas: int = 1, decode_replicas: int = 1,
                        prefill_max_num_seqs: int = 256, prefill_max_num_batched_tokens: int = 8192,
                        decode_max_num_seqs: int = 256, decode_max_num_batched_tokens: int = 8192,
                        link_latency_s: float = 0.0, link_bandwidth_gbps: float = 1.0,
                        kv_bytes_per_token: float = 0.0, senders: int = 1,
                        k: int = 0, accepted=None, draw_start=None,
                        draft_base_s: float = 0.0, draft_per_token_s: float = 0.0) -> dict[str, np.ndarray]:
    """Simulate the disaggregated unit (module docstring); per-request arrays in input order.

    ``k > 0`` speculates on the decode side with the engine's ``accepted`` and ``draw_start``
    (laid out in the decode side's arrival order, :meth:`SpeculativeDecoding.draws`);
    ``draft_base_s``/``draft_per_token_s``: one draft pass of a linear draft model (0 for n-gram).
    Returns ``admit_s`` (prefill admission), ``prefill_done_s``, ``first_token_s`` (the KV and the
    first token at the decode side), ``finish_s``, ``ttft_s``, ``e2e_s``, ``verify_steps``,
    ``prefill_replica``, ``decode_replica`` and ``iterations`` (both sides).
    """
    arrival = np.asarray(arrival_s, dtype=float)
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    n = len(arrival)
    if not (len(prompt) == len(output) == n):
        raise ValueError("arrival_s, prompt_tokens and output_tokens must have the same length")
    if n and (arrival.min() < 0 or prompt.min() < 1 or output.min() < 1):
        raise ValueError("arrivals must be >= 0 and every request needs a prompt and an output token")
    if k and (accepted is None or draw_start is None):
        raise ValueError("speculating needs the engine's accepted and draw_start arrays")
    transfer = transfer_seconds(prompt, link_latency_s, link_bandwidth_gbps, kv_bytes_per_token, senders)
    transfer = np.where(output >= 2, transfer, 0.0)  # a one-token request sends no KV

    env = simpy.Environment()
    out = {key: np.full(n, np.nan) for key in ("admit_s", "prefill_done_s", "first_token_s", "finish_s")}
    out["verify_steps"] = np.zeros(n, dtype=np.int64)
    out["prefill_replica"] = np.full(n, -1, dtype=np.int64)
    out["decode_replica"] = np.full(n, -1, dtype=np.int64)
    prefill = [_Replica(env, False, float(prefill_base_s), float(prefill_per_token_s), int(prefill_max_num_seqs),
                        int(prefill_max_num_batched_tokens), admit=out["admit_s"]) for _ in range(prefill_replicas)]
    draws = None if accepted is None else np.asarray(accepted, dtype=np.int64).tolist()
    starts = None if draw_start is None else np.asarray(draw_start, dtype=np.int64).tolist()
    decode = [_Replica(env, True, float(decode_base_s), float(decode_per_token_s), int(decode_max_num_seqs),
                       int(decode_max_num_batched_tokens), int(k), draws, starts, float(draft_base_s),
                       float(draft_per_token_s)) for _ in range(decode_replicas)]
    rank = (np.cumsum(output >= 2) - 1).tolist()
    prefill_router = _Router(prefill, out["prefill_replica"])
    decode_router = _DecodeRouter(env, decode, out["decode_replica"], starts)
    for i, (a, p, o, t) in enumerate(zip(arrival.tolist(), prompt.tolist(), output.tolist(), transfer.tolist(),
                                         strict=True)):
        req = _Request(env, i, a, p, o, t)
        req.rank = rank[i]  # its draws: the decode side's requests are laid out in their given order
        env.process(_request(env, req, prefill_router, decode_router, out))
    env.run()

    out["ttft_s"] = out["first_token_s"] - arrival
    out["e2e_s"] = out["finish_s"] - arrival
    out["iterations"] = sum(rep.iterations for rep in prefill + decode)
    return out
