"""Section 2 of `python -m bench`: pslab's numerics against a plain torch loop on the same data.

pslab runs sync mode with N workers of batch b on a free network. Two plain loops make the same
updates from the same initial weights:
- "plain": one process, torch.nn + torch.optim.SGD, one batch of N*b rows per update (what a
  user would write); its weights must equal pslab's to float precision;
- "plain + the same evaluations": the plain loop that also records what pslab's history holds
  after every update (the loss on the whole training split, the accuracy on the test split) —
  what a user who wants pslab's curves would write;
- "same arithmetic": pslab's exact work without the simulation (N gradient calls of batch b per
  update, and the same evaluations): the ratio to it is what the clock, actors and records cost.
A last row runs pslab with its per-update evaluation replaced by a no-op (bench only, never a
user's run) to show how much of pslab's time the evaluations take. The five are timed in turn,
one run of each per round (`timing.measure_in_turn`), so a busy minute slows them alike.
"""
from __future__ import annotations

from typing import Any
from unittest import mock

import torch

import pslab
from pslab.data import Digits
from pslab.model import init_params, loss_and_grad, score
from pslab.model import single_thread

from .timing import measure_in_turn, row

WORKERS, BATCH, STEPS, LR, SEED, HIDDEN = 3, 32, 50, 0.5, 0, 32
GOAL = 1.2  # pslab over the plain loop that makes the same evaluations (like for like)


def pslab_run() -> pslab.Run:
    return pslab.train(mode="sync", workers=WORKERS, batch=BATCH, steps=STEPS, lr=LR, seed=SEED,
                       cluster=pslab.Cluster.free())


def _batches(data: Digits) -> list[tuple[torch.Tensor, torch.Tensor]]:
    n = WORKERS * BATCH  # update t reads the t-th global batch, as pslab's data stream does
    rows = [torch.from_numpy(data.rows(t * n, n)) for t in range(STEPS)]
    return [(data.x_train[idx], data.y_train[idx]) for idx in rows]


def plain_loop(evaluations: bool = False) -> dict[str, torch.Tensor]:
    """torch.nn + SGD, one batch of N*b rows per update; with `evaluations`, the loss on the
    training split and the accuracy on the test split after every update, as pslab records."""
    data = Digits.load(SEED)
    p = init_params(data.features, HIDDEN, data.classes, SEED)
    net = torch.nn.Sequential(torch.nn.Linear(64, HIDDEN), torch.nn.Tanh(),
                              torch.nn.Linear(HIDDEN, 10))
    with torch.no_grad():
        for layer, (w, b) in zip((net[0], net[2]), (("W_h", "b_h"), ("W_o", "b_o"))):
            layer.weight.copy_(p[w]), layer.bias.copy_(p[b])
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    with single_thread():
        for x, y in _batches(data):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
            if evaluations:
                with torch.no_grad():
                    torch.nn.functional.cross_entropy(net(data.x_train), data.y_train).item()
                    (net(data.x_test).argmax(1) == data.y_test).float().mean().item()
    return {"W_h": net[0].weight.detach(), "b_h": net[0].bias.detach(),
            "W_o": net[2].weight.detach(), "b_o": net[2].bias.detach()}


def same_arithmetic() -> dict[str, torch.Tensor]:
    data = Digits.load(SEED)
    p = init_params(data.features, HIDDEN, data.classes, SEED)
    with single_thread():
        for t in range(STEPS):
            grads = [loss_and_grad(p, *data.minibatch(t, i, 0, WORKERS, 1, BATCH))[1]
                     for i in range(WORKERS)]
            p = {n: p[n] - LR * (sum(g[n] for g in grads) / WORKERS) for n in p}
            score(p, data)
    return p


def plain_with_evaluations() -> dict[str, torch.Tensor]:
    return plain_loop(evaluations=True)


def pslab_without_evaluations() -> pslab.Run:
    """Where pslab's time goes: the same run with the per-update score a no-op (bench only)."""
    with mock.patch("pslab.simulate.score", lambda weights, data: (0.0, 0.0)):
        return pslab_run()


def rows(quick: bool) -> list[dict[str, Any]]:
    ours = pslab_run().weights
    for name, fn in (("plain", plain_loop), ("plain with evaluations", plain_with_evaluations),
                     ("same arithmetic", same_arithmetic)):
        theirs = fn()
        for n, w in ours.items():
            torch.testing.assert_close(theirs[n], w, rtol=1e-4, atol=1e-5,
                                       msg=f"{name} loop ends with other {n}")
    repeat = 11 if quick else 25  # rounds: the ratio is the goal, so enough of them to hold
    # in turn, round after round: the ratios compare runs made under the same load
    times = measure_in_turn({"ours": pslab_run, "plain": plain_loop,
                             "evals": plain_with_evaluations, "same": same_arithmetic,
                             "bare": pslab_without_evaluations}, repeat)
    t_ours, t_plain, t_evals = times["ours"], times["plain"], times["evals"]
    t_same, t_bare = times["same"], times["bare"]
    label = f"sync {WORKERS}x{BATCH}, {STEPS} updates"
    like = t_ours["median"] / t_evals["median"]
    return [
        row("numerics vs torch", f"pslab {label}", t_ours),
        row("numerics vs torch", f"plain torch loop, batch {WORKERS * BATCH}", t_plain,
            ratio=t_ours["median"] / t_plain["median"], goal="no evaluations: for scale"),
        row("numerics vs torch", "plain loop + the same evaluations", t_evals, ratio=like,
            goal=f"like for like: pslab/plain <= {GOAL}", met=like <= GOAL),
        row("numerics vs torch", "plain loop, pslab's arithmetic", t_same,
            ratio=t_ours["median"] / t_same["median"], goal="what the simulation costs"),
        row("numerics vs torch", "pslab, evaluation a no-op (bench only)", t_bare,
            ratio=t_bare["median"] / t_plain["median"], goal="over the plain loop"),
    ]
