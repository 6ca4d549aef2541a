"""Serving features beyond one aggregated replica, built from names: speculation, host KV, P/D.

What ``fleetcast serving`` and a scenario's ``serving`` block say in words (a draft method or
model, acceptance rates, a host tier's size, a ``P:D`` split) becomes the engine's objects here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.serving.config import operator_model, resolve_gpu
from simulator.serving.disaggregated import KvLink
from simulator.serving.iteration import IterationModel, ServingConfigError
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.speculative import METHODS, SpeculativeDecoding


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding with the draft's iteration model (None unless a separate draft model)."""

    spec: SpeculativeDecoding
    draft: IterationModel | None = None

    def describe(self) -> str:
        what = self.spec.draft_model if self.spec.method == "draft_model" else self.spec.method
        return f"speculative {what} k={self.spec.k} ({self.spec.tokens_per_step:.2f} tokens/step expected)"


def parse_acceptance(text: str | float | list | tuple) -> float | tuple[float, ...]:
    """``0.7`` or ``0.8,0.7,0.6`` (per draft position) as the engine takes it."""
    if isinstance(text, (int, float)):
        return float(text)
    values = [float(v) for v in (text.split(",") if isinstance(text, str) else text)]
    return values[0] if len(values) == 1 else tuple(values)


def speculation(k: int, acceptance, draft: str, target: IterationModel, gpu: str | None = None,
                distribution: tuple[float, ...] | None = None, draft_share: float | None = None,
                gpus=None) -> Speculation:
    """Speculative decoding with ``k`` drafts from ``draft``: a method (eagle, mtp, ngram) or a
    catalog model name (a separate draft model on the target's GPUs and layout: its GPU, ``tp`` and
    ``dp``; ``gpus``: a scenario's GPU table)."""
    method, model_name = (draft, None) if draft in METHODS and draft != "draft_model" else ("draft_model", draft)
    try:
        spec = SpeculativeDecoding(k=k, acceptance=parse_acceptance(acceptance), distribution=distribution,
                                   method=method, draft_model=model_name, draft_share=draft_share)
    except ValueError as exc:
        raise ServingConfigError(str(exc)) from None
    draft_model = None
    if model_name is not None:
        draft_model = operator_model(model_name, getattr(target, "gpu_name", None) or gpu, getattr(target, "tp", 1),
                                     getattr(target, "dtype", "bf16"), gpus=gpus, dp=getattr(target, "dp", 1))
    return Speculation(spec, draft_model)


def host_tier(tokens: int | None, gbps: float | None, spill: bool) -> HostKvTier | None:
    """A host KV tier of ``tokens`` per replica, or None when no size is given."""
    if not tokens:
        if spill or gbps is not None:
            raise ServingConfigError("a host KV tier needs its size (host_kv_tokens)")
        return None
    try:
        return HostKvTier(int(tokens), **({"bandwidth_gbps": float(gbps)} if gbps is not None else {}),
                          spill_preempted=bool(spill))
    except ValueError as exc:
        raise ServingConfigError(str(exc)) from None


def parse_split(text: str) -> tuple[int, int]:
    """``"2:3"``: prefill and decode replicas of one disaggregated unit."""
    parts = str(text).split(":")
    try:
        prefill, decode = (int(p) for p in parts)
    except ValueError:
        raise ServingConfigError(f"a P:D split is two whole numbers such as 1:2, got {text!r}") from None
    if not (1 <= prefill <= 64 and 1 <= decode <= 64):
        raise ServingConfigError(f"prefill and decode replicas must be between 1 and 64, got {text!r}")
    return prefill, decode


def kv_link(prefill: IterationModel, decode: IterationModel, kind: str | None = None,
            gpus=None, unit_gpus: int | None = None) -> KvLink:
    """The link between the sides: ``nvlink`` (both in one scale-up domain: same GPU type, and the
    unit's ``unit_gpus`` (default one replica of each side) fit one domain) or ``rdma``; ``kind``
    None chooses by that rule."""
    prefill_gpu = resolve_gpu(prefill.gpu_name, gpus)[1]
    decode_gpu = resolve_gpu(decode.gpu_name, gpus)[1]
    same = prefill.gpu_name == decode.gpu_name
    if kind is None:
        domain = prefill_gpu.scale_up_domain or 1
        total = unit_gpus if unit_gpus is not None else prefill.gpus + decode.gpus
        kind = "nvlink" if same and total <= domain else "rdma"
    if kind == "nvlink" and not same:
        raise ServingConfigError("an NVLink KV link joins GPUs of one scale-up domain: prefill and decode "
                                 f"on the same GPU type, not {prefill.gpu_name} and {decode.gpu_name}")
    return KvLink.between(prefill_gpu, decode_gpu, same_domain=kind == "nvlink")


def acceptance_rng(seed: int) -> np.random.Generator:
    """The stream of speculative acceptances for a run of ``seed`` (apart from its workload's)."""
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
