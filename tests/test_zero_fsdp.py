"""ZeRO-3 on real OS processes with PyTorch's FSDP2 (fully_shard on gloo, CPU): the weights of
the simulated pslab.ZeRO(3), bit for bit on 2 workers and to float round-off on 3 with
accumulation; nothing left in the temporary folder; bad input refused by name."""
import tempfile

import pytest
import torch

import pslab

dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is needed for FSDP2 on CPU", allow_module_level=True)



def train_fsdp(**kwargs) -> pslab.Run:
    return pslab.train(mode=pslab.ZeRO(3), backend="processes", **{"workers": 2, "steps": 5,
                                                                   **kwargs})


@pytest.mark.processes
@pytest.mark.parametrize("workers, accumulate, exact", [(2, 1, True), (3, 2, False)])
def test_fsdp2_processes_give_the_simulated_zero3_weights(workers, accumulate, exact,
                                                          tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # to see what is left behind
    run = train_fsdp(workers=workers, steps=4, seed=1, accumulate=accumulate)
    real = run.weights
    sim = pslab.train(mode=pslab.ZeRO(3), workers=workers, steps=4, seed=1,
                      accumulate=accumulate)
    start = pslab.train(workers=1, steps=1, seed=1, lr=1e-12)
    for name, w in sim.weights.items():
        if exact:
            assert torch.equal(real[name], w), name
        else:
            assert torch.allclose(real[name], w, rtol=0, atol=1e-6), name
    assert not torch.allclose(sim.weights["W_h"], start.weights["W_h"], atol=1e-3)  # it trained
    assert [p for p in tmp_path.iterdir() if not p.name.startswith("pymp-")] == []  # store, weights gone (pymp-: the forkserver's)
    # the measured timeline: every worker's every step shows FSDP2's collectives
    kinds = {(s.worker, s.step, s.kind) for s in run.timeline}
    for w in range(workers):
        for step in range(4):
            assert {(w, step, "all-gather"), (w, step, "reduce-scatter")} <= kinds
    assert all(0 <= s.start <= s.end <= run.makespan for s in run.timeline)
    assert run.updates == 4 and run.history[-1].time == run.makespan
    fig = pslab.plot.plot_timeline(run)  # the same drawing code as a simulated run
    assert "measured" in fig.axes[0].get_xlabel()


@pytest.mark.parametrize("kwargs, name", [(dict(workers=1), "workers"), (dict(steps=0), "steps"),
                                          (dict(lr=-1.0), "lr"), (dict(batch=0), "batch")])
def test_bad_fsdp_arguments_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        train_fsdp(**kwargs)
