"""The arithmetic of a pipelined step: each virtual stage's forward, input-gradient (I) and
weight-gradient (W) halves of the backward, on its slice of the MLP's layers.

The stages run pslab.model's per-layer kernels (hidden_layer, loss_grad, input_grad,
weight_grads), the very ones `loss_and_grad` chains on one worker: a micro-batch's gradient is
the same bits however the layers are cut. A stage sends down its last layer's output and up
d loss / d (the pre-activation of the layer below its first); B is I then W. Each W adds its
micro-batch's gradients into the stage's sums in the order the schedule runs them; at the end
of the step every stage takes SGD's step on its own layers, w - lr * (sum / m), the same
kernels as a worker accumulating m micro-batches and a server applying them
(pslab.worker, pslab.server): bit for bit one worker's weights when the W's run in micro-batch
order (every schedule but looped-bfs, whose backwards run in reverse: equal to round-off).
With d data-parallel replicas each sums its own m micro-batches and the all-reduce adds the d
sums: (S_0 + S_1 + …) / (d·m), one worker's d·m-term sum grouped by replica — equal to
round-off (bit for bit when m = 1, where the grouping is the one worker's own order).
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

from ..data import Digits
from ..model import Params, hidden_layer, input_grad, layer_names, loss_grad, weight_grads
from .schedules import Action


def layer_bounds(layers: int, stages: int) -> list[tuple[int, int]]:
    """Virtual stage k holds layers [lo, hi): equal slices in forward order."""
    per = layers // stages
    return [(k * per, (k + 1) * per) for k in range(stages)]


class StageMath:
    """The weights of every stage and one step's tensors in flight."""

    def __init__(self, params: Params, stages: int, data: Digits, micro: int, batch: int,
                 lr: float, replica: int = 0, replicas: int = 1):
        self.params = params  # shared by the replicas: each holds the same weights
        self.names = layer_names(params)
        self.bounds = layer_bounds(len(self.names), stages)
        self.data, self.micro, self.batch, self.lr = data, micro, batch, lr
        self.replica, self.replicas = replica, replicas
        self.step = 0
        self._reset()

    def _reset(self) -> None:
        self.inputs: dict[tuple[int, int], list[torch.Tensor]] = {}  # each layer's input
        self.sent: dict[tuple[int, int], torch.Tensor] = {}  # activation for (stage, micro)
        self.grad: dict[tuple[int, int], torch.Tensor] = {}  # d loss / d its last pre-act.
        self.pending: dict[tuple[int, int], list[torch.Tensor]] = {}  # I done, W to do
        self.sums: dict[str, torch.Tensor] = {}

    def begin(self, step: int) -> None:
        """Start step `step`: its micro-batches are the replica's m of global batch `step`
        (replica j's micro-batch i is micro-batch j·m + i of one worker accumulating d·m)."""
        self.step = step
        self._reset()

    def __call__(self, action: Action) -> None:
        k, kind, i = action
        if kind == "F":
            self.forward(k, i)
        elif kind == "I":
            self.backward_input(k, i)
        elif kind == "W":
            self.backward_weight(k, i)
        else:
            self.backward_input(k, i)
            self.backward_weight(k, i)

    def forward(self, k: int, i: int) -> None:
        lo, hi = self.bounds[k]
        if k == 0:
            h, _ = self.data.minibatch(self.step, self.replica, i, self.replicas, self.micro,
                                         self.batch)
        else:
            h = self.sent.pop((k, i))
        inputs = []
        for j in range(lo, hi):
            w, b = self.names[j]
            inputs.append(h)
            if j == len(self.names) - 1:  # the output layer: the loss and its gradient
                _, y = self.data.minibatch(self.step, self.replica, i, self.replicas, self.micro,
                                         self.batch)
                _, self.grad[(k, i)] = loss_grad(F.linear(h, self.params[w], self.params[b]),
                                                 y)
            else:
                h = hidden_layer(self.params[w], self.params[b], h)
        self.inputs[(k, i)] = inputs
        if hi < len(self.names):
            self.sent[(k + 1, i)] = h

    def backward_input(self, k: int, i: int) -> None:
        lo, hi = self.bounds[k]
        g = self.grad.pop((k, i))
        inputs = self.inputs[(k, i)]
        kept = []
        for j in range(hi - 1, lo - 1, -1):
            kept.append(g)
            if j:  # the first layer's input is the data: no gradient wanted
                g = input_grad(g, self.params[self.names[j][0]], inputs[j - lo])
        self.pending[(k, i)] = kept
        if lo:
            self.grad[(k - 1, i)] = g

    def backward_weight(self, k: int, i: int) -> None:
        lo, hi = self.bounds[k]
        kept = self.pending.pop((k, i))
        inputs = self.inputs.pop((k, i))
        for g, j in zip(kept, range(hi - 1, lo - 1, -1)):
            for name, grad in zip(self.names[j], weight_grads(g, inputs[j - lo])):
                held = self.sums.get(name)
                if held is None:
                    self.sums[name] = grad
                else:
                    held.add_(grad)

    def finish(self, others: Sequence["StageMath"] = ()) -> None:
        """SGD's step on every stage's layers, after the all-reduce: the replicas' sums added
        in replica order (this one first), divided by the d·m micro-batches they hold."""
        n = self.micro * (1 + len(others))
        for name, total in self.sums.items():
            for other in others:
                total = total + other.sums[name]
            mean = total / n if n > 1 else total  # x / 1 is x: no division for one
            self.params[name] = self.params[name] - mean * self.lr
