"""The bottom tier of figure 003: a child replica trains the network it was handed and reports R.

A child is a real MLP built from its architecture (64 inputs -> the sampled hidden layers ->
10 classes), trained with plain SGD for a fixed budget of minibatches of the core's digits
stream (`pslab.data.Digits`), and scored on the held-out split: R is that accuracy.

Training depends only on (architecture, seed, budget), so its accuracy is cached: a controller
that samples the same child twice, or a re-run of a search, gets it at once. The cache starts
warm with the children notebook 04 meets (`children.json`: plain data written by
tools/nas_children_table.py with this very `train`; tests/test_nas_table.py trains a sample of
them again and compares). The cache only saves time; a cleared cache gives the same numbers.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

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
TABLE = Path(__file__).with_name("children.json")
FORMAT = "pslab-nas-children-1"
_warm = {"pending": True}  # the shipped table is read into the cache at the first child


def clear_cache() -> None:
    """Forget every trained child, the shipped table's too (the next search trains them
    again, with the same result)."""
    _CACHE.clear()
    _warm["pending"] = False
    stats.update(trained=0, cached=0)


def read_table(path: Path = TABLE) -> dict[tuple, float]:
    """{(arch, seed, budget): accuracy} of a children table (plain JSON, never unpickled)."""
    table = json.loads(path.read_text(encoding="utf-8"))
    if table.get("format") != FORMAT:
        raise ValueError(f"{path} is not a pslab children table (format {FORMAT!r})")
    budget = Budget(**table["budget"])
    return {(tuple((int(w), str(act)) for w, act in arch), int(seed), budget): float(acc)
            for arch, seed, acc in table["children"]}


def write_table(path: Path, budget: Budget = Budget()) -> int:
    """Write the cache's children trained on `budget` as a table; returns how many."""
    from ..files import write_atomic

    rows = sorted([[list(map(list, arch)), seed, acc]
                   for (arch, seed, b), acc in _CACHE.items() if b == budget])
    text = json.dumps({"format": FORMAT, "budget": asdict(budget), "torch": torch.__version__,
                       "children": rows}, separators=(",", ":"))
    write_atomic(path, text.encode("utf-8"))
    return len(rows)


def accuracy(arch: Arch, seed: int, budget: Budget = Budget()) -> float:
    """Held-out accuracy of `arch` after training on `budget` from `seed` (cached)."""
    if _warm["pending"]:
        _warm["pending"] = False
        if TABLE.exists():  # a copy without the table trains every child, to the same numbers
            _CACHE.update(read_table())
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
