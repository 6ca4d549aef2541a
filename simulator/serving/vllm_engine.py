"""vLLM V1 scheduling as an engine policy: token budget, chunked prefill, prefix cache, preemption.

Each iteration (vLLM ``Scheduler.schedule``) has a budget of ``max_num_batched_tokens``:

1. Running requests are visited in order (admission order, so decodes come before the newest
   prompts' remaining chunks); each gets ``min(tokens it still has to compute, budget left)`` —
   one token for a decode, the rest of its prompt (or a chunk of it) for a prefill.
   Blocks of ``block_size`` tokens are allocated for what it will have computed; when none are
   free and preemption is on, the newest running request is preempted (its blocks freed, its
   computed tokens reset to 0, back to the front of the waiting queue: it is recomputed later,
   prompt and tokens generated so far, as a prefill).
2. If nothing was preempted, waiting requests are admitted first-come-first-served while fewer
   than ``max_num_seqs`` run and budget is left. A request first looks up its prompt's full
   blocks in the prefix cache (at most ``tokens − 1`` are taken, so one token is always
   computed); cached tokens skip compute but count in attention and KV reads. It gets
   ``min(uncached tokens, budget)`` and is admitted if its blocks fit (with preemption off,
   blocks for its whole prompt + output are reserved at admission, so it is never preempted).

A step in which a request's computed tokens reach its known tokens samples one token for it
(the first one ends its TTFT); it leaves after its last output token.

Speculative decoding (``features[F_SPEC_K] = k > 0``): a decoding request is scheduled
``1 + d`` tokens, its last sampled token and ``d = min(k, tokens it still owes − 1, budget − 1)``
draft tokens, verified in one pass; the step emits ``1 + min(a, d)`` tokens, ``a`` being the
request's next draw in ``accepted`` (its draws start at ``draw_start[i]``, one per verification
step, so a request's acceptances do not depend on what it is batched with). The verification
costs the target model's pass over those tokens (their attention reads the sequence's KV once);
the draft costs ``max d`` passes of ``draft_params`` over the speculating sequences. A request's
first step after admission (its first decode when it arrives with its KV, or its first after a
readmission) takes no drafts: a draft head needs the hidden state of a pass of the target.

Prefill first (``features[F_PREFILL_FIRST]``, vLLM V0's scheduler, before chunked prefill): an
iteration either prefills or decodes. While waiting requests fit (KV blocks for their prompt,
fewer than ``max_num_seqs`` running, prompts whole within the budget), they are admitted and the
iteration prefills only them, every running request's decode waiting; otherwise the running
requests decode (step 1, with preemption). A prompt is never split: admission stops at the first
that does not fit the budget left, and the budget must hold the longest prompt.

A request that arrives with its KV (``features[F_PRELOADED]``: the decode side of a
disaggregated deployment) has its prompt computed and its first token generated when first
admitted, so it only decodes.

A host-memory tier (``host_blocks > 0``, :mod:`simulator.serving.kv_blocks`) keeps prefix blocks
evicted from the GPU; a prompt's blocks found there after its GPU hits are loaded at
``features[F_LOAD_S_PER_TOKEN]`` seconds per token, added to the iteration that admits it,
instead of being computed. With ``features[F_SPILL]``, a preempted request's computed KV is
written to the tier (pinned there) when it fits, and reloaded instead of recomputed. Blocks are cached under
their content key when allocated (vLLM's ``cache_blocks``); freed blocks go to the tail of a
free queue (a request's last block first) and allocation takes the head, dropping whatever
cached content it held: least-recently-freed blocks are evicted first.

Block content keys come from :mod:`simulator.serving.prefix`; with several replicas, arrivals are
routed by :func:`simulator.serving.routing.pick_replica`. The iteration time is
:func:`simulator.serving.batching.iteration_seconds`. Scheduling a replica's running and waiting
requests outside the end-of-iteration pass is :mod:`simulator.serving.vllm_scheduling`.

Implementation: one loop serves every replica on one clock (at equal times: iteration ends,
arrivals, then idle replicas start iterations). The state is a few integer arrays indexed by
the column names below. A numba call updates an atomic reference count per array argument,
which costs more than a decode's work, so the per-request pass below calls helpers only at a
block boundary, a departure or a preemption, and helpers take few arrays.

* ``req[i]`` (columns in :mod:`simulator.serving.vllm_layout`): request ``i``'s ``PROMPT`` and
  ``OUTPUT`` tokens, ``COMPUTED`` tokens (KV in cache), ``GENERATED`` tokens, ``SCHED`` (tokens in
  the iteration in progress), ``SLOT`` (−1 when not running), ``REGISTERED`` (prompt blocks
  cached), ``keys[KEY_START : KEY_START + KEY_COUNT]``, ``DRAFTS`` being verified, verification
  ``STEPS`` taken and tokens ``SPILLED`` to the host tier.
* ``rep[r]``: replica ``r``'s running requests ``run[r, :N_RUN]`` (admission order); its waiting
  queue, a ring ``wq[r]`` of ``n + 1`` ids from ``W_HEAD``, ``W_LEN`` long (preempted requests
  go back to its front); ``N_SLOT`` free slots on the stack ``slot_stack[r]``; its free-block
  queue ``FHEAD`` … ``FTAIL``, ``N_FREE`` long; the iteration being scheduled: budget ``LEFT``
  and the arguments of ``iteration_seconds`` as integers (``PREFILL``, ``DECODES``,
  ``POSITIONS``, ``PREFILL_KV``, ``DECODE_CONTEXT``), whose sums are exact in any order, its
  speculating sequences (``SPEC_SEQS``, ``SPEC_DEPTH``, ``SPEC_CONTEXT``) and the tokens it
  loads from the host tier (``LOADED``); the host tier's list and counts.
* ``blocks``, ``keymap``, ``table`` and ``host``: the KV blocks, prefix cache and host tier
  (:mod:`simulator.serving.kv_blocks`).

An iteration's end and the scheduling of the requests that stay are one pass over the batch.
That equals advancing every request before scheduling any, as blocks freed by departures join
the free queue's tail while allocation takes its head; should blocks run out, the pass only
advances the rest and :func:`schedule_running` goes on from there, preempting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.serving.batching import iteration_seconds
from simulator.serving.kv_blocks import grow, grow_tiered, register, release
from simulator.serving.routing import pick_replica
from simulator.serving.vllm_layout import (
    COMPUTED,
    DECODE_CONTEXT,
    DECODES,
    DRAFTS,
    EMITTED,
    F_LOAD_S_PER_TOKEN,
    F_PREFILL_FIRST,
    F_PRELOADED,
    F_SPEC_K,
    FEATURES,
    FTAIL,
    GENERATED,
    HOST_CAP,
    HOST_HEAD,
    HOST_TAIL,
    KEY,
    KEY_COUNT,
    KEY_START,
    LEFT,
    LOADED,
    N_FREE,
    N_RUN,
    N_SLOT,
    NEXT,
    OUTPUT,
    POSITIONS,
    PREFILL,
    PREFILL_KV,
    PREV,
    PROMPT,
    REF,
    REGISTERED,
    REP_COLUMNS,
    REQ_COLUMNS,
    SCHED,
    SLOT,
    SPEC_CONTEXT,
    SPEC_DEPTH,
    SPEC_SEQS,
    STEPS,
    W_HEAD,
    W_LEN,
)
from simulator.serving.vllm_scheduling import admit_waiting, schedule_running


@njit(cache=True)
def run_vllm(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs, budget,
             total_blocks, block_size, caching, preempt, n_replicas, policy,
             admit, first, finish, replica_of, preemptions):
    """:func:`serve_vllm` without prefix-affinity keys and without the cached-token output."""
    n = arrival.shape[0]
    return serve_vllm(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs, budget,
                      total_blocks, block_size, caching, preempt, n_replicas, policy,
                      np.full(n, -1, dtype=np.int64), np.zeros((1, n_replicas), dtype=np.int64), 1.0,
                      admit, first, finish, replica_of, preemptions, np.zeros(n, dtype=np.int64))


@njit(cache=True)
def serve_vllm(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs, budget,
               total_blocks, block_size, caching, preempt, n_replicas, policy, route_key, ranking, load_factor,
               admit, first, finish, replica_of, preemptions, cached):
    """Simulate; fill the per-request output arrays; return the number of iterations.

    ``policy``, ``route_key``, ``ranking`` and ``load_factor`` route arrivals
    (:func:`simulator.serving.routing.pick_replica`); ``cached`` receives the prompt tokens each
    request took from the prefix cache when first admitted.
    """
    n = arrival.shape[0]
    return serve_vllm_loop(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs,
                           budget, total_blocks, block_size, caching, preempt, n_replicas, policy, route_key,
                           ranking, load_factor, admit, first, finish, replica_of, preemptions, cached, 0.0,
                           np.zeros(FEATURES), np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(3), 0,
                           np.zeros(n, dtype=np.int64), np.zeros((n, 2), dtype=np.int64))


@njit(cache=True)
def serve_vllm_loop(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs, budget,
                    total_blocks, block_size, caching, preempt, n_replicas, policy, route_key, ranking,
                    load_factor, admit, first, finish, replica_of, preemptions, cached, delay,
                    features, accepted, draw_start, draft_params, host_blocks, loaded, steps):
    """:func:`serve_vllm` with closed-loop arrivals, speculation, KV arriving and a host tier.

    NaN arrivals are not yet sent; each finish sends the first of them ``delay`` seconds later
    (see :func:`~simulator.serving.batching.run_batching_loop`). ``features``, ``accepted``,
    ``draw_start``, ``draft_params`` and ``host_blocks`` (blocks per replica) as the module
    docstring says; ``loaded`` receives the prompt tokens each request loaded from the host tier
    when first admitted and ``steps[i]`` its verification steps and the tokens they emitted.
    """
    n = arrival.shape[0]
    pend = 0
    while pend < n and not np.isnan(arrival[pend]):
        pend += 1
    inf = np.inf
    spec_k = int(features[F_SPEC_K])
    preloaded = features[F_PRELOADED] > 0
    prefill_first = features[F_PREFILL_FIRST] > 0
    req = np.zeros((n, REQ_COLUMNS), dtype=np.int64)
    max_blocks = 1
    for i in range(n):
        req[i, PROMPT], req[i, OUTPUT], req[i, SLOT] = prompt[i], output[i], -1
        req[i, KEY_START], req[i, KEY_COUNT] = key_start[i], key_count[i]
        if preloaded:
            req[i, GENERATED] = 1  # the first token came with the KV
        max_blocks = max(max_blocks, (prompt[i] + output[i] + block_size - 1) // block_size)
    rep = np.zeros((n_replicas, REP_COLUMNS), dtype=np.int64)
    outstanding = np.zeros(n_replicas, dtype=np.int64)  # requests waiting or running
    blocks = np.empty((n_replicas, total_blocks, 4), dtype=np.int64)
    slot_stack = np.empty((n_replicas, max_seqs), dtype=np.int64)
    for r in range(n_replicas):
        rep[r, N_SLOT], rep[r, FTAIL], rep[r, N_FREE] = max_seqs, total_blocks - 1, total_blocks
        rep[r, HOST_HEAD], rep[r, HOST_TAIL], rep[r, HOST_CAP] = -1, -1, host_blocks
        for b in range(total_blocks):
            blocks[r, b, KEY], blocks[r, b, REF], blocks[r, b, PREV] = -1, 0, b - 1
            blocks[r, b, NEXT] = b + 1 if b + 1 < total_blocks else -1
        for q in range(max_seqs):
            slot_stack[r, q] = max_seqs - 1 - q
    host = np.zeros((n_replicas, max(n_keys, 1) if host_blocks > 0 else 1, 3), dtype=np.int64)
    t_end = np.full(n_replicas, inf)
    wq = np.empty((n_replicas, n + 1), dtype=np.int64)
    run = np.empty((n_replicas, max_seqs), dtype=np.int64)
    keymap = np.full((n_replicas, max(n_keys, 1)), -1, dtype=np.int64)
    table = np.empty((n_replicas, max_seqs, max_blocks), dtype=np.int64)
    n_blk = np.zeros((n_replicas, max_seqs), dtype=np.int64)
    scheduled = np.zeros(n_replicas, dtype=np.bool_)  # its running requests are scheduled (step 1)
    preempted = np.zeros(n_replicas, dtype=np.bool_)  # and that preempted one
    depth = np.zeros(ranking.shape[0], dtype=np.int64)  # replicas holding each affinity key
    iterations = 0
    i_next = 0
    while True:
        t_iter = inf
        for r in range(n_replicas):
            t_iter = min(t_iter, t_end[r])
        t_arrival = arrival[i_next] if i_next < pend else inf
        if t_iter == inf and t_arrival == inf:
            break
        now = min(t_iter, t_arrival)
        # 1. Iterations ending now: computed tokens advance, tokens are sampled, requests leave;
        #    the others are scheduled for the next iteration in the same pass (module docstring).
        for r in range(n_replicas):
            if t_end[r] != now:
                continue
            t_end[r] = inf
            room = budget
            prefill = decodes = positions = prefill_kv = decode_context = 0
            spec_seqs = spec_depth = spec_context = 0
            kept = 0
            stop = -1
            for j in range(rep[r, N_RUN]):
                i = run[r, j]
                if req[i, SCHED] > 0:
                    if req[i, DRAFTS] > 0:  # a verification step: the sampled token and the drafts accepted
                        a = min(accepted[draw_start[i] + req[i, STEPS]], req[i, DRAFTS])
                        req[i, STEPS] += 1
                        req[i, DRAFTS] = 0
                        req[i, COMPUTED] += 1 + a
                        req[i, GENERATED] += 1 + a
                        req[i, EMITTED] += 1 + a
                    else:
                        req[i, COMPUTED] += req[i, SCHED]
                        if req[i, COMPUTED] >= req[i, PROMPT] + req[i, GENERATED]:
                            req[i, GENERATED] += 1
                            if req[i, GENERATED] == 1 and np.isnan(first[i]):
                                first[i] = now
                    req[i, SCHED] = 0
                if req[i, GENERATED] == req[i, OUTPUT]:
                    finish[i] = now
                    steps[i, 0], steps[i, 1] = req[i, STEPS], req[i, EMITTED]
                    if pend < n:
                        arrival[pend] = now + delay
                        pend += 1
                    release(r, req[i, SLOT], rep, blocks, table, n_blk, slot_stack)
                    outstanding[r] -= 1
                    continue
                run[r, kept] = i
                kept += 1
                if room == 0 or stop >= 0 or prefill_first:
                    continue
                s = req[i, SLOT]
                done = req[i, COMPUTED]
                known = req[i, PROMPT] + req[i, GENERATED]
                size = min(known - done, room)
                decoding = done == known - 1 and req[i, GENERATED] > 0
                if spec_k > 0 and decoding:
                    size = 1 + max(min(spec_k, req[i, OUTPUT] - req[i, GENERATED] - 1, room - 1), 0)
                upto = done + size
                if upto > n_blk[r, s] * block_size and not (
                        grow(r, s, upto, block_size, rep, blocks, table, n_blk, keymap) if host_blocks == 0
                        else grow_tiered(r, s, upto, block_size, rep, blocks, table, n_blk, keymap, host)):
                    stop = kept - 1
                    continue
                if caching and req[i, REGISTERED] < req[i, KEY_COUNT] and req[i, REGISTERED] < upto // block_size:
                    register(r, i, s, upto, block_size, req, keys, blocks, keymap, table)
                req[i, SCHED] = size
                room -= size
                if decoding:
                    decodes += 1
                    decode_context += done + 1
                    if size > 1:
                        d = size - 1
                        req[i, DRAFTS] = d
                        prefill += d
                        positions += d * (done + 1) + d * (d + 1) // 2
                        spec_seqs += 1
                        spec_depth = max(spec_depth, d)
                        spec_context += done + 1
                else:
                    prefill += size
                    positions += size * done + size * (size + 1) // 2
                    prefill_kv += done + size
            rep[r, N_RUN], rep[r, LEFT] = kept, room
            rep[r, PREFILL], rep[r, DECODES], rep[r, POSITIONS] = prefill, decodes, positions
            rep[r, PREFILL_KV], rep[r, DECODE_CONTEXT] = prefill_kv, decode_context
            rep[r, SPEC_SEQS], rep[r, SPEC_DEPTH], rep[r, SPEC_CONTEXT], rep[r, LOADED] = (
                spec_seqs, spec_depth, spec_context, 0)
            preempted[r] = stop >= 0 and schedule_running(r, stop, block_size, caching, spec_k, features, req,
                                                           rep, blocks, run, wq, slot_stack, table, n_blk, keymap,
                                                           keys, host, preemptions)
            scheduled[r] = not prefill_first  # prefill first: step 3 decides between prefill and decode
        # 2. Arrivals now: route each to a replica's waiting queue.
        while i_next < pend and arrival[i_next] <= now:
            i = i_next
            r = 0  # what pick_replica returns for one replica and no affinity key
            if n_replicas > 1 or route_key[i] >= 0:
                r = pick_replica(i, policy, n_replicas, outstanding, route_key, ranking, load_factor,
                                 depth)
            replica_of[i] = r
            wq[r, (rep[r, W_HEAD] + rep[r, W_LEN]) % (n + 1)] = i
            rep[r, W_LEN] += 1
            outstanding[r] += 1
            i_next += 1
        # 3. Idle replicas with work schedule their next iteration.
        for r in range(n_replicas):
            if t_end[r] != inf or rep[r, N_RUN] + rep[r, W_LEN] == 0:
                scheduled[r] = False
                continue
            if not scheduled[r]:  # idle until now, or prefilling first
                rep[r, LEFT] = budget
                for c in range(PREFILL, LOADED + 1):
                    rep[r, c] = 0
                if prefill_first and rep[r, W_LEN] > 0 and rep[r, N_RUN] < max_seqs:
                    admit_waiting(r, now, max_seqs, block_size, caching, preempt, preloaded, True, req, rep, blocks,
                                  run, wq, slot_stack, table, n_blk, keymap, keys, host, admit, cached, loaded)
                preempted[r] = False
                if rep[r, LEFT] == budget:
                    preempted[r] = schedule_running(r, 0, block_size, caching, spec_k, features, req, rep, blocks,
                                                     run, wq, slot_stack, table, n_blk, keymap, keys, host,
                                                     preemptions)
            scheduled[r] = False
            if (not prefill_first and not preempted[r] and rep[r, W_LEN] > 0 and rep[r, LEFT] > 0
                    and rep[r, N_RUN] < max_seqs):
                admit_waiting(r, now, max_seqs, block_size, caching, preempt, preloaded, False, req, rep, blocks, run,
                              wq, slot_stack, table, n_blk, keymap, keys, host, admit, cached, loaded)
            if rep[r, LEFT] == budget:
                continue  # nothing fits (cannot happen when every request fits the KV cache)
            dt = iteration_seconds(
                params, rep[r, PREFILL], rep[r, DECODES], float(rep[r, POSITIONS] + rep[r, DECODE_CONTEXT]),
                float(rep[r, PREFILL_KV] + rep[r, DECODE_CONTEXT]), float(rep[r, DECODE_CONTEXT]))
            if rep[r, SPEC_SEQS] > 0:
                context = float(rep[r, SPEC_CONTEXT])
                dt += rep[r, SPEC_DEPTH] * iteration_seconds(draft_params, 0, rep[r, SPEC_SEQS], context, context,
                                                             context)
            if rep[r, LOADED] > 0:
                dt += rep[r, LOADED] * features[F_LOAD_S_PER_TOKEN]
            t_end[r] = now + dt
            iterations += 1
    return iterations
