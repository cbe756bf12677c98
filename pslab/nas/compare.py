"""REINFORCE against random search at the same budget, over several seeds (figure 003's claim).

Both train controllers·children·rounds children per seed, from the same space and budget,
and sample their first round from the same uniform policy, so they start level.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .front import random_search, search
from .result import Search


class Duel(NamedTuple):
    """One seed's pair of searches."""

    seed: int
    reinforce: Search
    random: Search


def duels(seeds: Sequence[int] = (0, 1, 2), **kwargs) -> list[Duel]:
    """REINFORCE and random search for each seed; kwargs go to both (where they apply)."""
    shared = {k: v for k, v in kwargs.items()
              if k in ("controllers", "children", "rounds", "space", "steps", "batch",
                       "child_lr", "cluster")}
    return [Duel(s, search(seed=s, **kwargs), random_search(seed=s, **shared)) for s in seeds]


def table(found: Sequence[Duel], first: int = 3) -> list[tuple]:
    """Rows (seed, method, mean R of the first `first` rounds, of the last `first`, best R)."""
    rows = []
    for d in found:
        for name, r in (("REINFORCE", d.reinforce), ("random", d.random)):
            c = r.curve
            rows.append((d.seed, name, float(c[:first].mean()), float(c[-first:].mean()),
                         r.best[0].accuracy))
    return rows


def format_table(found: Sequence[Duel], first: int = 3) -> str:
    """`table` as text, one line per seed and method, then the means over seeds."""
    from ..text import table as text_table

    rows = [(seed, m, f"{a:.1%}", f"{b:.1%}", f"{c:.1%}")
            for seed, m, a, b, c in table(found, first)]
    rows += [("mean", m, *(f"{v:.1%}" for v in vals)) for m, vals in summary(found, first).items()]
    return text_table(rows, ("seed", "method", f"mean R, first {first} rounds",
                             f"mean R, last {first} rounds", "best R"))


def summary(found: Sequence[Duel], first: int = 3) -> dict[str, tuple[float, float, float]]:
    """Per method: the means over seeds of (first rounds' R, last rounds' R, best R)."""
    rows = table(found, first)
    return {m: tuple(float(np.mean([r[i] for r in rows if r[1] == m])) for i in (2, 3, 4))
            for m in ("REINFORCE", "random")}


def round_best(r: Search) -> np.ndarray:
    """The best accuracy sampled in each round."""
    out = np.zeros(r.rounds)
    for s in r.samples:
        out[s.round] = max(out[s.round], s.accuracy)
    return out
