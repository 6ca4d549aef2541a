"""How a replica's GPUs share the model: tensor, data (attention), pipeline and expert parallelism.

A replica is ``tp × dp × pp`` GPUs:

* **Tensor parallelism** (``tp``): each layer's matrices split over ``tp`` GPUs, two ring
  all-reduces of the activations per layer.
* **Data-parallel attention** (``dp``): ``dp`` ranks of ``tp`` GPUs each, every rank with its own
  requests and its own KV cache (vLLM's ``--data-parallel-size`` with expert parallelism, SGLang's
  DP attention). The router spreads requests evenly over the ranks, so attention, the dense layers
  and the KV reads of an iteration's ``T`` tokens are ``T / dp`` per rank; the ranks step together,
  as their MoE layers exchange tokens.
* **Expert parallelism** (``ep``): the routed experts divided over ``ep = tp × dp`` GPUs, whole
  experts per GPU, tokens dispatched to them and combined back by an all-to-all in every MoE layer
  (:mod:`simulator.serving.expert_parallel`). With ``ep = 1`` every rank holds all experts, split
  over its ``tp`` GPUs. The busiest GPU sets the layer's time: expert work and reads are scaled by
  the expected imbalance of ``T`` token-expert draws over ``ep`` GPUs, taken at
  :data:`IMBALANCE_TOKENS` tokens per iteration (an assumption; pass a measured factor instead).
* **Pipeline parallelism** (``pp``): the layers cut into ``pp`` stages on different GPUs, each
  holding ``1 / pp`` of the weights and of every request's KV cache. vLLM keeps ``pp`` batches in
  flight (one per stage), so a replica serves as ``pp`` engines whose iterations each pass through
  every stage: an iteration takes the whole model's time on ``tp`` GPUs plus ``pp − 1`` hand-offs
  of the activations between stages. With fewer requests than stages some stages wait: that is
  the pipeline's bubble, which the ``pp`` engines of :func:`simulator.serving.vllm.simulate_vllm`
  show by running only when they hold requests.

GPUs talk over NVLink (or the accelerator's scale-up fabric) inside a scale-up domain
(``scale_up_domain`` GPUs: 8 on HGX, 72 on NVL72) and over the scale-out network
(``scale_out_gbps`` per GPU) beyond it: a tensor-parallel group or a pipeline hand-off that spans
domains, and the share of an all-to-all's pairs that leaves the domain, go at the network's speed.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.serving.expert_parallel import all_to_all, expected_imbalance

#: Tokens per iteration at which the default expert-load imbalance is evaluated (a decode batch of
#: a busy replica; the factor shrinks as batches grow: 1 + sqrt(2 ln ep / (T k / ep))).
IMBALANCE_TOKENS = 512
#: Scale-out bandwidth per GPU when the catalog gives none: one 400 Gb/s NIC, GB/s per direction.
DEFAULT_SCALE_OUT_GBPS = 50.0
#: Latency of one exchange over the scale-out network (RDMA), seconds.
SCALE_OUT_LATENCY_S = 10e-6


@dataclass(frozen=True)
class Parallelism:
    """A replica's layout: ``tp × dp × pp`` GPUs, experts over ``ep`` of them (module docstring)."""

    tp: int = 1
    dp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "dp", "pp", "ep"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.ep not in (1, self.tp * self.dp):
            raise ValueError(f"ep must be 1 or tp × dp = {self.tp * self.dp} (experts over every GPU of a "
                             f"pipeline stage), got {self.ep}")

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def expert_shards(self) -> int:
        """GPUs one routed expert layer's weights are divided over within a stage: ``ep``, or ``tp``
        (each rank holding every expert, split by tensor parallelism)."""
        return self.ep if self.ep > 1 else self.tp

    def describe(self) -> str:
        parts = [f"TP{self.tp}"] + [f"{name.upper()}{value}" for name, value in
                                    (("dp", self.dp), ("pp", self.pp), ("ep", self.ep)) if value > 1]
        return " × ".join(parts)


def crosses_domain(group: int, domain: int | None) -> bool:
    """Whether a group of ``group`` GPUs spans more than one scale-up domain."""
    return domain is not None and group > domain


def group_bandwidth(group: int, link_gbps: float, scale_out_gbps: float | None, domain: int | None) -> float:
    """Bytes/s per GPU and direction of a collective over ``group`` GPUs: the scale-up link, or the
    scale-out network when the group leaves its domain."""
    if crosses_domain(group, domain):
        return (scale_out_gbps or DEFAULT_SCALE_OUT_GBPS) * 1e9
    return link_gbps * 1e9


