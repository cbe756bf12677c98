"""pslab.fastloop runs timing-only async runs with the two hot events inlined: it must be the
actors' run bit for bit (every span's fields, the history, the staleness, the clock), on every
schedule it takes, and it must stay out of the runs it does not do exactly."""
import math

import pytest

import pslab
from pslab import simulation

JITTER = pslab.Cluster(jitter=0.3)
CASES = [
    dict(mode="async", workers=1, steps=30),
    dict(mode="async", workers=5, steps=40, cluster=JITTER, seed=2),
    dict(mode="async", workers=40, steps=20, shards=3, cluster=JITTER),
    dict(mode="async", workers=12, steps=20, shards="layers", accumulate=3, cluster=JITTER),
    dict(mode="async", workers=6, steps=25, shards=4,
         cluster=pslab.Cluster(speeds=[1, 0.5, 1, 0.25, 1, 1], colocated=True)),
    dict(mode="async", workers=8, steps=15, shards=2, cluster=pslab.Cluster(jitter=0.5,
                                                                             bandwidth=2e5)),
    dict(mode=pslab.SoftSync(2), workers=6, steps=20, cluster=JITTER),
    dict(mode=pslab.SoftSync(4), workers=8, steps=10, shards=3, cluster=JITTER, seed=5),
    dict(mode="async", workers=200, steps=5, cluster=pslab.Cluster.free()),
]


def both(monkeypatch, **kwargs):
    """(inlined run, the actors' own run) of the same settings."""
    fast = pslab.train(numerics=False, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(simulation.Simulation, "_inline", lambda self: False)
        slow = pslab.train(numerics=False, **kwargs)
    return fast, slow


def same(a: pslab.Run, b: pslab.Run) -> bool:
    # records by repr: exact for floats, and a NaN read back from a checkpoint is another
    # object than the run's own NaN (== on the tuples would call them different)
    return (a.timeline.rows == b.timeline.rows and list(a.timeline) == list(b.timeline)
            and list(map(repr, a.history)) == list(map(repr, b.history))
            and a.push_staleness == b.push_staleness
            and a.makespan == b.makespan and a.complete == b.complete)


@pytest.mark.parametrize("kwargs", CASES, ids=lambda k: f"{k['mode']}-{k['workers']}")
def test_the_inlined_loop_is_the_actors_run_bit_for_bit(monkeypatch, kwargs):
    fast, slow = both(monkeypatch, **kwargs)
    assert same(fast, slow) and fast.history == slow.history and len(fast.timeline) > 0
    assert all(math.isnan(r.loss) for r in fast.history)


def test_it_takes_only_the_runs_it_does_exactly(monkeypatch):
    used = []
    real = simulation.run_inline
    monkeypatch.setattr(simulation, "run_inline", lambda sim, until: (used.append(sim),
                                                                      real(sim, until)))
    for mode in ("sync", pslab.SSP(2), pslab.Backup(1), "allreduce", pslab.ZeRO(1)):
        pslab.train(mode=mode, workers=4, steps=3, numerics=False)
    pslab.train(mode="async", workers=3, steps=3)  # numerics: the actors train
    assert used == []
    pslab.train(mode="async", workers=3, steps=3, numerics=False)
    assert len(used) == 1


def test_a_stop_between_events_leaves_what_the_actors_would(monkeypatch):
    """Ctrl-C is a stop event on the clock's heap: the inlined loop runs it as the clock does,
    and the partial run (and what is left pending) is the actors' own."""
    runs = []
    for inline in (True, False):
        with monkeypatch.context() as m:
            if not inline:
                m.setattr(simulation.Simulation, "_inline", lambda self: False)
            seen = {}
            original = simulation.Simulation.run

            def run(self, until=None):
                self.clock.at(7.5, self.clock.interrupt)
                original(self, until)
                seen["pending"] = sorted((t, s, f.__name__, a) for t, s, f, a in self.clock._heap)
            m.setattr(simulation.Simulation, "run", run)
            with pytest.warns(UserWarning, match="interrupted"):
                got = pslab.train(mode="async", workers=6, steps=20, numerics=False,
                                  cluster=JITTER)
            runs.append((got, seen["pending"]))
    (fast, left_fast), (slow, left_slow) = runs
    assert not fast.complete and same(fast, slow) and left_fast == left_slow and left_fast


def test_a_checkpoint_on_the_inlined_loop_resumes_to_the_same_run(tmp_path):
    kwargs = dict(mode="async", workers=7, steps=20, numerics=False, cluster=JITTER)
    whole = pslab.train(**kwargs)
    path = tmp_path / "run.ckpt"
    pslab.train(**kwargs, checkpoint=pslab.Checkpoint(path, at=whole.makespan / 3))
    assert same(pslab.resume(path), whole)
