"""The dashboards, headless: set widget values as a reader would, check the run and the plots.

No browser here (tests/test_notebooks_browser.py does that): ipywidgets work without a front
end, so every control is set through its `.value`, exactly what a slider move sends. What the
dashboards explain (the why-lines, captions, hover, readiness, fade) is in
tests/test_dashboard_explains.py.
"""
from __future__ import annotations

import asyncio
import base64
import io
import math

import numpy as np
import pytest
from PIL import Image

import pslab
from pslab.model import single_thread
from pslab.notebook.controls import CONTROLS
from pslab.notebook.dashboard_settings import PRESETS, Settings, preset
from pslab.notebook.liveview import View, _timeline_artists
from pslab.notebook.livefigure import LiveFigure, nice_ceiling
from pslab.notebook.widgets import Dashboard, Progress, describe, sweep, table

from dashboard_view import blocks, pixels, rows, worker_rows


@pytest.fixture
def dash() -> Dashboard:
    return Dashboard("000")


def test_controls_cover_the_issue_ranges(dash):
    c = dash.controls
    assert (c["workers"].min, c["workers"].max) == (1, 16)
    assert (c["accumulate"].min, c["accumulate"].max) == (1, 8)
    lrs = [v for _, v in c["lr"].options]  # log scale: 1, 2, 5 per decade
    assert lrs[0] <= 1e-3 and lrs[-1] >= 1 and lrs[3] / lrs[0] == pytest.approx(10)
    assert c["lr"].value == 0.5 and c["bandwidth"].label == "100 MB/s"
    assert list(c["mode"].options) == ["sync", "async", "SSP"]
    assert {"slowdown", "shards", "bandwidth", "ssp"} <= set(c)
    assert all(w.continuous_update for w in c.values() if hasattr(w, "continuous_update"))
    assert set(CONTROLS) == set(c)


def test_workers_slider_3_to_5_redraws_the_timeline(dash):
    assert dash.run.workers == 3 and worker_rows(dash) == ["G0", "G1", "G2"]
    before = blocks(dash)
    dash.controls["workers"].value = 5
    assert dash.run.workers == 5
    assert worker_rows(dash) == ["G0", "G1", "G2", "G3", "G4"]
    assert {s.worker for s in dash.run.timeline if s.worker is not None} == set(range(5))
    after = blocks(dash)
    # the browser gets one block per visible span of the new run, on the new rows
    assert len(after["x0"]) == sum(s.end > s.start for s in dash.run.timeline) > len(before["x0"])
    assert after["y1"].max() > before["y1"].max()


def test_mode_dropdown_changes_staleness():
    dash = Dashboard("002")  # starts in sync: nothing is ever stale
    assert dash.run.mode == "sync" and max(dash.run.staleness) == 0
    assert dash.figures["staleness"].layout_spec["panels"][0]["xfmt"] == "pct"  # time split
    dash.controls["mode"].value = "async"
    assert dash.run.mode == "async"
    assert max(dash.run.staleness) > 0
    bars = blocks(dash, "staleness")  # one bar per staleness value, as high as its count
    counts = np.bincount(dash.run.staleness)
    assert list(bars["y1"]) == list(counts) and list(bars["x0"] + 0.4) == list(range(len(counts)))
    assert "xfmt" not in dash.figures["staleness"].layout_spec["panels"][0]


def test_ssp_control_is_live_only_in_ssp_mode(dash):
    assert dash.controls["ssp"].disabled  # preset 000 is async
    dash.set(mode="SSP", ssp=0)
    assert not dash.controls["ssp"].disabled
    assert dash.run.mode == "SSP(0)"
    zero = max(dash.run.staleness)
    dash.controls["ssp"].value = 10
    assert dash.run.mode == "SSP(10)"
    assert max(dash.run.staleness) >= zero


def test_accumulate_slider_sets_minibatches_per_push(dash):
    dash.controls["accumulate"].value = 3
    computes = [s for s in dash.run.timeline if s.kind == "compute" and s.worker == 0]
    assert len(computes) == 3 * dash.settings.steps
    assert {s.micro for s in computes} == {0, 1, 2}


def test_straggler_slider_slows_g1_only():
    dash = Dashboard("000")  # no jitter: durations are exact
    dash.controls["slowdown"].value = 3.0
    g = {w: [s.duration for s in dash.run.timeline if s.worker == w and s.kind == "compute"]
         for w in (0, 1)}
    assert g[0][0] == pytest.approx(3.0 * g[1][0])


def test_shards_and_bandwidth(dash):
    dash.controls["shards"].value = 3
    assert len(dash.run.shard_bytes) == 3
    assert rows(dash)[-3:] == ["S0: Wₒ … Wₕ", "S1: Wₕ", "S2: Wₕ, bₕ"]  # plain text
    fetch = lambda run: max(s.duration for s in run.timeline if s.kind == "fetch")  # noqa: E731
    fast = fetch(dash.run)
    dash.controls["bandwidth"].value = 1e3
    assert fetch(dash.run) > 10 * fast


