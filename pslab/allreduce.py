"""Ring all-reduce (d2l's "Parameter Servers"; what DDP does): no server, the workers average
their gradients among themselves, to compare with the parameter server of figure 000.

Once all N workers have computed a step, each sends and receives 2(N−1) chunks of M/N bytes
around the ring, N−1 steps of reduce-scatter then N−1 of all-gather, every worker over its own
link at once: 2(N−1)·(latency + M/(N·bandwidth)) seconds, 2(N−1)/N·M bytes per worker. The
timeline draws the reduce-scatter as the worker's push and the all-gather as its fetch; waiting
for the slowest worker is idle, noted "barrier". Each worker then applies the mean gradient to
its own copy (as free as in d2l's arithmetic: no update_time).

The numbers are sync's: every worker ends each step with the same weights, w − α·mean(∂L/∂w).
pslab keeps that one copy in a ParameterServer used as plain arithmetic (its pushes and pulls
cost no time here), so all-reduce and sync compute the same weights.
"""
from __future__ import annotations

from typing import Callable

from .cluster import Cluster
from .modes import Policy
from .server import ParameterServer
from .simulation import Simulation
from .worker import Worker


def ring_time(cluster: Cluster, workers: int, nbytes: float) -> float:
    """Seconds of one ring all-reduce of `nbytes` among `workers` (0 for a single worker)."""
    if workers == 1:
        return 0.0
    return 2 * (workers - 1) * cluster.transfer_time(nbytes / workers)


class RingSimulation(Simulation):
    """Figure 000's workers, but after each step they all-reduce instead of pushing to shards."""

    def __init__(self, server: ParameterServer, workers: list[Worker], policy: Policy,
                 cluster: Cluster, durations: list[list[float]], steps: int,
                 shard_bytes: list[int], evaluate: Callable[[], tuple[float, float]]):
        super().__init__(server, workers, policy, cluster, durations, steps, shard_bytes,
                         evaluate)
        self.half = ring_time(cluster, len(workers), sum(shard_bytes)) / 2  # each phase
        self.scatter = cluster.reduce_scatter  # a reduce-scatter's bytes, in phases (ZeRO)
        self.arrived = 0  # workers whose gradient of this step is ready

    PLAIN = Simulation.PLAIN + ("arrived",)

    def send(self, kind: str, rank: int, step: int, note: str | None = None) -> float:
        # A step's weights arrived with the previous all-gather (the first ones are everyone's
        # same initial weights): starting a step moves nothing.
        return self.clock.now

    def computed(self, rank: int, step: int) -> None:
        worker = self.workers[rank]
        worker.compute(step)
        for s in range(len(self.updates)):  # the sum the ring computes, as arithmetic
            worker.push(self.server, s)
        self.push_done[rank] = self.clock.now
        self.arrived += 1
        if self.arrived == len(self.workers):  # the ring needs every worker's gradient
            self.arrived = 0
            self._ring(step)

    def _ring(self, step: int) -> None:
        now, half, add = self.clock.now, self.half, self.timeline.add
        for rank in range(len(self.workers)):
            if self.push_done[rank] < now:
                add(rank, None, "idle", self.push_done[rank], now, step, None, "barrier")
            add(rank, None, "push", now, now + half, step)
            add(rank, None, "fetch", now + half, now + 2 * half, step)
        self.push_staleness.extend([0] * len(self.workers))
        self.record(now + 2 * half, 0, None, step)
        self.clock.at(now + 2 * half, self._next_step, step)

    def _next_step(self, step: int) -> None:
        for rank in range(len(self.workers)):
            self.start_step(rank, step + 1)
