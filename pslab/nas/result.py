"""What a search leaves behind: the `Search` result and the architectures it `Found`.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    result.timeline  # core Spans; `result.tier(span)` says servers / controllers / children
    result.rewards   # (K, rounds): mean held-out accuracy of each replica's children
    result.history   # every update of Θ, with its staleness
    result.best      # the best architectures found
    result.settings  # the checked `SearchSettings` it ran with
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch

from ..layout import Layout, Params
from ..timeline import Span
from .policies import POLICIES
from .schedule import Sample, Update
from .settings import SearchSettings
from .space import Arch, describe


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

    settings: SearchSettings
    method: str  # "reinforce" (`search`) or "random" (`random_search`)
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
        return self.settings.controllers

    @property
    def children(self) -> int:
        return self.settings.children

    @property
    def rounds(self) -> int:
        return self.settings.rounds

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
        if not self.settings.numerics:
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
        policy, space = POLICIES[self.settings.policy], self.settings.space
        if self.theta is None:
            return policy.init(space, self.settings.seed)
        return self.layout.unflatten(self.theta)

    def favourite(self) -> Arch:
        """The child the final policy favours (the most probable choice at every step)."""
        return POLICIES[self.settings.policy].greedy(self.parameters(), self.settings.space)

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
        if not self.settings.numerics:
            return "timing only"
        c = self.curve
        return (f"mean R {c[0]:.1%} (round 0) → {c[-1]:.1%} (round {self.rounds - 1}), best "
                f"child {self.best[0]}")

    def __repr__(self) -> str:
        return (f"Search({self.method}, S={self.servers}, K={self.controllers}, "
                f"m={self.children}, {self.rounds} rounds: makespan {self.makespan:.4g} s, "
                f"{self.headline() if self.complete else 'interrupted'})")
