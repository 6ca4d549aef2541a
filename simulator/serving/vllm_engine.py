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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.serving.batching import iteration_seconds
from simulator.serving.routing import pick_replica


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
    max_blocks = 1
    for i in range(n):
        max_blocks = max(max_blocks, (prompt[i] + output[i] + block_size - 1) // block_size)
    t_end = np.full(n_replicas, inf)
    outstanding = np.zeros(n_replicas, dtype=np.int64)
    wq = np.empty((n_replicas, n + 1), dtype=np.int64)
    w_head = np.zeros(n_replicas, dtype=np.int64)
    w_len = np.zeros(n_replicas, dtype=np.int64)
    run = np.empty((n_replicas, max_seqs), dtype=np.int64)
    n_run = np.zeros(n_replicas, dtype=np.int64)
    bkey = np.full((n_replicas, total_blocks), -1, dtype=np.int64)
    bref = np.zeros((n_replicas, total_blocks), dtype=np.int64)
    fprev = np.empty((n_replicas, total_blocks), dtype=np.int64)
    fnext = np.empty((n_replicas, total_blocks), dtype=np.int64)
    fhead = np.zeros(n_replicas, dtype=np.int64)
    ftail = np.full(n_replicas, total_blocks - 1, dtype=np.int64)
    n_free = np.full(n_replicas, total_blocks, dtype=np.int64)
    for r in range(n_replicas):
        for b in range(total_blocks):
            fprev[r, b] = b - 1
            fnext[r, b] = b + 1 if b + 1 < total_blocks else -1
    keymap = np.full((n_replicas, max(n_keys, 1)), -1, dtype=np.int64)
    table = np.empty((n_replicas, max_seqs, max_blocks), dtype=np.int64)
    n_blk = np.zeros((n_replicas, max_seqs), dtype=np.int64)
    slot_stack = np.empty((n_replicas, max_seqs), dtype=np.int64)
    n_slot = np.full(n_replicas, max_seqs, dtype=np.int64)
    for r in range(n_replicas):
        for q in range(max_seqs):
            slot_stack[r, q] = max_seqs - 1 - q
    slot = np.full(n, -1, dtype=np.int64)
    computed = np.zeros(n, dtype=np.int64)
    generated = np.zeros(n, dtype=np.int64)
    sched = np.zeros(n, dtype=np.int64)
    registered = np.zeros(n, dtype=np.int64)
    state = (bkey, bref, fprev, fnext, fhead, ftail, n_free, keymap, table, n_blk)
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
        # 1. Iterations ending now: computed tokens advance, tokens are sampled, requests leave.
        for r in range(n_replicas):
            if t_end[r] != now:
                continue
            kept = 0
            for j in range(n_run[r]):
                i = run[r, j]
                if sched[i] > 0:
                    computed[i] += sched[i]
                    sched[i] = 0
                    if computed[i] >= prompt[i] + generated[i]:
                        generated[i] += 1
                        if np.isnan(first[i]):
                            first[i] = now
                if generated[i] == output[i]:
                    finish[i] = now
                    if pend < n:
                        arrival[pend] = now + delay
                        pend += 1
                    _release(r, slot[i], state, slot_stack, n_slot)
                    outstanding[r] -= 1
                else:
                    run[r, kept] = i
                    kept += 1
            n_run[r] = kept
            t_end[r] = inf
        # 2. Arrivals now: route each to a replica's waiting queue.
        while i_next < pend and arrival[i_next] <= now:
            i = i_next
            r = pick_replica(i, policy, n_replicas, outstanding, route_key, ranking, load_factor, depth)
            replica_of[i] = r
            wq[r, (w_head[r] + w_len[r]) % (n + 1)] = i
            w_len[r] += 1
            outstanding[r] += 1
            i_next += 1
        # 3. Idle replicas with work schedule their next iteration.
        for r in range(n_replicas):
            if t_end[r] != inf or n_run[r] + w_len[r] == 0:
                continue
            left = budget
            preempted = False
            j = 0
            while j < n_run[r] and left > 0:
                i = run[r, j]
                size = min(prompt[i] + generated[i] - computed[i], left)
                upto = computed[i] + size
                ok = True
                while (upto + block_size - 1) // block_size > n_blk[r, slot[i]] and not _grow(
                        r, slot[i], upto, block_size, state):
                    victim = run[r, n_run[r] - 1]
                    n_run[r] -= 1
                    _release(r, slot[victim], state, slot_stack, n_slot)
                    slot[victim] = -1
                    computed[victim] = 0
                    registered[victim] = 0
                    preemptions[victim] += 1
                    w_head[r] = (w_head[r] - 1) % (n + 1)
                    wq[r, w_head[r]] = victim
                    w_len[r] += 1
                    preempted = True
                    if victim == i:
                        ok = False
                        break
                if not ok:
                    break
                if caching and registered[i] < min(upto // block_size, key_count[i]):
                    _register(r, i, slot[i], upto, key_start, key_count, keys, block_size, registered, state)
                sched[i] = size
                left -= size
                j += 1
            while not preempted and w_len[r] > 0 and left > 0 and n_run[r] < max_seqs:
                i = wq[r, w_head[r]]
                known = prompt[i] + generated[i]
                hits = 0
                evictable = 0
                if caching:
                    limit = min(key_count[i], (known - 1) // block_size)
                    while hits < limit and keymap[r, keys[key_start[i] + hits]] >= 0:
                        if bref[r, keymap[r, keys[key_start[i] + hits]]] == 0:
                            evictable += 1
                        hits += 1
                size = min(known - hits * block_size, left)
                reserve = hits * block_size + size if preempt else prompt[i] + output[i]
                need = (reserve + block_size - 1) // block_size - hits
                if need + evictable > n_free[r]:
                    break
                w_head[r] = (w_head[r] + 1) % (n + 1)
                w_len[r] -= 1
                n_slot[r] -= 1
                s = slot_stack[r, n_slot[r]]
                slot[i] = s
                for h in range(hits):
                    b = keymap[r, keys[key_start[i] + h]]
                    if bref[r, b] == 0:
                        _unlink(r, b, fprev, fnext, fhead, ftail, n_free)
                    bref[r, b] += 1
                    table[r, s, h] = b
                n_blk[r, s] = hits
                _grow(r, s, reserve, block_size, state)
                computed[i] = hits * block_size
                registered[i] = hits
                if caching:
                    _register(r, i, s, computed[i] + size, key_start, key_count, keys, block_size,
                              registered, state)
                if np.isnan(admit[i]):
                    admit[i] = now
                    cached[i] = hits * block_size
                sched[i] = size
                left -= size
                run[r, n_run[r]] = i
                n_run[r] += 1
            if left == budget:
                continue  # nothing fits (cannot happen when every request fits the KV cache)
            t_end[r] = now + _step_seconds(r, run, n_run[r], prompt, generated, computed, sched, params)
            iterations += 1
    return iterations


@njit(cache=True)
def _step_seconds(r, run, count, prompt, generated, computed, sched, params):
    """Duration of the iteration whose tokens are ``sched``."""
    prefill_tokens = 0
    decodes = 0
    positions = 0.0
    prefill_kv = 0.0
    decode_context = 0.0
    for j in range(count):
        i = run[r, j]
        size = sched[i]
        if size == 0:
            continue
        done = computed[i]
        if generated[i] > 0 and size == 1 and done == prompt[i] + generated[i] - 1:
            decodes += 1
            decode_context += done + 1
        else:
            prefill_tokens += size
            positions += size * done + size * (size + 1) / 2.0
            prefill_kv += done + size
    return iteration_seconds(params, prefill_tokens, decodes, positions + decode_context,
                             prefill_kv + decode_context, decode_context)


@njit(cache=True)
def _unlink(r, b, fprev, fnext, fhead, ftail, n_free):
    """Take block ``b`` out of replica ``r``'s free queue."""
    p, q = fprev[r, b], fnext[r, b]
    if p >= 0:
        fnext[r, p] = q
    else:
        fhead[r] = q
    if q >= 0:
        fprev[r, q] = p
    else:
        ftail[r] = p
    n_free[r] -= 1


@njit(cache=True)
def _grow(r, s, tokens, block_size, state):
    """Give slot ``s`` blocks for ``tokens`` tokens from the free queue's head; False if too few."""
    bkey, bref, fprev, fnext, fhead, ftail, n_free, keymap, table, n_blk = state
    need = (tokens + block_size - 1) // block_size - n_blk[r, s]
    if need <= 0:
        return True
    if need > n_free[r]:
        return False
    for _ in range(need):
        b = fhead[r]
        _unlink(r, b, fprev, fnext, fhead, ftail, n_free)
        if bkey[r, b] >= 0:  # evict the cached content this block held
            keymap[r, bkey[r, b]] = -1
            bkey[r, b] = -1
        bref[r, b] = 1
        table[r, s, n_blk[r, s]] = b
        n_blk[r, s] += 1
    return True


@njit(cache=True)
def _release(r, s, state, slot_stack, n_slot):
    """Free slot ``s``'s blocks, last block first, to the free queue's tail; free the slot."""
    bkey, bref, fprev, fnext, fhead, ftail, n_free, keymap, table, n_blk = state
    for q in range(n_blk[r, s] - 1, -1, -1):
        b = table[r, s, q]
        bref[r, b] -= 1
        if bref[r, b] == 0:
            last = ftail[r]
            fprev[r, b] = last
            fnext[r, b] = -1
            if last >= 0:
                fnext[r, last] = b
            else:
                fhead[r] = b
            ftail[r] = b
            n_free[r] += 1
    n_blk[r, s] = 0
    slot_stack[r, n_slot[r]] = s
    n_slot[r] += 1


@njit(cache=True)
def _register(r, i, s, tokens, key_start, key_count, keys, block_size, registered, state):
    """Cache request ``i``'s full prompt blocks up to ``tokens`` under their content keys."""
    bkey, bref, fprev, fnext, fhead, ftail, n_free, keymap, table, n_blk = state
    upto = min(tokens // block_size, key_count[i])
    for q in range(registered[i], upto):
        b = table[r, s, q]
        key = keys[key_start[i] + q]
        if bkey[r, b] < 0 and keymap[r, key] < 0:
            keymap[r, key] = b
            bkey[r, b] = key
    registered[i] = max(registered[i], upto)
