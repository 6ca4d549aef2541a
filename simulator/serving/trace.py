"""Request traces in the Azure LLM inference format, and request-length mixes.

A trace is a CSV with the columns ``TIMESTAMP, ContextTokens, GeneratedTokens`` (the Azure
LLM inference trace 2023 format), optionally followed by ``prefix_id, prefix_tokens``: requests
with the same ``prefix_id`` share their first ``prefix_tokens`` prompt tokens (a system
prompt), which a prefix cache can reuse; an empty ``prefix_id`` means no shared prefix. ``azure-conv`` names the hour of production
conversation traffic shipped with Fleetcast (CC-BY 4.0; Patel et al., ISCA 2024).
A :class:`LengthMix` is the joint empirical distribution of (prompt, output) lengths that a
capacity curve samples from.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.csvrows import read_rows

BUILTIN_TRACES = {"azure-conv": "azure_llm_2023_conv.csv"}
_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


class TraceError(ValueError):
    """A trace file that cannot be read, naming the file and line."""


@dataclass(frozen=True)
class Trace:
    """Requests of a trace: arrival seconds from the first request, prompt and output tokens."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str
    prefix_id: np.ndarray | None = None
    prefix_tokens: np.ndarray | None = None

    def scaled(self, factor: float) -> Trace:
        """The same requests arriving ``factor`` times as fast (k× the rate)."""
        if not factor > 0:
            raise ValueError(f"rate scale must be > 0, got {factor}")
        return Trace(self.arrival_s / factor, self.prompt_tokens, self.output_tokens, self.source,
                     self.prefix_id, self.prefix_tokens)

    @property
    def rate_rps(self) -> float:
        span = float(self.arrival_s[-1] - self.arrival_s[0]) if len(self.arrival_s) > 1 else 0.0
        return (len(self.arrival_s) - 1) / span if span > 0 else float("nan")

    def length_mix(self) -> LengthMix:
        return LengthMix(self.prompt_tokens.copy(), self.output_tokens.copy(), self.source)


@dataclass(frozen=True)
class LengthMix:
    """The joint distribution of (prompt, output) tokens per request, sampled with replacement.

    ``shared_prefix_tokens`` > 0 gives every request the same system prompt of that many tokens
    (``prefix_id`` 0); ``distinct_prompts`` > 0 draws that many prompts once and has each request
    repeat one of them, uniformly (``prompt_id``), so a prefix cache can hit whole prompts.
    """

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    source: str = "fixed"
    shared_prefix_tokens: int = 0
    distinct_prompts: int = 0

    @classmethod
    def fixed(cls, prompt_tokens: int, output_tokens: int) -> LengthMix:
        return cls(np.array([max(1, round(prompt_tokens))]), np.array([max(1, round(output_tokens))]), "fixed")

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        pick = rng.integers(0, len(self.prompt_tokens), n)
        return self.prompt_tokens[pick], self.output_tokens[pick]

    def sample_requests(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray | None]:
        """``n`` requests: ``prompt_tokens, output_tokens, prefix_id, prefix_tokens, prompt_id``."""
        prompt, output = self.sample(n, rng)
        prompt_id = None
        if self.distinct_prompts > 0:
            pool, _ = self.sample(self.distinct_prompts, rng)
            prompt_id = rng.integers(0, self.distinct_prompts, n)
            prompt = pool[prompt_id]
        prefix_id = prefix_tokens = None
        if self.shared_prefix_tokens > 0:
            prefix_id = np.zeros(n, dtype=np.int64)
            prefix_tokens = np.minimum(prompt, self.shared_prefix_tokens)
        return dict(prompt_tokens=prompt, output_tokens=output, prefix_id=prefix_id,
                    prefix_tokens=prefix_tokens, prompt_id=prompt_id)

    def describe(self) -> dict[str, float]:
        """Means, percentiles and a lognormal fit (mean and sd of log tokens) of both lengths."""
        out: dict[str, float] = {"requests": float(len(self.prompt_tokens))}
        for name, values in (("prompt", self.prompt_tokens), ("output", self.output_tokens)):
            logs = np.log(values)
            out[f"{name}_mean"] = float(values.mean())
            for p in (50, 90, 99):
                out[f"{name}_p{p}"] = float(np.percentile(values, p))
            out[f"{name}_log_mean"] = float(logs.mean())
            out[f"{name}_log_sd"] = float(logs.std())
        return out


def resolve_trace_path(name_or_path: str | Path) -> Path:
    """A built-in trace name (``azure-conv``) or a file path."""
    key = str(name_or_path)
    if key in BUILTIN_TRACES:
        return Path(str(resources.files("simulator") / "data" / BUILTIN_TRACES[key]))
    return Path(key)


def read_trace(name_or_path: str | Path) -> Trace:
    """Read an Azure-format trace; raise :class:`TraceError` naming the file and line."""
    path = resolve_trace_path(name_or_path)
    try:
        rows = read_rows(path, _COLUMNS)
    except ValueError as exc:
        raise TraceError(str(exc)) from None
    with path.open(newline="", encoding="utf-8-sig") as handle:
        header = [c.strip().lower() for c in next(csv.reader(handle), [])]
    labelled = header[3:5] == ["prefix_id", "prefix_tokens"]
    stamps, prompts, outputs, lines, prefix_ids, prefix_lens = [], [], [], [], [], []
    for number, row in rows:
        if labelled:
            cells = (row + ["", ""])[3:5]
            try:
                prefix_ids.append(int(cells[0]) if cells[0] else -1)
                prefix_lens.append(int(cells[1]) if cells[1] else 0)
            except ValueError:
                raise TraceError(f"{path} line {number}: prefix_id and prefix_tokens must be whole numbers, "
                                 f"got {cells[0]!r}, {cells[1]!r}") from None
            if prefix_lens[-1] < 0:
                raise TraceError(f"{path} line {number}: prefix_tokens must be >= 0, got {prefix_lens[-1]}")
        try:
            prompt, output = int(row[1]), int(row[2])
        except ValueError:
            raise TraceError(f"{path} line {number}: token counts must be whole numbers, got {row[1]!r}, {row[2]!r}") from None
        if prompt < 1 or output < 1:
            raise TraceError(f"{path} line {number}: token counts must be >= 1, got {prompt}, {output}")
        stamps.append(row[0])
        prompts.append(prompt)
        outputs.append(output)
        lines.append(number)
    if not stamps:
        raise TraceError(f"{path}: the trace has no requests")
    times = pd.to_datetime(pd.Series(stamps), errors="coerce", format="mixed")
    bad = times.isna().to_numpy()
    if bad.any():
        index = int(np.argmax(bad))
        raise TraceError(f"{path} line {lines[index]}: cannot read the timestamp {stamps[index]!r}")
    seconds = (times - times.min()).dt.total_seconds().to_numpy()
    order = np.argsort(seconds, kind="stable")
    prefix_id = np.asarray(prefix_ids, dtype=np.int64)[order] if labelled else None
    prefix_tokens = np.asarray(prefix_lens, dtype=np.int64)[order] if labelled else None
    return Trace(seconds[order], np.asarray(prompts, dtype=np.int64)[order],
                 np.asarray(outputs, dtype=np.int64)[order], str(path), prefix_id, prefix_tokens)
