"""Column layout of the vLLM-policy engine's integer state (:mod:`simulator.serving.vllm_engine`).

``req[i]`` per request, ``rep[r]`` per replica, ``blocks[r, b]`` per GPU KV block and
``host[r, key]`` per prefix key of the host tier (:mod:`simulator.serving.kv_blocks`).
"""

# req: prompt and output tokens, tokens computed (KV in cache), generated, scheduled in the
# iteration in progress, slot (−1 when not running), prompt blocks cached, the request's block
# keys, draft tokens scheduled for verification, verification steps taken and the tokens they
# emitted, tokens spilled to host.
(PROMPT, OUTPUT, COMPUTED, GENERATED, SCHED, SLOT, REGISTERED, KEY_START, KEY_COUNT, DRAFTS, STEPS,
 SPILLED, EMITTED) = range(13)
REQ_COLUMNS = 13

# rep: running requests, waiting ring (head, length), free slots, free-block queue, budget left.
N_RUN, W_HEAD, W_LEN, N_SLOT, FHEAD, FTAIL, N_FREE, LEFT = range(8)
# The iteration's tokens (arguments of iteration_seconds), its speculative decodes (sequences,
# most drafts, their context) and the tokens it loads from the host tier.
PREFILL, DECODES, POSITIONS, PREFILL_KV, DECODE_CONTEXT, SPEC_SEQS, SPEC_DEPTH, SPEC_CONTEXT, LOADED = range(8, 17)
# The host tier: LRU list ends, keys held, blocks pinned by spilled requests, capacity in blocks.
HOST_HEAD, HOST_TAIL, HOST_SIZE, HOST_PINNED, HOST_CAP = range(17, 22)
REP_COLUMNS = 22

KEY, REF, PREV, NEXT = range(4)  # blocks
H_IN, H_PREV, H_NEXT = range(3)  # host

# Entries of the engine's ``features`` vector.
F_SPEC_K, F_PRELOADED, F_LOAD_S_PER_TOKEN, F_SPILL, F_PREFILL_FIRST = range(5)
FEATURES = 5
