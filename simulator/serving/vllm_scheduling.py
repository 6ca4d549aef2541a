"""Scheduling one replica's next iteration under the vLLM V1 policy: running requests, then admissions.

Steps 1 and 2 of :mod:`simulator.serving.vllm_engine`'s docstring, for the requests the
engine's end-of-iteration pass did not schedule itself: :func:`schedule_running` goes on through
the running requests from where blocks ran out (preempting the newest, its KV spilled to the
host tier when configured), :func:`admit_waiting` admits waiting requests first come first
served (prefix-cache hits, then host-tier hits, or the KV a request arrived with or spilled),
and :func:`schedule` adds a request's tokens to the iteration's sums.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulator.serving.kv_blocks import (
    grow,
    grow_tiered,
    host_pin,
    host_store,
    register,
    release,
    unlink,
)
from simulator.serving.vllm_layout import (
    COMPUTED,
    DECODE_CONTEXT,
    DECODES,
    DRAFTS,
    F_SPILL,
    GENERATED,
    H_IN,
    HOST_CAP,
    HOST_PINNED,
    KEY_COUNT,
    KEY_START,
    LEFT,
    LOADED,
    N_FREE,
    N_RUN,
    N_SLOT,
    OUTPUT,
    POSITIONS,
    PREFILL,
    PREFILL_KV,
    PROMPT,
    REF,
    REGISTERED,
    SCHED,
    SLOT,
    SPEC_CONTEXT,
    SPEC_DEPTH,
    SPEC_SEQS,
    SPILLED,
    W_HEAD,
    W_LEN,
)


@njit(cache=True)
def schedule_running(r, j, block_size, caching, spec_k, features, req, rep, blocks, run, wq, slot_stack, table,
                      n_blk, keymap, keys, host, preemptions):
    """Schedule ``run[r, j:]`` from the budget left, preempting the newest running request while
    blocks are short (module docstring, step 1); return whether any was preempted.
    """
    preempted = False
    while j < rep[r, N_RUN] and rep[r, LEFT] > 0:
        i = run[r, j]
        done = req[i, COMPUTED]
        size = tokens_toschedule(i, rep[r, LEFT], spec_k, req)
        upto = done + size
        ok = True
        while upto > n_blk[r, req[i, SLOT]] * block_size and not _grow(r, req[i, SLOT], upto, block_size, rep,
                                                                       blocks, table, n_blk, keymap, host):
            rep[r, N_RUN] -= 1
            victim = run[r, rep[r, N_RUN]]
            s = req[victim, SLOT]
            spill = (req[victim, COMPUTED] + block_size - 1) // block_size
            if features[F_SPILL] > 0 and spill > 0 and host_pin(r, spill, rep, host):
                req[victim, SPILLED] = req[victim, COMPUTED]
            release(r, s, rep, blocks, table, n_blk, slot_stack)
            req[victim, SLOT], req[victim, COMPUTED], req[victim, REGISTERED] = -1, 0, 0
            req[victim, DRAFTS] = 0
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
            register(r, i, req[i, SLOT], upto, block_size, req, keys, blocks, keymap, table)
        schedule(r, i, size, done, req, rep)
        j += 1
    return preempted


@njit(cache=True)
def admit_waiting(r, now, max_seqs, block_size, caching, preempt, preloaded, whole, req, rep, blocks, run, wq,
                  slot_stack, table, n_blk, keymap, keys, host, admit, cached, loaded):
    """Admit waiting requests first come first served while they fit (module docstring, step 2);
    ``whole``: only while what a request has to compute fits the budget left (prefill first)."""
    while rep[r, W_LEN] > 0 and rep[r, LEFT] > 0 and rep[r, N_RUN] < max_seqs:
        i = wq[r, rep[r, W_HEAD]]
        known = req[i, PROMPT] + req[i, GENERATED]
        first_key = req[i, KEY_START]
        hits = 0
        evictable = 0
        from_host = 0
        ready = 0  # tokens whose KV the request already has: arrived with it, or spilled to host
        spilled = req[i, SPILLED]
        arriving = preloaded and np.isnan(admit[i])
        if arriving:
            ready = req[i, PROMPT]
        elif caching:  # prompt blocks cached on the GPU are taken first (a spilled request's too)
            limit = min(req[i, KEY_COUNT], (known - 1) // block_size)
            while hits < limit and keymap[r, keys[first_key + hits]] >= 0:
                if blocks[r, keymap[r, keys[first_key + hits]], REF] == 0:
                    evictable += 1
                hits += 1
            if rep[r, HOST_CAP] > 0 and spilled == 0:
                while hits + from_host < limit and host[r, keys[first_key + hits + from_host], H_IN] == 1:
                    from_host += 1
        if spilled > 0:  # the rest of its spilled KV comes back from the host tier
            ready = max(spilled - hits * block_size, 0)
        done = (hits + from_host) * block_size + ready
        if whole and known - done > rep[r, LEFT]:
            break
        size = min(known - done, rep[r, LEFT])
        reserve = done + size if preempt else req[i, PROMPT] + req[i, OUTPUT]
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
                unlink(r, b, rep, blocks)
            blocks[r, b, REF] += 1
            table[r, s, h] = b
        n_blk[r, s] = hits
        _grow(r, s, reserve, block_size, rep, blocks, table, n_blk, keymap, host)
        for h in range(hits, hits + from_host):
            host_store(r, keys[first_key + h], rep, host)  # to the most-recent end
        if spilled > 0:
            rep[r, HOST_PINNED] -= (spilled + block_size - 1) // block_size
            req[i, SPILLED] = 0
        rep[r, LOADED] += from_host * block_size + (ready if not arriving else 0)
        req[i, COMPUTED] = done
        req[i, REGISTERED] = hits
        if caching:
            register(r, i, s, done + size, block_size, req, keys, blocks, keymap, table)
        if np.isnan(admit[i]):
            admit[i] = now
            cached[i] = hits * block_size
            loaded[i] = from_host * block_size
        schedule(r, i, size, done, req, rep)
        run[r, rep[r, N_RUN]] = i
        rep[r, N_RUN] += 1


@njit(cache=True, inline="always")
def tokens_toschedule(i, room, spec_k, req):
    """Tokens request ``i`` computes next from ``room``: its prompt's rest (or a chunk of it), or one
    decode token and, speculating, the draft tokens verified with it."""
    done = req[i, COMPUTED]
    known = req[i, PROMPT] + req[i, GENERATED]
    size = min(known - done, room)
    if spec_k > 0 and done == known - 1 and req[i, GENERATED] > 0:
        size = 1 + max(min(spec_k, req[i, OUTPUT] - req[i, GENERATED] - 1, room - 1), 0)
    return size


@njit(cache=True)
def schedule(r, i, size, done, req, rep):
    """Give request ``i`` (``done`` tokens computed) ``size`` tokens of replica ``r``'s iteration."""
    req[i, SCHED] = size
    rep[r, LEFT] -= size
    if done == req[i, PROMPT] + req[i, GENERATED] - 1 and req[i, GENERATED] > 0:
        rep[r, DECODES] += 1
        rep[r, DECODE_CONTEXT] += done + 1
        d = size - 1
        if d > 0:
            req[i, DRAFTS] = d
            rep[r, PREFILL] += d
            rep[r, POSITIONS] += d * (done + 1) + d * (d + 1) // 2
            rep[r, SPEC_SEQS] += 1
            rep[r, SPEC_DEPTH] = max(rep[r, SPEC_DEPTH], d)
            rep[r, SPEC_CONTEXT] += done + 1
    else:
        rep[r, PREFILL] += size
        rep[r, POSITIONS] += size * done + size * (size + 1) // 2
        rep[r, PREFILL_KV] += done + size


@njit(cache=True, inline="always")
def _grow(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap, host):
    """:func:`~simulator.serving.kv_blocks.grow`, through the host tier when the replica has one."""
    if rep[r, HOST_CAP] == 0:
        return grow(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap)
    return grow_tiered(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap, host)
