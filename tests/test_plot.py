"""Plots read back: the blocks drawn are the run's spans, in their colours, with its numbers."""
import dataclasses
import re
from collections import Counter

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import pslab
from pslab.drawing.sizes import CELL_IN
from pslab.options import ProcessOptions
from pslab import replay
from pslab.drawing import palette
from pslab.drawing.plot import (TimelinePlot, TrainingPlot, compare, flows, plot_dataflow,
                        plot_staleness, plot_timeline, plot_training)

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def fig000():
    return replay.figure000()


@pytest.fixture(scope="module")
def fig001():
    return replay.figure001()


def fresh_ax(size=(9, 4)):
    return Figure(figsize=size).add_subplot()


def expected_boxes(run, kind, column=False, height=0.8):
    """Where each span of `kind` must be: (start, end, y_low, y_high), rows top to bottom."""
    out = []
    for s in run.timeline:
        if s.kind != kind or s.end <= s.start:
            continue
        if s.worker is not None:
            lo, hi = s.worker, s.worker
        elif column:
            lo, hi = 0, run.workers - 1
        else:
            lo = hi = run.workers + s.shard
        out.append((s.start, s.end, lo - height / 2, hi + height / 2))
    return sorted(out)


def same_boxes(drawn, expected):
    assert len(drawn) == len(expected)
    if expected:
        np.testing.assert_allclose(np.array(sorted(drawn)), np.array(sorted(expected)), atol=1e-9)


def title_percent(text):
    return float(re.search(r"\(([\d.]+)%\)", text).group(1))


@pytest.mark.parametrize("which", [0, 1])
def test_timeline_bars_are_the_spans_of_the_run(fig000, which):
    run = fig000[which]
    plot = TimelinePlot(fresh_ax())
    plot.update(run)
    for kind in pslab.KINDS:
        same_boxes(plot.bars(kind), expected_boxes(run, kind))
    # every kind the run has is drawn (the replay has them all), and nothing else is
    assert sum(len(plot.bars(k)) for k in pslab.KINDS) == sum(
        1 for s in run.timeline if s.end > s.start)
    assert plot.rows == ["G0", "G1", "G2", "S0: $W_o$, $b_o$", "S1: $W_h$, $b_h$"]


@pytest.mark.parametrize("name", ["ps", "accumulation"])
def test_every_kind_in_its_palette_colour(fig001, name):
    plot = TimelinePlot(fresh_ax(), palette=name)
    plot.update(fig001[0])
    for kind, coll in plot.collections.items():
        assert to_hex(coll.get_facecolor()[0]) == palette.colour(kind, name).lower()
    legend = {t.get_text() for t in plot.ax.get_legend().get_texts()}
    expected = {"ps": {"fetch (F)", "minibatch", "push (P)", "Update", "idle"},
                "accumulation": {"forward/backward", "gradient sync", "idle"}}[name]
    assert legend == expected


def test_title_states_the_runs_idle_fraction_makespan_and_updates(fig000):
    for run in fig000:
        fig = plot_timeline(run)
        title = fig.axes[0].get_title()
        assert title_percent(title) == pytest.approx(round(run.idle_fraction * 100, 1))
        assert f"makespan {run.makespan:.2f} s" in title
        assert f"{run.updates} updates" in title
    assert fig000[0].idle_fraction != fig000[1].idle_fraction  # so the check can tell them apart


def test_column_mode_draws_the_sync_across_all_gpus(fig001):
    every, _ = fig001
    plot = TimelinePlot(fresh_ax(), palette="accumulation")
    plot.update(every)
    assert plot.rows == ["GPU0", "GPU1", "GPU2", "GPU3"]  # no server rows, as in figure 001
    same_boxes(plot.bars("update"), expected_boxes(every, "update", column=True, height=1.0))
    same_boxes(plot.bars("update"), [(4.0, 5.0, -0.5, 3.5), (9.0, 10.0, -0.5, 3.5)])
    # the title splits the idle time as the figure draws it: white waits + the sync column
    assert "idle 5.30 GPU-seconds + 8.00 in sync (33.2%)" in plot.title.get_text()
    texts = [t.get_text() for t in plot.texts if t.get_visible()]
    assert texts.count("sync") == 2 and "2.8" in texts and "3.7" in texts


