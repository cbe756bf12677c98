"""engine.collector_paused: the garbage collector is off during a run and back on after it, with
the run's objects already in the oldest generation (so no collection walks them again soon),
and a program's own collector settings left as they were."""
import gc

import pytest

import pslab
from pslab.engine import collector_paused


def generation(objects: list) -> set[int]:
    """The generations these objects are in."""
    ids = {id(o) for o in objects}
    return {g for g in range(3) if any(id(o) in ids for o in gc.get_objects(generation=g))}


def test_the_collector_is_off_inside_and_what_the_block_made_is_old_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(5000)]  # lists are tracked by the collector
        assert generation(made) == {0}
    assert gc.isenabled()
    assert generation(made) == {2}


def frozen_calls(monkeypatch) -> list[int]:
    """Records each gc.freeze (the promotion) made from now on."""
    calls: list[int] = []
    real = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (calls.append(1), real())[1])
    return calls


def test_without_promote_the_collector_is_only_switched_off(monkeypatch):
    calls = frozen_calls(monkeypatch)
    with collector_paused(promote=False):
        assert not gc.isenabled()
    assert gc.isenabled() and calls == []


def test_a_large_run_leaves_its_spans_old_a_small_one_is_not_promoted(monkeypatch):
    kw = dict(mode="async", numerics=False, cluster=pslab.Cluster(jitter=0.3))
    large = pslab.train(workers=100, steps=10, **kw)
    assert gc.isenabled()
    # the timeline is columns (no object per span): the history's records are the run's objects
    assert generation(large.history[-50:]) == {2}
    calls = frozen_calls(monkeypatch)
    pslab.train(workers=4, steps=5, **kw)  # a young collection would cost more than it saves
    assert gc.isenabled() and calls == []


def test_the_collector_comes_back_on_after_an_error():
    with pytest.raises(KeyboardInterrupt):
        with collector_paused():
            raise KeyboardInterrupt
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_program_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_objects_the_program_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
