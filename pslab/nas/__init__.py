"""Figure 003: neural architecture search by REINFORCE on a parameter server (Zoph & Le 2017).

S parameter-server shards hold the controller's parameters Θ; K controller replicas pull Θ,
sample m child networks each, wait for their m children to train and report their held-out
accuracy R, and push a policy gradient back. Everything runs on the core's clock, shards and
server; children are real MLPs trained on the digits.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    baseline = pslab.nas.random_search(controllers=3, children=2, rounds=10, seed=0)

Layer: a tier above the front door and the core (its search never imports a plotting library);
its own figures sit on the drawing layer, its live view and quiz on the notebook layer.
"""
from __future__ import annotations

from .child import Budget, clear_cache
from .compare import duels, format_table, plot_rewards
from .diagram import plot_figure, plot_hierarchy
from .random_search import random_search
from .schedule import Sample, Update
from .search import Found, Search, search
from .scale import PAPER, format_sweep, lower_bound, paper_scale, plot_sweep, sweep_servers
from .space import ACTIVATIONS, Arch, Space, describe
from .tiers_plot import plot_tiers
from . import tikz as _tikz  # noqa: F401 - registers pslab.tikz(search)

__all__ = ["search", "random_search", "Search", "Space", "Budget", "Sample", "Update", "Found",
           "Arch", "ACTIVATIONS", "describe", "clear_cache", "duels", "plot_rewards",
           "plot_figure", "plot_hierarchy", "plot_tiers", "PAPER", "paper_scale",
           "sweep_servers", "plot_sweep", "format_sweep", "lower_bound", "format_table",
           "question", "Dashboard", "dashboard"]


def __getattr__(name: str):
    """The dashboard (ipywidgets) loads on first use, so scripts never pay for it."""
    if name in ("Dashboard", "dashboard"):
        from . import live

        return getattr(live, name)
    if name == "question":  # the predict-then-run questions: notebook pieces, on first use
        from .questions import question

        return question
    raise AttributeError(f"module 'pslab.nas' has no attribute {name!r}")
