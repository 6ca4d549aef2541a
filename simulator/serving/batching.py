"""The request-level continuous-batching engine, compiled with numba.

One loop serves ``R >= 1`` replicas behind a router on one clock. Events are iteration
ends and request arrivals; at equal times iteration ends come first (requests leave), then
arrivals (routed in index order), then idle or finished replicas start their next
iteration, so a request arriving exactly at a boundary is admitted at it.

At each boundary a replica admits waiting requests first-come-first-served while fewer
than ``max_batch`` run and, with a KV-cache limit, while the prompt+output tokens reserved
by running requests fit. Without chunking a newly admitted request's whole prompt is
prefilled in that iteration, which emits its first token; every later iteration emits one
token per running request. With a chunked-prefill budget, decodes take one token each and
prompt chunks fill the rest of the budget in admission order. A request leaves after the
iteration that emits its last token. Requests must be sorted by arrival time.

Without chunking every running request advances one token per iteration, so a request
admitted in a replica's iteration ``j`` leaves after iteration ``j + O − 1``: the engine keeps
a min-heap of those iteration numbers and running sums of the batch's context, and an
iteration costs O(admissions + departures) instead of O(batch). Chunked prefill needs each
request's progress and walks the batch every iteration.
"""

from __future__ import annotations

import numpy as np
from numba import njit

POLICY_ROUND_ROBIN = 0
POLICY_LEAST_OUTSTANDING = 1
# Iteration-model kinds (first entry of a parameter vector, see simulator.serving.iteration).
KIND_LINEAR = 0.0
KIND_ROOFLINE = 1.0
KIND_OPERATOR = 2.0


@njit(cache=True)
def run_batching(arrival, prompt, output, params, max_batch, kv_capacity, chunk_budget,
                 n_replicas, policy, admit, first, finish, replica_of):
    """Simulate; fill ``admit``, ``first``, ``finish`` and ``replica_of``; return iterations run.

    ``kv_capacity`` and ``chunk_budget`` are -1 when unlimited / off.
    """
    return run_batching_loop(arrival, prompt, output, params, max_batch, kv_capacity, chunk_budget,
                             n_replicas, policy, admit, first, finish, replica_of, 0.0)


