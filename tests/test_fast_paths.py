"""The numerics' fast paths give the bits of the plain ones: a minibatch sliced from an epoch's
shuffled copy is the gathered one, `score` is `evaluate`, and `logits`' addmm is the product then
the bias (what the runs computed before it: their pinned numbers rest on it)."""
from __future__ import annotations

import pytest
import torch

from pslab.data import KEEP_EPOCHS, Digits
from pslab.model import evaluate, init_params, logits, score, single_thread


@pytest.mark.parametrize("workers,accumulate,batch", [(3, 1, 32), (4, 3, 16), (2, 1, 500)])
def test_minibatch_is_the_gathered_rows_of_the_stream(workers, accumulate, batch):
    data = Digits.load(2)
    n = workers * accumulate * batch
    for update in range(0, 40, 3):  # several epochs, so some minibatches cross an epoch's end
        for worker in range(workers):
            for micro in range(accumulate):
                x, y = data.minibatch(update, worker, micro, workers, accumulate, batch)
                start = update * n + (worker * accumulate + micro) * batch
                idx = torch.from_numpy(data.rows(start, batch))
                assert torch.equal(x, data.x_train[idx]) and torch.equal(y, data.y_train[idx])
    assert len(data._shuffled) <= KEEP_EPOCHS  # the copies kept stay bounded


def test_score_is_evaluate_bit_for_bit_on_many_weights():
    data = Digits.load(0)
    g = torch.Generator().manual_seed(7)
    with single_thread():
        for seed in range(40):
            p = {k: v + 0.5 * torch.randn(v.shape, generator=g)
                 for k, v in init_params(64, 8 + seed % 5 * 16, 10, seed).items()}
            loss, acc = score(p, data)
            assert loss == evaluate(p, data.x_train, data.y_train)[0]
            assert acc == evaluate(p, data.x_test, data.y_test)[1]


@pytest.mark.parametrize("rows", [1, 7, 16, 32, 96, 359, 1438])
def test_logits_addmm_is_the_product_then_the_bias(rows):
    g = torch.Generator().manual_seed(rows)
    with single_thread(), torch.no_grad():
        for hidden in (8, 32, 64):
            p = {k: v + torch.randn(v.shape, generator=g)
                 for k, v in init_params(64, hidden, 10, rows).items()}
            x = torch.rand(rows, 64, generator=g)
            h = torch.tanh(x @ p["W_h"].T + p["b_h"])
            assert torch.equal(logits(p, x), h @ p["W_o"].T + p["b_o"])


def test_digits_read_from_the_file_are_load_digits_bit_for_bit(monkeypatch):
    """The digits come from scikit-learn's digits.csv.gz read with numpy (no sklearn import);
    they are what `load_digits` gives, and the fallback (no file found) gives the same."""
    import numpy as np
    from sklearn.datasets import load_digits

    import pslab.data as data

    d = load_digits()
    direct = data._digits_table()
    assert np.array_equal(direct, np.column_stack([d.data, d.target]))
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None)
    assert np.array_equal(data._digits_table(), direct)


@pytest.mark.processes
def test_loading_the_digits_imports_no_sklearn():
    import subprocess
    import sys

    code = ("import sys, pslab.data as d; x, y = d._digits(); "
            "assert x.shape == (1797, 64) and y.max() == 9; print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
