"""ZeRO's memory: the paper's per-stage formulas and its Figure 1, and run.memory for the
run's own fp32 SGD model in every mode."""
import pytest

import pslab
from pslab.zero import OPTIMIZERS, memory

GB = 1e9


def test_figure_1_of_the_paper():
    """Ψ = 7.5 B, N = 64, mixed-precision Adam (K = 12): 120, 31.4, 16.6, 1.9 GB per GPU."""
    totals = [memory(7.5e9, 64, stage).total / GB for stage in range(4)]
    assert [round(t, 1) for t in totals] == [120.0, 31.4, 16.6, 1.9]
    assert totals == [120.0, 31.40625, 16.640625, 1.875]  # the formulas, exactly


@pytest.mark.parametrize("psi", [1, 1e6, 7.5e9, 1e12])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1024])
@pytest.mark.parametrize("k", [0, 4, 12, 16.5])
def test_the_per_stage_formulas_for_any_psi_n_k(psi, n, k):
    """(2+2+K)Ψ, 2Ψ+2Ψ+KΨ/N, 2Ψ+(2+K)Ψ/N, (2+2+K)Ψ/N."""
    expected = [(4 + k) * psi, 4 * psi + k * psi / n, 2 * psi + (2 + k) * psi / n,
                (4 + k) * psi / n]
    for stage, want in enumerate(expected):
        got = memory(psi, n, stage, optimizer=k)
        assert got.total == pytest.approx(want, rel=1e-12)
        assert got.gathered == 0
    # each stage holds no more than the one before, and N = 1 shards nothing
    totals = [memory(psi, n, s, optimizer=k).total for s in range(4)]
    assert totals == sorted(totals, reverse=True)
    if n == 1:
        assert len(set(totals)) == 1


def test_named_optimizers_are_their_bytes_per_parameter():
    assert memory(100, 4, 0, "adam-mixed") == (200, 200, 1200, 0)
    assert memory(100, 4, 1, "adam") == (400, 400, 200, 0)
    assert memory(100, 4, 2, "sgd") == (400, 100, 0, 0)
    assert memory(100, 4, 3, "sgd-momentum") == (100, 100, 100, 0)
    assert set(OPTIMIZERS) == {"adam-mixed", "adam", "sgd", "sgd-momentum"}


@pytest.mark.parametrize("kwargs, name", [
    (dict(params=0, gpus=2, stage=1), "params"), (dict(params=1e9, gpus=0, stage=1), "gpus"),
    (dict(params=1e9, gpus=2, stage=4), "stage"), (dict(params=1e9, gpus=2, stage=1.5), "stage"),
    (dict(params=1e9, gpus=2, stage=-1), "stage"),
    (dict(params=1e9, gpus=2, stage=1, optimizer="lamb"), "optimizer"),
    (dict(params=1e9, gpus=2, stage=1, optimizer=-1), "optimizer"),
    (dict(params=1e9, gpus=2, stage=1, optimizer=True), "optimizer")])
def test_bad_memory_arguments_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        memory(**kwargs)


def test_run_memory_counts_the_real_mlp_per_worker():
    """The digits MLP at hidden=32 has Ψ = 2410 fp32 keys (9640 bytes); SGD keeps no state."""
    n, whole = 4, 9640
    kw = dict(workers=n, steps=1, numerics=False)
    for mode in ("sync", "async", "allreduce", pslab.ZeRO(1)):
        mem = pslab.train(mode=mode, **kw).memory
        assert mem == [(whole, whole, 0, 0)] * n  # full replicas (SGD: ZeRO-1 shards nothing)
    two = pslab.train(mode=pslab.ZeRO(2), **kw).memory
    three = pslab.train(mode=pslab.ZeRO(3), **kw).memory
    run = pslab.train(mode=pslab.ZeRO(3), **kw)
    owned = [run.layout.keys(i) * 4 for i in range(n)]
    assert sum(owned) == whole and max(owned) - min(owned) <= 4  # near-equal key ranges
    assert two == [(whole, mine, 0, 0) for mine in owned]
    layer_h = (64 * 32 + 32) * 4  # the hidden layer, gathered whole while it computes
    assert three == [(mine, mine, 0, layer_h) for mine in owned]
    # what stage 3 keeps between steps is less than stage 2's; but the MLP's hidden layer is
    # 86% of it, so while that layer is gathered, stage 3's peak exceeds stage 2's at N = 4
    assert all(t.total - t.gathered < w.total < t.total for t, w in zip(three, two))
