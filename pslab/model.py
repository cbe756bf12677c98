"""The model of figure 000: a small MLP whose parameters carry the figure's names.

Hidden layer W_h, b_h; output layer W_o, b_o. A deeper model (`layers` linear layers, every
hidden one equally wide: pslab.pipeline cuts it into stages) adds W_h2, b_h2, ... between
them; the two-layer default is figure 000's model, drawn and named as there. The functions
take the parameters as a dict of tensors, so a worker can compute a gradient on whatever
(possibly stale) weights it fetched, and the server can hold the same dict split into shards.
"""
from __future__ import annotations

import math

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from .data import Digits

Params = dict[str, torch.Tensor]
aten = torch.ops.aten
MEAN, IGNORE = 1, -100  # nll_loss's reduction code for "mean" and its default ignore_index
# The kernels' own overloads: calling them skips the overload lookup of `aten.name(...)`
NLL, NLL_BACKWARD = aten.nll_loss_forward.default, aten.nll_loss_backward.default
LOG_SOFTMAX_BACKWARD = aten._log_softmax_backward_data.default
TANH_BACKWARD = aten.tanh_backward.default
ONE = torch.ones(())  # d loss / d loss, read only: one tensor instead of a new one per call

# Server order: the output layer first, as figure 000 draws the shards ({W_o, b_o}, {W_h, b_h}).
NAMES = ("W_o", "b_o", "W_h", "b_h")
LAYERS = (("W_o", "b_o"), ("W_h", "b_h"))  # figure 000's two shards, one per layer


