"""pslab.fastloop (one-at-a-time links) and pslab.fastduplex (duplex links) run timing-only
async runs with their hot events inlined: each must be the actors' run bit for bit (every
span's fields, the history, the staleness, the clock), on every schedule it takes, and they
must stay out of the runs they do not do exactly. Every test here runs twice: on the Python
loops, and on their compiled twins (pslab/compiled.py) where they are built."""
import copy
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pslab
from pslab import compiled, fastduplex, fastloop, simulation

ONE = "one-at-a-time"  # the links fastloop runs


@pytest.fixture(autouse=True, params=["python", "compiled"])
def loops(request, monkeypatch):
    """Simulation.run's two loops: the Python modules, or their compiled twins."""
    if request.param == "compiled" and not compiled.in_use(fastduplex):
        pytest.skip("the compiled twins are not built here (no C compiler or Cython at install)")
    pick = compiled.twin if request.param == "compiled" else (lambda module: module)
    monkeypatch.setattr(simulation, "run_duplex", pick(fastduplex).run_duplex)
    monkeypatch.setattr(simulation, "run_inline", pick(fastloop).run_inline)
    return request.param


JITTER = pslab.Cluster(jitter=0.3, links=ONE)
CASES = [
    dict(mode="async", workers=1, steps=30, cluster=pslab.Cluster(links=ONE)),
    dict(mode="async", workers=5, steps=40, cluster=JITTER, seed=2),
    dict(mode="async", workers=40, steps=20, shards=3, cluster=JITTER),
    dict(mode="async", workers=12, steps=20, shards="layers", accumulate=3, cluster=JITTER),
    dict(mode="async", workers=6, steps=25, shards=4,
         cluster=pslab.Cluster(speeds=[1, 0.5, 1, 0.25, 1, 1], colocated=True, links=ONE)),
    dict(mode="async", workers=8, steps=15, shards=2,
         cluster=pslab.Cluster(jitter=0.5, bandwidth=2e5, links=ONE)),
    dict(mode=pslab.SoftSync(2), workers=6, steps=20, cluster=JITTER),
    dict(mode=pslab.SoftSync(4), workers=8, steps=10, shards=3, cluster=JITTER, seed=5),
    dict(mode="async", workers=200, steps=5, cluster=pslab.Cluster.free(links=ONE)),
    # colocated: the updates' starts are logged, transfers start out of shard order, and (free)
    # many start at the same time: the rows' holes are timeline.gaps' own, ties included
    dict(mode="async", workers=5, steps=8, shards=4,
         cluster=pslab.Cluster.free(colocated=True, links=ONE)),
    dict(mode=pslab.SoftSync(3), workers=7, steps=9, shards=3, accumulate=2,
         cluster=pslab.Cluster(jitter=0.4, bandwidth=3e4, colocated=True, links=ONE), seed=3),
]


def duplex(kwargs: dict) -> dict:
    """The case on duplex links."""
    return {**kwargs, "cluster": pslab.Cluster.from_plain({**kwargs["cluster"].plain(),
                                                           "links": "duplex"})}


DUPLEX_CASES = [duplex(kw) for kw in CASES]


