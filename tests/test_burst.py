"""A shaped link's burst (Cluster(burst=...), engine.Shaped): a transfer that finds its
direction idle ends up to burst / bandwidth sooner, as much as the direction was idle; one
queued behind another gets none. Analytical cases, invariants on generated runs, and the
shaper itself measured (root only)."""
import statistics

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pslab
from pslab.engine import Shaped


def moves(run, kind):
    return [(s.worker, round(s.start, 9), round(s.end, 9))
            for s in sorted(run.timeline, key=lambda s: (s.start, s.worker)) if s.kind == kind]


def test_an_idle_direction_gives_its_credit_and_a_queued_transfer_none():
    """Messages of 2 s (2 bytes at 1 B/s), burst 0.5 B: 0.5 s of credit. Both fetches at 0:
    the first finds the line idle (never used: all of the credit), the second waits behind it
    and finds none. Worker 0 pushes at 2.5 on an idle line (1.5 s); worker 1 at 4.2, 0.2 s
    after that push ended: 0.2 s of credit."""
    cluster = pslab.Cluster(durations=[[1.0], [0.7]], latency=0.0, update_time=0.0,
                            bandwidth=1.0, model_bytes=2.0, burst=0.5)
    run = pslab.train(mode="async", workers=2, steps=1, shards=1, numerics=False,
                      cluster=cluster)
    assert moves(run, "fetch") == [(0, 0.0, 1.5), (1, 1.5, 3.5)]
    assert moves(run, "push") == [(0, 2.5, 4.0), (1, 4.2, 6.0)]


def test_the_credit_never_takes_a_transfer_below_its_latency():
    line = Shaped(credit=0.5, fixed=0.1)
    assert line.book(0.0, 0.3) == (0.0, 0.1)  # 0.2 s of bytes, all of them credited
    assert line.book(10.0, 0.0) == (10.0, 10.0)  # a local transfer (no cost) stays free
    assert line.book(20.0, 2.1) == (20.0, 21.6)
    assert line.book(21.6, 2.1) == (21.6, 21.6 + 2.1)  # right behind: none


def test_burst_is_a_duplex_link_s_and_is_written_only_where_set():
    assert "burst" not in pslab.Cluster().plain()
    cluster = pslab.Cluster(bandwidth=1e4, burst=1600)
    assert pslab.Cluster.from_plain(cluster.plain()).burst == 1600
    assert "burst=1600.0" in repr(cluster)
    assert cluster.credit() == pytest.approx(0.16, rel=1e-12)
    assert pslab.Cluster.free(burst=1600).credit() == 0.0
    with pytest.raises(ValueError, match="burst needs links='duplex'"):
        pslab.Cluster(links="one-at-a-time", burst=1.0)
    with pytest.raises(ValueError, match="burst"):
        pslab.Cluster(burst=-1.0)


@st.composite
def runs(draw):
    return dict(mode=draw(st.sampled_from(["sync", "async", pslab.SSP(1), pslab.Backup(1)])),
                workers=draw(st.integers(2, 5)), steps=draw(st.integers(1, 4)),
                shards=draw(st.integers(1, 3)), seed=draw(st.integers(0, 10**6)),
                numerics=False,
                cluster=dict(jitter=draw(st.sampled_from([0.0, 0.3])), bandwidth=2e4,
                             latency=draw(st.sampled_from([0.0, 0.005])), update_time=0.01,
                             colocated=draw(st.booleans())))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([0.1, 0.5, 2.0]))
def test_every_transfer_takes_between_the_line_less_the_credit_and_the_line(kw, share):
    """burst = share x a message: every transfer takes latency + bytes / bandwidth, less at
    most the credit (never below the latency); no direction carries two at once; and burst 0
    is the plain line, bit for bit."""
    plain = pslab.train(**{**kw, "cluster": pslab.Cluster(**kw["cluster"])})
    bytes_ = plain.settings.timing.timing_bytes(plain.shard_bytes)
    burst = share * min(bytes_)
    run = pslab.train(**{**kw, "cluster": pslab.Cluster(**kw["cluster"], burst=burst)})
    zero = pslab.train(**{**kw, "cluster": pslab.Cluster(**kw["cluster"], burst=0.0)})
    assert zero.timeline.rows == plain.timeline.rows
    cluster = run.settings.timing
    lines = {}
    for s in run.timeline:
        if s.kind not in ("fetch", "push"):
            continue
        local = cluster.colocated and cluster.host(s.shard, kw["workers"]) == s.worker
        full = 0.0 if local else cluster.transfer_time(bytes_[s.shard])
        least = 0.0 if local else max(cluster.latency, full - cluster.credit())
        assert least - 1e-12 <= s.end - s.start <= full + 1e-12
        if not local:
            lines.setdefault((s.shard, s.kind), []).append((s.start, s.end))
    for line in lines.values():
        line.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(line, line[1:]))


def test_a_checkpoint_mid_run_with_a_burst_resumes_to_the_same_run(tmp_path):
    kwargs = dict(mode="async", workers=4, steps=10, numerics=False, shards=2,
                  cluster=pslab.Cluster(jitter=0.3, bandwidth=2e4, burst=3000))
    whole = pslab.train(**kwargs)
    path = tmp_path / "run.ckpt"
    pslab.train(**kwargs, checkpoint=pslab.Checkpoint(path, at=whole.makespan / 3))
    resumed = pslab.resume(path)
    assert resumed.timeline.rows == whole.timeline.rows
    unshaped = pslab.train(**dict(kwargs, cluster=pslab.Cluster(jitter=0.3, bandwidth=2e4)))
    assert whole.makespan < unshaped.makespan  # the credit is on


def _no_hosts() -> str | None:
    from pslab.processes.hosts import unavailable

    return unavailable()


@pytest.mark.processes
@pytest.mark.skipif(_no_hosts() is not None, reason=str(_no_hosts()))
def test_the_shaper_s_credit_is_measured_as_the_model_gives_it():
    """At 1 Mbit/s, 12 KB from the shard's host after a pause, alone and two at once: the
    first ends a burst sooner than the line (90.0 ms measured, line 100.5, line less the
    credit 87.7; quiet), the second right behind it gets none (192.6: 188.2 with the credit).
    The model with the credit within 7 % (measured +1.9 to +3.1 %, quiet and at load 4); the
    line without it further off for the lone one. (At 2 Mbit/s and 9.6 KB the same model was
    +3.1 to +5.6 %: the ms a real message costs beyond its bytes weigh twice as much there.)"""
    from pslab.processes.calibrate import Link, transfers
    from pslab.processes.hosts import leftovers, own_prefix

    rate, size = 1e6, 12_000
    link = Link(0.0, rate * 0.955 / 8, rate)
    first = (size - link.burst) / link.bandwidth
    second = first + size / link.bandwidth
    alone = statistics.median(r[0] for r in transfers(rate, [(0, 1, size)], 2))
    two = transfers(rate, [(0, 1, size), (0, 2, size)], 3)
    ends = [statistics.median(sorted(r)[i] for r in two) for i in (0, 1)]
    for measured, model in ((alone, first), (ends[0], first), (ends[1], second)):
        assert abs(measured / model - 1) < 0.07, (alone, ends, first, second)
    line = size / link.bandwidth
    assert abs(alone / first - 1) < abs(alone / line - 1), (alone, first, line)
    assert leftovers(own_prefix()) == []
