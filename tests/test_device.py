"""Worker i on GPU i ("Processor i on GPU i", figure 000), and the CPU wherever there is none.

The first two tests run everywhere; the last needs a GPU and is skipped without one (CI has
none; run it on a machine with an NVIDIA GPU: `pytest tests/test_device.py`).
"""
import pytest
import torch

import pslab
from pslab import worker as worker_module
from pslab.data import Digits
from pslab.layout import Layout
from pslab.model import LAYERS, init_params
from pslab.server import ParameterServer
from pslab.worker import Worker, device_for

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_worker_i_goes_to_gpu_i_wrapping_round(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert [str(device_for(r)) for r in range(5)] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1",
                                                      "cuda:0"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device_for(3) == torch.device("cpu")


def test_a_workers_tensors_live_on_its_device():
    data = Digits.load(0)
    params = init_params(data.features, 16, data.classes, 0)
    layout = Layout.by_layer({n: w.shape for n, w in params.items()}, LAYERS)
    server = ParameterServer(params, layout, lr=0.1)
    w = Worker(1, data, workers=2, accumulate=2, batch=8, layout=layout)
    assert w.device == device_for(1)
    for shard in range(2):
        w.fetch(server, shard)
    w.compute(0)
    assert {t.device.type for t in w.shards.values()} == {w.device.type}
    assert {t.device.type for t in w.grads} == {w.device.type}
    for shard in range(2):
        w.push(server, shard)
    # the server keeps its parameters where they were made (the host), whatever the workers use
    assert {t.device.type for t in server.weights().values()} == {"cpu"}
    assert server.versions == [1, 1]


@needs_gpu
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_on_gpus_is_the_run_on_the_cpu(monkeypatch, mode):
    kw = dict(mode=mode, workers=3, steps=20, seed=4, cluster=pslab.Cluster(speeds=[0.5, 1, 1]))
    gpu = pslab.train(**kw)
    monkeypatch.setattr(worker_module, "device_for", lambda rank: torch.device("cpu"))
    cpu = pslab.train(**kw)
    assert gpu.timeline == cpu.timeline  # the clock never depends on the arithmetic
    assert [r.staleness for r in gpu.history] == [r.staleness for r in cpu.history]
    for name, w in cpu.weights.items():
        torch.testing.assert_close(gpu.weights[name], w, rtol=1e-4, atol=1e-5)
    assert abs(gpu.final_accuracy - cpu.final_accuracy) <= 0.01
