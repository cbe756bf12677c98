"""Figure 003: neural architecture search by REINFORCE on a parameter server (Zoph & Le 2017).

S parameter-server shards hold the controller's parameters Θ; K controller replicas pull Θ,
sample m child networks each, wait for their m children to train and report their held-out
accuracy R, and push a policy gradient back. Everything runs on the core's clock, shards and
server; children are real MLPs trained on the digits.

    result = pslab.nas.search(servers=2, controllers=3, children=2, rounds=10, seed=0)
    baseline = pslab.nas.random_search(controllers=3, children=2, rounds=10, seed=0)
"""
from __future__ import annotations

from .child import Budget, clear_cache
from .random_search import random_search
from .schedule import Sample, Update
from .search import Found, Search, search
from .space import ACTIVATIONS, Arch, Space, describe

__all__ = ["search", "random_search", "Search", "Space", "Budget", "Sample", "Update", "Found",
           "Arch", "ACTIVATIONS", "describe", "clear_cache"]
