"""What a pipelined run leaves: a Run, plus its first step's actions and the numbers the papers
state about them (both bubble definitions, activations held per rank).

Every step is alike on the clock (pslab/pipeline/simulated.py), so the first step's ops stand
for all of them. The step's span here is the pipeline's: from the first forward to the last
backward, the flush's update excluded, as the papers draw it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..result import Run
from .clock import Op, Transfer


@dataclass
class PipelineRun(Run):
    """A Run of pslab.Pipeline: `workers` are its ranks, p per replica (replica j's rank r is
    worker j·p + r); `settings` are a `Settings` whose mode is the Pipeline."""

    pipeline: Any = None  # the pslab.Pipeline it ran
    ops: list[Op] = field(default_factory=list)  # the first step's actions, as timed
    transfers: list[Transfer] = field(default_factory=list)  # the first step's link traffic
    step_time: float = 0.0  # seconds from one step's start to the next's (the flush included)
    activation_bytes: list[int] = field(default_factory=list)  # one micro-batch, per v. stage
    param_bytes: list[int] = field(default_factory=list)  # per rank

    @property
    def span(self) -> float:
        """Seconds from the step's first forward to its last backward (update excluded)."""
        return max(o.end for o in self.ops) - min(o.start for o in self.ops)

    def busy(self) -> list[float]:
        """Per rank, seconds of compute in a step."""
        out = [0.0] * self.workers
        for o in self.ops:
            out[o.rank] += o.end - o.start
        return out

    @property
    def bubble_share(self) -> float:
        """GPipe's definition: the share of the ranks' time in a step spent idle,
        1 - compute / (p · span); (p − 1)/(m + p − 1) for GPipe and 1F1B at unit times."""
        return 1 - sum(self.busy()) / (self.workers * self.span)

    @property
    def bubble_time(self) -> float:
        """Seconds the busiest rank waits in a step: span − its compute; (p − 1)(F + B) for
        GPipe and 1F1B, (p − 1)(F + B − W) for ZB-H1 (F, B, W per rank, B the input half)."""
        return self.span - max(self.busy())

    @property
    def bubble_ratio(self) -> float:
        """Megatron's definition: bubble time over the ideal (compute-only) time of the busiest
        rank; (p − 1)/m for GPipe and 1F1B, (p − 1)/(v·m) interleaved."""
        return self.bubble_time / max(self.busy())

    @property
    def rank_idle(self) -> list[float]:
        """Per rank, seconds idle between its own first and last action: the bubble when
        steps overlap across ranks instead of meeting at a synchronous flush (ZB-H2 bypasses
        the optimizer's sync for this: each rank steps when its own W's are done). For ZB-H2
        with m >= 2p − 1, I <= F and 2W <= F + I: at most (p − 1)(F + I − 2W), rank 0's
        exactly; 0 at F = I = W."""
        first = [math.inf] * self.workers
        last = [0.0] * self.workers
        for o in self.ops:
            first[o.rank], last[o.rank] = min(first[o.rank], o.start), max(last[o.rank], o.end)
        return [b - a - c for a, b, c in zip(first, last, self.busy())]

    @property
    def activations(self) -> list[int]:
        """Per rank, the most (stage, micro-batch) activations held at once: from a forward
        until its backward (B, or W: the weight gradient needs the layer's input).
        m for GPipe, min(p − s, m) for 1F1B on rank s."""
        return [peak for peak, _ in self._held()]

    @property
    def activation_peak_bytes(self) -> list[int]:
        """Per rank, the most bytes of activations held at once."""
        return [most for _, most in self._held()]

    def _held(self) -> list[tuple[int, int]]:
        out = []
        for r in range(self.workers):
            count = peak = size = most = 0
            for o in sorted((o for o in self.ops if o.rank == r), key=lambda o: o.start):
                if o.kind == "F":
                    count, size = count + 1, size + self.activation_bytes[o.stage]
                    peak, most = max(peak, count), max(most, size)
                elif o.kind in "BW":
                    count, size = count - 1, size - self.activation_bytes[o.stage]
            out.append((peak, most))
        return out

    def __repr__(self) -> str:
        acc = self.final_accuracy
        acc_text = "" if acc != acc else f", test accuracy {acc:.1%}"
        return (f"PipelineRun({self.mode}, {self.updates} steps, step {self.step_time:.3g} s, "
                f"bubble {self.bubble_share:.1%} of the ranks' time "
                f"({self.bubble_ratio:.1%} of ideal){acc_text})")
