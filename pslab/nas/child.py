"""The bottom tier of figure 003: a child replica trains the network it was handed and reports R.

A child is a real MLP built from its architecture (64 inputs -> the sampled hidden layers ->
10 classes), trained with plain SGD for a fixed budget of minibatches of the core's digits
stream (`pslab.data.Digits`), and scored on the held-out split: R is that accuracy.

Training depends only on (architecture, seed, budget), so its accuracy is cached: a controller
that samples the same child twice, or a re-run of a search, gets it at once. The cache only
saves time; a cleared cache gives the same numbers (the tests check it).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from ..data import Digits
from .space import Arch

INPUTS, CLASSES = 64, 10
# The core's figure-000 MLP (64 -> 32 -> 10): a child this size takes `compute_time` per step.
REFERENCE: Arch = ((32, "tanh"),)
_ACT = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid}


@dataclass(frozen=True)
class Budget:
    """How every child trains: `steps` SGD minibatches of `batch` rows at step size `lr`."""

    steps: int = 50  # 50 x 96 rows: about 3 passes over the 1,437 training rows
    batch: int = 96
    lr: float = 0.3


def sizes(arch: Arch) -> list[int]:
    """Layer widths from input to output: [64, w1, ..., 10]."""
    return [INPUTS, *(w for w, _ in arch), CLASSES]


def flops_per_step(arch: Arch, batch: int = 32) -> float:
    """Multiply-adds of one SGD step (forward 2·in·out per row, backward twice that)."""
    dims = sizes(arch)
    return 6.0 * batch * sum(a * b for a, b in zip(dims, dims[1:]))


def relative_cost(arch: Arch) -> float:
    """A child's step time over the reference MLP's: why wide, deep children finish late."""
    return flops_per_step(arch) / flops_per_step(REFERENCE)


@lru_cache(maxsize=8)
def _data(seed: int) -> Digits:
    return Digits.load(seed)


_CACHE: dict[tuple, float] = {}
stats = {"trained": 0, "cached": 0}  # how many children really trained / came from the cache


def clear_cache() -> None:
    """Forget every trained child (the next search trains them again, with the same result)."""
    _CACHE.clear()
    stats.update(trained=0, cached=0)


def accuracy(arch: Arch, seed: int, budget: Budget = Budget()) -> float:
    """Held-out accuracy of `arch` after training on `budget` from `seed` (cached)."""
    key = (arch, seed, budget)
    if key in _CACHE:
        stats["cached"] += 1
        return _CACHE[key]
    stats["trained"] += 1
    _CACHE[key] = value = train(arch, seed, budget)
    return value


def train(arch: Arch, seed: int, budget: Budget = Budget()) -> float:
    """Train the child from scratch (no cache) and return its held-out accuracy."""
    data = _data(seed)
    g = torch.Generator().manual_seed(seed)
    dims = sizes(arch)
    weights, biases = [], []
    for a, b in zip(dims, dims[1:]):  # Xavier-uniform weights, zero biases (as the core's MLP)
        bound = (6.0 / (a + b)) ** 0.5
        weights.append((torch.rand(a, b, generator=g) * 2 - 1) * bound)
        biases.append(torch.zeros(b))
    acts = [a for _, a in arch] + ["output"]
    rows = torch.from_numpy(data.rows(0, budget.steps * budget.batch))  # the core's stream
    xs = data.x_train[rows].view(budget.steps, budget.batch, -1)  # every minibatch, gathered once
    ys = data.y_train[rows].view(budget.steps, budget.batch)
    onehot, lr = torch.eye(CLASSES) / budget.batch, budget.lr
    for x, y in zip(xs, ys):
        outs = _forward(weights, biases, acts, x)
        # cross-entropy's gradient at the logits, then back through each layer by hand: a
        # tiny MLP trains several times faster than through autograd's bookkeeping
        delta = torch.softmax(outs[-1], 1).div_(budget.batch).sub_(onehot[y])
        for i in range(len(weights) - 1, -1, -1):
            grad_b = delta.sum(0)
            back = (delta @ weights[i].T) * _slope(acts[i - 1], outs[i]) if i else None
            weights[i].addmm_(outs[i].T, delta, alpha=-lr)  # w -= lr * (input^T @ delta)
            biases[i].sub_(grad_b, alpha=lr)
            delta = back
    logits = _forward(weights, biases, acts, data.x_test)[-1]
    return float((logits.argmax(1) == data.y_test).float().mean())


def _forward(weights: list[torch.Tensor], biases: list[torch.Tensor], acts: list[str],
             x: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's output, the input first and the logits last."""
    outs = [x]
    for w, b, act in zip(weights, biases, acts):
        z = torch.addmm(b, outs[-1], w)
        outs.append(z if act in ("output", "identity") else _ACT[act](z))
    return outs


def _slope(act: str, out: torch.Tensor) -> torch.Tensor | float:
    """The activation's derivative, written with its output (as backprop by hand does)."""
    if act == "relu":
        return (out > 0).to(out.dtype)
    if act == "tanh":
        return 1 - out * out
    if act == "sigmoid":
        return out * (1 - out)
    return 1.0
