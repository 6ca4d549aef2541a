"""KV blocks of the vLLM-policy engine: the GPU's free queue and prefix cache, and a host tier.

State layout (shared with :mod:`simulator.serving.vllm_engine`, whose docstring says how the
loop uses it):

* ``blocks[r, b]``: GPU block ``b`` of replica ``r``: its cached content ``KEY`` (or −1), ``REF``
  (requests using it) and, while free, its ``PREV``/``NEXT`` in the free queue (−1 at the ends).
  ``keymap[r, key]``: the block caching ``key`` (or −1); ``table[r, s, :n_blk[r, s]]``: slot
  ``s``'s blocks.
* ``host[r, key]``: the host-memory tier (KV offload): ``H_IN`` (1 while ``key`` is held there) and
  its ``H_PREV``/``H_NEXT`` in the tier's LRU list (head: least recently used). The tier's
  list ends, size, capacity and the blocks pinned by preempted requests' spilled KV are
  columns of ``rep`` (``HOST_HEAD`` … ``HOST_CAP``). A prefix block evicted from the GPU is
  copied to the tier (the copy runs beside compute: no time is charged); a lookup that finds
  a block there loads it instead of recomputing it (charged by the engine per token loaded).
  The tier is inclusive: a block loaded back stays in it (moved to the most-recent end).

With no host tier (capacity 0) every helper here behaves as vLLM's GPU-only prefix cache:
freed blocks join the free queue's tail, allocation takes its head and drops what it cached.
"""

from __future__ import annotations

from numba import njit

from simulator.serving.vllm_layout import (
    FHEAD,
    FTAIL,
    H_IN,
    H_NEXT,
    H_PREV,
    HOST_CAP,
    HOST_HEAD,
    HOST_PINNED,
    HOST_SIZE,
    HOST_TAIL,
    KEY,
    KEY_COUNT,
    KEY_START,
    N_FREE,
    N_SLOT,
    NEXT,
    PREV,
    REF,
    REGISTERED,
)


@njit(cache=True, inline="always")
def _take_out(r, node, links, prev, next_, rep, head, tail):
    """Take ``node`` out of replica ``r``'s doubly linked list: ``links[r, node, prev / next_]`` its
    neighbours (−1 at the ends), ``rep[r, head / tail]`` the list's ends."""
    p, q = links[r, node, prev], links[r, node, next_]
    if p >= 0:
        links[r, p, next_] = q
    else:
        rep[r, head] = q
    if q >= 0:
        links[r, q, prev] = p
    else:
        rep[r, tail] = p


@njit(cache=True)
def unlink(r, b, rep, blocks):
    """Take block ``b`` out of replica ``r``'s free queue."""
    _take_out(r, b, blocks, PREV, NEXT, rep, FHEAD, FTAIL)
    rep[r, N_FREE] -= 1


@njit(cache=True)
def grow(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap):
    """Give slot ``s`` blocks for ``tokens`` tokens from the free queue's head; False if too few.

    A block taken from the queue drops the prefix it cached (no host tier: see :func:`grow_tiered`).
    """
    need = (tokens + block_size - 1) // block_size - n_blk[r, s]
    if need <= 0:
        return True
    if need > rep[r, N_FREE]:
        return False
    for _ in range(need):
        b = rep[r, FHEAD]  # unlinked here rather than by unlink: a call costs more
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
def grow_tiered(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap, host):
    """:func:`grow` with a host tier: each prefix dropped from the GPU moves to the tier first.

    A separate function so that :func:`grow`, on every block boundary of a run without a tier,
    stays as small as it was (a call to the tier inside it, never taken, slowed the engine by 40%).
    """
    need = (tokens + block_size - 1) // block_size - n_blk[r, s]
    if 0 < need <= rep[r, N_FREE]:  # the blocks grow will take: the free queue's first ``need``
        b = rep[r, FHEAD]
        for _ in range(need):
            if blocks[r, b, KEY] >= 0:
                host_store(r, blocks[r, b, KEY], rep, host)
            b = blocks[r, b, NEXT]
    return grow(r, s, tokens, block_size, rep, blocks, table, n_blk, keymap)


@njit(cache=True)
def release(r, s, rep, blocks, table, n_blk, slot_stack):
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
def register(r, i, s, tokens, block_size, req, keys, blocks, keymap, table):
    """Cache request ``i``'s full prompt blocks up to ``tokens`` under their content keys."""
    upto = min(tokens // block_size, req[i, KEY_COUNT])
    for q in range(req[i, REGISTERED], upto):
        b = table[r, s, q]
        key = keys[req[i, KEY_START] + q]
        if blocks[r, b, KEY] < 0 and keymap[r, key] < 0:
            keymap[r, key] = b
            blocks[r, b, KEY] = key
    req[i, REGISTERED] = max(req[i, REGISTERED], upto)


@njit(cache=True)
def host_store(r, key, rep, host):
    """Put ``key`` at the host tier's most-recent end (moving it there if held), evicting the least
    recently used key if the tier is full."""
    if host[r, key, H_IN]:
        if rep[r, HOST_TAIL] == key:
            return
        host_drop(r, key, rep, host)
    elif rep[r, HOST_SIZE] + rep[r, HOST_PINNED] >= rep[r, HOST_CAP]:
        if rep[r, HOST_SIZE] == 0:
            return  # the tier is all pinned by spilled requests
        host_drop(r, rep[r, HOST_HEAD], rep, host)
    host[r, key, H_IN] = 1
    host[r, key, H_PREV], host[r, key, H_NEXT] = rep[r, HOST_TAIL], -1
    if rep[r, HOST_TAIL] >= 0:
        host[r, rep[r, HOST_TAIL], H_NEXT] = key
    else:
        rep[r, HOST_HEAD] = key
    rep[r, HOST_TAIL] = key
    rep[r, HOST_SIZE] += 1


@njit(cache=True)
def host_drop(r, key, rep, host):
    """Take ``key`` out of the host tier."""
    _take_out(r, key, host, H_PREV, H_NEXT, rep, HOST_HEAD, HOST_TAIL)
    host[r, key, H_IN] = 0
    rep[r, HOST_SIZE] -= 1


@njit(cache=True)
def host_pin(r, n_blocks, rep, host):
    """Reserve ``n_blocks`` of the host tier for a preempted request's KV, evicting least recently
    used prefix blocks for room; False (nothing changed) when the tier cannot hold them."""
    if n_blocks > rep[r, HOST_CAP] - rep[r, HOST_PINNED]:
        return False
    while rep[r, HOST_SIZE] + rep[r, HOST_PINNED] + n_blocks > rep[r, HOST_CAP]:
        host_drop(r, rep[r, HOST_HEAD], rep, host)
    rep[r, HOST_PINNED] += n_blocks
    return True
