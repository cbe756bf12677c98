"""`pslab.nas.search`: figure 003 in one call — S server shards, K controller replicas, m
child replicas each, R rounds on one virtual clock — and the `Search` result it returns.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    result.timeline  # core Spans; `result.tier(span)` says servers / controllers / children
    result.rewards   # (K, rounds): mean held-out accuracy of each replica's children
    result.history   # every update of Θ, with its staleness
    result.best      # the best architectures found

A search that trains many children shows a progress bar with an estimate of the time left (a
notebook bar in Jupyter, else on stderr), and Ctrl-C stops it cleanly: the replicas' rounds
finished so far come back as a partial `Search` (`complete` False, with a warning), and the
children trained so far stay in the cache, so a rerun gets them at once.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from ..checks import flag, integer, number, one_of
from ..cluster import Cluster
from ..data import dataset_size
from ..engine import stop_on_interrupt
from ..layout import Layout, Params
from ..model import single_thread
from ..server import ParameterServer
from ..timeline import Span
from . import child
from .policies import POLICIES
from .schedule import Sample, Tiers, Update
from .space import Arch, Space, as_space, describe

TIERS = ("servers", "controllers", "children")
# The default timing: a reference-size child (the core's 64-32-10 MLP) takes 30 ms a step, so
# 1.5 s for its 50 steps; the network and the updates are the core's defaults.
DEFAULT_CLUSTER = dict(compute_time=0.03)
# children trained in one search (K x m x rounds; the paper's scale is 100 x 8 x a few rounds)
# and minibatch steps per child: beyond these a search would run for days or exhaust memory
# (10^5 children: 25x the paper's 100 x 8 x 5, ~100 MB of timeline and seconds of clock)
MAX_CHILDREN, MAX_STEPS = 10**5, 10**6
# progress=None shows a bar from this many children on (K x m x rounds): trained, a child takes
# 20-50 ms at load 1; timing only, the clock takes ~0.1 ms per child. Fixed by the arguments,
# never by the time taken, so a notebook's output is the same every run.
BAR_FROM = {True: 200, False: 20_000}
LARGEST_LR = 1e30  # what float32 weights survive a step of


class Found(NamedTuple):
    """A distinct architecture the search trained, with its accuracy and when it was found."""

    arch: Arch
    accuracy: float
    round: int  # first round it was sampled in
    times: int  # how often it was sampled

    def __str__(self) -> str:
        return f"{describe(self.arch)}: {self.accuracy:.1%}"


@dataclass
class Search:
    """What a search (or the random-search baseline) leaves behind."""

    config: dict[str, Any]
    timeline: list[Span]
    samples: list[Sample]
    history: list[Update]
    makespan: float
    layout: Layout
    theta: torch.Tensor | None  # the final Θ in server order (None: timing-only or random)
    trained: int = 0  # children really trained in this call (the rest came from the cache)
    gradients: list = field(default_factory=list, repr=False)
    complete: bool = True  # False: stopped by Ctrl-C, with the replicas' rounds finished so far

    @property
    def servers(self) -> int:
        return self.layout.shards

    @property
    def controllers(self) -> int:
        return self.config["controllers"]

    @property
    def children(self) -> int:
        return self.config["children"]

    @property
    def rounds(self) -> int:
        return self.config["rounds"]

    @property
    def method(self) -> str:
        return self.config["method"]

    @property
    def shard_bytes(self) -> list[int]:
        return self.layout.shard_bytes()

    @property
    def rewards(self) -> np.ndarray:
        """(controllers, rounds): mean held-out accuracy of each replica's m children."""
        out = np.full((self.controllers, self.rounds), math.nan)
        acc = np.zeros_like(out)
        for s in self.samples:
            acc[s.controller, s.round] += s.accuracy
        done = {(s.controller, s.round) for s in self.samples}
        for k, r in done:
            out[k, r] = acc[k, r] / self.children
        return out

    @property
    def curve(self) -> np.ndarray:
        """Mean accuracy of all children sampled in each round (the learning curve)."""
        return np.nanmean(self.rewards, axis=0) if self.samples else np.zeros(0)

    @property
    def best(self) -> list[Found]:
        """Distinct architectures, best accuracy first (ties: found first)."""
        seen: dict[Arch, Found] = {}
        for s in sorted(self.samples, key=lambda s: (s.round, s.controller, s.child)):
            f = seen.get(s.arch)
            seen[s.arch] = Found(s.arch, s.accuracy, s.round, 1) if f is None else \
                f._replace(times=f.times + 1)
        if not self.config["numerics"]:
            return []
        return sorted(seen.values(), key=lambda f: (-f.accuracy, f.round))

    @property
    def staleness(self) -> list[int]:
        return [u.staleness for u in self.history]

    def tier(self, span: Span) -> str:
        """'servers' (a shard's job: a pull, a push or an update), 'controllers' or 'children'.
        A pull or push is both a controller's and a shard's; it is drawn on both rows."""
        if span.worker is None:
            return "servers"
        return "controllers" if span.worker < self.controllers else "children"

    def row_label(self, worker: int) -> str:
        """'C2' for controller replica 2, 'C2.0' for its first child: numbered from 0, as the
        ranks and the `speeds` a student passes are (and pslab's workers: G0, G1, ...)."""
        if worker < self.controllers:
            return f"C{worker}"
        k, j = divmod(worker - self.controllers, self.children)
        return f"C{k}.{j}"

    def parameters(self) -> Params:
        """The final Θ by name (the initial Θ for timing-only runs and random search)."""
        policy, space = POLICIES[self.config["policy"]], self.config["space"]
        if self.theta is None:
            return policy.init(space, self.config["seed"])
        return self.layout.unflatten(self.theta)

    def favourite(self) -> Arch:
        """The child the final policy favours (the most probable choice at every step)."""
        return POLICIES[self.config["policy"]].greedy(self.parameters(), self.config["space"])

    def updates_table(self, first: int = 8) -> str:
        """The first updates of Θ as a text table: who pushed, when, how stale."""
        from ..text import table

        rows = [(f"{u.time:.2f}", "all" if u.controller is None else f"C{u.controller}",
                 u.round, u.version, u.staleness, f"{u.reward:.1%}")
                for u in self.history[:first]]
        return table(rows, ("time (s)", "from", "round", "version", "staleness",
                            "mean R of its children"))

    def headline(self) -> str:
        """'mean R 48% (round 0) → 85% (round 9), best child …' (or 'timing only'); rounds
        count from 0, as workers, steps and `Sample.round` do."""
        if not self.config["numerics"]:
            return "timing only"
        c = self.curve
        return (f"mean R {c[0]:.1%} (round 0) → {c[-1]:.1%} (round {self.rounds - 1}), best "
                f"child {self.best[0]}")

    def __repr__(self) -> str:
        return (f"Search({self.method}, S={self.servers}, K={self.controllers}, "
                f"m={self.children}, {self.rounds} rounds: makespan {self.makespan:.4g} s, "
                f"{self.headline() if self.complete else 'interrupted'})")