def test_lr_changes_the_loss_not_the_clock(dash):
    timeline, loss = dash.figures["timeline"].panels, [r.loss for r in dash.run.history]
    sends = dash.figures["timeline"].sends
    dash.controls["lr"].value = 0.05
    assert dash.figures["timeline"].panels is timeline  # the clock does not depend on lr:
    assert dash.figures["timeline"].sends == sends  # nothing is sent to the browser
    assert [r.loss for r in dash.run.history] != loss
    assert dash.run.settings.lr == pytest.approx(0.05)


def test_settled_run_is_exactly_pslab_train(dash):
    dash.set(workers=4, mode="async", accumulate=2)
    s = dash.settings
    with single_thread():  # the dashboard trains on one torch thread (bit-for-bit everywhere)
        again = pslab.train(**s.train_kwargs())
    assert dash.run.timeline == again.timeline
    assert [tuple(r) for r in dash.run.history] == [tuple(r) for r in again.history]
    assert not math.isnan(dash.run.final_accuracy)
    # the one-line code the dashboard shows is the same run
    with single_thread():
        code_run = eval(s.code(), {"pslab": pslab})
    assert code_run.timeline == again.timeline


def test_loss_plot_keeps_the_previous_settings_for_comparison(dash):
    dash.controls["workers"].value = 4
    loss, acc = dash.figures["training"].panels
    assert [ln["label"] for ln in loss["lines"]] == ["now", "before: workers 3"]
    assert [item["label"] for item in dash.figures["training"].legend] == ["now",
                                                                         "before: workers 3"]
    assert loss["lines"][0]["y"] == [round(r.loss, 5) for r in dash.run.history]
    assert acc["lines"][0]["x"] == [round(r.time, 4) for r in dash.run.history]


def test_timing_only_while_moving_numerics_when_settled():
    async def scenario() -> tuple[bool, bool, float, float]:
        dash = Dashboard("002", settle_delay=0.05)
        dash.controls["workers"].value = 4  # inside a running loop: the settle is deferred
        moving_nan = math.isnan(dash.run.final_accuracy) and dash.pending
        await asyncio.sleep(0.5)
        return moving_nan, dash.pending, dash.run.final_accuracy, dash.run.workers

    moving_nan, pending, acc, workers = asyncio.run(scenario())
    assert moving_nan  # the fast path ran the clock only
    assert not pending and workers == 4 and 0 < acc <= 1


def test_many_quick_moves_settle_once():
    async def scenario() -> tuple[int, list[int]]:
        dash = Dashboard("002", settle_delay=0.2)
        settles = len(dash.settle_ms)
        for n in (4, 5, 6, 7):
            dash.controls["workers"].value = n
        await asyncio.sleep(0.8)
        return len(dash.settle_ms) - settles, [dash.run.workers]

    settles, workers = asyncio.run(scenario())
    assert settles == 1 and workers == [7]


def test_display_bundle_is_deterministic_and_has_a_static_picture():
    a, b = Dashboard("001"), Dashboard("001")
    ba, bb = a._repr_mimebundle_(), b._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in ba
    assert ba["text/plain"] == bb["text/plain"]
    assert ba["text/plain"].startswith("pslab dashboard (001): sync, 4 workers")
    png = base64.b64decode(ba["image/png"])
    assert png == base64.b64decode(bb["image/png"])  # same bytes: no dates, fixed sizes
    assert Image.open(io.BytesIO(png)).size[0] >= 800


def test_blitted_render_equals_full_redraw():
    view = View(preset("default"))
    s = preset("default")
    for change in (dict(workers=5), dict(slowdown=3.0), dict(mode="async"), dict(shards=1),
                   dict(workers=12, mode="SSP", ssp=2)):
        s = s.changed(**change)
        live = view.show(s)
        view.timeline.invalidate()
        view.staleness.invalidate()
        full = {"timeline": view.timeline.render(_timeline_artists(view.timeline_plot)),
                "staleness": view.staleness.render(view.side_artists())}
        for name in live:
            assert np.array_equal(pixels(live[name]), pixels(full[name])), (change, name)
    assert view.timeline.blits + sum(view.timeline.draws[1:]) > 0


def test_layers_are_reused_when_only_data_moves():
    view = View(preset("default"))
    s = preset("default")
    view.show(s)
    draws = list(view.timeline.draws)
    for k in range(1, 4):
        view.show(s.changed(slowdown=2.0 + 0.01 * k))  # same axes, new blocks
    assert view.timeline.draws[0] == draws[0]  # the frame (legend...) was not redrawn
    view.show(s.changed(workers=7))
    assert view.timeline.draws[2] > draws[2]  # new row labels: the y layer was redrawn


def test_png_and_nice_ceiling():
    assert [nice_ceiling(x) for x in (0.9, 1.0, 1.1, 7.3, 93.4, 101)] == [1, 1, 1.2, 8, 100, 120]
    assert nice_ceiling(0) == 1.0 and nice_ceiling(float("inf")) == 1.0
    fig = LiveFigure((2, 1), dict(left=0.2, right=0.9, bottom=0.2, top=0.9))
    (line,) = fig.ax.plot([0, 1], [0, 1])
    png = fig.render([line])
    assert png.startswith(b"\x89PNG") and b"tIME" not in png and b"Date" not in png


