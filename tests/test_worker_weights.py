"""A run's workers share the weights they put together from the same fetched tensors (the cat
is made once a sync round), and never use weights older than their keys."""
import torch

from pslab.data import Digits
from pslab.layout import Layout
from pslab.model import LAYERS, init_params, shapes
from pslab.server import ParameterServer
from pslab.worker import Worker


def setup(shared: bool):
    data = Digits.load(0)
    layout = Layout.by_layer(shapes(64, 32, 10), LAYERS)
    server = ParameterServer(init_params(64, 32, 10, 0), layout, 0.5, aggregate=2)
    assembled = [(), None] if shared else None
    crew = [Worker(i, data, 2, 1, 32, layout=layout, assembled=assembled) for i in range(2)]
    return server, crew


def grads_of(worker, server, step):
    for s in range(server.layout.shards):
        worker.fetch(server, s)
    worker.compute(step)
    return [g.clone() for g in worker.grads]


def test_workers_of_a_round_share_the_weights_and_get_the_same_gradients():
    server, (a, b) = setup(shared=True)
    _, (c, d) = setup(shared=False)
    ga, gb = grads_of(a, server, 0), grads_of(b, server, 0)
    assert a.assembled is b.assembled  # one put-together set of weights for the round
    for mine, alone in zip(ga + gb, grads_of(c, server, 0) + grads_of(d, server, 0)):
        assert torch.equal(mine, alone)


def test_a_key_changed_in_place_is_never_served_from_the_shared_weights():
    server, (a, _) = setup(shared=True)
    before = grads_of(a, server, 0)
    server.params[1].add_(0.25)  # the same tensor object, new values (bumps its _version)
    after = grads_of(a, server, 0)  # same worker, same step, same objects fetched
    _, (fresh, _) = setup(shared=False)
    changed = ParameterServer(server.weights(), server.layout, 0.5)
    assert not all(torch.equal(x, y) for x, y in zip(before, after))
    assert all(torch.equal(x, y) for x, y in zip(after, grads_of(fresh, changed, 0)))