def _check(servers: Any, controllers: Any, children: Any, rounds: Any, seed: Any, lr: Any,
           mode: Any, numerics: Any, cluster: Any, space: Any, cube: Any, steps: Any,
           batch: Any, child_lr: Any, decay: Any, policy: Any = "softmax") -> dict[str, Any]:
    """Every argument checked before any work: a ValueError names the first bad one."""
    for name, value in (("numerics", numerics), ("cube", cube)):
        flag(name, value)
    space = as_space(space)
    policy = one_of("policy", policy, tuple(POLICIES))
    keys = sum(_count(s) for s in POLICIES[policy].shapes(space).values())  # Θ's size
    cfg = dict(policy=policy,
        servers=integer("servers", servers, high=keys), controllers=integer("controllers",
                                                                            controllers),
        children=integer("children", children), rounds=integer("rounds", rounds),
        seed=integer("seed", seed, low=0, high=2**64 - 1), lr=number("lr", lr, positive=True),
        mode=one_of("mode", mode, ("async", "sync")), numerics=numerics, space=space,
        cube=cube, decay=number("decay", decay))
    if cfg["decay"] >= 1:
        raise ValueError(f"decay must be a number >= 0 and < 1 (got {decay!r})")
    trained = cfg["controllers"] * cfg["children"] * cfg["rounds"]
    if trained > MAX_CHILDREN:
        raise ValueError(f"controllers x children x rounds must be at most {MAX_CHILDREN:,} "
                         f"children trained (got {trained:.3g}): make controllers, children "
                         f"or rounds smaller")
    cluster = Cluster(**DEFAULT_CLUSTER) if cluster is None else cluster
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a pslab.Cluster (got {type(cluster).__name__})")
    cluster.check(cfg["controllers"] * cfg["children"], cfg["rounds"])  # speeds: per child
    cfg["cluster"] = cluster
    cfg["budget"] = child.Budget(integer("steps", steps, high=MAX_STEPS),
                                 integer("batch", batch, high=dataset_size()),
                                 number("child_lr", child_lr, positive=True, high=LARGEST_LR))
    return cfg