def both(monkeypatch, **kwargs):
    """(inlined run, the actors' own run) of the same settings."""
    fast = pslab.train(numerics=False, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(simulation.Simulation, "inlined", lambda self: False)
        slow = pslab.train(numerics=False, **kwargs)
    return fast, slow


def same(a: pslab.Run, b: pslab.Run) -> bool:
    # records by repr: exact for floats, and a NaN read back from a checkpoint is another
    # object than the run's own NaN (== on the tuples would call them different)
    return (a.timeline.rows == b.timeline.rows and list(a.timeline) == list(b.timeline)
            and list(map(repr, a.history)) == list(map(repr, b.history))
            and a.push_staleness == b.push_staleness
            and a.makespan == b.makespan and a.complete == b.complete)


@pytest.mark.parametrize("kwargs", CASES + DUPLEX_CASES,
                         ids=lambda k: f"{k['mode']}-{k['workers']}-{k['cluster'].links}")
def test_the_inlined_loop_is_the_actors_run_bit_for_bit(monkeypatch, kwargs):
    fast, slow = both(monkeypatch, **kwargs)
    assert same(fast, slow) and fast.history == slow.history and len(fast.timeline) > 0
    assert all(math.isnan(r.loss) for r in fast.history)


def test_it_takes_only_the_runs_it_does_exactly(monkeypatch):
    used = []
    real = simulation.run_inline
    monkeypatch.setattr(simulation, "run_inline", lambda sim, until: (used.append(sim),
                                                                      real(sim, until)))
    one = pslab.Cluster(links=ONE)
    for mode in ("sync", pslab.SSP(2), pslab.Backup(1), "allreduce", pslab.ZeRO(1)):
        pslab.train(mode=mode, workers=4, steps=3, numerics=False, cluster=one)
    pslab.train(mode="async", workers=3, steps=3, cluster=one)  # numerics: the actors train
    assert used == []
    pslab.train(mode="async", workers=3, steps=3, numerics=False, cluster=one)
    assert len(used) == 1


def test_duplex_links_take_their_own_loop_and_only_its_runs(monkeypatch):
    used = []
    real = simulation.run_duplex
    monkeypatch.setattr(simulation, "run_duplex", lambda sim, until, *first: (
        used.append(sim), real(sim, until, *first))[1])
    for mode in ("sync", pslab.SSP(2), pslab.Backup(1), "allreduce", pslab.ZeRO(1)):
        pslab.train(mode=mode, workers=4, steps=3, numerics=False)
    pslab.train(mode="async", workers=3, steps=3)  # numerics: the actors train
    pslab.train(mode="async", workers=3, steps=3, numerics=False,
                cluster=pslab.Cluster(links=ONE))
    assert used == []
    pslab.train(mode="async", workers=3, steps=3, numerics=False)
    assert len(used) == 1


class Ticker:
    """A progress bar that asks for a stop at its `at`-th update: inside a push's event, as a
    Ctrl-C arriving mid-event would."""

    def __init__(self, clock, at=5):
        self.clock, self.updates, self.at = clock, 0, at

    def update(self, n):
        self.updates += n
        if self.updates == self.at:
            self.clock.interrupt()

    def close(self):
        pass


def on_both_paths(monkeypatch, wrap, links=ONE, **kwargs):
    """[(run, seen)] of the same settings inlined, then by the actors, with Simulation.run
    replaced by `wrap(sim, run, until, seen)`: it calls the real run and notes what it sees."""
    out = []
    for inline in (True, False):
        with monkeypatch.context() as m:
            if not inline:
                m.setattr(simulation.Simulation, "inlined", lambda self: False)
            seen, real = {}, simulation.Simulation.run
            m.setattr(simulation.Simulation, "run",
                      lambda self, until=None: wrap(self, real, until, seen))
            settings = dict(mode="async", workers=6, steps=20,
                            cluster=pslab.Cluster(jitter=0.3, links=links))
            out.append((pslab.train(numerics=False, **{**settings, **kwargs}), seen))
    return out


def state(sim) -> tuple:
    """Everything a simulation holds between two events, as comparable values."""
    return (sim.clock.now, sim.clock.scheduled, sorted((t, q, f.__name__, a) for t, q, f, a
                                                  in sim.clock.queue),
            sim.timeline.rows, list(map(repr, sim.history)), sim.push_staleness,
            sim.server.versions, sim.server.counts, sim.fetched, sim.round_staleness,
            [r.free_at for r in sim.resources], sim.pushing)


@pytest.mark.parametrize("ask", [
    lambda sim: sim.clock.at(7.5, sim.clock.interrupt),  # an event of its own
    lambda sim: setattr(sim, "progress", Ticker(sim.clock)),  # inside a push's event
], ids=["own event", "mid-event"])
@pytest.mark.parametrize("links", [ONE, "duplex"])
def test_a_stop_between_events_leaves_what_the_actors_would(monkeypatch, ask, links):
    """Ctrl-C is a stop event on the clock's heap: the inlined loop runs it as the clock does,
    and the partial run (and what is left pending, and the clock) is the actors' own."""
    def wrap(sim, run, until, seen):
        ask(sim)
        run(sim, until)
        seen["state"] = state(sim)

    with pytest.warns(UserWarning, match="interrupted"):
        (fast, seen_fast), (slow, seen_slow) = on_both_paths(monkeypatch, wrap, links)
    assert not fast.complete and same(fast, slow) and seen_fast == seen_slow
    assert seen_fast["state"][0] > 0 and seen_fast["state"][2]  # a clock, events pending


@pytest.mark.parametrize("links", [ONE, "duplex"])
def test_a_run_to_a_moment_stops_where_the_actors_do(monkeypatch, links):
    """run(until): the events up to that moment, the clock at the last one, the rest pending."""
    def wrap(sim, run, until, seen):
        run(sim, 9.0)
        seen["state"] = state(sim)

    (_, fast), (_, slow) = on_both_paths(monkeypatch, wrap, links)
    assert fast == slow and 8 < fast["state"][0] <= 9.0 and fast["state"][2]


@pytest.mark.parametrize("links", [ONE, "duplex"])
def test_a_checkpoint_on_the_inlined_loop_resumes_to_the_same_run(tmp_path, links):
    kwargs = dict(mode="async", workers=7, steps=20, numerics=False,
                  cluster=pslab.Cluster(jitter=0.3, links=links))
    whole = pslab.train(**kwargs)
    path = tmp_path / "run.ckpt"
    pslab.train(**kwargs, checkpoint=pslab.Checkpoint(path, at=whole.makespan / 3))
    assert same(pslab.resume(path), whole)


def in_pieces(monkeypatch, moments: list[float], **kwargs) -> list[tuple[pslab.Run, list]]:
    """[(run, states)] of the same settings inlined, then by the actors, each run to every
    moment in turn (the state noted there), then to its end: every piece a fresh segment of
    the inlined loop, with the events that were pending taken back off the clock."""
    out = []
    for inline in (True, False):
        with monkeypatch.context() as m:
            if not inline:
                m.setattr(simulation.Simulation, "inlined", lambda self: False)
            seen, real = [], simulation.Simulation.run

            def run(self, until=None):
                for moment in moments:
                    real(self, moment)
                    seen.append(copy.deepcopy(state(self)))  # the run goes on
                real(self, until)

            m.setattr(simulation.Simulation, "run", run)
            out.append((pslab.train(numerics=False, **kwargs), seen))
    return out


@settings(max_examples=60, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(["async", pslab.SoftSync(2), pslab.SoftSync(3)]),
       workers=st.integers(1, 9), steps=st.integers(1, 12), shards=st.integers(1, 4),
       accumulate=st.integers(1, 3), links=st.sampled_from([ONE, "duplex"]),
       colocated=st.booleans(), free=st.booleans(), jitter=st.sampled_from([0.0, 0.3, 0.6]),
       bandwidth=st.sampled_from([3e4, 1e5, 2e5]), seed=st.integers(0, 99),
       cuts=st.lists(st.floats(0.0, 1.1), max_size=3))
def test_generated_runs_cut_anywhere_are_the_actors_run(monkeypatch, mode, workers, steps,
                                                        shards, accumulate, links, colocated,
                                                        free, jitter, bandwidth, seed, cuts):
    """Generated settings, each run whole and cut at generated moments (ties and zero costs
    included: Cluster.free): the inlined loops leave the actors' state at every cut and end
    in the actors' run, bit for bit."""
    if isinstance(mode, pslab.SoftSync) and (workers * steps) % mode.c:  # every push counts
        mode = "async"
    cluster = (pslab.Cluster.free(colocated=colocated, links=links) if free else
               pslab.Cluster(jitter=jitter, bandwidth=bandwidth, colocated=colocated,
                             links=links))
    kwargs = dict(mode=mode, workers=workers, steps=steps, shards=shards,
                  accumulate=accumulate, cluster=cluster, seed=seed)
    whole = pslab.train(numerics=False, **kwargs).makespan
    (fast, fast_seen), (slow, slow_seen) = in_pieces(
        monkeypatch, sorted(whole * c for c in cuts), **kwargs)
    assert same(fast, slow) and fast_seen == slow_seen


@settings(max_examples=40, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(1, 120), workers=st.integers(1, 8), shards=st.integers(1, 3),
       links=st.sampled_from([ONE, "duplex"]), free=st.booleans(), seed=st.integers(0, 99))
def test_a_stop_at_any_update_leaves_what_the_actors_would(monkeypatch, at, workers, shards,
                                                           links, free, seed):
    """A stop asked for by the progress bar at a generated update (ties and zero costs
    included): the loop stops right after that push's arrival, in the actors' state."""
    def wrap(sim, run, until, seen):
        sim.progress = Ticker(sim.clock, at)
        run(sim, until)
        seen["state"] = state(sim)

    cluster = (pslab.Cluster.free(links=links) if free else
               pslab.Cluster(jitter=0.3, links=links))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "interrupted", when the stop came
        (fast, seen_fast), (slow, seen_slow) = on_both_paths(
            monkeypatch, wrap, workers=workers, steps=15, shards=shards, cluster=cluster,
            seed=seed)
    assert same(fast, slow) and seen_fast == seen_slow


@pytest.mark.parametrize("links", [ONE, "duplex"])
def test_the_first_steps_start_before_any_event_even_one_at_time_zero(monkeypatch, tmp_path,
                                                                      links):
    """Every worker's first step starts when the run does, before the clock's events: the
    duplex loop starts them itself (simulation.run), so a stop at time 0, a cut there or a
    checkpoint there must still find them started, as the actors leave them."""
    def wrap(sim, run, until, seen):
        sim.clock.at(0.0, sim.clock.interrupt)  # an event of the clock's own, at time 0
        run(sim, until)
        seen["state"] = state(sim)

    with pytest.warns(UserWarning, match="interrupted"):
        (fast, seen_fast), (slow, seen_slow) = on_both_paths(monkeypatch, wrap, links)
    assert not fast.complete and same(fast, slow) and seen_fast == seen_slow
    now, _, pending = seen_fast["state"][:3]
    assert now == 0 and len(pending) == 6  # each worker's first compute, under way
    kwargs = dict(mode="async", workers=6, steps=5, shards=2,
                  cluster=pslab.Cluster(jitter=0.3, links=links), seed=4)
    (fast, fast_seen), (slow, slow_seen) = in_pieces(monkeypatch, [0.0, 0.0], **kwargs)
    assert same(fast, slow) and fast_seen == slow_seen
    assert fast_seen[0] == fast_seen[1]  # nothing more happens at time 0 the second time
    # a moment before the run's start (train_in_parts takes any ascending pauses): the first
    # steps start all the same, and nothing else happens
    (fast, fast_seen), (slow, slow_seen) = in_pieces(monkeypatch, [-1.0], **kwargs)
    assert same(fast, slow) and fast_seen == slow_seen
    assert fast_seen[0][0] == 0 and len(fast_seen[0][2]) == 6
    whole = pslab.train(numerics=False, **kwargs)
    path = tmp_path / "zero.ckpt"
    pslab.train(numerics=False, **kwargs, checkpoint=pslab.Checkpoint(path, at=0.0))
    assert same(pslab.resume(path), whole)