@njit(cache=True)
def run_batching_loop(arrival, prompt, output, params, max_batch, kv_capacity, chunk_budget,
                      n_replicas, policy, admit, first, finish, replica_of, delay):
    """:func:`run_batching`, with closed-loop arrivals.

    Arrivals that are NaN are not yet sent: each time a request finishes, the first of them
    arrives ``delay`` seconds later (written into ``arrival``). So ``N`` leading finite arrivals
    followed by NaNs is a closed loop of ``N`` users with zero think time.
    """
    n = arrival.shape[0]
    pend = 0
    while pend < n and not np.isnan(arrival[pend]):
        pend += 1
    inf = np.inf
    plain = chunk_budget < 0
    t_end = np.full(n_replicas, inf)
    queue_head = np.full(n_replicas, -1, dtype=np.int64)
    queue_tail = np.full(n_replicas, -1, dtype=np.int64)
    next_in_queue = np.full(n, -1, dtype=np.int64)
    n_running = np.zeros(n_replicas, dtype=np.int64)
    kv_used = np.zeros(n_replicas, dtype=np.int64)
    outstanding = np.zeros(n_replicas, dtype=np.int64)
    # Plain mode: iteration numbers, departure heaps, the batch's context and its newcomers.
    iteration = np.zeros(n_replicas, dtype=np.int64)
    heap_key = np.empty((n_replicas, max_batch), dtype=np.int64)
    heap_val = np.empty((n_replicas, max_batch), dtype=np.int64)
    context = np.zeros(n_replicas, dtype=np.int64)  # Σ (prompt + generated) over running
    decoding = np.zeros(n_replicas, dtype=np.int64)  # requests decoding in the current iteration
    newcomers = np.empty((n_replicas, max_batch), dtype=np.int64)
    n_new = np.zeros(n_replicas, dtype=np.int64)
    # Chunked mode: the batch in admission order and each request's progress.
    running = np.empty((n_replicas, max_batch), dtype=np.int64)
    prefilled = np.zeros(n, dtype=np.int64)
    generated = np.zeros(n, dtype=np.int64)
    chunk_now = np.zeros(n, dtype=np.int64)
    iterations = 0
    i_next = 0
    while True:
        t_iter = inf
        for r in range(n_replicas):
            if t_end[r] < t_iter:
                t_iter = t_end[r]
        t_arrival = arrival[i_next] if i_next < pend else inf
        if t_iter == inf and t_arrival == inf:
            break
        now = min(t_iter, t_arrival)
        # 1. Iterations ending now: emit tokens, let finished requests leave (closed loop: and send).
        for r in range(n_replicas):
            if t_end[r] != now:
                continue
            if plain:
                for q in range(n_new[r]):
                    first[newcomers[r, q]] = now
                context[r] += decoding[r] + n_new[r]
                n_new[r] = 0
                while n_running[r] > 0 and heap_key[r, 0] == iteration[r]:
                    i = _heap_pop(heap_key, heap_val, r, n_running[r])
                    n_running[r] -= 1
                    finish[i] = now
                    if pend < n:
                        arrival[pend] = now + delay
                        pend += 1
                    context[r] -= prompt[i] + output[i]
                    kv_used[r] -= prompt[i] + output[i]
                    outstanding[r] -= 1
                iteration[r] += 1
            else:
                departed = _finish_chunked(r, now, running, n_running, prompt, output, prefilled,
                                           generated, chunk_now, first, finish, kv_used)
                outstanding[r] -= departed
                for _ in range(departed):
                    if pend < n:
                        arrival[pend] = now + delay
                        pend += 1
            t_end[r] = inf
        # 2. Arrivals now: route each to a replica's queue.
        while i_next < pend and arrival[i_next] <= now:
            i = i_next
            if policy == POLICY_ROUND_ROBIN:
                r = i % n_replicas
            else:
                r = 0
                for q in range(1, n_replicas):
                    if outstanding[q] < outstanding[r]:
                        r = q
            replica_of[i] = r
            if queue_tail[r] < 0:
                queue_head[r] = i
            else:
                next_in_queue[queue_tail[r]] = i
            queue_tail[r] = i
            outstanding[r] += 1
            i_next += 1
        # 3. Replicas without an iteration in progress start one if they have work.
        for r in range(n_replicas):
            if t_end[r] != inf:
                continue
            before = n_running[r]
            prefill_tokens = 0
            prefill_context = 0.0
            while queue_head[r] >= 0 and n_running[r] < max_batch:
                i = queue_head[r]
                need = prompt[i] + output[i]
                if kv_capacity >= 0 and kv_used[r] + need > kv_capacity:
                    break
                queue_head[r] = next_in_queue[i]
                if queue_head[r] < 0:
                    queue_tail[r] = -1
                kv_used[r] += need
                admit[i] = now
                if plain:
                    _heap_push(heap_key, heap_val, r, n_running[r], iteration[r] + output[i] - 1, i)
                    newcomers[r, n_new[r]] = i
                    n_new[r] += 1
                    prefill_tokens += prompt[i]
                    prefill_context += prompt[i] * (prompt[i] + 1) / 2.0
                else:
                    running[r, n_running[r]] = i
                n_running[r] += 1
            if n_running[r] == 0:
                continue
            if plain:
                decoding[r] = before
                dt = iteration_seconds(params, prefill_tokens, before, context[r] + prefill_context,
                                       context[r] + prefill_tokens, context[r])
                for q in range(n_new[r]):
                    context[r] += prompt[newcomers[r, q]]
            else:
                dt = _compose_chunked(r, running, n_running[r], prompt, prefilled, generated,
                                      chunk_now, chunk_budget, params)
            t_end[r] = now + dt
            iterations += 1
    return iterations


@njit(cache=True)
def _heap_push(keys, values, r, size, key, value):
    """Push onto replica ``r``'s min-heap of ``size`` entries."""
    j = size
    while j > 0:
        parent = (j - 1) // 2
        if keys[r, parent] <= key:
            break
        keys[r, j] = keys[r, parent]
        values[r, j] = values[r, parent]
        j = parent
    keys[r, j] = key
    values[r, j] = value


