"""pslab.columns: a simulated run's timeline is kept as columns and reads as the list of Spans
it stands for (len, index, slices, iteration, ==), and its sums are the list's, bit for bit."""
import dataclasses

import pytest

import pslab
from pslab.columns import Columns
from pslab.timeline import Span, total


@pytest.fixture(scope="module")
def run():
    return pslab.train(mode=pslab.Backup(1), workers=4, steps=6, numerics=False, shards=3,
                       cluster=pslab.Cluster(jitter=0.3), seed=3)


def test_the_timeline_reads_as_a_list_of_spans(run):
    spans = list(run.timeline)
    assert isinstance(run.timeline, Columns) and len(spans) == len(run.timeline) > 0
    assert all(type(s) is Span for s in spans)
    assert run.timeline == spans and spans == run.timeline and run.timeline != spans[:-1]
    assert run.timeline[0] == spans[0] and run.timeline[-1] == spans[-1]
    assert run.timeline[2:7] == spans[2:7] and run.timeline[::-3] == spans[::-3]
    assert list(reversed(run.timeline)) == spans[::-1]
    assert run.timeline.index(spans[5]) == spans.index(spans[5]) and spans[5] in run.timeline
    assert {s.kind for s in spans} >= {"fetch", "compute", "push", "update", "idle"}
    assert any(s.note == "barrier" for s in spans) and all(
        s.micro is None or isinstance(s.micro, int) for s in spans)
    with pytest.raises(IndexError):
        run.timeline[len(spans)]


def test_round_trip_keeps_every_field():
    spans = [Span(0, None, "compute", 0.0, 0.1, 0, 1), Span(None, 2, "update", 0.1, 0.3, 0),
             Span(3, 1, "push", 0.3, 1 / 3, 7, None, "dropped"),
             Span(1, None, "allgather", 0.5, 0.75, 2, None, "a note of a new mode")]
    cols = Columns(spans)
    assert list(cols) == spans and cols[3].kind == "allgather"  # new kinds and notes: no enum
    cols.append(spans[0])
    assert len(cols) == 5 and cols[-1] == spans[0]
    cols.clear()
    assert len(cols) == 0 and not cols


def test_sums_on_the_columns_equal_the_lists_bit_for_bit(run):
    spans = list(run.timeline)
    for kind, note in (("idle", None), ("idle", "barrier"), ("idle", "queue"), ("push", None),
                       ("compute", None), ("push", "dropped"), ("collective", None)):
        assert total(run.timeline, kind, note) == total(spans, kind, note)
    listed = dataclasses.replace(run, timeline=spans)
    assert run.idle_time == listed.idle_time and run.barrier_time == listed.barrier_time
    assert run.queue_time == listed.queue_time and run.shares() == listed.shares()


def test_growing_radices_keep_the_spans_already_held():
    # unsized columns start with room for None only: each larger index re-packs what is there
    spans = [Span(None, None, "idle", 0.0, 0.5, 0), Span(2, None, "compute", 0.5, 0.75, 3, 0),
             Span(None, 40, "update", 1.0, 1.5, 9), Span(1999, 7, "fetch", 2.0, 2.25, 10**4),
             Span(5, None, "compute", 3.0, 3.5, 4, 300, "queue")]
    cols = Columns()
    for i, span in enumerate(spans):
        cols.append(span)
        assert list(cols) == spans[:i + 1]  # decoded in bulk (numpy) ...
        assert [cols[j] for j in range(i + 1)] == spans[:i + 1]  # ... and one by one


def test_sized_columns_refuse_a_span_outside_their_range():
    cols = Columns(workers=4, shards=2, micros=1)
    cols.append(Span(3, 1, "push", 0.0, 1.0, 5))
    with pytest.raises(ValueError, match="outside this timeline's range"):
        cols.append(Span(4, None, "compute", 0.0, 1.0, 5, 0))
    with pytest.raises(ValueError, match="outside"):
        cols.append(Span(0, 2, "push", 0.0, 1.0, 5))
    assert list(cols) == [Span(3, 1, "push", 0.0, 1.0, 5)]  # nothing half-added


def test_a_span_is_three_doubles():
    cols = Columns(workers=800, shards=2, micros=1)
    for i in range(1000):
        cols.append(Span(i % 800, i % 2, "push", i * 0.1, i * 0.1 + 1 / 3, i))
    assert cols.rows.itemsize * len(cols.rows) == 24 * 1000
    assert cols[999] == Span(199, 1, "push", 999 * 0.1, 999 * 0.1 + 1 / 3, 999)


def test_a_code_past_exact_doubles_is_refused_not_rounded():
    cols = Columns(workers=10**4, shards=256, micros=100)
    with pytest.raises(OverflowError, match="step"):
        cols.append(Span(0, 0, "push", 0.0, 1.0, 10**6))
    assert len(cols) == 0


@pytest.mark.parametrize("kwargs", [
    dict(mode="async", workers=30, steps=20, cluster=pslab.Cluster(jitter=0.3)),
    dict(mode="sync", workers=4, steps=20, accumulate=2, shards="layers"),
    dict(mode=pslab.Backup(1), workers=5, steps=15, shards=3,
         cluster=pslab.Cluster(jitter=0.3, colocated=True)),
    dict(mode=pslab.SSP(1), workers=6, steps=15, cluster=pslab.Cluster(jitter=0.5)),
    dict(mode="allreduce", workers=4, steps=5), dict(mode=pslab.ZeRO(3), workers=4, steps=5)],
    ids=lambda k: str(k["mode"]))
def test_shares_read_off_the_columns_equal_the_spans_walk_bit_for_bit(kwargs):
    run = pslab.train(numerics=False, **kwargs)
    listed = dataclasses.replace(run, timeline=list(run.timeline))  # walks Span objects
    assert run.shares() == listed.shares()
    cut = dataclasses.replace(run, makespan=run.makespan / 2)  # spans clipped at the makespan
    assert cut.shares() == dataclasses.replace(cut, timeline=list(run.timeline)).shares()
