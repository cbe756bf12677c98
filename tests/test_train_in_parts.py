"""A run made in parts (`pslab.training.train_in_parts`: paused at virtual times, one part per
turn of a dashboard's event loop) is the run `train` makes, bit for bit."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pslab
from pslab.training import train_in_parts


def made(pauses: list[float], **kwargs) -> tuple[pslab.Run, list[float]]:
    """The run train_in_parts returns, and the times it yielded."""
    parts, yielded = train_in_parts(pauses, **kwargs), []
    while True:
        try:
            yielded.append(next(parts))
        except StopIteration as done:
            return done.value, yielded


def assert_same(a: pslab.Run, b: pslab.Run) -> None:
    """Every field of the two runs equal, floats bit for bit (repr: exact, nan equal to nan)."""
    assert repr(a.makespan) == repr(b.makespan) and repr(a.start_loss) == repr(b.start_loss)
    assert a.timeline.rows.tobytes() == b.timeline.rows.tobytes()
    assert [repr(tuple(r)) for r in a.history] == [repr(tuple(r)) for r in b.history]
    assert a.push_staleness == b.push_staleness
    assert a.weights.keys() == b.weights.keys()
    assert all(torch.equal(a.weights[k], b.weights[k]) for k in a.weights)
    assert a.complete and b.complete and repr(a.settings) == repr(b.settings)


MODES = ["sync", "async", pslab.SSP(1), pslab.SoftSync(2), "allreduce", pslab.ZeRO(2)]


@settings(max_examples=25, deadline=None)
@given(mode=st.sampled_from(MODES), workers=st.integers(2, 5), steps=st.sampled_from([2, 4, 6]),
       numerics=st.booleans(), links=st.sampled_from(["duplex", "one-at-a-time"]),
       seed=st.integers(0, 50),
       shares=st.lists(st.floats(0.0, 1.2, allow_nan=False), max_size=5))
def test_a_run_made_in_parts_is_the_run_bit_for_bit(mode, workers, steps, numerics, links, seed,
                                                    shares):
    kwargs = dict(mode=mode, workers=workers, steps=steps, numerics=numerics, seed=seed,
                  cluster=pslab.Cluster(jitter=0.3, links=links), lr=0.3)
    whole = pslab.train(**kwargs)
    pauses = sorted({whole.makespan * share for share in shares})  # some past its end
    parts, yielded = made(pauses, **kwargs)
    assert yielded == pauses
    assert_same(parts, whole)


def test_the_pauses_and_the_backend_are_checked_before_any_part_runs():
    with pytest.raises(ValueError, match="pauses must be ascending"):
        train_in_parts([2.0, 1.0], numerics=False)
    with pytest.raises(ValueError, match="virtual clock only"):
        train_in_parts([1.0], backend="processes")
    with pytest.raises(ValueError, match="workers"):
        train_in_parts([1.0], workers=0)


@settings(max_examples=5, deadline=None)
@given(workers=st.integers(2, 8), steps=st.integers(2, 20), mode=st.sampled_from(["sync", "async"]))
def test_a_dashboards_run_made_in_turns_is_the_one_get_makes_in_bounded_parts(workers, steps,
                                                                               mode):
    """RunCache.make: a status line before each part and after the last, as many parts as
    WORK_PER_PART gradients and scores need, and the run it keeps is the one `get` makes."""
    from pslab.notebook.dashboard_settings import PRESETS
    from pslab.notebook.liveruns import WORK_PER_PART, RunCache

    wanted = PRESETS["000"].changed(workers=workers, steps=steps, mode=mode, lr=0.3)
    cache = RunCache()
    clock = cache.get(wanted, False)
    work = len(clock.push_staleness) * wanted.accumulate + len(clock.history)
    statuses = list(cache.make(wanted, "busy"))
    assert statuses == ["busy"] * (max(1, -(-work // WORK_PER_PART)) + 1)
    assert list(cache.make(wanted, "busy")) == []  # kept: nothing to make
    assert_same(cache.get(wanted, True), RunCache().get(wanted, True))
