"""Figure 003: neural architecture search by REINFORCE on a parameter server (Zoph & Le 2017).

S parameter-server shards hold the controller's parameters Θ; K controller replicas pull Θ,
sample m child networks each, wait for their m children to train and report their held-out
accuracy R, and push a policy gradient back. Everything runs on the core's clock, shards and
server; children are real MLPs trained on the digits.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    baseline = pslab.nas.random_search(controllers=3, children=2, rounds=10, seed=0)
    pslab.plot.plot_figure(result)

Layer: a tier above the front door and the core, headless: its figures are drawn by
pslab/drawing/nas_*.py (reached through `pslab.plot`), its dashboard and questions are
pslab/notebook/nas_*.py, so `import pslab.nas` loads no plotting or widget library.
"""
from .child import Budget, clear_cache
from .compare import duels, format_table
from .random_search import random_search
from .scale import PAPER, format_sweep, lower_bound, paper_scale, server_busy, sweep_servers
from .schedule import Sample, Update
from .search import Found, Search, search
from .space import ACTIVATIONS, Arch, Space, describe

__all__ = ["search", "random_search", "Search", "Found", "Space", "Arch", "ACTIVATIONS",
           "describe", "Budget", "clear_cache", "Sample", "Update", "duels", "format_table",
           "PAPER", "paper_scale", "sweep_servers", "lower_bound", "format_sweep",
           "server_busy"]