def test_presets_are_valid_settings():
    for name, s in PRESETS.items():
        run = pslab.train(numerics=False, **s.train_kwargs())
        assert run.workers == s.workers, name
    with pytest.raises(ValueError, match="preset"):
        preset("999")
    with pytest.raises(ValueError, match="mode"):
        Settings(mode="fast")
    with pytest.raises(ValueError, match="slowdown"):
        Settings(slowdown=0.5)


def test_set_rejects_unknown_controls(dash):
    with pytest.raises(ValueError, match="no control named speed"):
        dash.set(speed=2)


def test_status_and_numbers(dash):
    assert 'data-state="ready"' in dash.status.value
    assert describe(dash.run) in dash.numbers.value.replace("&#x27;", "'")
    assert "pslab.train(" in dash.code.value
    assert dash.captions["timeline"].value and not dash.errors
    assert describe(None) == "no run yet"


def test_sweep_shows_progress_and_returns_runs():
    runs = sweep([1, 2, 3], lambda n: dict(workers=n, steps=3, numerics=False), "workers",
                 show=False)
    assert [r.workers for r in runs] == [1, 2, 3]
    bar = Progress(2, "x")
    bar.step()
    bar.step("done")
    assert bar.bar.value == 2 and bar.bar.bar_style == "success"
    assert bar._repr_mimebundle_()["text/plain"] == "x: 2 runs"
    assert table([(1, 2.5)], ["a", "bb"]).splitlines()[0] == "a   bb"


def test_figure001_dashboard_keeps_the_work_fixed_as_accumulation_grows():
    """Figure 001's lesson: the same minibatches in fewer, larger updates: fewer syncs, so
    less idle time and a shorter run (the slider offers only the k that divide the work)."""
    dash = pslab.widgets.dashboard("001", settle_delay=None)
    slider = dash.controls["accumulate"]
    assert list(slider.options) == [1, 2, 3, 4, 6, 8]
    seen = []
    for k in slider.options:
        dash.set(accumulate=k)
        run = dash.run
        seen.append((run.workers * run.settings.steps * k, run.updates, run.idle_time,
                     run.makespan))
        assert run.settings.accumulate == k
    work, updates, idle, makespan = zip(*seen)
    assert set(work) == {4 * 24}  # the same minibatches for every k
    assert list(updates) == [24 // k for k in slider.options]
    assert all(a > b for a, b in zip(idle, idle[1:])), idle
    assert all(a > b for a, b in zip(makespan, makespan[1:])), makespan
    assert "96 minibatches" in describe(dash.run) and "3 updates" in describe(dash.run)


def test_fixed_work_rejects_an_accumulation_that_does_not_divide_it():
    with pytest.raises(ValueError, match="accumulate must divide minibatches=24"):
        preset("001", accumulate=5)
    assert preset("001", accumulate=3).train_kwargs()["steps"] == 8


def test_sync_dashboard_shows_each_workers_idle_share_instead_of_one_staleness_bar():
    dash = pslab.widgets.dashboard("001", settle_delay=None)
    bars = blocks(dash, "staleness")  # per worker: compute, transfer, idle, end to end
    widths = (bars["x1"] - bars["x0"]).reshape(4, 3)
    assert np.allclose(widths.sum(axis=1), 1, atol=1e-4)
    assert widths[:, 2].mean() == pytest.approx(dash.run.idle_fraction, abs=1e-4)
    assert [x["label"] for x in dash.figures["staleness"].legend] == ["compute", "transfer",
                                                                      "idle"]
    assert "idle" in dash.view.captions()["staleness"]
    dash.set(mode="async")  # staleness means something again
    assert dash.figures["staleness"].legend == []
    assert "staleness" in dash.view.captions()["staleness"]


def test_before_label_reads_like_a_person_wrote_it():
    from pslab.notebook.dashboard_settings import describe_change

    now = preset("default")
    assert describe_change(now, now.changed(bandwidth=1e6)) == "bandwidth 1 MB/s"
    assert describe_change(now, now.changed(slowdown=3.0)) == "straggler × 3"
    dash = pslab.widgets.dashboard("default", settle_delay=None, steps=5)
    dash.set(bandwidth=2e5)
    caption = dash.view.captions()["training"]
    assert caption.splitlines()[1].startswith("before: bandwidth 100 kB/s: test accuracy")


def test_dashboard_has_no_fixed_pixel_width_wider_than_a_projector_cell():
    """At 1024 px with the file browser open a cell is ~700 px wide: every width is relative,
    or a max-width, or small enough to fit."""
    import re

    dash = pslab.widgets.dashboard("000", settle_delay=None)
    widths = []
    stack = [dash.widget]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()))
        widths.append(w.layout.width)
        widths.append(w.layout.min_width)
    fixed = [int(m.group(1)) for v in widths if v and (m := re.fullmatch(r"(\d+)px", v))]
    assert all(px <= 300 for px in fixed), fixed
    for fig in dash.figures.values():
        assert fig.layout.width in ("100%", "auto")
