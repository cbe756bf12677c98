"""A long search shows its progress and stops cleanly on Ctrl-C: a bar with the time left (on
stderr here, a notebook bar in Jupyter) from `BAR_FROM` children on, or when asked; Ctrl-C
returns the replicas' rounds finished so far, nothing half-made, and the children trained so
far stay in the cache."""
import _thread
import signal
import warnings

import pytest

from pslab import nas
from pslab.nas import child
from pslab.nas.front import BAR_FROM


def test_a_bar_shows_from_a_fixed_size_on_or_when_asked(capsys):
    nas.search(numerics=False)  # 60 children: no bar
    assert capsys.readouterr().err == ""
    nas.search(controllers=200, children=100, rounds=1, numerics=False)  # 20,000: a bar
    err = capsys.readouterr().err
    assert "reinforce search" in err and "20000/20000" in err and "child/s" in err
    nas.random_search(numerics=False, progress=True)
    err = capsys.readouterr().err
    assert "random search" in err and "60/60" in err
    nas.search(controllers=200, children=100, rounds=1, numerics=False, progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_progress_must_be_true_false_or_none(bad):
    with pytest.raises(ValueError, match="progress must be True, False or None"):
        nas.search(progress=bad)


def test_ctrl_c_returns_the_rounds_finished_and_keeps_the_children_trained(
        ctrl_c_works, monkeypatch):
    """Ctrl-C arrives while the 15th child trains (rounds of 10 children): the first round
    done comes back whole, the next, half trained, is left out; a rerun gets the children
    trained so far from the cache and gives what an uninterrupted search gives."""
    settings = dict(controllers=2, children=10, rounds=2, seed=31_031, steps=5)
    train, calls = child.accuracy, []

    def accuracy(*args, **kwargs):
        calls.append(1)
        if len(calls) == 15:
            _thread.interrupt_main()  # as a Ctrl-C: SIGINT's handler, in the main thread
        return train(*args, **kwargs)

    monkeypatch.setattr(child, "accuracy", accuracy)
    before = child.stats["trained"]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        partial = nas.search(**settings)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
    assert any("search interrupted after 10 of 40 children" in str(w.message) for w in said)
    assert not partial.complete and len(partial.samples) == 10
    assert len({(s.controller, s.round) for s in partial.samples}) == 1  # one round, whole
    assert len(calls) == 15 and child.stats["trained"] - before == 15
    monkeypatch.setattr(child, "accuracy", train)
    again = nas.search(**settings)
    monkeypatch.setattr(child, "_CACHE", {})  # (this test's own empty cache: put back after)
    fresh = nas.search(**settings)
    assert again.complete and again.trained == fresh.trained - 15  # the 15 from the cache
    assert again.samples[:10] == partial.samples
    assert fresh.samples == again.samples and fresh.history == again.history
    assert BAR_FROM[True] > 40  # (no bar in this test's output)
