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


def test_a_run_leaves_the_collector_on_and_its_spans_old():
    run = pslab.train(mode="async", workers=20, steps=5, numerics=False,
                      cluster=pslab.Cluster(jitter=0.3))
    assert gc.isenabled()
    assert generation(run.timeline[-50:]) == {2}


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
