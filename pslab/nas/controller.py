"""The middle tier of figure 003: the controller's policy over child architectures.

The default controller is one softmax per decision (depth, then each layer's width and
activation), whose logits are the rows of Θ: Zoph & Le's sampling order without the LSTM that
links the decisions (that one is `lstm.py`, `policy="lstm"`; on the digits both learn about
as fast). Θ starts at zero, so the first round samples every choice uniformly, exactly as
random search does.

Sampling is inverse-CDF on one uniform number per decision from the caller's generator, so
the same Θ and the same stream give the same children on every machine.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np
import torch

from ..layout import Params
from .space import Arch, Space


def probabilities(logits: torch.Tensor) -> np.ndarray:
    """Softmax of one decision's logits, in float64."""
    z = logits.detach().double().numpy()
    e = np.exp(z - z.max())
    return e / e.sum()


def cdfs(theta: Params, space: Space) -> dict[str, list[float]]:
    """Each decision's cumulative probabilities: computed once per pulled Θ, then every child
    of the round is drawn from them (sampling is then a few bisections, no softmax)."""
    return {name: np.cumsum(probabilities(theta[name])).tolist() for name in space.shapes}


def sample(cdf: dict[str, list[float]], space: Space, rng: np.random.Generator
           ) -> tuple[int, ...]:
    """One child's decisions (indices into the space), drawn from the policy's `cdfs`."""
    depth_index = _draw(cdf["depth"], rng)
    choices = [depth_index]
    for name in space.decisions(space.depths[depth_index])[1:]:
        choices.append(_draw(cdf[name], rng))
    return tuple(choices)


def _draw(cdf: list[float], rng: np.random.Generator) -> int:
    return min(bisect_right(cdf, rng.random() * cdf[-1]), len(cdf) - 1)


def log_prob(theta: Params, space: Space, choices: tuple[int, ...]) -> float:
    """log π(child) = the sum of each decision's log-probability."""
    names = space.decisions(space.depths[choices[0]])
    return float(sum(np.log(probabilities(theta[n])[c]) for n, c in zip(names, choices)))


def log_prob_grad(theta: Params, space: Space, choices: tuple[int, ...]) -> Params:
    """∇_Θ log π(child): onehot(choice) − softmax on each decision made, zero elsewhere
    (a 1-layer child never chose a second width, so it says nothing about it)."""
    grad = {n: torch.zeros_like(t) for n, t in theta.items()}
    for name, c in zip(space.decisions(space.depths[choices[0]]), choices):
        g = -torch.from_numpy(probabilities(theta[name])).to(theta[name].dtype)
        g[c] += 1.0
        grad[name] = g
    return grad


def most_likely(theta: Params, space: Space) -> Arch:
    """The child the policy favours: the most probable choice at every decision."""
    depth_index = int(np.argmax(probabilities(theta["depth"])))
    names = space.decisions(space.depths[depth_index])[1:]
    return space.arch([depth_index, *(int(np.argmax(probabilities(theta[n]))) for n in names)])