@dataclass(frozen=True)
class Communication:
    """Seconds of one iteration's communication: ``fixed_s + per_token_s × tokens`` (tokens of the
    whole replica), split by kind for inspection."""

    allreduce_fixed_s: float
    allreduce_per_token_s: float
    all_to_all_fixed_s: float
    all_to_all_per_token_s: float
    pipeline_fixed_s: float
    pipeline_per_token_s: float

    @property
    def fixed_s(self) -> float:
        return self.allreduce_fixed_s + self.all_to_all_fixed_s + self.pipeline_fixed_s

    @property
    def per_token_s(self) -> float:
        return self.allreduce_per_token_s + self.all_to_all_per_token_s + self.pipeline_per_token_s


def communication(par: Parallelism, *, layers: int, moe_layers: int, hidden: int, top_k: int,
                  link_gbps: float, allreduce_latency_s: float, scale_up_domain: int | None,
                  scale_out_gbps: float | None, activation_bytes: float = 2.0,
                  dispatch_bytes: float = 1.0, allreduce_efficiency: float = 1.0) -> Communication:
    """Communication of one iteration under ``par`` (module docstring), linear in its tokens.

    * All-reduce (``tp > 1``): two ring all-reduces per layer on each rank's ``T / dp`` tokens,
      ``2·layers·(latency + 2(tp−1)/tp · (T/dp)·hidden·2 bytes / bandwidth)``, the bandwidth at
      ``allreduce_efficiency`` of the link's (the fitted share for the GPU generation). With expert
      parallelism a MoE layer's combine returns each token whole, so its MLP needs no all-reduce:
      ``2·layers − moe_layers`` of them.
    * All-to-all (``ep > 1``): per MoE layer a dispatch (``dispatch_bytes`` per value, FP8) and a
      combine (16-bit) of every token-expert pair that leaves its GPU (:func:`all_to_all`, whose
      time is linear in tokens: its per-token slope is taken from one token's exchange).
    * Pipeline (``pp > 1``): ``pp − 1`` hand-offs of the activations (``T·hidden·2`` bytes) per
      iteration, each one latency plus the bytes at the link's speed, or the network's for the
      hand-offs between scale-up domains (stages laid out in order, domains filled in turn).
    """
    domain = scale_up_domain
    if par.tp > 1:
        bandwidth = group_bandwidth(par.tp, link_gbps, scale_out_gbps, domain) * allreduce_efficiency
        latency = allreduce_latency_s + (SCALE_OUT_LATENCY_S if crosses_domain(par.tp, domain) else 0.0)
        count = 2 * layers - (moe_layers if par.ep > 1 else 0)
        ar_fixed = count * latency
        ar_token = count * 2.0 * (par.tp - 1) / par.tp * hidden * activation_bytes / bandwidth / par.dp
    else:
        ar_fixed = ar_token = 0.0
    if par.ep > 1 and moe_layers:
        one = all_to_all(1.0, top_k, hidden, par.ep, domain=domain or par.ep, link_gbps=link_gbps,
                         scale_out_gbps=scale_out_gbps or DEFAULT_SCALE_OUT_GBPS,
                         dispatch_bytes_per_value=dispatch_bytes, combine_bytes_per_value=activation_bytes)
        latency = allreduce_latency_s + (SCALE_OUT_LATENCY_S if crosses_domain(par.ep, domain) else 0.0)
        a2a_fixed = moe_layers * 2 * latency
        a2a_token = moe_layers * one.seconds
    else:
        a2a_fixed = a2a_token = 0.0
    if par.pp > 1:
        stage_gpus = par.tp * par.dp
        total = stage_gpus * par.pp
        domains = -(-total // domain) if domain else 1
        across = min(par.pp - 1, domains - 1)  # hand-offs from one domain to the next
        inside = par.pp - 1 - across
        network = (scale_out_gbps or DEFAULT_SCALE_OUT_GBPS) * 1e9
        pipe_fixed = inside * allreduce_latency_s + across * (allreduce_latency_s + SCALE_OUT_LATENCY_S)
        pipe_token = (inside / (link_gbps * 1e9) + across / network) * hidden * activation_bytes / stage_gpus
    else:
        pipe_fixed = pipe_token = 0.0
    return Communication(ar_fixed, ar_token, a2a_fixed, a2a_token, pipe_fixed, pipe_token)


def default_imbalance(par: Parallelism, top_k: int, tokens: float = IMBALANCE_TOKENS) -> float:
    """Busiest expert GPU's load over the mean at ``tokens`` tokens per iteration (1 without EP)."""
    if par.ep <= 1 or top_k < 1:
        return 1.0
    return expected_imbalance(tokens, top_k, par.ep)
