"""The papers' numbers about pipeline schedules hold to the last digit on the virtual clock, at
unit times over free links, on every p <= 8, m <= 32 (ZB-H2: a seeded sample): makespan, both
bubble definitions, interleaving's bubble over v, ZB-H1's bubble, the activations each rank
holds."""
from __future__ import annotations

import random
from fractions import Fraction

import pytest

import pslab
from pslab.pipeline.clock import execute
from pslab.pipeline.schedules import orders, rank_of

CASES = [(p, m) for p in range(1, 9) for m in range(1, 33)]  # the whole grid: 2 s of clock
SAMPLE = sorted(random.Random(30).sample(CASES, 40) + [(8, 32), (4, 8), (2, 2), (8, 8)])


def run(schedule, p, m, v=1, times=(1, 1, 0), **kw):
    """A timing-only run at unit times (F, B, W per rank) over free links."""
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v, times=times,
                          **kw)
    return pslab.train(mode=mode, steps=2, numerics=False, cluster=pslab.Cluster.free())


@pytest.mark.parametrize("p,m", CASES)
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_makespan_is_m_plus_p_minus_1_times_f_plus_b(schedule, p, m):
    if schedule == "1f1b" and m < p:
        pytest.skip("1f1b needs m >= p")
    r = run(schedule, p, m, times=(1, 2, 0))
    assert r.span == (m + p - 1) * 3
    assert r.step_time == r.span and r.makespan == 2 * r.span  # free update, two steps
    assert r.bubble_time == (p - 1) * 3


@pytest.mark.parametrize("p,m", CASES)
def test_both_bubble_definitions(p, m):
    """GPipe's idle share (p-1)/(m+p-1) and Megatron's bubble over ideal time (p-1)/m: both
    exact (as fractions of small integers, the floats are the same division)."""
    r = run("gpipe", p, m)
    assert r.bubble_share == pytest.approx(float(Fraction(p - 1, m + p - 1)), abs=1e-15)
    assert r.bubble_ratio == (p - 1) / m


def test_the_two_bubbles_differ_as_the_issue_says():
    r = run("1f1b", 8, 32)
    assert f"{r.bubble_share:.0%}" == "18%" and f"{r.bubble_ratio:.0%}" == "22%"