def test_update_is_in_place_and_follows_the_new_run(fig000, fig001):
    ax = fresh_ax()
    plot = TimelinePlot(ax)
    plot.update(fig000[0])
    artists = (len(ax.collections), len(ax.texts), len(ax.lines), len(ax.patches))
    colls = dict(plot.collections)
    plot.update(fig001[1])  # four workers, one shard: rows and blocks change
    assert (len(ax.collections), len(ax.texts), len(ax.lines), len(ax.patches)) == artists
    assert plot.collections == colls
    same_boxes(plot.bars("compute"), expected_boxes(fig001[1], "compute"))
    assert ax.get_xlim()[1] >= fig001[1].makespan
    assert title_percent(ax.get_title()) == pytest.approx(round(fig001[1].idle_fraction * 100, 1))


def test_compare_shares_the_time_axis_and_has_one_legend(fig001):
    every, twice = fig001
    fig = compare(every, twice, labels=("every step", "accumulate two"), palette="accumulation")
    a, b = fig.axes[:2]
    assert a.get_xlim() == b.get_xlim()
    assert a.get_xlim()[1] >= max(every.makespan, twice.makespan)
    assert a.get_title().startswith("every step") and b.get_title().startswith("accumulate two")
    assert len(fig.legends) == 1
    # fixed size (same PNG every time), a notebook cell's width (pslab.drawing.sizes)
    assert tuple(fig.get_size_inches()) == (CELL_IN, 4.2)
    assert [p.palette for p in fig.pslab_plots] == ["accumulation"] * 2


def test_training_plot_draws_history_against_virtual_time():
    runs = [pslab.train(mode=m, workers=3, steps=6, cluster=pslab.Cluster(speeds=[0.5, 1, 1]))
            for m in ("sync", "async")]
    fig = plot_training(runs)
    plot = fig.pslab_plots[0]
    for run, loss, acc in zip(runs, plot.loss_lines, plot.acc_lines):
        assert list(loss.get_xdata()) == [r.time for r in run.history]
        assert list(loss.get_ydata()) == [r.loss for r in run.history]
        assert list(acc.get_ydata()) == [r.accuracy for r in run.history]
    # loss and accuracy in panels of their own, loss on a log axis (a diverging run stays
    # readable beside a converging one); the legend above the loss panel, off the data
    assert plot.acc_ax is not plot.ax and len(fig.axes) == 2
    assert plot.ax.get_yscale() == "log" and plot.acc_ax.get_ylim() == (0, 1)
    assert plot.ax.bbox.x1 <= plot.acc_ax.bbox.x0  # side by side, not twinned
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    legend = plot.ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend.y0 >= plot.ax.bbox.y1 - 1  # above the panel's data area
    assert len(plot.title.get_text().splitlines()) == 2  # one caption line per run
    # async applies more updates in the same virtual time: the curves differ in x, not just y
    assert len(plot.loss_lines[1].get_xdata()) == 3 * len(plot.loss_lines[0].get_xdata())
    plot.update(runs[1])  # fewer runs: the spare lines are hidden, not left stale
    assert not plot.loss_lines[1].get_visible()
    by_step = TrainingPlot(fresh_ax(), x="step")
    by_step.update(runs[0])
    assert list(by_step.loss_lines[0].get_xdata()) == [1, 2, 3, 4, 5, 6]


def test_staleness_histogram_heights_are_the_counts():
    run = pslab.train(mode="async", workers=4, steps=8, numerics=False,
                      cluster=pslab.Cluster(speeds=[0.5, 1, 1, 1], jitter=0.3))
    plot = plot_staleness(run).pslab_plots[0]
    counts = Counter(run.staleness)
    assert plot.heights() == {v: counts.get(v, 0) for v in range(max(counts) + 1)}
    assert max(counts) > 0  # a straggler in async: some updates really are stale
    ticks = [*plot.ax.get_xticks(), *plot.ax.get_yticks()]
    assert all(float(t).is_integer() for t in ticks), ticks  # versions and counts: whole
    sync = pslab.train(mode="sync", workers=4, steps=8, numerics=False)
    plot.update(sync)
    assert plot.heights() == {0: 8}


