"""The seed figures replayed, each in one call: exact timing tables, fixed seeds.

- `figure000()`: three processors, G0 the straggler (half speed), sync vs async. In async the
  server applies G1's and G2's pushes first and G0's last, two versions stale.
- `figure001()`: four GPUs with the compute durations the figure draws, "update every step"
  vs "accumulate two steps, then update" (one gradient sync block of `sync_time`).
- `figure002()`: three data-parallel workers on a parameter server, for the data-flow diagram.
- `figure003()`: neural architecture search by REINFORCE, 2 shards, 3 controllers, 2 children.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .checks import number
from .cluster import LONGEST, Cluster
from .result import Run
from .training import train

if TYPE_CHECKING:  # pslab.nas loads on first use
    from .nas.result import Search

# Figure 001's blocks, GPU0..GPU3 x (step 1, step 2), in units of 1.2em of the seed's TikZ.
FIGURE001_DURATIONS = [[2.8, 3.7], [4.0, 2.8], [3.2, 3.2], [3.0, 4.0]]

# Figure 000: minibatch 0 on G0 is twice as long as minibatches 1 and 2 (the straggler); F and
# P are short next to a minibatch, and the server's Update is visible but shorter than a push
# round. Zero bandwidth cost keeps F and P the same width on both shards, as drawn. The figure
# draws a shard's F and P one after another: its links carry one transfer at a time.
FIGURE000_CLUSTER = dict(compute_time=3.0, speeds=[0.5, 1.0, 1.0], latency=0.25,
                         bandwidth=float("inf"), update_time=1.0, links="one-at-a-time")


def figure000(steps: int = 2, seed: int = 0) -> tuple[Run, Run]:
    """(sync_run, async_run): the same three processors and straggler under both modes."""
    kw = dict(workers=3, steps=steps, shards="layers", seed=seed, batch=32)
    return (train(mode="sync", cluster=Cluster(**FIGURE000_CLUSTER), **kw),
            train(mode="async", cluster=Cluster(**FIGURE000_CLUSTER), **kw))


def figure001(sync_time: float = 1.0, seed: int = 0) -> tuple[Run, Run]:
    """(every_step_run, accumulate_two_run) on the durations of figure 001.

    The network is free; the gradient sync is one server update of `sync_time` on one shard
    (a single block across all GPUs, as drawn). sync_time=1.0 gives makespans 10.0 and 8.0;
    sync_time=0 gives 8.0 and 7.0 with 5.3 and 1.3 GPU-seconds idle.
    """
    sync_time = number("sync_time", sync_time, high=LONGEST)
    cluster = Cluster(durations=FIGURE001_DURATIONS, latency=0.0, bandwidth=float("inf"),
                      update_time=sync_time)
    kw = dict(mode="sync", workers=4, shards=1, seed=seed, batch=16, cluster=cluster)
    return train(steps=2, accumulate=1, **kw), train(steps=1, accumulate=2, **kw)


def figure002(seed: int = 0) -> Run:
    """Three workers training the digits MLP on a two-shard parameter server (sync), its
    links carrying one transfer at a time, as the seed figure's timing was made."""
    return train(mode="sync", workers=3, steps=20, batch=32, shards="layers", seed=seed,
                 cluster=Cluster(jitter=0.2, links="one-at-a-time"))


def figure003(seed: int = 0) -> "Search":
    """Figure 003 live: S = 2 server shards, K = 3 controller replicas, m = 2 children each, 10
    rounds of NAS by REINFORCE (a `pslab.nas.Search`; draw it with `pslab.plot.plot_figure`)."""
    from .nas.front import search  # loaded on first use: `import pslab` stays light

    return search(servers=2, controllers=3, children=2, rounds=10, seed=seed)


REPLAYS = {"figure000": figure000, "figure001": figure001, "figure002": figure002,
           "figure003": figure003}
