"""Expert parallelism: what one MoE layer of an iteration costs when its experts are spread.

With expert parallelism of degree ``ep`` the ``E`` routed experts of each MoE layer are
divided over ``ep`` GPUs, ``E / ep`` each. Each token goes to its ``k`` experts: it is
*dispatched* to the GPUs holding them and the results are *combined* back, an all-to-all
exchange before and after the experts in every MoE layer. Attention is data-parallel
(``dp = ep`` ranks, each with its own requests and KV cache) in the wide-EP deployments this
models, so each GPU starts with ``T / ep`` of the iteration's ``T`` tokens.

Per GPU and MoE layer, with routing spread evenly over the experts (the expected case; a
measured router is never exactly even, see ``imbalance``):

- **All-to-all traffic.** Of a GPU's ``T / ep × k`` token-expert pairs, a share
  ``(ep − 1) / ep`` lands on other GPUs. Dispatch sends the token's hidden vector
  (``hidden × dispatch bytes``, FP8 in DeepEP-style kernels), combine returns it
  (``hidden × combine bytes``, BF16). Inside one scale-up domain (NVLink, 8 GPUs on HGX, 72 on
  NVL72) the bytes go at the link bandwidth; when ``ep`` spans several domains, the share
  ``(ep − domain) / (ep − 1)`` of the remote pairs crosses the scale-out network, at its
  bandwidth per GPU. The two transfers run at once, so the time is the slower of them, plus
  one latency per exchange.
- **Expert weights read.** In an iteration of ``T`` tokens each expert is hit with
  probability ``1 − (1 − k / E)^T``; a GPU holds ``E / ep`` experts, so it reads
  ``E / ep × (1 − (1 − k / E)^T)`` experts' weights on average, and the work of
  ``T × k / ep`` token-expert pairs.
- **Imbalance.** The busiest GPU decides the layer's time: the token-expert pairs a GPU gets
  are roughly Poisson with mean ``λ = T k / ep``, and the largest of ``ep`` of them is about
  ``λ + sqrt(2 λ ln ep)`` (the balls-into-bins bound); :func:`expected_imbalance` gives that
  ratio to the mean, an assumption to replace by a measured factor when one is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class AllToAll:
    """Bytes and seconds of one MoE layer's dispatch and combine, for one GPU."""

    pairs_per_gpu: float  # token-expert pairs that start on the GPU
    remote_pairs: float  # of those, going to another GPU
    scale_out_pairs: float  # of those, crossing the scale-out network
    dispatch_bytes: float  # sent by the GPU (dispatch), over both networks
    combine_bytes: float  # received back (combine)
    seconds: float


def all_to_all(tokens: float, top_k: int, hidden: int, ep: int, *, domain: int, link_gbps: float,
               scale_out_gbps: float, dispatch_bytes_per_value: float = 1.0,
               combine_bytes_per_value: float = 2.0, latency_s: float = 0.0) -> AllToAll:
    """Dispatch and combine of one MoE layer for ``tokens`` tokens over ``ep`` GPUs (module doc).

    ``link_gbps`` and ``scale_out_gbps`` are GB/s per GPU and direction; ``domain`` is the
    scale-up domain's size in GPUs; ``latency_s`` is added once for each of the two exchanges.
    """
    if ep < 1 or top_k < 1 or domain < 1:
        raise ValueError("ep, top_k and domain must be at least 1")
    pairs = tokens / ep * top_k
    if ep == 1:
        return AllToAll(pairs, 0.0, 0.0, 0.0, 0.0, 0.0)
    remote = pairs * (ep - 1) / ep
    scale_out = remote * max(ep - domain, 0) / (ep - 1)
    nvlink = remote - scale_out
    seconds = 0.0
    for bytes_per_value in (dispatch_bytes_per_value, combine_bytes_per_value):
        per_pair = hidden * bytes_per_value
        inside = nvlink * per_pair / (link_gbps * 1e9)
        across = scale_out * per_pair / (scale_out_gbps * 1e9) if scale_out > 0 else 0.0
        seconds += max(inside, across) + latency_s
    return AllToAll(pairs, remote, scale_out, remote * hidden * dispatch_bytes_per_value,
                    remote * hidden * combine_bytes_per_value, seconds)


def experts_read_per_gpu(tokens: float, experts: int, top_k: int, ep: int) -> float:
    """Expected experts whose weights one GPU reads in an iteration of ``tokens`` tokens."""
    if experts < 1 or not 1 <= top_k <= experts or ep < 1:
        raise ValueError("need 1 <= top_k <= experts and ep >= 1")
    hit = 1.0 - (1.0 - top_k / experts) ** tokens
    return experts / ep * hit


def expert_weight_bytes_per_gpu(tokens: float, experts: int, top_k: int, ep: int, expert_params: float,
                                bytes_per_param: float) -> float:
    """Bytes of expert weights one GPU reads per MoE layer: experts hit × one expert's parameters
    (its three matrices, ``3 × hidden × expert intermediate``) × bytes per parameter."""
    return experts_read_per_gpu(tokens, experts, top_k, ep) * expert_params * bytes_per_param


def expected_imbalance(tokens: float, top_k: int, ep: int) -> float:
    """Busiest GPU's token-expert pairs over the mean: ``1 + sqrt(2 ln ep / λ)``, λ = ``T k / ep``
    (balls into bins; 1 for one GPU or no tokens)."""
    mean = tokens * top_k / ep
    if ep <= 1 or mean <= 0:
        return 1.0
    return 1.0 + math.sqrt(2.0 * math.log(ep) / mean)


__all__ = ["AllToAll", "all_to_all", "expected_imbalance", "expert_weight_bytes_per_gpu", "experts_read_per_gpu"]
