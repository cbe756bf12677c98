"""The paper's controller for figure 003: an LSTM that writes a child one decision at a time.

Zoph & Le's controller is a recurrent network: at each step it reads the embedding of the
previous decision, and a softmax head for the current decision (depth, a layer's width, its
activation) reads the LSTM's state. So each choice can depend on the ones before it, which
the per-decision softmax (`controller.Softmax`) cannot express. Here: one LSTM cell of
`HIDDEN` units (the paper: two layers of 35), weights drawn from U(−0.08, 0.08) as in the
paper, all of them in Θ on the servers; the REINFORCE gradient comes from autograd.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from ..layout import Layout, Params
from .space import Arch, Space

HIDDEN = 16
_INIT = 12  # random stream id of Θ's initial weights


def shapes(space: Space) -> dict[str, tuple[int, ...]]:
    """The LSTM cell, a start token, and per decision an embedding table and a softmax head."""
    h = HIDDEN
    out: dict[str, tuple[int, ...]] = {"W_ih": (4 * h, h), "W_hh": (4 * h, h), "b": (4 * h,),
                                       "start": (h,)}
    for name, (n,) in space.shapes.items():
        out[f"{name}.embed"] = (n, h)
        out[f"{name}.W"] = (n, h)
        out[f"{name}.b"] = (n,)
    return out


def init(space: Space, seed: int) -> Params:
    g = torch.Generator().manual_seed(int(np.random.default_rng([seed, _INIT]).integers(2**62)))
    return {n: (torch.rand(s, generator=g) * 2 - 1) * 0.08 for n, s in shapes(space).items()}


def _steps(theta: Params, space: Space, choose: Callable[[str, torch.Tensor], int]
           ) -> tuple[tuple[int, ...], list[torch.Tensor]]:
    """Run the controller: `choose(decision, logits)` picks each token; returns the choices
    and each step's log-softmax (for the gradient)."""
    h = c = torch.zeros(HIDDEN)
    x = theta["start"]
    choices, logps, names = [], [], ["depth"]
    while names:
        name = names.pop(0)
        h, c = _cell(theta, x, h, c)
        logp = torch.log_softmax(theta[f"{name}.W"] @ h + theta[f"{name}.b"], 0)
        token = choose(name, logp)
        choices.append(token)
        logps.append(logp[token])
        x = theta[f"{name}.embed"][token]
        if name == "depth":
            names = space.decisions(space.depths[token])[1:]
    return tuple(choices), logps


def sampler(theta: Params, space: Space) -> Callable[[np.random.Generator], tuple[int, ...]]:
    """Draw children from Θ: inverse CDF on one uniform number per decision. What the LSTM
    says after a prefix of choices is the same for every child drawn from this Θ, so each
    prefix's state and CDF is computed once (a timing-only paper-scale run draws 4,000
    children from one Θ)."""
    memo: dict[tuple[int, ...], tuple[torch.Tensor, torch.Tensor, np.ndarray]] = {}

    def step(prefix: tuple[int, ...], name: str) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
        if prefix not in memo:
            if prefix:
                h, c, _ = memo[prefix[:-1]]
                x = theta[f"{_name(space, prefix[:-1])}.embed"][prefix[-1]]
            else:
                h = c = torch.zeros(HIDDEN)
                x = theta["start"]
            h, c = _cell(theta, x, h, c)
            logp = torch.log_softmax(theta[f"{name}.W"] @ h + theta[f"{name}.b"], 0)
            memo[prefix] = h, c, np.cumsum(np.exp(logp.double().numpy()))
        return memo[prefix]

    def draw(rng: np.random.Generator) -> tuple[int, ...]:
        prefix: tuple[int, ...] = ()
        with torch.no_grad():
            while len(prefix) < _length(space, prefix):
                cdf = step(prefix, _name(space, prefix))[2]
                token = int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"),
                                len(cdf) - 1))
                prefix += (token,)
        return prefix
    return draw


def _name(space: Space, prefix: tuple[int, ...]) -> str:
    """The decision made after `prefix`: depth first, then width, act per layer."""
    return "depth" if not prefix else space.decisions(space.depths[prefix[0]])[len(prefix)]


def _length(space: Space, prefix: tuple[int, ...]) -> int:
    return 1 if not prefix else len(space.decisions(space.depths[prefix[0]]))


def _cell(theta: Params, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step (gates in torch's order: input, forget, cell, output)."""
    i, f, g, o = (theta["W_ih"] @ x + theta["W_hh"] @ h + theta["b"]).chunk(4)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def gradient(theta: Params, layout: Layout, space: Space, choices: Sequence[tuple[int, ...]],
             advantages: Sequence[float]) -> torch.Tensor:
    """The flat gradient of −mean_j a_j log π(child_j) at Θ, by autograd."""
    flat = layout.flatten(theta).detach().requires_grad_()
    leaves = layout.unflatten(flat)
    loss = 0.0
    for c, a in zip(choices, advantages):
        forced = iter(c)
        _, logps = _steps(leaves, space, lambda _n, _l: next(forced))
        loss = loss - a * torch.stack(logps).sum()
    (loss / len(choices)).backward()
    return flat.grad.detach()


def greedy(theta: Params, space: Space) -> Arch:
    """The child the policy favours: the most probable token at each step."""
    with torch.no_grad():
        return space.arch(_steps(theta, space, lambda _n, logp: int(logp.argmax()))[0])
