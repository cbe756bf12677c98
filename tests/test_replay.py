"""The replays draw what the seeds draw: orderings, durations, makespans and idle totals."""
import pytest

from pslab import replay
from pslab.cli import figures, save


def spans(run, kind, worker=None, step=None):
    return [s for s in run.timeline if s.kind == kind
            and (worker is None or s.worker == worker) and (step is None or s.step == step)]


def test_figure001_free_network_makespans_and_idle():
    every, twice = replay.figure001(sync_time=0.0)
    assert every.makespan == pytest.approx(8.0) and twice.makespan == pytest.approx(7.0)
    assert every.idle_time == pytest.approx(5.3) and twice.idle_time == pytest.approx(1.3)


def test_figure001_with_the_sync_block_of_the_figure():
    every, twice = replay.figure001()
    assert every.makespan == pytest.approx(10.0) and twice.makespan == pytest.approx(8.0)
    # the sync is one block: after step 1's slowest GPU (4.0) and after step 2's (5.0 + 4.0)
    assert [(s.start, s.end) for s in spans(every, "update")] == [pytest.approx((4, 5)),
                                                                  pytest.approx((9, 10))]
    assert [(s.start, s.end) for s in spans(twice, "update")] == [pytest.approx((7, 8))]
    # The white idle of the figure is the free network's idle; the rest is spent in the sync
    # column (4 GPUs x 1.0 s per sync).
    assert every.sync_wait == pytest.approx(8.0) and twice.sync_wait == pytest.approx(4.0)
    assert every.idle_time - every.sync_wait == pytest.approx(5.3)
    assert twice.idle_time - twice.sync_wait == pytest.approx(1.3)


def test_figure001_blocks_are_the_table():
    every, twice = replay.figure001()
    for gpu, (a, b) in enumerate(replay.FIGURE001_DURATIONS):
        first, second = sorted(spans(every, "compute", gpu), key=lambda s: s.start)
        assert (first.start, first.duration) == pytest.approx((0.0, a))
        assert (second.start, second.duration) == pytest.approx((5.0, b))  # after the sync
        one, two = sorted(spans(twice, "compute", gpu), key=lambda s: s.start)
        assert (one.start, one.end, two.start, two.end) == pytest.approx((0, a, a, a + b))
        assert (one.micro, two.micro) == (0, 1)


def test_figure000_sync_waits_for_the_straggler_once_per_step():
    sync, _ = replay.figure000()
    assert sync.updates == 2 and all(r.worker is None and r.staleness == 0 for r in sync.history)
    for step in (0, 1):
        pushes = spans(sync, "push", step=step)
        assert {s.worker for s in pushes} == {0, 1, 2}
        assert min(s.start for s in spans(sync, "update", step=step)) >= max(s.end for s in pushes)
        # G1's minibatch is the long one, twice G2's and G3's
        g1, g2, g3 = (spans(sync, "compute", w, step)[0].duration for w in range(3))
        assert g1 == pytest.approx(2 * g2) == pytest.approx(2 * g3)
    # G2 and G3 wait for G1: their idle time is what the straggler costs
    assert sum(s.duration for s in spans(sync, "idle", 1)) > 2 * 3.0


def test_figure000_async_applies_g3_and_g2_before_g1():
    sync, asyn = replay.figure000()
    first_three = asyn.history[:3]
    assert {r.worker for r in first_three[:2]} == {1, 2}  # G2's and G3's pushes first ...
    assert first_three[2].worker == 0 and first_three[2].step == 0  # ... then G1's
    assert first_three[2].staleness == 2  # on weights two versions old, as figure 000 notes
    assert [r.time for r in asyn.history] == sorted(r.time for r in asyn.history)
    assert asyn.updates == 6 and sync.updates == 2
    assert asyn.idle_fraction < sync.idle_fraction / 2  # nobody waits for the straggler
    # G2 and G3 have both finished their second minibatch before G1 finished its first
    g1_first = spans(asyn, "compute", 0, 0)[0]
    assert g1_first.end > max(spans(asyn, "compute", w, 0)[0].end for w in (1, 2))


def test_figure002_is_three_workers_and_exactly_repeatable():
    a, b = replay.figure002(), replay.figure002()
    assert a.workers == 3 and a.updates == a.settings.steps
    assert a.timeline == b.timeline and a.history == b.history
    assert a.final_accuracy > 0.5  # it really trained
    c = replay.figure002(seed=1)
    assert c.timeline != a.timeline  # the seed reaches the jitter


def test_figures_command_writes_every_replay(tmp_path):
    written = figures(tmp_path)
    names = sorted(p.name for p in written)
    assert names == sorted(f"figure00{i}.{ext}" for i in range(4) for ext in ("png", "svg", "tex"))
    assert written[0].suffix == ".svg"
    for p in written:
        assert p.stat().st_size > 1000, p
    svg = (tmp_path / "figure001.svg").read_text()
    assert "<dc:date>" not in svg  # no date: regenerating gives the same file
    # and byte-identical when written again
    from pslab.cli import JOBS
    fig, _ = JOBS["figure001"]()
    save(fig, tmp_path / "again.svg")
    assert (tmp_path / "again.svg").read_bytes() == (tmp_path / "figure001.svg").read_bytes()