def test_dataflow_edges_carry_what_flowed():
    run = pslab.train(mode="sync", workers=3, steps=5, accumulate=2, batch=8, numerics=False)
    found = flows(run)
    assert [f.rows for f in found] == [5 * 2 * 8] * 3
    assert [f.minibatches for f in found] == [10] * 3
    assert [f.pushes for f in found] == [5] * 3 and [f.pulls for f in found] == [5] * 3
    assert [f.push_bytes for f in found] == [5 * sum(run.shard_bytes)] * 3
    fig = plot_dataflow(run)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("10 batches\n80 rows") == 3
    assert sum("5 pushes" in t for t in texts) == 3 and sum("5 pulls" in t for t in texts) == 3
    assert "Worker 2\n(GPU2)" in texts


def test_timeline_update_moves_the_same_artists_for_a_slider():
    """A slider redraw is fast because nothing is rebuilt: the same collections and texts are
    moved (speed itself is measured in bench/widget_latency.py, never asserted here)."""
    run = pslab.train(mode="async", workers=8, steps=30, numerics=False,
                      cluster=pslab.Cluster(jitter=0.2))
    ax = fresh_ax()
    plot = TimelinePlot(ax)
    plot.update(run)
    before = (list(ax.collections), list(ax.texts), list(ax.lines))
    plot.update(pslab.train(mode="sync", workers=3, steps=4, numerics=False))
    assert (list(ax.collections), list(ax.texts), list(ax.lines)) == before


def test_short_fetch_and_push_are_drawn_at_least_min_px_wide():
    """On a long run a 0.25 s fetch is a hairline: the live timeline draws it min_px wide (on
    top of the minibatch), while the spans, the minibatches and the numbers stay exact."""
    run = pslab.train(mode="async", workers=3, steps=12, numerics=False,
                      cluster=pslab.Cluster(compute_time=3.0, speeds=[0.5, 1, 1], latency=0.25,
                                            bandwidth=1e8, update_time=1.0))
    ax = fresh_ax((8, 4))
    plot = TimelinePlot(ax)
    plot.min_px = 4.0
    plot.update(run)
    px_per_s = ax.get_position().width * 8 * ax.figure.dpi / ax.get_xlim()[1]
    fetch = plot.bars("fetch")
    assert fetch and all((x1 - x0) * px_per_s >= 4.0 - 1e-6 for x0, x1, *_ in fetch)
    spans = [s for s in run.timeline if s.kind == "fetch" and s.end > s.start]
    assert any((s.end - s.start) * px_per_s < 4.0 for s in spans)  # they really were thinner
    assert sorted(b[0] for b in fetch) == sorted(s.start for s in spans)  # starts kept
    same_boxes(plot.bars("compute"), expected_boxes(run, "compute"))  # minibatches exact
    assert plot.collections["fetch"].get_zorder() > plot.collections["compute"].get_zorder()


def test_time_axis_says_whether_the_clock_was_virtual_or_measured():
    run = pslab.train(steps=3)
    assert pslab.plot.plot_timeline(run).axes[0].get_xlabel() == "virtual time (s)"
    on_processes = dataclasses.replace(run.settings, processes=ProcessOptions())
    measured = dataclasses.replace(run, settings=on_processes)
    assert "measured" in pslab.plot.plot_timeline(measured).axes[0].get_xlabel()


def test_column_title_says_sync_only_in_sync_mode():
    from pslab.drawing.timeline_plot import numbers_line

    every, _ = replay.figure001()
    assert " in sync (" in numbers_line(every, column=True)
    asyn = pslab.train("async", workers=4, steps=3, numerics=False,
                       cluster=pslab.Cluster(update_time=1.0))
    text = numbers_line(asyn, column=True)
    assert "during server updates" in text and "in sync" not in text


def test_staleness_axis_ticks_whole_versions_only():
    sync = pslab.train("sync", workers=3, steps=3, numerics=False)
    from pslab.drawing.training_plot import plot_staleness

    ticks = list(plot_staleness(sync).axes[0].get_xticks())
    assert ticks == [0]  # staleness 0 alone: one tick, not -0.6 ... 0.6
    asyn = pslab.train("async", workers=4, steps=6, numerics=False)
    ticks = plot_staleness(asyn).axes[0].get_xticks()
    assert all(float(t).is_integer() and t >= 0 for t in ticks) and max(asyn.staleness) in ticks
