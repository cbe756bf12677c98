"""One numbering a student can follow: workers, shards and NAS replicas are numbered from 0
everywhere they are shown, as the ranks a student passes are (`kill={1: 5}` kills G1,
`speeds[2]` is G2's, `Span.worker == 0` is drawn on row G0)."""
import math
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
    assert rows[3:] == ["S0: $W_o$, $b_o$", "S1: $W_h$, $b_h$"]
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


def test_the_straggler_the_notebooks_name_is_the_one_the_runs_slow():
    """Every sentence of a notebook that names a straggler ("G0 twice as slow", "wait for
    G0") names the worker the dashboards' set-ups actually slow, found from the run."""
    import json
    import re

    from pslab.notebook.dashboard_settings import PRESETS

    slowed = set()
    for name, preset in PRESETS.items():
        if preset.slowdown == 1.0:
            continue
        run = pslab.train(numerics=False, **preset.changed(steps=4).train_kwargs())
        busy = {w: sum(s.duration for s in run.timeline if s.worker == w and s.kind == "compute")
                for w in range(run.workers)}
        slowed.add(f"G{max(busy, key=busy.get)}")
    assert slowed == {"G0"}, slowed
    named = []
    for path in sorted((FIGURES.parent / "notebooks").glob("*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] != "markdown":
                continue
            for sentence in re.split(r"(?<=[.!?])\s+", "".join(cell["source"])):
                if re.search(r"strag|slow", sentence, re.I):
                    named += [(path.name, i, g) for g in re.findall(r"\bG\d+\b", sentence)]
    assert len(named) >= 5  # the notebooks do name it (00, 02, 03, present)
    assert [n for n in named if n[2] not in slowed] == []


def test_steps_and_rounds_count_from_0_in_hovers_printouts_and_axes():
    """Steps and rounds are counted from 0 wherever a student reads one, as workers are: the
    hover of a first block, the NAS numbers, its updates table, its reward curve's axis, and
    the notebooks' printouts (no `step + 1` in a cell)."""
    import json
    import re

    from pslab.notebook.nas_browser_tiers import rewards_panel, tiers_panel
    from pslab.nas import search
    from pslab.notebook.browser_plots import column
    from pslab.notebook.widgets import Dashboard

    dash = Dashboard("000", settle_delay=None)
    hover = dash.figures["timeline"].panels[0]["hover"]
    assert hover["lines"][0].endswith("step {step}")
    assert column(hover["cols"]["step"]).min() == 0 == min(r.step for r in dash.run.history)
    result = search(rounds=3, numerics=True)
    assert "(round 0) →" in result.headline() and "(round 2), best" in result.headline()
    assert result.updates_table(1).splitlines()[-1].split()[2] == "0"
    assert rewards_panel(result)["lines"][0]["x"][0] == 0
    tiers = tiers_panel(result)["hover"]
    assert "round {step}" in tiers["lines"][0]
    assert column(tiers["cols"]["step"]).min() == 0 == min(s.round for s in result.samples)
    for path in sorted((FIGURES.parent / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                assert not re.search(r"\b(step|round)\s*\+\s*1\b", source), (path.name, source)


def _named_every(layout: dict, panel: dict) -> int:
    """browser_figure.js's rule: row names shrink to 10 px at least; rows closer than that are
    named one in k, and a note under the axis says so; this k."""
    L = layout["panels"][0]
    spacing = (layout["height"] - L["top"] - L["bottom"]) / len(panel["yticks"])
    font = max(10, min(layout["font"], int(spacing)))
    return max(1, math.ceil(font / max(spacing, 1) - 1e-9))


def test_every_timeline_row_is_named_or_a_note_says_which_are_left_out():
    """Each dashboard's timeline names every row at its starting set-up (the default's 8
    workers and 2 shards: 10 rows); beyond, one row in k is named and the note under the axis
    says so
    (the plot keeps its height, so the controls, numbers and curves stay on one screen); the
    NAS timeline, which draws 4 replicas of up to 8, says that under its axis too."""
    from pslab.notebook.nas_live import Dashboard as NasDashboard
    from pslab.notebook.widgets import Dashboard
    from pslab.notebook.zero_dashboard import ZeroDashboard

    js = (FIGURES.parent / "pslab" / "notebook" / "browser_figure.js").read_text()
    assert "1 row in ${every} named: a hover names each" in js  # the note where every > 1
    for name in ("default", "000", "001", "002"):
        dash = Dashboard(name, settle_delay=None)
        fig = dash.figures["timeline"]
        assert _named_every(fig.layout_spec, fig.panels[0]) == 1, name
        dash.set(workers=16)
        assert _named_every(fig.layout_spec, fig.panels[0]) > 1  # then the note says so
    zero = ZeroDashboard(settle_delay=None)
    assert _named_every(zero.figures["timeline"].layout_spec,
                        zero.figures["timeline"].panels[0]) == 1
    nas = NasDashboard(settle_delay=None)
    fig = nas.figures["timeline"]
    assert _named_every(fig.layout_spec, fig.panels[0]) == 1
    nas.set(servers=8, controllers=8, children=4, rounds=2)
    assert fig.panels[0]["note"] == "rows: the first 4 of 8 replicas"
    nas.set(controllers=4)
    assert nas.figures["timeline"].panels[0]["note"] == ""
