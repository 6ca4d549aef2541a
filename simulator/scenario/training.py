"""Training jobs on the fleet: explicit jobs, stochastic streams, traces, and how pools share.

A job needs ``gpus`` GPUs of one pool at once (gang scheduling) for ``duration`` of work —
or for ``6·N·D / (gpus × peak FLOP/s × MFU)`` when given as ``params`` N and ``tokens`` D (or
``flops``). It writes a checkpoint every ``checkpoint_interval`` of work (taking
``checkpoint_time``); an interruption — a failure of one of its GPUs, or preemption by
inference — loses the work since the last checkpoint, and every restart costs
``restart_time``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from simulator.scenario.csvrows import CsvProblem, csv_field_check, read_rows, row_problem
from simulator.scenario.distributions import DurationDistribution, duration_distribution
from simulator.scenario.types import Duration, Frozen, NonNegative, Positive, PositiveDuration, When


class Checkpointing(Frozen):
    """How a job protects its progress."""

    checkpoint_interval: Duration | None = Field(
        default=None, description="Work between two checkpoints (none: progress is lost on interruption)"
    )
    checkpoint_time: Duration = Field(default=0.0, description="Wall time to write one checkpoint")
    restart_time: Duration = Field(default=0.0, description="Wall time to restart after an interruption")
    failure_rate_per_gpu_hour: NonNegative | None = Field(
        default=None, description="Interruptions per GPU-hour (default: the pool's failure rate)"
    )
    max_preemptions_per_day: Annotated[int, Field(ge=0)] | None = Field(
        default=None, description="Preemptions by inference a job accepts per calendar day (UTC); past them "
        "it keeps its GPUs until the day ends, and serving takes a later pool or goes unserved")

    @field_validator("checkpoint_interval")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be positive (leave it out for no checkpoints)")
        return value


class TrainingJob(Checkpointing):
    """One job, given explicitly."""

    name: Annotated[str, Field(min_length=1, max_length=120)] = Field(description="Unique name of the job")
    pool: str = Field(description="The pool it runs on")
    gpus: Annotated[int, Field(ge=1)] = Field(description="GPUs it needs, all at once (gang scheduling)")
    submit: When = Field(
        default=0.0, description="Date (ISO, UTC) or offset from the start when it is submitted")
    priority: int = Field(
        default=0, description="Priority (higher first under the priority policy; lowest preempted first)")
    duration: PositiveDuration | None = Field(default=None, description="Work at full speed")
    flops: Positive | None = Field(default=None, description="Total training FLOPs")
    params: Positive | None = Field(default=None, description="Parameters N (FLOPs = 6·N·D)")
    tokens: Positive | None = Field(default=None, description="Training tokens D")
    mfu: Annotated[float, Field(gt=0, le=1)] = Field(default=0.375, description="Model FLOPs utilization")
    dtype: Literal["bf16", "fp8"] = Field(
        default="bf16", description="Precision of the compute, for the 6·N·D duration: bf16 or fp8 (the GPU's peak at it)")
    usd_per_day_late: NonNegative | None = Field(
        default=None, description="What each day the job finishes late costs (reported, not booked)")

    @model_validator(mode="after")
    def _size(self) -> TrainingJob:
        given = [self.duration is not None, self.flops is not None, self.params is not None or self.tokens is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of 'duration', 'flops', or 'params' with 'tokens'")
        if (self.params is None) != (self.tokens is None):
            raise ValueError("'params' and 'tokens' go together (FLOPs = 6·N·D)")
        return self

    @property
    def total_flops(self) -> float | None:
        if self.flops is not None:
            return self.flops
        if self.params is not None and self.tokens is not None:
            return 6.0 * self.params * self.tokens
        return None


class GpuChoice(Frozen):
    """Job sizes drawn from weighted choices."""

    choices: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=1)] = Field(
        description="GPU counts a job may ask for")
    weights: list[NonNegative] | None = Field(
        default=None, description="Relative weight of each choice (default: equal)")

    @model_validator(mode="after")
    def _weights(self) -> GpuChoice:
        if self.weights is not None and (len(self.weights) != len(self.choices) or sum(self.weights) <= 0):
            raise ValueError("'weights' must match 'choices' and not all be zero")
        return self


class JobStream(Checkpointing):
    """Jobs arriving as a Poisson stream, with random sizes and durations."""

    name: Annotated[str, Field(min_length=1, max_length=80)] = Field(description="Name of the stream")
    pool: str = Field(description="The pool the jobs run on")
    arrivals_per_hour: Annotated[float, Field(gt=0, le=100_000)] = Field(
        description="Mean jobs submitted per hour (a Poisson process)")
    gpus: Annotated[int, Field(ge=1)] | GpuChoice = Field(
        default=1, description="GPUs per job: a count, or {choices, weights}")
    duration: DurationDistribution = Field(
        description="Work of each job: a duration or a duration distribution")
    start: When = Field(
        default=0.0, description="Date (ISO, UTC) or offset from the start of the first arrivals")
    end: When | None = Field(
        default=None, description="Date or offset after which no job arrives (none: the horizon's end)")
    priority: int = Field(
        default=0, description="Priority of the jobs (higher first under the priority policy; lowest preempted first)")

    _shorthand = field_validator("duration", mode="before")(lambda cls, v: duration_distribution(v))


class JobTrace(Checkpointing):
    """Jobs replayed from a CSV with columns ``submit_time,gpus,duration`` (a path relative to
    the scenario; ``submit_time`` a date or an offset, ``duration`` readable)."""

    name: Annotated[str, Field(min_length=1, max_length=80)] = Field(description="Name of the trace")
    pool: str = Field(description="The pool the jobs run on")
    csv: str = Field(
        description="CSV with columns submit_time,gpus,duration (a path relative to the scenario)")
    rows: list[tuple[When, Annotated[int, Field(ge=1)], Duration]] = Field(
        default_factory=list, description="Filled from the CSV: (submit time, GPUs, duration)"
    )
    priority: int = Field(default=0, description="Priority of the trace's jobs")

    @model_validator(mode="before")
    @classmethod
    def _read(cls, data: object, info: ValidationInfo) -> object:
        if not isinstance(data, dict) or not data.get("csv") or data.get("rows"):
            return data
        path = Path((info.context or {}).get("base_dir", ".")) / str(data["csv"])
        try:
            return {**data, "rows": _read_job_csv(path)}
        except ValueError as exc:
            return {**data, "csv": CsvProblem(str(exc))}

    _csv_readable = field_validator("csv", mode="before")(lambda cls, v: csv_field_check(v))


_TRACE_ROW = TypeAdapter(tuple[When, Annotated[int, Field(ge=1)], Duration],
                         config=ConfigDict(arbitrary_types_allowed=True))


def _read_job_csv(path: Path) -> list[tuple[str, int, str]]:
    columns = ("submit_time", "gpus", "duration")
    out = []
    for number, row in read_rows(path, columns):
        try:
            gpus = int(row[1])
        except ValueError:
            raise ValueError(f"{path} line {number}: gpus {row[1]!r} is not a whole number") from None
        try:  # each row checked here, so that an error names the file and its line
            _TRACE_ROW.validate_python((row[0], gpus, row[2]))
        except ValidationError as exc:
            raise row_problem(path, number, columns, exc) from None
        out.append((row[0], gpus, row[2]))
    return out


class PoolTraining(Frozen):
    """How a pool shares its GPUs between inference and training.

    ``leftover``: training starts on GPUs inference does not need and keeps them until done.
    ``preempt``: the same, but when inference needs them back, running jobs are preempted
    (lowest priority, latest started first) and requeued. ``dedicated``: a partition of
    ``partition_gpus`` GPUs serves training only.
    """

    mode: Literal["leftover", "preempt", "dedicated"] = Field(
        default="leftover", description="leftover: jobs use GPUs inference does not need and keep them; preempt: inference preempts jobs at each step; dedicated: a partition kept for training")
    partition_gpus: Annotated[int, Field(ge=0)] = Field(
        default=0, description="dedicated: GPUs kept for training")


class Training(Frozen):
    """All training jobs and how they are scheduled."""

    policy: Literal["fifo", "priority", "shortest_first", "easy_backfill"] = Field(
        default="fifo", description="Queue policy: fifo, priority, shortest_first or easy_backfill")
    review_every: PositiveDuration = Field(default=3600.0, description="How often queues re-check for room")
    jobs: list[TrainingJob] = Field(default_factory=list,
        description="Named jobs (a fine-tune, a pre-training run)")
    streams: list[JobStream] = Field(default_factory=list,
        description="Streams of jobs arriving at random (experiments)")
    traces: list[JobTrace] = Field(default_factory=list, description="Jobs replayed from CSV files")


class LaunchAfter(Frozen):
    """A demand that starts ``delay`` after the named training job completes."""

    after_job: str = Field(description="The training job whose completion starts the demand")
    delay: Duration = Field(default=0.0, description="Time from that completion to the launch (e.g. 14d)")


__all__ = ["JobStream", "JobTrace", "LaunchAfter", "PoolTraining", "Training", "TrainingJob"]