class _Sampled:
    """The bar counts children trained (or from the cache); the children sampled so far, ahead
    of them, go in its postfix (at most twice a second: each redraws it)."""

    def __init__(self, bar: Any):
        self.bar, self.n, self.shown = bar, 0, 0.0

    def __call__(self, n: int) -> None:
        self.n += n
        if time.monotonic() - self.shown > 0.5:
            self.bar.set_postfix_str(f"{self.n} sampled")
            self.shown = time.monotonic()


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def search(servers: int = 2, controllers: int = 3, children: int = 2, rounds: int = 10,
           seed: int = 0, lr: float = 2.0, mode: str = "async", numerics: bool = True,
           cluster: Cluster | None = None, space: Space | dict | None = None,
           cube: bool = True, steps: int = 50, batch: int = 96, child_lr: float = 0.3,
           decay: float = 0.8, policy: str = "softmax", progress: bool | None = None
           ) -> Search:
    """Neural architecture search by REINFORCE on a parameter server (figure 003).

    servers: S shards holding Θ by key range (1 to Θ's size). controllers: K replicas.
    children: m child replicas per controller. rounds: batches per replica. seed: every random
    choice. lr: the servers' step on Θ. mode: "async" (each push applied as it comes) or
    "sync" (one averaged update per round, a barrier across replicas). numerics: False runs the
    clock only (children are sampled from the initial policy, uniform for "softmax"; no training).
    cluster: the timing model (default `Cluster(compute_time=0.03)`); a child takes
    steps × (compute_time / its speed) × its relative FLOPs; `speeds` and `durations` are per
    child replica (K·m rows, one column per round).
    space: what is searched (`pslab.nas.Space`). cube: reward R³ (the paper) or R.
    steps, batch, child_lr: each child's training budget. decay: the baseline's EMA decay.
    policy: the controller, "softmax" (one softmax per decision, Θ starts uniform) or "lstm"
    (the paper's recurrent controller; it wants a larger lr).
    progress: a bar with the time left, True or False; None: from `BAR_FROM` children on.
    Ctrl-C returns the partial search (see the module's docstring).
    """
    cfg = _check(servers, controllers, children, rounds, seed, lr, mode, numerics, cluster,
                 space, cube, steps, batch, child_lr, decay, policy)
    return _run(cfg, method="reinforce", learn=True, progress=flag("progress", progress, True))


def _run(cfg: dict[str, Any], method: str, learn: bool, progress: bool | None) -> Search:
    space, budget = cfg["space"], cfg["budget"]
    policy = POLICIES[cfg["policy"]]
    layout = Layout.key_range(policy.shapes(space), cfg["servers"])
    theta0 = policy.init(space, cfg["seed"])
    numerics = cfg["numerics"]
    server = ParameterServer(theta0 if numerics else None, layout, cfg["lr"],
                             aggregate=cfg["controllers"] if cfg["mode"] == "sync" else 1)
    tiers = Tiers(server, policy, theta0, space, cfg["cluster"], cfg["controllers"],
                  cfg["children"], cfg["rounds"], cfg["seed"], sync=cfg["mode"] == "sync",
                  learn=learn,
                  numerics=numerics, budget=budget, cube=cfg["cube"], decay=cfg["decay"])
    before = child.stats["trained"]
    total = cfg["controllers"] * cfg["children"] * cfg["rounds"]
    bar = None
    if progress or (progress is None and total >= BAR_FROM[numerics]):
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"{method} search", unit="child")
        tiers.tick, tiers.sampled = bar.update, _Sampled(bar)
    try:  # the first Ctrl-C stops the clock between two events (engine.stop_on_interrupt)
        with single_thread(), stop_on_interrupt(tiers.clock):
            makespan = tiers.run()
    finally:
        if bar is not None:
            bar.close()
    if tiers.clock.stopped:
        warnings.warn(f"search interrupted after {len(tiers.samples)} of {total} children: "
                      f"returning the partial search (the children trained so far are "
                      f"cached: a rerun gets them at once)", stacklevel=3)
    makespan = max([makespan, *(s.end for s in tiers.timeline)])  # an update may end last
    theta = server.flat() if numerics and learn else None
    return Search(dict(cfg, method=method), tiers.timeline, tiers.samples, tiers.history,
                  makespan, layout, theta, child.stats["trained"] - before, tiers.gradients,
                  complete=not tiers.clock.stopped)
