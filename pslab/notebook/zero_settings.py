"""What notebook 07's dashboard controls say, as one `pslab.train` call: the parameter server
(sync), the ring all-reduce and ZeRO-1/2/3, N workers, the link bandwidth and the model size.

The model size is the digits MLP's hidden width: Ψ = (64·h + h + 10·h + 10) parameters, fp32.
No plotting and no widgets here (pslab/notebook/zero_dashboard.py draws); the shape follows
`pslab.notebook.dashboard_settings`, whose dashboard is for the parameter-server figures.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..checks import integer, number, one_of
from ..cluster import Cluster
from ..data import dataset_size
from ..layout import BYTES_PER_VALUE
from ..modes import ZeRO

MODES = ("sync", "allreduce", "ZeRO-1", "ZeRO-2", "ZeRO-3")
HIDDENS = (16, 32, 64, 128, 256, 512, 1024)  # the model-size slider's stops
WORKERS = (2, 16)  # ZeRO needs two workers to shard anything


def model_bytes(hidden: int) -> int:
    """Ψ·4: the fp32 bytes of the digits MLP (64 inputs, `hidden` tanh units, 10 classes)."""
    return (64 * hidden + hidden + hidden * 10 + 10) * BYTES_PER_VALUE


@dataclass(frozen=True)
class ZeroSettings:
    """mode: one of MODES. workers: N. bandwidth: bytes per second of each link (a server
    shard's, or a worker's in the ring). hidden: the model size. The rest is fixed: a short,
    even run (every worker at the same speed) whose bytes show in the makespan."""

    mode: str = "ZeRO-3"
    workers: int = 4
    bandwidth: float = 1e5
    hidden: int = 32  # pslab.train's: the dashboard starts at the model of notebook 07's figures
    steps: int = 6
    batch: int = 32
    seed: int = 0
    compute_time: float = 1.0
    jitter: float = 0.1
    latency: float = 0.01

    def __post_init__(self) -> None:
        one_of("mode", self.mode, MODES)
        integer("workers", self.workers, *WORKERS)
        one_of("hidden", self.hidden, HIDDENS)
        number("bandwidth", self.bandwidth, positive=True)
        integer("steps", self.steps, high=100)
        integer("batch", self.batch, high=dataset_size())
        integer("seed", self.seed, low=0)
        self.cluster()  # the timing model's own checks, up front

    @property
    def policy(self) -> str | ZeRO:
        return ZeRO(int(self.mode[-1])) if self.mode.startswith("ZeRO") else self.mode

    @property
    def stage(self) -> int:
        return int(self.mode[-1]) if self.mode.startswith("ZeRO") else 0

    def cluster(self) -> Cluster:
        return Cluster(compute_time=self.compute_time, jitter=self.jitter,
                       latency=self.latency, bandwidth=self.bandwidth)

    def train_kwargs(self) -> dict[str, Any]:
        """The exact arguments of `pslab.train` for these settings (numerics left out)."""
        return dict(mode=self.policy, workers=self.workers, steps=self.steps, batch=self.batch,
                    seed=self.seed, hidden=self.hidden, cluster=self.cluster())

    def code(self) -> str:
        """The same run as one line of Python, to paste into a cell."""
        mode = f"pslab.ZeRO({self.stage})" if self.stage else repr(self.mode)
        return (f"pslab.train(mode={mode}, workers={self.workers}, steps={self.steps}, "
                f"batch={self.batch}, seed={self.seed}, hidden={self.hidden}, "
                f"cluster=pslab.Cluster(compute_time={self.compute_time:g}, "
                f"jitter={self.jitter:g}, latency={self.latency:g}, "
                f"bandwidth={self.bandwidth:.3g}))")

    def changed(self, **values: Any) -> "ZeroSettings":
        return replace(self, **values)
