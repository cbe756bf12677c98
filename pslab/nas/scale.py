"""Figure 003 at the paper's scale, timing only: S = 20, K = 100, m = 8 (Zoph & Le 2017, §4.1).

800 children train at once; every round, each of the 100 replicas pulls Θ from every shard
and pushes a gradient to every shard, and each push is an update. So every shard serves
200 transfers and 100 updates per round, whatever S is: what S divides is the bytes of each
transfer and the work of each update. `sweep_servers` shows where the shards stop being the
bottleneck. Our Θ is small (33 floats), so the paper-scale network is slow on purpose
(1 kB/s per shard link) to give Θ's traffic the weight a real controller's would have.
"""
from __future__ import annotations

from typing import Sequence

from ..cluster import Cluster
from .front import search
from .result import Search

PAPER = dict(servers=20, controllers=100, children=8)
PAPER_CLUSTER = dict(compute_time=0.03, latency=0.001, bandwidth=1e3, update_time=0.2)


def paper_scale(servers: int = 20, rounds: int = 5, seed: int = 0, **overrides) -> Search:
    """One timing-only search at the paper's K = 100, m = 8 (S = `servers`)."""
    kw = dict(PAPER, servers=servers, rounds=rounds, seed=seed, numerics=False,
              cluster=Cluster(**PAPER_CLUSTER))
    return search(**(kw | overrides))


def sweep_servers(values: Sequence[int] = (1, 2, 4, 8, 12, 16, 20), rounds: int = 5,
                  seed: int = 0) -> list[Search]:
    """The paper-scale search once per number of shards."""
    return [paper_scale(s, rounds, seed) for s in values]


def lower_bound(rounds: int = 5, seed: int = 0) -> float:
    """The makespan on a free network (transfers and updates instant): only children count."""
    return paper_scale(1, rounds, seed, cluster=Cluster.free(
        compute_time=PAPER_CLUSTER["compute_time"])).makespan


def format_sweep(results: Sequence[Search]) -> str:
    """One line per S: makespan, the busiest shard's load, the worst staleness."""
    from ..text import table

    return table([(r.servers, f"{r.makespan:.1f}", f"{server_busy(r):.0%}",
                   max(r.staleness, default=0)) for r in results],
                 ("S", "makespan (s)", "busiest shard busy", "max staleness"))


def server_busy(result: Search) -> float:
    """The busiest shard's busy time over the makespan (its jobs never overlap: FCFS)."""
    busy = [0.0] * result.servers
    for sp in result.timeline:
        if sp.shard is not None:
            busy[sp.shard] += sp.end - sp.start
    return max(busy) / result.makespan if result.makespan else 0.0
