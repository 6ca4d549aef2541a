"""Content keys of prompt blocks, for the prefix cache.

vLLM caches KV in blocks of 16 tokens, keyed by a hash of the block's tokens and of every
token before it, so two requests share a cached block exactly when their prompts agree up to
the end of that block. Fleetcast describes prompt content by two optional labels per request:

* ``prefix_id`` and ``prefix_tokens``: the first ``prefix_tokens`` tokens are a prefix shared
  with every request of the same ``prefix_id`` (a system prompt, a few-shot preamble);
* ``prompt_id``: requests with the same id have the same whole prompt (a repeated question).

A request's full blocks inside its shared prefix are keyed by ``(prefix_id, block)``; its later
full blocks by ``(prompt_id, block)`` when it has a ``prompt_id``, else they are private and never
shared (and neither is anything after them, since a key covers all earlier tokens). The keys are
densified to ``0 … n_keys − 1`` and laid out per request (``key_start``, ``key_count``).
"""

from __future__ import annotations

import numpy as np

BLOCK_TOKENS = 16


def block_keys(prompt_tokens: np.ndarray, prefix_id: np.ndarray | None = None,
               prefix_tokens: np.ndarray | None = None, prompt_id: np.ndarray | None = None,
               block_size: int = BLOCK_TOKENS) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per-request block keys: ``(key_start, key_count, keys, n_keys)`` (see module docstring)."""
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    n = len(prompt)
    pid = np.full(n, -1, dtype=np.int64) if prefix_id is None else np.asarray(prefix_id, dtype=np.int64)
    ptok = np.zeros(n, dtype=np.int64) if prefix_tokens is None else np.asarray(prefix_tokens, dtype=np.int64)
    qid = np.full(n, -1, dtype=np.int64) if prompt_id is None else np.asarray(prompt_id, dtype=np.int64)
    for label, values in (("prefix_id", pid), ("prefix_tokens", ptok), ("prompt_id", qid)):
        if values.shape != prompt.shape:
            raise ValueError(f"{label} must have one entry per request")
    if (ptok < 0).any():
        raise ValueError("prefix_tokens must be >= 0")
    full = prompt // block_size
    prefix_blocks = np.where(pid >= 0, np.minimum(ptok, prompt) // block_size, 0)
    count = np.where(qid >= 0, full, prefix_blocks).astype(np.int64)
    start = np.zeros(n, dtype=np.int64)
    if n:
        start[1:] = np.cumsum(count)[:-1]
    total = int(count.sum())
    owner = np.repeat(np.arange(n), count)
    block = np.arange(total, dtype=np.int64) - np.repeat(start, count)
    in_prefix = block < prefix_blocks[owner]
    width = int(full.max()) + 1 if n else 1
    raw = np.where(in_prefix, pid[owner] * width + block,
                   (int(pid.max(initial=0)) + 1) * width + qid[owner] * width + block)
    unique, dense = np.unique(raw, return_inverse=True)
    return start, count, dense.astype(np.int64).reshape(-1), int(len(unique))
