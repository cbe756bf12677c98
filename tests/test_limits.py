"""Runs too large for the machine are refused before any work, with the estimate in the message;
the estimate is close to what a run really holds; the limit can be moved deliberately."""
import tracemalloc

import pytest

import pslab
from pslab import limits
from pslab import simulate as run_module  # the simulated backend: data, actors


@pytest.fixture
def no_work(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("work started before the size check")
    monkeypatch.setattr(run_module.Digits, "load", refuse)
    for schedule in run_module.ACTORS:
        monkeypatch.setitem(run_module.ACTORS, schedule, refuse)


@pytest.mark.parametrize("kwargs", [dict(steps=10**9, numerics=False), dict(workers=10**7),
                                    dict(hidden=10**9, steps=1), dict(accumulate=10**8)])
def test_runs_beyond_the_machine_are_refused_before_work(no_work, kwargs):
    with pytest.raises(ValueError, match=r"would need about .* more than the limit .*"
                                         r"PSLAB_MEMORY_LIMIT"):
        pslab.train(**kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_estimate_is_within_a_factor_two_of_what_a_run_holds(mode):
    pslab.train(steps=1, numerics=False)  # imports and caches outside the measurement
    tracemalloc.start()
    run = pslab.train(mode=mode, workers=100, steps=40, shards=4, numerics=False,
                      cluster=pslab.Cluster(jitter=0.2))
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    guess = limits.estimate(workers=100, steps=40, accumulate=1, shards=4, keys=2410, batch=32,
                            hidden=32, numerics=False, updates=run.updates)
    assert held / 2 <= guess <= held * 2


def test_the_limit_moves_with_the_environment(monkeypatch):
    monkeypatch.setenv("PSLAB_MEMORY_LIMIT", "1M")
    assert limits.memory_limit() == 2**20
    with pytest.raises(ValueError, match="limit of 1 MB"):
        pslab.train(workers=100, steps=100, numerics=False)
    monkeypatch.setenv("PSLAB_MEMORY_LIMIT", "64G")
    assert pslab.train(workers=100, steps=100, numerics=False).updates == 100
    monkeypatch.setenv("PSLAB_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="PSLAB_MEMORY_LIMIT"):
        pslab.train(steps=1)
