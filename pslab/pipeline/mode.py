"""`pslab.Pipeline(stages=p, microbatches=m, schedule=..., chunks=v)`: pipeline parallelism as
a mode of `pslab.train`, every argument checked here, by name, before any work.

The model (the digits MLP with `layers` linear layers) is cut into p·v virtual stages of
layers / (p·v) layers each, v of them on each of the p ranks (workers); a step runs m
micro-batches of `batch` rows through them under the schedule (pslab/pipeline/schedules.py),
then every rank takes SGD's step on its layers (the flush).
"""
from __future__ import annotations

import math

from ..checks import integer, number
from ..modes import Staged
from .schedules import CHUNKS, ON_TORCH, SCHEDULES, SPLIT, refusal

MOST_STAGES = 64  # ranks of a simulated pipeline (the process backend allows fewer)
MOST_MICRO = 1024
MOST_LAYERS = 256
MOST_REPLICAS = 64


class Pipeline(Staged):
    """Pipeline parallelism: p stages (ranks), m micro-batches per step, a schedule.

    stages: p, 1 to 64. microbatches: m, 1 to 1024 (1f1b needs m >= p; interleaved-1f1b and
    zb-h1 a multiple of max(1, m // p)). schedule: one of SCHEDULES. chunks: v model chunks
    per rank (see schedules.CHUNKS). layers: linear layers of the MLP, a multiple of p·v
    (default the smallest one >= 2). times: (F, B, W) seconds of one micro-batch's forward,
    whole backward and weight-gradient half on every rank, its v chunks taking 1/v each (the
    papers' unit-time figures; the input-gradient half I is B − W); default: each stage's
    share of the model's FLOPs times the Cluster's compute_time (one micro-batch's forward +
    backward on one worker), with F : B : W = 1 : 2 : 1 (the backward's two matrix products
    per layer).
    replicas: d data-parallel copies of the pipeline, 1 to 64, each running m micro-batches of
    its own (replica j's rank r is worker j·p + r); at the flush the d ranks holding a stage
    ring-all-reduce its gradient over the Cluster's links, so a step learns from d·m
    micro-batches.
    """

    def __init__(self, stages: int, microbatches: int, schedule: str = "1f1b", chunks: int = 1,
                 layers: int | None = None, times: tuple[float, float, float] | None = None,
                 replicas: int = 1):
        self.stages = integer("stages", stages, high=MOST_STAGES)
        self.microbatches = integer("microbatches", microbatches, high=MOST_MICRO)
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {', '.join(map(repr, SCHEDULES))} "
                             f"(got {schedule!r})")
        self.schedule = schedule
        self.chunks = integer("chunks", chunks, high=max(max(c) for c in CHUNKS.values()))
        why = refusal(schedule, self.stages, self.microbatches, self.chunks)
        if why:
            raise ValueError(why)
        virtual = self.stages * self.chunks
        default = virtual * math.ceil(2 / virtual)
        self.layers = integer("layers", default if layers is None else layers, low=2,
                              high=MOST_LAYERS)
        if self.layers % virtual:
            raise ValueError(f"layers must be a multiple of stages * chunks = {virtual}, so "
                             f"every stage holds as many layers (got layers={self.layers})")
        self.times = None if times is None else _times(times, schedule)
        self.replicas = integer("replicas", replicas, high=MOST_REPLICAS)
        self.name = (f"Pipeline({schedule}, p={self.stages}, m={self.microbatches}"
                     + (f", v={self.chunks}" if self.chunks > 1 else "")
                     + (f", d={self.replicas}" if self.replicas > 1 else "") + ")")

    @property
    def virtual(self) -> int:
        """How many virtual stages: p·v."""
        return self.stages * self.chunks

    @property
    def split(self) -> bool:
        """True when the schedule splits the backward into I and W (the zero-bubble ones)."""
        return self.schedule in SPLIT

    def refusal_on_processes(self) -> str | None:
        """Processes run PyTorch's own schedule classes: the schedules it has."""
        if self.schedule not in ON_TORCH:
            return (f"schedule {self.schedule!r} runs on the virtual clock only: "
                    f"torch.distributed.pipelining (torch {_torch_version()}) has no such "
                    f"schedule class, and backend='processes' runs PyTorch's own classes, whose "
                    f"action lists are the ones pslab's are checked against (on processes: "
                    f"{', '.join(map(repr, ON_TORCH))})")
        return None

    def plain(self) -> dict:
        """The arguments as plain values (a run's config, files read back)."""
        return dict(stages=self.stages, microbatches=self.microbatches, schedule=self.schedule,
                    chunks=self.chunks, layers=self.layers,
                    times=None if self.times is None else list(self.times),
                    replicas=self.replicas)

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and other.plain() == self.plain()

    def __hash__(self) -> int:
        return hash(self.name)


def _times(times: object, schedule: str) -> tuple[float, float, float]:
    if not isinstance(times, (tuple, list)) or len(times) != 3:
        raise ValueError(f"times must be (F, B, W): seconds of a micro-batch's forward, whole "
                         f"backward and its weight-gradient half (got {times!r})")
    f = number("times[0] (F)", times[0], positive=True, high=1e9)
    b = number("times[1] (B)", times[1], positive=True, high=1e9)
    w = number("times[2] (W)", times[2], high=b)
    if schedule in SPLIT and not 0 < w < b:
        raise ValueError(f"times[2] (W) must lie strictly between 0 and B = {b:g} for "
                         f"{schedule!r}, which runs I = B - W and W apart (got W={w:g})")
    return f, b, w


def _torch_version() -> str:
    """torch's version without importing it here (mode.py stays light): its package metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch").split("+")[0]
    except PackageNotFoundError:
        return "not installed"