@njit(cache=True)
def _heap_pop(keys, values, r, size):
    """Pop the smallest entry of replica ``r``'s heap of ``size`` entries; return its value."""
    top = values[r, 0]
    last = size - 1
    key, value = keys[r, last], values[r, last]
    j = 0
    while True:
        child = 2 * j + 1
        if child >= last:
            break
        if child + 1 < last and keys[r, child + 1] < keys[r, child]:
            child += 1
        if keys[r, child] >= key:
            break
        keys[r, j] = keys[r, child]
        values[r, j] = values[r, child]
        j = child
    keys[r, j] = key
    values[r, j] = value
    return top


@njit(cache=True)
def _finish_chunked(r, now, running, n_running, prompt, output, prefilled, generated, chunk_now,
                    first, finish, kv_used):
    """End an iteration in chunked mode; return how many requests left."""
    kept = 0
    departed = 0
    for j in range(n_running[r]):
        i = running[r, j]
        if chunk_now[i] > 0:
            prefilled[i] += chunk_now[i]
            chunk_now[i] = 0
            if prefilled[i] == prompt[i]:
                generated[i] = 1
                first[i] = now
        elif prefilled[i] == prompt[i]:
            generated[i] += 1
        if generated[i] == output[i]:
            finish[i] = now
            kv_used[r] -= prompt[i] + output[i]
            departed += 1
        else:
            running[r, kept] = i
            kept += 1
    n_running[r] = kept
    return departed


@njit(cache=True)
def _compose_chunked(r, running, count, prompt, prefilled, generated, chunk_now, chunk_budget, params):
    """Decide what a chunked iteration processes (``chunk_now``) and return its duration."""
    prefill_tokens = 0
    decode_requests = 0
    context_sum = 0.0
    kv_read = 0.0
    for j in range(count):
        i = running[r, j]
        if prefilled[i] == prompt[i]:
            position = prompt[i] + generated[i]
            decode_requests += 1
            context_sum += position
            kv_read += position
    decode_context = kv_read
    budget = chunk_budget - decode_requests
    for j in range(count):
        i = running[r, j]
        left = prompt[i] - prefilled[i]
        if left <= 0 or budget <= 0:
            continue
        size = min(left, budget)
        budget -= size
        chunk_now[i] = size
        done = prefilled[i]
        prefill_tokens += size
        context_sum += size * done + size * (size + 1) / 2.0
        kv_read += done + size
    return iteration_seconds(params, prefill_tokens, decode_requests, context_sum, kv_read, decode_context)


@njit(cache=True)
def iteration_seconds(params, prefill_tokens, decode_requests, context_sum, kv_tokens_read, decode_context):
    """Duration of one iteration.

    Used by this engine and by :mod:`simulator.serving.vllm_engine` (whose numba cache must be
    cleared, or that file touched, when this function changes: numba keys a cache on the
    source file of the cached function only).

    Args:
        params: an iteration model's parameter vector.
        prefill_tokens: prompt tokens processed in this iteration.
        decode_requests: requests generating one token in this iteration.
        context_sum: sum over processed tokens of their position in their sequence.
        kv_tokens_read: tokens of KV cache read by this iteration's attention.
        decode_context: the part of ``context_sum`` (and of ``kv_tokens_read``) from decodes.
    """
    if params[0] == KIND_LINEAR:
        return params[1] + params[2] * (prefill_tokens + decode_requests)
    tokens = prefill_tokens + decode_requests
    if params[0] == KIND_ROOFLINE:
        compute = params[2] * tokens + params[3] * context_sum
        memory = params[4] + params[5] * kv_tokens_read
        return params[1] + max(compute, memory) + params[6] + params[7] * tokens
    # KIND_OPERATOR: GEMMs, prefill attention, decode attention, all-reduce, overhead, summed.
    experts = 0.0
    if params[5] > 0 and tokens > 0:
        experts = params[5] * (1.0 - (1.0 - params[6] / params[5]) ** tokens)
    gemm = max(params[2] * tokens, params[3] + params[4] * experts) if tokens > 0 else 0.0
    prefill_positions = context_sum - decode_context
    prefill_kv = kv_tokens_read - decode_context
    attention = max(params[7] * prefill_positions, params[8] * prefill_kv)
    attention += max(params[7] * decode_context, params[8] * decode_context)
    allreduce = params[9] + params[10] * tokens if tokens > 0 else 0.0
    return params[1] + gemm + attention + allreduce
