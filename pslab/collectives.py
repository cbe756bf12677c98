"""ZeRO on the clock: figure 000's two shards turned inside out, every worker owns one.

Rajbhandari et al. (SC'20) and PyTorch's FSDP keep no server: with N workers the flat
parameters are cut into N key ranges (the same `Layout` the server uses) and worker i owns
range i. Instead of pushes and fetches the workers run two collectives, each a ring of N − 1
steps of M/N bytes over every worker's own link at once, (N − 1)·(latency + M/(N·bandwidth))
seconds and (N − 1)/N·M bytes per worker:
- reduce-scatter: worker i ends with the sum of everyone's gradient of range i;
- all-gather: every worker ends with every range's weights.

Stages 1 and 2 (P_os, P_os+g) run, after each step, a reduce-scatter of the gradients and an
all-gather of the updated weights: 2(N − 1)/N·M bytes per worker, a ring all-reduce's volume.
Stage 3 (P_os+g+p) holds only its range of the weights, so it all-gathers them before the
forward pass, again before the backward pass (the paper's accounting), and reduce-scatters the
gradients: 3(N − 1)/N·M, 1.5× the all-reduce. The clock holds one compute block per
minibatch (forward and backward together), so the backward's all-gather is drawn after it, as
its own block, where it costs the same time. With `accumulate` = k, stages 1 and 2 run their
collectives once per step, on the k minibatches' mean gradient; stage 3 has freed the weights
after each minibatch, so it gathers them again for every minibatch's forward and backward (as
FSDP does), all workers together, and reduce-scatters once per step: (2k + 1)(N − 1)/N·M bytes
per worker per step. No collective overlaps compute, as in the figures: every byte shows in
the makespan.

The numbers are sync's. Worker i's update of range i — w_i − α·mean(g_i) — is done by the
arithmetic `ParameterServer` laid out with the N ranges (shard i is worker i's range, its
pushes and pulls cost no time here: the collectives' spans are the time), so ZeRO's weights
are sync's and all-reduce's for the same seed.
"""
from __future__ import annotations

from typing import Any

from .allreduce import RingSimulation

FORWARD, BACKWARD = "forward", "backward"  # notes of stage 3's two all-gathers


def phases(stage: int) -> list[tuple[str, str | None]]:
    """The collectives after a step's compute, in order: (kind, note)."""
    if stage == 3:
        return [("all-gather", BACKWARD), ("reduce-scatter", None)]
    return [("reduce-scatter", None), ("all-gather", None)]


def bytes_per_worker(stage: int, nbytes: float, workers: int, accumulate: int = 1) -> float:
    """Bytes one worker sends per step: 2(N − 1)/N·M (stages 1, 2) or (2k + 1)(N − 1)/N·M
    (stage 3, k = accumulate: two gathers per minibatch, one reduce-scatter)."""
    rounds = 2 * accumulate + 1 if stage == 3 else 2
    return rounds * (workers - 1) * nbytes / workers


class ZeroSimulation(RingSimulation):
    """The ring of pslab.allreduce with ZeRO's collectives as their own spans."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.micro = [0] * len(self.workers)  # stage 3: each worker's minibatch in its step
        self.gathered = 0  # stage 3: workers done with this minibatch (accumulate > 1)

    PLAIN = RingSimulation.PLAIN + ("micro", "gathered")

    def compute(self, rank: int, step: int, start: float) -> float:
        """Stage 3 with accumulate > 1: one minibatch at a time (the next needs the weights
        gathered again, by everyone); otherwise the step's minibatches back to back."""
        if self.policy.stage != 3 or self.accumulate == 1:
            return super().compute(rank, step, start)
        d = self.durations[rank][step * self.accumulate + self.micro[rank]]
        self.timeline.add(rank, None, "compute", start, start + d, step, self.micro[rank])
        return start + d

    def computed(self, rank: int, step: int) -> None:
        if self.policy.stage != 3 or self.micro[rank] == self.accumulate - 1:
            self.micro[rank] = 0
            super().computed(rank, step)
            return
        self.push_done[rank] = self.clock.now
        self.gathered += 1
        if self.gathered == len(self.workers):  # a gather needs every worker
            self.gathered = 0
            self._regather(step)

    def _regather(self, step: int) -> None:
        """Between two minibatches: the backward's gather of the one done, the forward's of
        the next, then the next minibatch."""
        now, half, add = self.clock.now, self.half, self.timeline.add
        for rank in range(len(self.workers)):
            if self.push_done[rank] < now:
                add(rank, None, "idle", self.push_done[rank], now, step, None, "barrier")
            add(rank, None, "all-gather", now, now + half, step, None, BACKWARD)
            add(rank, None, "all-gather", now + half, now + 2 * half, step, None, FORWARD)
            self.micro[rank] += 1
            self.clock.at(self.compute(rank, step, now + 2 * half), self.computed, rank, step)

    def send(self, kind: str, rank: int, step: int, note: str | None = None) -> float:
        # Stage 3 holds only its own range: before computing it gathers the rest (the workers
        # start each step together, after the previous step's collectives).
        now = self.clock.now
        if self.policy.stage != 3 or kind != "fetch":
            return now
        self.timeline.add(rank, None, "all-gather", now, now + self.half, step, None, FORWARD)
        return now + self.half

    def _ring(self, step: int) -> None:
        now, half, add = self.clock.now, self.half, self.timeline.add
        # a phase's time: a reduce-scatter moves `scatter` phases' bytes (Cluster.reduce_scatter)
        order = [(kind, note, half * self.scatter if kind == "reduce-scatter" else half)
                 for kind, note in phases(self.policy.stage)]
        for rank in range(len(self.workers)):
            if self.push_done[rank] < now:
                add(rank, None, "idle", self.push_done[rank], now, step, None, "barrier")
            t = now
            for kind, note, seconds in order:
                add(rank, None, kind, t, t + seconds, step, None, note)
                t += seconds
        end = now + sum(seconds for _, _, seconds in order)  # 2 phases: now + 2·half, exactly
        self.push_staleness.extend([0] * len(self.workers))
        self.record(end, 0, None, step)
        self.clock.at(end, self._next_step, step)
