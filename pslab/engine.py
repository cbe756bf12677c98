"""The clock of every figure: a discrete-event loop and the resources that queue on it.

Nothing here knows about gradients or weights (SimPy's split: engine, resources, actors). The
clock calls back into the actors in time order; ties are broken by the order events were
scheduled, so a run is the same every time.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable


class Clock:
    """A heap of timed callbacks, run in (time, scheduling order)."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[..., Any], tuple]] = []
        self._seq = 0

    def at(self, time: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at virtual time `time` (never earlier than now)."""
        heapq.heappush(self._heap, (time if time > self.now else self.now, self._seq, fn, args))
        self._seq += 1

    def run(self) -> float:
        """Run every event; returns the time of the last one."""
        heap = self._heap
        while heap:
            self.now, _, fn, args = heapq.heappop(heap)
            fn(*args)
        return self.now


class Resource:
    """Serves one job at a time, first come first served (a server shard, figure 000).

    Because the clock hands out requests in time order, the start of each job follows from
    when the previous one ends (Lindley's recursion): no queue object and no extra events.
    """

    def __init__(self) -> None:
        self.free_at = 0.0

    def book(self, now: float, duration: float) -> tuple[float, float]:
        """Queue a job asked for at `now`; returns its (start, end)."""
        start = self.free_at if self.free_at > now else now
        self.free_at = start + duration
        return start, self.free_at
