"""The written-out gradient of pslab.model is autograd's, bit for bit, and its loss too."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pslab.model import init_params, logits, loss_and_grad, single_thread


def autograd_loss_and_grad(p, x, y):
    leaves = {k: v.detach().requires_grad_(True) for k, v in p.items()}
    loss = F.cross_entropy(logits(leaves, x), y)
    grads = torch.autograd.grad(loss, list(leaves.values()))
    return loss.item(), dict(zip(leaves, grads))


@pytest.mark.parametrize("rows,hidden,seed", [(1, 8, 0), (32, 32, 1), (96, 16, 2), (7, 64, 3)])
def test_written_out_gradient_is_autograds_bit_for_bit(rows, hidden, seed):
    g = torch.Generator().manual_seed(seed)
    p = init_params(64, hidden, 10, seed)
    p["b_h"] = torch.randn(hidden, generator=g)  # non-zero biases, so their paths count
    p["b_o"] = torch.randn(10, generator=g)
    x, y = torch.randn(rows, 64, generator=g), torch.randint(0, 10, (rows,), generator=g)
    with single_thread():
        loss, grads = loss_and_grad(p, x, y)
        want_loss, want = autograd_loss_and_grad(p, x, y)
    assert loss == want_loss
    assert list(grads) == list(p)
    for name in p:
        assert grads[name].shape == p[name].shape
        assert torch.equal(grads[name], want[name]), name
        assert not grads[name].requires_grad


def test_gradient_can_be_changed_in_place():
    """Accumulation and all-reduce add into a gradient in place: it is an ordinary tensor."""
    p = init_params(64, 8, 10, 0)
    _, grads = loss_and_grad(p, torch.randn(4, 64), torch.tensor([0, 1, 2, 3]))
    grads["W_h"].add_(1.0)


@pytest.mark.parametrize("layers,rows,hidden,seed", [(3, 5, 8, 0), (4, 32, 16, 1), (8, 9, 12, 2)])
def test_deeper_model_gradient_is_autograds_bit_for_bit(layers, rows, hidden, seed):
    """layers > 2: the same per-layer kernels, chained; still autograd's bits."""
    g = torch.Generator().manual_seed(seed)
    p = init_params(64, hidden, 10, seed, layers=layers)
    assert len(p) == 2 * layers
    p = {k: v + 0.1 * torch.randn(v.shape, generator=g) if k.startswith("b") else v
         for k, v in p.items()}
    x, y = torch.randn(rows, 64, generator=g), torch.randint(0, 10, (rows,), generator=g)
    with single_thread():
        loss, grads = loss_and_grad(p, x, y)
        want_loss, want = autograd_loss_and_grad(p, x, y)
    assert loss == want_loss
    assert list(grads) == list(p)
    for name in p:
        assert torch.equal(grads[name], want[name]), name


def test_depth_keeps_the_two_layer_draws():
    """A deeper model's W_h and W_o are the two-layer model's, bit for bit (drawn first)."""
    two, deep = init_params(64, 16, 10, 7), init_params(64, 16, 10, 7, layers=5)
    for name in two:
        assert torch.equal(two[name], deep[name])
    assert deep["W_h4"].shape == (16, 16) and "W_h5" not in deep
