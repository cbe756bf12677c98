"""Figure 003's comparisons drawn: REINFORCE against random search over seeds
(`pslab.nas.compare`), and the makespan and the busiest shard against S (`pslab.nas.scale`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from ..nas.compare import Duel, round_best
from ..nas.scale import server_busy
from ..nas.result import Search
from .sizes import CELL_IN


def plot_rewards(found: Sequence[Duel]) -> Figure:
    """Mean accuracy of the sampled children per round: the mean over seeds thick, the band
    between the lowest and highest seed shaded (how far one seed's curve moves by chance)."""
    fig = Figure(figsize=(CELL_IN, 3.8), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    colours = {"REINFORCE": "#2E7D32", "random": "#7F7F7F"}
    for name, pick in (("REINFORCE", lambda d: d.reinforce), ("random", lambda d: d.random)):
        curves = np.array([pick(d).curve for d in found])
        best = np.array([np.maximum.accumulate(round_best(pick(d))) for d in found])
        x = np.arange(curves.shape[1])  # rounds count from 0
        for a, ys in ((ax, curves), (ax2, best)):
            a.fill_between(x, ys.min(0), ys.max(0), color=colours[name], alpha=0.18, lw=0)
            a.plot(x, ys.mean(0), color=colours[name], lw=2.5, label=name)
    ax.set_title(f"mean R of the children sampled\n(line: mean of {len(found)} seeds; "
                 "band: lowest to highest)", fontsize=9.5)
    ax2.set_title("best R found so far", fontsize=9.5)
    for a in (ax, ax2):
        a.set_xlabel("round", fontsize=10)
        a.set_ylabel("held-out accuracy R", fontsize=10)
        a.tick_params(labelsize=9)
        a.grid(alpha=0.3)
        a.legend(fontsize=9, frameon=False, loc="lower right")
    return fig


def plot_sweep(results: Sequence[Search], floor: float | None = None) -> Figure:
    """Makespan and the busiest shard's load against S."""
    fig = Figure(figsize=(CELL_IN, 3.8), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    s = [r.servers for r in results]
    ax.plot(s, [r.makespan for r in results], "o-", color="#C0392B", lw=2, label="makespan")
    if floor is not None:
        ax.axhline(floor, color="0.4", ls="--", lw=1.2, label="free network (children only)")
    ax.set_xlabel("parameter-server shards S", fontsize=10)
    ax.set_ylabel("virtual seconds", fontsize=10)
    ax.set_title(f"time to finish\n(K = {results[0].controllers}, m = {results[0].children}, "
                 f"{results[0].rounds} rounds)", fontsize=10)
    ax.legend(fontsize=9, frameon=False)
    ax2.plot(s, [100 * server_busy(r) for r in results], "s-", color="#2E5FA8", lw=2)
    ax2.set_ylim(0, 105)
    ax2.set_xlabel("parameter-server shards S", fontsize=10)
    ax2.set_ylabel("busiest shard busy\n(% of makespan)", fontsize=10)
    ax2.set_title("the servers' load\n", fontsize=10)
    for a in (ax, ax2):
        a.tick_params(labelsize=9)
        a.grid(alpha=0.3)
    return fig
