"""One numbering a student can follow: workers, shards and NAS replicas are numbered from 0
everywhere they are shown, as the ranks a student passes are (`kill={1: 5}` kills G1,
`speeds[2]` is G2's, `Span.worker == 0` is drawn on row G0)."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pslab  # noqa: E402
from pslab import nas, plot, replay  # noqa: E402
from pslab.drawing.busy_plot import BusyPlot  # noqa: E402
from pslab.drawing.export import tikz  # noqa: E402

FIGURES = Path(__file__).resolve().parent.parent / "figures"


def test_a_straggler_set_by_rank_is_drawn_on_that_rank_s_row():
    run = pslab.train("sync", workers=3, steps=3, numerics=False,
                      cluster=pslab.Cluster(speeds=[1, 1, 0.25]))
    slow = max(range(3), key=lambda w: sum(s.duration for s in run.timeline
                                           if s.worker == w and s.kind == "compute"))
    assert slow == 2
    rows = plot.plot_timeline(run).pslab_plots[0].rows
    assert rows[:3] == ["G0", "G1", "G2"] and rows[slow] == "G2"
    assert rows[3:] == ["S0 {$W_o$, $b_o$}", "S1 {$W_h$, $b_h$}"]
    every, _ = replay.figure001()
    assert plot.plot_timeline(every, palette="accumulation").pslab_plots[0].rows == [
        "GPU0", "GPU1", "GPU2", "GPU3"]


def test_side_panel_data_flow_and_tikz_number_from_zero():
    run = replay.figure002()
    fig = plot.plot_dataflow(run)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "Worker 0\n(GPU0)" in texts and not any("Worker 3" in t for t in texts)
    assert any(t.startswith("shard 0:") for t in texts)
    import matplotlib.pyplot as plt
    f, ax = plt.subplots()
    BusyPlot(ax).update(run)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["G0", "G1", "G2"]
    plt.close(f)
    doc = tikz(run)
    assert "{G0}" in doc and "{G3}" not in doc


def test_nas_replicas_and_servers_number_from_zero():
    result = nas.search(servers=2, controllers=2, children=2, rounds=1, numerics=False)
    assert [result.row_label(w) for w in range(6)] == ["C0", "C1", "C0.0", "C0.1", "C1.0",
                                                        "C1.1"]
    texts = [t.get_text() for t in plot.plot_hierarchy(result).axes[0].texts]
    for name in ("Server 0", "Controller 0", "Child 0"):
        assert any(t.startswith(name) for t in texts), name
    assert not any(t.startswith("Controller 2") for t in texts)


def test_the_seed_figures_number_from_zero_too():
    fig000 = (FIGURES / "000_parameter_server.tex").read_text()
    assert "(G0)" in fig000 and "(G3)" not in fig000 and "1/G0, 2/G1, 3/G2" in fig000
    assert r"{GPU\the\numexpr\g-1\relax}" in (FIGURES / "001_gradient_accumulation.tex").read_text()
    fig002 = (FIGURES / "002_data_parallel.tex").read_text()
    assert r"\foreach \i in {0,1,2}" in fig002 and r"Worker \i" in fig002
    assert "Replica \\lbl" in (FIGURES / "003_nas_hierarchy.tex").read_text()
