"""The settings of a search: one typed, frozen object, made and checked once.

`pslab.nas.search(...)` and `pslab.nas.random_search(...)` make a `SearchSettings` from their
keyword arguments; the search runs the tiers (pslab/nas/schedule.py) from its values, and the
`Search` result carries it unchanged. The rules a search shares with a training run (the seed,
the batch, the cluster's type) are pslab.settings' own; the timing table's shape is
`Cluster.check`'s. A changed copy (`dataclasses.replace`) is checked again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from ..checks import flag, integer, number, one_of
from ..cluster import Cluster
from ..settings import check_batch, check_cluster, check_seed
from .child import Budget
from .policies import POLICIES
from .space import Space, as_space

# The default timing: a reference-size child (the core's 64-32-10 MLP) takes 30 ms a step, so
# 1.5 s for its 50 steps; the network and the updates are the core's defaults.
DEFAULT_CLUSTER = dict(compute_time=0.03)
# children trained in one search (K x m x rounds; the paper's scale is 100 x 8 x a few rounds)
# and minibatch steps per child: beyond these a search would run for days or exhaust memory
# (10^5 children: 25x the paper's 100 x 8 x 5, ~100 MB of timeline and seconds of clock)
MAX_CHILDREN, MAX_STEPS = 10**5, 10**6
LARGEST_LR = 1e30  # what float32 weights survive a step of
MODES = ("async", "sync")


@dataclass(frozen=True)
class SearchSettings:
    """Everything a search is made from (what `pslab.nas.search` takes, less `progress`).

    servers: S shards holding Θ by key range (1 to Θ's size). controllers: K replicas.
    children: m child replicas per controller. rounds: batches per replica. seed: every random
    choice. lr: the servers' step on Θ. mode: "async" or "sync". numerics: False runs the
    clock only. cluster: the timing model (None: `Cluster(compute_time=0.03)`). space: what is
    searched (a `Space`, or a dict of its fields). cube: reward R³ or R. steps, batch,
    child_lr: each child's training budget. decay: the baseline's EMA decay. policy:
    "softmax" or "lstm".
    """

    servers: int = 2
    controllers: int = 3
    children: int = 2
    rounds: int = 10
    seed: int = 0
    lr: float = 2.0
    mode: str = "async"
    numerics: bool = True
    cluster: Cluster | None = None
    space: Space = field(default_factory=Space)
    cube: bool = True
    steps: int = 50
    batch: int = 96
    child_lr: float = 0.3
    decay: float = 0.8
    policy: str = "softmax"

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: the checked values replace the given ones, once
        for name in ("numerics", "cube"):
            put(self, name, flag(name, getattr(self, name)))
        put(self, "space", as_space(self.space))
        put(self, "policy", one_of("policy", self.policy, tuple(POLICIES)))
        put(self, "servers", integer("servers", self.servers, high=self.keys))
        for name in ("controllers", "children", "rounds"):
            put(self, name, integer(name, getattr(self, name)))
        put(self, "seed", check_seed(self.seed))
        put(self, "lr", number("lr", self.lr, positive=True))
        put(self, "mode", one_of("mode", self.mode, MODES))
        put(self, "decay", number("decay", self.decay))
        if self.decay >= 1:
            raise ValueError(f"decay must be a number >= 0 and < 1 (got {self.decay!r})")
        if self.trained > MAX_CHILDREN:
            raise ValueError(f"controllers x children x rounds must be at most {MAX_CHILDREN:,} "
                             f"children trained (got {self.trained:.3g}): make controllers, "
                             f"children or rounds smaller")
        check_cluster(self.cluster)
        self.timing.check(self.controllers * self.children, self.rounds)  # speeds: per child
        put(self, "steps", integer("steps", self.steps, high=MAX_STEPS))
        put(self, "batch", check_batch(self.batch))
        put(self, "child_lr", number("child_lr", self.child_lr, positive=True, high=LARGEST_LR))

    @property
    def keys(self) -> int:
        """Θ's size: the floats the servers hold."""
        return sum(math.prod(shape) for shape in POLICIES[self.policy].shapes(self.space).values())

    @property
    def trained(self) -> int:
        """Children a complete search samples: K x m x rounds."""
        return self.controllers * self.children * self.rounds

    @property
    def timing(self) -> Cluster:
        """The timing model: the given cluster, or the default `Cluster(compute_time=0.03)`."""
        return Cluster(**DEFAULT_CLUSTER) if self.cluster is None else self.cluster

    @property
    def budget(self) -> Budget:
        """How every child trains."""
        return Budget(self.steps, self.batch, self.child_lr)

    @property
    def sync(self) -> bool:
        return self.mode == "sync"

