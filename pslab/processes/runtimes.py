"""What one run's timeline says, the same way for a measured run and a simulated one: its
seconds per step, its share of waiting, how often a shard's link carried both ways at once, and
its staleness (with a distance between two staleness distributions). Used by the comparison of
runs across hosts with the clock (pslab.processes.network).
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import NamedTuple


def step_time(run) -> float:
    """Seconds per step: each worker's median time from one step's first compute to the
    next's, the slowest worker's (it sets the pace: the makespan is its steps). A median, so
    that a moment when other programs took the two cores does not decide it."""
    per_worker = []
    for w in range(run.workers):
        first: dict[int, float] = {}
        for s in run.timeline:
            if s.worker == w and s.kind == "compute":
                first[s.step] = min(first.get(s.step, s.start), s.start)
        starts = sorted(first.values())
        per_worker.append(statistics.median(b - a for a, b in zip(starts, starts[1:])))
    return max(per_worker)


def waiting(run) -> float:
    """Share of the workers' time not computing: idle plus transfers. The one split both
    timelines draw alike: on the wire, waiting for a busy link is inside the transfer's span
    (the packets queue in the shaper), where the simulation draws it as idle ("queue")."""
    start = min((s.start for s in run.timeline if s.kind in ("fetch", "push")), default=0.0)
    computing = sum(s.end - s.start for s in run.timeline if s.kind == "compute")
    return 1 - computing / (run.workers * (run.makespan - start))


class _Interval(NamedTuple):
    start: float
    end: float


def both_ways(run) -> float:
    """Share of the shards' busy link time during which a fetch and a push were on the wire
    at once. A veth link is full duplex; the timing model's link carries one transfer at a
    time, so whatever overlaps here costs time there (0 on the virtual clock)."""
    from ..timeline import covered, merged

    both = busy = 0.0
    for s in range(len(run.shard_bytes)):
        ways = [merged((x.start, x.end) for x in run.timeline if x.shard == s and x.kind == k)
                for k in ("fetch", "push")]
        both += covered([_Interval(a, b) for a, b in ways[0]], ways[1])
        busy += sum(b - a for a, b in merged(ways[0] + ways[1]))
    return both / busy if busy else 0.0


def staleness(run) -> dict[int, float]:
    """Share of pushes at each staleness (async: the pushes the server took)."""
    counts = Counter(run.push_staleness)
    total = sum(counts.values()) or 1
    return {k: counts[k] / total for k in sorted(counts)}


def distance(p: dict[int, float], q: dict[int, float]) -> float:
    """Total variation distance of two distributions: 0 same, 1 disjoint."""
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))
