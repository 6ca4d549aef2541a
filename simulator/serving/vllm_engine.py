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
(the first one ends its TTFT); it leaves after its last output token. Blocks are cached under
their content key when allocated (vLLM's ``cache_blocks``); freed blocks go to the tail of a
free queue (a request's last block first) and allocation takes the head, dropping whatever
cached content it held: least-recently-freed blocks are evicted first.

Block content keys come from :mod:`simulator.serving.prefix`; with several replicas, arrivals are
routed by :func:`simulator.serving.routing.pick_replica`. The iteration time is
:func:`simulator.serving.batching.iteration_seconds`; clear this file's numba cache (or touch
the file) when that function changes.

Implementation: one loop serves every replica on one clock (at equal times: iteration ends,
arrivals, then idle replicas start iterations). The state is a few integer arrays indexed by
the column names below. A numba call updates an atomic reference count per array argument,
which costs more than a decode's work, so the per-request pass below calls helpers only at a
block boundary, a departure or a preemption, and helpers take few arrays.

* ``req[i]``: request ``i``'s ``PROMPT`` and ``OUTPUT`` tokens, ``COMPUTED`` tokens (KV in cache),
  ``GENERATED`` tokens, ``SCHED`` (tokens in the iteration in progress), ``SLOT`` (−1 when not
  running), ``REGISTERED`` (prompt blocks cached) and ``keys[KEY_START : KEY_START + KEY_COUNT]``.
* ``rep[r]``: replica ``r``'s running requests ``run[r, :N_RUN]`` (admission order); its waiting
  queue, a ring ``wq[r]`` of ``n + 1`` ids from ``W_HEAD``, ``W_LEN`` long (preempted requests
  go back to its front); ``N_SLOT`` free slots on the stack ``slot_stack[r]``; its free-block
  queue ``FHEAD`` … ``FTAIL``, ``N_FREE`` long; the iteration being scheduled: budget ``LEFT``
  and the arguments of ``iteration_seconds`` as integers (``PREFILL``, ``DECODES``,
  ``POSITIONS``, ``PREFILL_KV``, ``DECODE_CONTEXT``), whose sums are exact in any order.
* ``blocks[r, b]``: KV block ``b``'s cached content ``KEY`` (or −1), ``REF`` (requests using it)
  and, while free, its ``PREV``/``NEXT`` in the free queue (−1 at the ends). ``keymap[r, key]``:
  the block caching ``key`` (or −1); ``table[r, s, :n_blk[r, s]]``: slot ``s``'s blocks.

An iteration's end and the scheduling of the requests that stay are one pass over the batch.
That equals advancing every request before scheduling any, as blocks freed by departures join
the free queue's tail while allocation takes its head; should blocks run out, the pass only
advances the rest and :func:`_schedule_running` goes on from there, preempting.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.serving.batching import iteration_seconds
from simulator.serving.routing import pick_replica

PROMPT, OUTPUT, COMPUTED, GENERATED, SCHED, SLOT, REGISTERED, KEY_START, KEY_COUNT = range(9)  # req
N_RUN, W_HEAD, W_LEN, N_SLOT, FHEAD, FTAIL, N_FREE, LEFT = range(8)  # rep
PREFILL, DECODES, POSITIONS, PREFILL_KV, DECODE_CONTEXT = range(8, 13)  # rep: the iteration's tokens
KEY, REF, PREV, NEXT = range(4)  # blocks


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
    return serve_vllm_loop(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs,
                           budget, total_blocks, block_size, caching, preempt, n_replicas, policy, route_key,
                           ranking, load_factor, admit, first, finish, replica_of, preemptions, cached, 0.0)


@njit(cache=True)
def serve_vllm_loop(arrival, prompt, output, key_start, key_count, keys, n_keys, params, max_seqs, budget,
                    total_blocks, block_size, caching, preempt, n_replicas, policy, route_key, ranking,
                    load_factor, admit, first, finish, replica_of, preemptions, cached, delay):
    """:func:`serve_vllm` with closed-loop arrivals: NaN arrivals are not yet sent; each finish
    sends the first of them ``delay`` seconds later (see :func:`~simulator.serving.batching.run_batching_loop`).
    """
    n = arrival.shape[0]
    pend = 0
    while pend < n and not np.isnan(arrival[pend]):
        pend += 1
    inf = np.inf
    req = np.zeros((n, 9), dtype=np.int64)
    max_blocks = 1
    for i in range(n):
        req[i, PROMPT], req[i, OUTPUT], req[i, SLOT] = prompt[i], output[i], -1
        req[i, KEY_START], req[i, KEY_COUNT] = key_start[i], key_count[i]
        max_blocks = max(max_blocks, (prompt[i] + output[i] + block_size - 1) // block_size)
    rep = np.zeros((n_replicas, 13), dtype=np.int64)
    outstanding = np.zeros(n_replicas, dtype=np.int64)  # requests waiting or running
    blocks = np.empty((n_replicas, total_blocks, 4), dtype=np.int64)
    slot_stack = np.empty((n_replicas, max_seqs), dtype=np.int64)
    for r in range(n_replicas):
        rep[r, N_SLOT], rep[r, FTAIL], rep[r, N_FREE] = max_seqs, total_blocks - 1, total_blocks
        for b in range(total_blocks):
            blocks[r, b, KEY], blocks[r, b, REF], blocks[r, b, PREV] = -1, 0, b - 1
            blocks[r, b, NEXT] = b + 1 if b + 1 < total_blocks else -1
        for q in range(max_seqs):
            slot_stack[r, q] = max_seqs - 1 - q
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
            kept = 0
            stop = -1
            for j in range(rep[r, N_RUN]):
                i = run[r, j]
                if req[i, SCHED] > 0:
                    req[i, COMPUTED] += req[i, SCHED]
                    req[i, SCHED] = 0
                    if req[i, COMPUTED] >= req[i, PROMPT] + req[i, GENERATED]:
                        req[i, GENERATED] += 1
                        if req[i, GENERATED] == 1 and np.isnan(first[i]):
                            first[i] = now
                if req[i, GENERATED] == req[i, OUTPUT]:
                    finish[i] = now
                    if pend < n:
                        arrival[pend] = now + delay
                        pend += 1
                    _release(r, req[i, SLOT], rep, blocks, table, n_blk, slot_stack)
                    outstanding[r] -= 1
                    continue
                run[r, kept] = i
                kept += 1
                if room == 0 or stop >= 0:
                    continue
                s = req[i, SLOT]
                done = req[i, COMPUTED]
                known = req[i, PROMPT] + req[i, GENERATED]
                size = min(known - done, room)
                upto = done + size
                if upto > n_blk[r, s] * block_size and not _grow(r, s, upto, block_size, rep, blocks, table,
                                                                 n_blk, keymap):
                    stop = kept - 1
                    continue
                if caching and req[i, REGISTERED] < req[i, KEY_COUNT] and req[i, REGISTERED] < upto // block_size:
                    _register(r, i, s, upto, block_size, req, keys, blocks, keymap, table)
                req[i, SCHED] = size
                room -= size
                if size == 1 and done == known - 1 and req[i, GENERATED] > 0:
                    decodes += 1
                    decode_context += done + 1
                else:
                    prefill += size
                    positions += size * done + size * (size + 1) // 2
                    prefill_kv += done + size
            rep[r, N_RUN], rep[r, LEFT] = kept, room
            rep[r, PREFILL], rep[r, DECODES], rep[r, POSITIONS] = prefill, decodes, positions
            rep[r, PREFILL_KV], rep[r, DECODE_CONTEXT] = prefill_kv, decode_context
            preempted[r] = stop >= 0 and _schedule_running(r, stop, block_size, caching, req, rep, blocks, run,
                                                           wq, slot_stack, table, n_blk, keymap, keys,
                                                           preemptions)
            scheduled[r] = True
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
            if not scheduled[r]:  # idle until now
                rep[r, LEFT] = budget
                for c in range(PREFILL, DECODE_CONTEXT + 1):
                    rep[r, c] = 0
                preempted[r] = _schedule_running(r, 0, block_size, caching, req, rep, blocks, run, wq,
                                                 slot_stack, table, n_blk, keymap, keys, preemptions)
            scheduled[r] = False
            if not preempted[r] and rep[r, W_LEN] > 0 and rep[r, LEFT] > 0 and rep[r, N_RUN] < max_seqs:
                _admit(r, now, max_seqs, block_size, caching, preempt, req, rep, blocks, run, wq, slot_stack,
                       table, n_blk, keymap, keys, admit, cached)
            if rep[r, LEFT] == budget:
                continue  # nothing fits (cannot happen when every request fits the KV cache)
            t_end[r] = now + iteration_seconds(
                params, rep[r, PREFILL], rep[r, DECODES], float(rep[r, POSITIONS] + rep[r, DECODE_CONTEXT]),
                float(rep[r, PREFILL_KV] + rep[r, DECODE_CONTEXT]), float(rep[r, DECODE_CONTEXT]))
            iterations += 1
    return iterations


@njit(cache=True)
def _schedule_running(r, j, block_size, caching, req, rep, blocks, run, wq, slot_stack, table, n_blk, keymap,
                      keys, preemptions):
    """Schedule ``run[r, j:]`` from the budget left, preempting the newest running request while
    blocks are short (module docstring, step 1); return whether any was preempted.
    """
    preempted = False
    while j < rep[r, N_RUN] and rep[r, LEFT] > 0:
        i = run[r, j]
        done = req[i, COMPUTED]
        size = min(req[i, PROMPT] + req[i, GENERATED] - done, rep[r, LEFT])
        upto = done + size
        ok = True
        while upto > n_blk[r, req[i, SLOT]] * block_size and not _grow(r, req[i, SLOT], upto, block_size, rep,
                                                                       blocks, table, n_blk, keymap):
            rep[r, N_RUN] -= 1
            victim = run[r, rep[r, N_RUN]]
            _release(r, req[victim, SLOT], rep, blocks, table, n_blk, slot_stack)
            req[victim, SLOT], req[victim, COMPUTED], req[victim, REGISTERED] = -1, 0, 0
            preemptions[victim] += 1
            rep[r, W_HEAD] = (rep[r, W_HEAD] - 1) % wq.shape[1]
            wq[r, rep[r, W_HEAD]] = victim
            rep[r, W_LEN] += 1
            preempted = True
            if victim == i:
                ok = False
                break
        if not ok:
            break
        if caching and req[i, REGISTERED] < min(upto // block_size, req[i, KEY_COUNT]):
            _register(r, i, req[i, SLOT], upto, block_size, req, keys, blocks, keymap, table)
        _schedule(r, i, size, done, req, rep)
        j += 1
    return preempted


@njit(cache=True)
def _admit(r, now, max_seqs, block_size, caching, preempt, req, rep, blocks, run, wq, slot_stack, table, n_blk,
           keymap, keys, admit, cached):
    """Admit waiting requests first come first served while they fit (module docstring, step 2)."""
    while rep[r, W_LEN] > 0 and rep[r, LEFT] > 0 and rep[r, N_RUN] < max_seqs:
        i = wq[r, rep[r, W_HEAD]]
        known = req[i, PROMPT] + req[i, GENERATED]
        first_key = req[i, KEY_START]
        hits = 0
        evictable = 0
        if caching:
            limit = min(req[i, KEY_COUNT], (known - 1) // block_size)
            while hits < limit and keymap[r, keys[first_key + hits]] >= 0:
                if blocks[r, keymap[r, keys[first_key + hits]], REF] == 0:
                    evictable += 1
                hits += 1
        size = min(known - hits * block_size, rep[r, LEFT])
        reserve = hits * block_size + size if preempt else req[i, PROMPT] + req[i, OUTPUT]
        need = (reserve + block_size - 1) // block_size - hits
        if need + evictable > rep[r, N_FREE]:
            break
        rep[r, W_HEAD] = (rep[r, W_HEAD] + 1) % wq.shape[1]
        rep[r, W_LEN] -= 1
        rep[r, N_SLOT] -= 1
        s = slot_stack[r, rep[r, N_SLOT]]
        req[i, SLOT] = s
        for h in range(hits):
            b = keymap[r, keys[first_key + h]]
            if blocks[r, b, REF] == 0:
                _unlink(r, b, rep, blocks)
            blocks[r, b, REF] += 1
            table[r, s, h] = b
        n_blk[r, s] = hits
        _grow(r, s, reserve, block_size, rep, blocks, table, n_blk, keymap)
        req[i, COMPUTED] = hits * block_size
        req[i, REGISTERED] = hits
        if caching:
            _register(r, i, s, req[i, COMPUTED] + size, block_size, req, keys, blocks, keymap, table)
        if np.isnan(admit[i]):
            admit[i] = now
            cached[i] = hits * block_size
        _schedule(r, i, size, hits * block_size, req, rep)
        run[r, rep[r, N_RUN]] = i
        rep[r, N_RUN] += 1


@njit(cache=True)
def _schedule(r, i, size, done, req, rep):
    """Give request ``i`` (``done`` tokens computed) ``size`` tokens of replica ``r``'s iteration."""
    req[i, SCHED] = size
    rep[r, LEFT] -= size
    if size == 1 and done == req[i, PROMPT] + req[i, GENERATED] - 1 and req[i, GENERATED] > 0:
        rep[r, DECODES] += 1
        rep[r, DECODE_CONTEXT] += done + 1
    else:
        rep[r, PREFILL] += size
        rep[r, POSITIONS] += size * done + size * (size + 1) // 2
        rep[r, PREFILL_KV] += done + size


@njit(cache=True)
def _unlink(r, b, rep, blocks):
    """Take block ``b`` out of replica ``r``'s free queue."""
    p, q = blocks[r, b, PREV], blocks[r, b, NEXT]
    if p >= 0:
        blocks[r, p, NEXT] = q
    else:
        rep[r, FHEAD] = q
    if q >= 0:
        blocks[r, q, PREV] = p
    else:
        rep[r, FTAIL] = p
    rep[r, N_FREE] -= 1


@njit(cache=True)
def _grow(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap):
    """Give slot ``s`` blocks for ``tokens`` tokens from the free queue's head; False if too few."""
    need = (tokens + block_size - 1) // block_size - n_blk[r, s]
    if need <= 0:
        return True
    if need > rep[r, N_FREE]:
        return False
    for _ in range(need):
        b = rep[r, FHEAD]  # unlinked here rather than by _unlink: a call costs more
        rep[r, FHEAD] = blocks[r, b, NEXT]
        if rep[r, FHEAD] >= 0:
            blocks[r, rep[r, FHEAD], PREV] = -1
        else:
            rep[r, FTAIL] = -1
        rep[r, N_FREE] -= 1
        if blocks[r, b, KEY] >= 0:  # evict the cached content this block held
            keymap[r, blocks[r, b, KEY]] = -1
            blocks[r, b, KEY] = -1
        blocks[r, b, REF] = 1
        table[r, s, n_blk[r, s]] = b
        n_blk[r, s] += 1
    return True


@njit(cache=True)
def _release(r, s, rep, blocks, table, n_blk, slot_stack):
    """Free slot ``s``'s blocks, last block first, to the free queue's tail; free the slot."""
    for q in range(n_blk[r, s] - 1, -1, -1):
        b = table[r, s, q]
        blocks[r, b, REF] -= 1
        if blocks[r, b, REF] == 0:
            last = rep[r, FTAIL]
            blocks[r, b, PREV], blocks[r, b, NEXT] = last, -1
            if last >= 0:
                blocks[r, last, NEXT] = b
            else:
                rep[r, FHEAD] = b
            rep[r, FTAIL] = b
            rep[r, N_FREE] += 1
    n_blk[r, s] = 0
    slot_stack[r, rep[r, N_SLOT]] = s
    rep[r, N_SLOT] += 1


@njit(cache=True)
def _register(r, i, s, tokens, block_size, req, keys, blocks, keymap, table):
    """Cache request ``i``'s full prompt blocks up to ``tokens`` under their content keys."""
    upto = min(tokens // block_size, req[i, KEY_COUNT])
    for q in range(req[i, REGISTERED], upto):
        b = table[r, s, q]
        key = keys[req[i, KEY_START] + q]
        if blocks[r, b, KEY] < 0 and keymap[r, key] < 0:
            keymap[r, key] = b
            blocks[r, b, KEY] = key
    req[i, REGISTERED] = max(req[i, REGISTERED], upto)
