"""Each worker's compute / transfer / idle split (the sync dashboards' side panel): the three
parts add up to the makespan, and a transfer to several shards at once counts once."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import pslab  # noqa: E402
from pslab.drawing.busy_plot import BusyPlot  # noqa: E402
from pslab.notebook.dashboard_settings import preset  # noqa: E402
from pslab.timeline import Span, worker_shares  # noqa: E402


def test_overlapping_transfers_count_once_and_idle_is_the_rest():
    spans = [Span(0, 0, "fetch", 0.0, 1.0, 0), Span(0, 1, "fetch", 0.0, 1.5, 0),
             Span(0, None, "compute", 1.5, 3.0, 0, 0),
             Span(0, None, "idle", 3.0, 3.5, 0, None, "queue"),
             Span(0, 0, "push", 3.5, 3.8, 0), Span(0, 1, "push", 3.5, 4.0, 0),
             Span(0, None, "idle", 4.0, 4.5, 0, None, "barrier"),
             Span(None, 0, "update", 4.0, 4.5, 0)]
    (w0, w1) = worker_shares(spans, workers=2, makespan=5.0)
    assert w0 == pytest.approx({"compute": 1.5, "transfer": 2.0, "idle": 1.5,
                                "queue": 0.5, "barrier": 0.5})
    assert w1 == {"compute": 0.0, "transfer": 0.0, "idle": 5.0, "queue": 0.0, "barrier": 0.0}


@pytest.fixture(scope="module")
def runs_002():
    """Dashboard 002's settings (3 workers, sync, 100 kB/s links), timing only, 1-8 shards."""
    return {s: pslab.train(**preset("002", shards=s).train_kwargs(), numerics=False)
            for s in (1, 2, 4, 8)}


def test_parts_add_up_to_each_workers_makespan(runs_002):
    for shards, run in runs_002.items():
        for w, part in enumerate(run.shares()):
            assert part["compute"] + part["transfer"] + part["idle"] == pytest.approx(
                run.makespan, rel=1e-12), (shards, w)
            assert min(part.values()) >= 0
            assert part["queue"] + part["barrier"] <= part["idle"] + 1e-9
        # in sync mode every idle moment is a noted span: the bars agree with run.idle_time
        assert sum(p["idle"] for p in run.shares()) == pytest.approx(run.idle_time, rel=1e-9)


def test_transfer_share_falls_with_more_shards(runs_002):
    share = [sum(p["transfer"] for p in run.shares()) / (run.workers * run.makespan)
             for run in runs_002.values()]
    assert all(a > b for a, b in zip(share, share[1:])), share
    # what the side panel drew before: each shard's spans summed, which rose with the shards
    summed = [sum(s.duration for s in run.timeline if s.kind in ("fetch", "push"))
              / (run.workers * run.makespan) for run in runs_002.values()]
    assert summed[-1] > share[-1] * 4


def test_side_panel_draws_the_shares_and_its_bars_fill_the_axis(runs_002):
    fig, ax = plt.subplots()
    try:
        panel = BusyPlot(ax)
        for run in runs_002.values():
            panel.update(run)
            drawn = panel.shares()
            assert len(drawn) == run.workers
            for bars, part in zip(drawn, run.shares()):
                assert sum(bars.values()) == pytest.approx(1.0, abs=1e-12)
                assert bars == pytest.approx({k: part[k] / run.makespan for k in bars})
            assert f"({run.idle_fraction:.1%} of" in panel.title.get_text()
    finally:
        plt.close(fig)