def shapes(features: int, hidden: int, classes: int, layers: int = 2
           ) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape, in server order: the output layer, then the hidden layers
    from the first on (`layers` linear layers in all, every hidden one `hidden` wide)."""
    out: dict[str, tuple[int, ...]] = {"W_o": (classes, hidden), "b_o": (classes,)}
    for k, (w, b) in enumerate(hidden_names(layers)):
        out[w], out[b] = (hidden, features if k == 0 else hidden), (hidden,)
    return out


def hidden_names(layers: int) -> list[tuple[str, str]]:
    """The hidden layers' (weight, bias) names in forward order: W_h, b_h (figure 000's), then
    W_h2, b_h2, ... for a deeper model of `layers` linear layers (the output layer is last)."""
    return [("W_h", "b_h") if k == 1 else (f"W_h{k}", f"b_h{k}") for k in range(1, layers)]


def layer_names(p: Params) -> list[tuple[str, str]]:
    """Every linear layer's (weight, bias) names in forward order, the output layer last."""
    return [*hidden_names(len(p) // 2), ("W_o", "b_o")]


def init_params(features: int, hidden: int, classes: int, seed: int, layers: int = 2) -> Params:
    """Xavier-uniform weights and zero biases, drawn from the run's seed: W_h, then W_o (the
    two-layer model's draws, unchanged by depth), then W_h2, W_h3, ..."""
    g = torch.Generator().manual_seed(seed)

    def xavier(rows: int, cols: int) -> torch.Tensor:
        bound = math.sqrt(6.0 / (rows + cols))
        return (torch.rand(rows, cols, generator=g) * 2 - 1) * bound

    W_h = xavier(hidden, features)
    W_o = xavier(classes, hidden)
    out = {"W_o": W_o, "b_o": torch.zeros(classes), "W_h": W_h, "b_h": torch.zeros(hidden)}
    for w, b in hidden_names(layers)[1:]:
        out[w], out[b] = xavier(hidden, hidden), torch.zeros(hidden)
    return out


def logits(p: Params, x: torch.Tensor) -> torch.Tensor:
    """The MLP's output: b_o + h W_o^T, h the last hidden layer's tanh. F.linear, as
    torch.nn.Linear: one addmm for product and bias, the same bits as the product then the bias
    added."""
    return F.linear(_hidden(p, x), p["W_o"], p["b_o"])


def loss_and_grad(p: Params, x: torch.Tensor, y: torch.Tensor) -> tuple[float, Params]:
    """Mean cross-entropy over the rows and its gradient with respect to every parameter.

    The backward pass is written out with the very kernels autograd would call for `logits` +
    `F.cross_entropy` (nll_loss, log_softmax, mm, tanh backward, in its operand order), so the
    gradient is bit for bit autograd's (tests/test_model_grad.py) at about half the cost per
    call: a run makes thousands of these calls on a few dozen rows, where autograd's graph
    building is most of the time. no_grad, not inference_mode: the gradients go on to be
    summed in place (all-reduce, accumulation), which inference tensors refuse. The simulation
    calls it with grad mode already off (the check is then all it costs). The pipeline's
    stages (pslab.pipeline) run the same per-layer steps, cut between stages."""
    if torch.is_grad_enabled():
        with torch.no_grad():
            return loss_and_grad(p, x, y)
    names = layer_names(p)
    inputs = [x]  # each layer's input: x, then every hidden layer's output
    for w, b in names[:-1]:
        inputs.append(hidden_layer(p[w], p[b], inputs[-1]))
    loss, g = loss_grad(F.linear(inputs[-1], p["W_o"], p["b_o"]), y)
    grads: Params = {}
    for k in range(len(names) - 1, -1, -1):  # g: d loss / d (layer k's pre-activation)
        w, b = names[k]
        grads[w], grads[b] = weight_grads(g, inputs[k])
        if k:
            g = input_grad(g, p[w], inputs[k])
    return loss.item(), {name: grads[name] for name in p}


def hidden_layer(W: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """tanh(b + x W^T), tanh taken in place (the same kernel, one tensor fewer); tanh: smooth,
    so the equivalences hold to rounding."""
    return F.linear(x, W, b).tanh_()


def loss_grad(out: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean cross-entropy of the logits `out` (a 0-d tensor) and d loss / d out."""
    logp = torch.log_softmax(out, 1)
    loss, total = NLL(logp, y, None, MEAN, IGNORE)
    one = ONE if loss.is_cpu and loss.dtype == ONE.dtype else torch.ones_like(loss)
    g = NLL_BACKWARD(one, logp, y, None, MEAN, IGNORE, total)  # d loss / d logp
    return loss, LOG_SOFTMAX_BACKWARD(g, logp, 1, logp.dtype)


def input_grad(g: torch.Tensor, W: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """d loss / d (the layer below's pre-activation), from `g`, d loss / d (this layer's
    pre-activation), this layer's weight W and its input h = tanh(the layer below's)."""
    return TANH_BACKWARD(g.mm(W), h)


def weight_grads(g: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A layer's (d W, d b) from `g`, d loss / d its pre-activation, and its input h."""
    return g.t().mm(h), g.sum(0)


def _hidden(p: Params, x: torch.Tensor) -> torch.Tensor:
    """The last hidden layer's output."""
    for w, b in layer_names(p)[:-1]:
        x = hidden_layer(p[w], p[b], x)
    return x


@torch.inference_mode()
def evaluate(p: Params, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of the parameters on the rows."""
    out = logits(p, x)
    return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()


@torch.inference_mode()
def score(p: Params, data: "Digits") -> tuple[float, float]:
    """The two numbers a history record keeps: the loss on the training split and the accuracy
    on the test split. Only those (no training accuracy, no test loss): this runs after every
    update, and each number is bit for bit what `evaluate` gives (the kernels of `logits`)."""
    loss = F.cross_entropy(logits(p, data.x_train), data.y_train).item()
    right = logits(p, data.x_test).argmax(1) == data.y_test
    return loss, right.float().mean().item()


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one thread inside the block.

    The digits MLP is tiny: on a busy 2-core machine one thread trains it ~10x faster than the
    default (one per core), and the numbers do not depend on how many cores the machine has
    (matmul reductions split by thread change the last bits), so a seed gives the same run
    everywhere and notebook outputs compare exactly.
    """
    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)
