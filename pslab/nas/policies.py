"""The two controllers figure 003 can use, behind one small interface (`Policy`).

- "softmax": one softmax per decision, Θ = 33 logits starting at zero (`controller.py`);
  its first round is exactly random search, and its gradient is written out by hand.
- "lstm": the paper's recurrent controller (`lstm.py`), each decision reading the previous one.

The scheduler only asks a policy for Θ's shapes and initial values, for a sampler of children
from a pulled Θ, for the REINFORCE gradient of a batch, and for its favourite child.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import torch

from . import controller, lstm, reinforce
from .space import Space


class Policy(NamedTuple):
    name: str
    shapes: Callable  # (space) -> {name: shape}
    init: Callable  # (space, seed) -> Params
    sampler: Callable  # (theta, space) -> draw(rng) -> choices
    gradient: Callable  # (theta, layout, space, choices, advantages) -> flat tensor
    greedy: Callable  # (theta, space) -> Arch


def _softmax_sampler(theta, space: Space) -> Callable[[np.random.Generator], tuple[int, ...]]:
    cdf = controller.cdfs(theta, space)  # once per pulled Θ; each child is then a few bisections
    return lambda rng: controller.sample(cdf, space, rng)


SOFTMAX = Policy("softmax", lambda space: space.shapes,
                 lambda space, seed: {n: torch.zeros(s) for n, s in space.shapes.items()},
                 _softmax_sampler, reinforce.gradient, controller.most_likely)
LSTM = Policy("lstm", lstm.shapes, lstm.init, lstm.sampler, lstm.gradient, lstm.greedy)
POLICIES = {p.name: p for p in (SOFTMAX, LSTM)}
