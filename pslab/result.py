"""What a run *is*: its timeline, history, weights and makespan (every figure's result).

The result layer sits at the bottom beside the timeline: the simulation and the process backend
both produce a `Run`, the front door (`pslab.train`) returns it, drawing and notebooks read it.
It imports nothing above the timeline, the records, the layout and the settings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .divergence import divergence
from .layout import Layout, Params
from .settings import Settings
from .tracefile import to_chrome_trace
from .timeline import Record, Span, covered, total, worker_shares
from .zero import Memory, stage_of, worker_memory


@dataclass
class Run:
    """What a run leaves behind. `settings` made it; `timeline`, `history`, `weights` and
    `makespan` are the contract the notebooks and plots read; the rest are conveniences derived
    from them, and, on real processes, what was measured besides the timeline (`pids`,
    `failures`, `startup_s`)."""

    settings: Settings
    timeline: list[Span]
    history: list[Record]
    weights: Params
    makespan: float
    shards: list[list[str]] = field(default_factory=list)
    shard_bytes: list[int] = field(default_factory=list)
    complete: bool = True  # False when the run was interrupted (Ctrl-C): a partial timeline
    layout: Layout | None = None  # each shard's key range of the flattened parameters
    push_staleness: list[int] = field(default_factory=list)  # of every push used, in order
    start_loss: float = math.nan  # training loss of the initial weights (nan: timing only)
    pids: list[int] = field(default_factory=list)  # the processes that ran it (processes only)
    failures: list[str] = field(default_factory=list)  # workers lost in a mode that went on
    startup_s: float | None = None  # seconds from the launch until every process had joined

    @property
    def workers(self) -> int:
        return self.settings.workers

    @property
    def mode(self) -> str:
        return self.settings.mode.name

    @property
    def idle_time(self) -> float:
        """Total time workers spent waiting (the white blocks of figure 001)."""
        return total(self.timeline, "idle")

    @property
    def sync_wait(self) -> float:
        """The part of the idle time that falls while the server applies an update: in figure
        001 the blue gradient-sync column, as opposed to the white wait for slower GPUs."""
        updates = [(s.start, s.end) for s in self.timeline if s.kind == "update"]
        return covered((s for s in self.timeline if s.kind == "idle"), updates)

    @property
    def queue_time(self) -> float:
        """Idle time spent queued behind other transfers at a busy shard (more shards or more
        bandwidth cure it), as opposed to `barrier_time`."""
        return total(self.timeline, "idle", "queue")

    @property
    def barrier_time(self) -> float:
        """Idle time spent waiting for other workers: a sync round, the SSP bound, the ring."""
        return total(self.timeline, "idle", "barrier")

    @property
    def dropped(self) -> int:
        """Pushes the server dropped (backup workers: they came after their round closed)."""
        return sum(1 for s in self.timeline if s.kind == "push" and s.note == "dropped"
                   and s.shard in (0, None))

    @property
    def diverged(self) -> bool:
        """True when the training loss became non-finite or blew up (see `divergence`)."""
        return divergence(self) is not None

    @property
    def divergence(self) -> str | None:
        """What went wrong, in a sentence, or None (pslab.divergence)."""
        return divergence(self)

    @property
    def idle_fraction(self) -> float:
        """Idle time over all workers' time (workers x makespan)."""
        return self.idle_time / (self.workers * self.makespan) if self.makespan else 0.0

    def shares(self) -> list[dict[str, float]]:
        """Per worker, seconds computing, transferring and idle (adding up to the makespan), and
        the queue and barrier parts of idle: see pslab.timeline.worker_shares."""
        return worker_shares(self.timeline, self.workers, self.makespan)

    @property
    def memory(self) -> list[Memory]:
        """Per worker, bytes of parameters, gradients and optimizer state (fp32 SGD: none) held
        at the peak: whole copies in sync, async and all-reduce; ZeRO's shards per its stage,
        as the paper counts them (pslab.zero.worker_memory)."""
        if self.layout is None:
            raise ValueError("this run has no layout: its memory cannot be counted")
        return worker_memory(self.layout, self.workers, stage_of(self.mode))

    @property
    def updates(self) -> int:
        return len(self.history)

    @property
    def staleness(self) -> list[int]:
        return [r.staleness for r in self.history]

    @property
    def final_accuracy(self) -> float:
        return self.history[-1].accuracy if self.history else math.nan

    def to_chrome_trace(self, path: str | Path) -> Path:
        """Write the timeline as a Chrome trace (Perfetto, chrome://tracing); see trace.py."""
        return to_chrome_trace(self, path)

    def __repr__(self) -> str:
        acc = self.final_accuracy
        acc_text = "" if math.isnan(acc) else f", test accuracy {acc:.1%}"
        updates = f"{self.updates} update" + ("" if self.updates == 1 else "s")
        diverged = ", DIVERGED" if self.diverged else ""
        return (f"Run({self.mode}, {self.workers} workers, {updates}, makespan "
                f"{self.makespan:.3g} s, idle {self.idle_fraction:.1%}{acc_text}{diverged})")


def as_runs(value: Any, name: str = "run", many: bool = True) -> list[Run]:
    """Check a plotting entry's argument: a Run (or, with many=True, a non-empty list of them)."""
    runs = [value] if isinstance(value, Run) else list(value) if many and isinstance(
        value, (list, tuple)) else None
    if not runs or not all(isinstance(r, Run) for r in runs):
        what = "a pslab.Run (what pslab.train returns)" + (" or a non-empty list of them"
                                                            if many else "")
        raise ValueError(f"{name} must be {what} (got {type(value).__name__})")
    return runs