@pytest.mark.parametrize("v", [2, 3, 4])
@pytest.mark.parametrize("p,k", [(p, k) for p in range(1, 9) for k in range(1, 32 // p + 1)])
def test_interleaving_divides_the_bubble_by_v(p, k, v):
    """Interleaved 1F1B with m a multiple of p: bubble (p-1)(F+B)/v, so (p-1)/(v·m) of the
    ideal time (Narayanan et al. 2021, section 2.2), on every p <= 8, m = k·p <= 32, v = 2-4.
    times=(v, v, 0) a rank, so each of its v chunks takes F = B = 1: exact."""
    m = k * p
    r = run("interleaved-1f1b", p, m, v, times=(v, v, 0))  # a chunk: F = B = 1
    assert r.bubble_time == (p - 1) * 2 * v / v
    assert r.bubble_ratio == (p - 1) / (v * m)
    one = run("1f1b", p, m, times=(v, v, 0))
    assert one.bubble_time == v * r.bubble_time


@pytest.mark.parametrize("p,m", [(p, m) for p, m in CASES if m >= p and m % (m // p) == 0])
def test_zb_h1_bubble_is_a_third_of_1f1bs(p, m):
    """ZB-H1 (Qi et al. 2024): bubble (p-1)(F+B-W) with B the input half; F = B = W = 1 is a
    third of 1F1B's (p-1)(F+B+W)."""
    zb = run("zb-h1", p, m, times=(1, 2, 1))
    one = run("1f1b", p, m, times=(1, 2, 1))
    assert zb.bubble_time == (p - 1) * (1 + 1 - 1)
    assert one.bubble_time == (p - 1) * 3 == 3 * zb.bubble_time


@pytest.mark.parametrize("p,m", CASES)
def test_activations_held_per_rank(p, m):
    """GPipe holds all m micro-batches on every rank; 1F1B holds min(p - s, m) on rank s."""
    assert run("gpipe", p, m).activations == [m] * p
    if m >= p:
        assert run("1f1b", p, m).activations == [min(p - s, m) for s in range(p)]


def test_a_wrong_schedule_fails_the_claims():
    """The tests above can fail: 1F1B with one forward too many in warm-up holds one more
    activation, and GPipe with rank 0's backwards in reverse is no longer (m+p-1)(F+B)."""
    p, m = 4, 8
    lists = orders("1f1b", p, m)
    wrong = [orders("gpipe", p, m)[0], *lists[1:]]
    ops, _ = execute(wrong, rank_of("1f1b", p, 1), {(k, c): 1.0 for k in range(p)
                                                    for c in "FB"}, 0.0, {}, 0.0)
    held = [0] * p
    peak = [0] * p
    for o in sorted(ops, key=lambda o: (o.rank, o.start)):
        held[o.rank] += 1 if o.kind == "F" else -1
        peak[o.rank] = max(peak[o.rank], held[o.rank])
    assert peak != [min(p - s, m) for s in range(p)]  # not 1F1B's memory
    gpipe = orders("gpipe", p, m)  # rank 0 taking its backwards in reverse waits for the last
    reverse = [[a for a in gpipe[0] if a.kind == "F"] + [a for a in reversed(gpipe[0])
                                                          if a.kind == "B"], *gpipe[1:]]
    ops, _ = execute(reverse, list(range(p)), {(k, c): 1.0 for k in range(p) for c in "FB"},
                     0.0, {}, 0.0)
    assert max(o.end for o in ops) != (m + p - 1) * 2


def test_links_add_time_and_spans():
    """Over real links the step grows by the transfers on the critical path, drawn as send
    and recv spans; free links draw none."""
    mode = pslab.Pipeline(stages=4, microbatches=8, schedule="1f1b", times=(1, 1, 0))
    slow = pslab.train(mode=mode, steps=1, numerics=False, batch=16, hidden=32,
                       cluster=pslab.Cluster(latency=0.5, bandwidth=float("inf"),
                                             update_time=0))
    free = run("1f1b", 4, 8)
    assert slow.span > free.span
    kinds = {s.kind for s in slow.timeline}
    assert {"send", "recv", "forward", "backward", "idle"} <= kinds
    assert not {"send", "recv"} & {s.kind for s in free.timeline}
    assert all(s.note == "bubble" for s in slow.timeline if s.kind == "idle")


ZB_TIMES = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]  # dyadic: every sum below is exact


def zb_h2_cases():
    """Seeded (p, m >= 2p − 1, F, I, W) with I <= F and 2W <= F + I (unit times among them)."""
    rng = random.Random(302)
    out = [(p, max(m, 2 * p - 1), 1.0, 1.0, 1.0) for p, m in SAMPLE]
    while len(out) < 2 * len(SAMPLE):
        p = rng.randint(1, 8)
        f, i, w = (rng.choice(ZB_TIMES) for _ in range(3))
        if i <= f and 2 * w <= f + i:
            out.append((p, rng.randint(2 * p - 1, 32), f, i, w))
    return out


@pytest.mark.parametrize("p,m,f,i,w", zb_h2_cases())
def test_zb_h2_bubble_inside_each_ranks_window(p, m, f, i, w):
    """ZB-H2 (Qi et al. 2024): each rank idle at most (p − 1)(F + I − 2W) between its first and
    last action, rank 0 exactly (0 at F = I = W: the parallelogram), 2p − 1 activations held
    on every rank. Its synchronous span is ZB-H1's at most: the gain needs the optimizer's
    sync bypassed (rank_idle), not the flush pslab and PyTorch take."""
    r = run("zb-h2", p, m, times=(f, i + w, w))
    want = (p - 1) * (f + i - 2 * w)
    assert r.rank_idle[0] == want and max(r.rank_idle) == want
    assert r.activations == [2 * p - 1] * p
    h1 = run("zb-h1", p, m, times=(f, i + w, w)) if m % max(1, m // p) == 0 else None
    if h1 is not None:
        assert r.span <= h1.span
        if f == i == w:
            assert r.span == h1.span == (m * 3 + p - 1) * f and max(h1.rank_idle) > 0 or p == 1


def test_zb_h2_outside_its_conditions_is_not_claimed():
    """I > F: the unit-time order no longer fits; rank 0 waits more than the formula."""
    r = run("zb-h2", 4, 8, times=(0.5, 2.0 + 0.75, 0.75))
    assert r.rank_idle[0] > 3 * (0.5 + 2.0 - 1.5)


def test_late_receives_wait_each_transfer_in_full():
    """GPipe, p = 2, m = 2, F = B = 1, one transfer 1: sent at once, rank 1's second forward
    starts at 3 and the step ends at 8; with receives posted late (PyTorch's GPipe on gloo)
    each transfer starts when its receiver asks: rank 1's F1 waits [3, 4], rank 0's backwards
    wait [6, 7] and [8, 9]: the step ends at 10. On free links the two are the same."""
    from pslab.pipeline.clock import execute
    from pslab.pipeline.schedules import orders, rank_of

    lists, where = orders("gpipe", 2, 2, 1), rank_of("gpipe", 2, 1)
    seconds = {(k, kind): 1.0 for k in range(2) for kind in "FB"}
    ends = {}
    for late in ("early", "late"):
        ops, moved = execute(lists, where, seconds, 1.0, {}, 0.0, receives=late)
        ends[late] = max(o.end for o in ops)
        assert len(moved) == 4
        free, _ = execute(lists, where, seconds, 0.0, {}, 0.0, receives=late)
        assert max(o.end for o in free) == 6.0
    assert ends == {"early": 8.0, "late": 10.0}
    late_ops = {(o.rank, o.kind, o.micro): (o.start, o.end) for o in
                execute(lists, where, seconds, 1.0, {}, 0.0, receives="late")[0]}
    assert late_ops[(1, "F", 1)] == (4.0, 5.0) and late_ops[(0, "B", 0)] == (7.0, 8.0)
    assert late_ops[(0, "B", 1)] == (9.0, 10.0)


def test_a_late_receives_notice_waits_behind_the_receivers_own_send():
    """GPipe, p = 3, m = 2, F = B = 1, one transfer 1, receives posted late. gloo's "ready"
    notice leaves a host behind the messages it is sending (one queue out of a host): rank 1
    sends F0's output [3, 4] (rank 2 asked at 0) and asks for F1 at 3, so its notice leaves at
    4 and F1's input moves [4, 5]: rank 1's F1 runs [5, 6], not [4, 5] as with the
    notice free. Every op's times below worked by hand; the step ends at 16 (14 without)."""
    from pslab.pipeline.schedules import orders, rank_of

    lists, where = orders("gpipe", 3, 2, 1), rank_of("gpipe", 3, 1)
    seconds = {(k, kind): 1.0 for k in range(3) for kind in "FB"}
    ops, moved = execute(lists, where, seconds, 1.0, {}, 0.0, receives="late")
    got = {(o.rank, o.kind, o.micro): (o.start, o.end) for o in ops}
    assert got == {(0, "F", 0): (0, 1), (0, "F", 1): (1, 2), (1, "F", 0): (2, 3),
                   (1, "F", 1): (5, 6), (2, "F", 0): (4, 5), (2, "F", 1): (7, 8),
                   (2, "B", 0): (8, 9), (2, "B", 1): (9, 10), (1, "B", 0): (10, 11),
                   (1, "B", 1): (13, 14), (0, "B", 0): (12, 13), (0, "B", 1): (15, 16)}
    assert [(t.src, t.dst, t.micro, t.start) for t in moved] == [
        (0, 1, 0, 1), (1, 2, 0, 3), (0, 1, 1, 4), (1, 2, 1, 6), (2, 1, 0, 9), (1, 0, 0, 11),
        (2, 1, 1, 12), (1, 0, 1, 14)]


@pytest.mark.parametrize("schedule,p,m,v", [("gpipe", 4, 8, 1), ("1f1b", 4, 8, 1),
                                            ("zb-h1", 3, 6, 1), ("interleaved-1f1b", 2, 4, 2)])
def test_late_receives_never_shorten_a_step_and_keep_each_ranks_order(schedule, p, m, v):
    import pslab
    from pslab.pipeline.simulated import simulate_pipeline
    from pslab.settings import Settings

    cluster = pslab.Cluster(latency=0.003, bandwidth=2e5, update_time=0.0)
    mode = pslab.Pipeline(stages=p, microbatches=m, schedule=schedule, chunks=v,
                          times=(0.02, 0.04, 0.02))
    runs = [simulate_pipeline(Settings(mode=mode, steps=1, numerics=False, cluster=cluster),
                              receives="late" if late else "early") for late in (False, True)]
    assert runs[1].step_time > runs[0].step_time
    for rank in range(p):
        order = [[(o.stage, o.kind, o.micro) for o in run.ops if o.rank == rank] for run in runs]
        assert order[0] == order[1]
