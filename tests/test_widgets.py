"""The dashboards, headless: set widget values as a reader would, check the run and the plots.

No browser here (tests/test_notebooks_browser.py does that): ipywidgets work without a front
end, so every control is set through its `.value`, exactly what a slider move sends.
"""
from __future__ import annotations

import asyncio
import base64
import html
import re
import io
import math

import numpy as np
import pytest
from PIL import Image

import pslab
from pslab.model import single_thread
from pslab.notebook.controls import CONTROLS
from pslab.notebook.dashboard import is_faded
from pslab.notebook.dashboard_settings import PRESETS, Settings, preset
from pslab.notebook.liveview import View, _timeline_artists
from pslab.notebook.livefigure import LiveFigure, nice_ceiling
from pslab.notebook.browser_plots import column
from pslab.notebook.widgets import Dashboard, Progress, describe, sweep, table


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def rows(dash: Dashboard) -> list[str]:
    """The timeline's row names, as the browser draws them."""
    return [name for _, name in dash.figures["timeline"].panels[0]["yticks"]]


def worker_rows(dash: Dashboard) -> list[str]:
    return [r for r in rows(dash) if r.startswith("G")]


def blocks(dash: Dashboard, name: str = "timeline") -> dict[str, np.ndarray]:
    """The blocks a browser figure draws (edges and colour codes), as arrays."""
    return {k: column(v) for k, v in dash.figures[name].panels[0]["rects"].items()}


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


def test_a_diverged_runs_lr_search_follows_the_curve_a_run_per_turn_and_yields_to_a_slider():
    """Figure 000's async diverges at lr 1 with 8 workers: the settle draws the loss curve and
    the numbers, and the why-line's search for an lr that trains follows, one run per turn of
    the event loop (the why-line faded, the status busy: not ready). A slider moved during the
    search stops it at once; "ready" comes with the new values' line, naming an lr whose run
    (cached) trains."""
    async def scenario() -> None:
        dash = Dashboard("000", settle_delay=None, workers=8)
        while dash.pending:
            await asyncio.sleep(0)
        turns = len(dash.finish_ms)
        dash.set(mode="async", lr=1.0)  # no delay: the settle runs in this call
        assert dash.run.diverged and dash.numbers_for == dash.settings
        assert dash.pending and is_faded(dash.why)
        assert 'data-state="busy"' in dash.status.value and "trying" in dash.status.value
        await asyncio.sleep(0)  # one turn: one run (0.5, the start's lr, diverged: a bisection)
        assert len(dash.finish_ms) == turns + 1 and dash.pending
        assert 'data-state="ready"' not in dash.status.value
        searched = [key for key in dash.view.cache._runs if key[1] and key[0].workers == 8
                    and key[0].lr < 1.0]
        dash.set(workers=7)  # a slider moves: the search of the 8 workers' run stops
        for _ in range(200):
            await asyncio.sleep(0)
            if not dash.pending:
                break
        assert 'data-state="ready"' in dash.status.value and not is_faded(dash.why)
        assert searched == [key for key in dash.view.cache._runs if key[1]
                            and key[0].workers == 8 and key[0].lr < 1.0]
        why = html.unescape(dash.why.value)
        assert "DIVERGED" in why and "all 7 pushes" in why, why
        fix = float(why.split("Learning rate ")[1].split(" trains")[0])
        assert not dash.view.cache.get(dash.settings.changed(lr=fix), True).diverged

    asyncio.run(scenario())


def test_ready_only_when_everything_shown_is_of_the_controls_values():
    """Quick moves: the numbers and the loss curve fade while stale; 'ready' shows only when
    the timeline, the loss curve and the bold numbers are all of the controls' values, even
    when a control moves while the slow path is drawing."""
    async def scenario() -> list:
        dash = Dashboard("002", settle_delay=0.05)
        seen = []
        for k in (2, 3, 4):
            dash.controls["accumulate"].value = k
            seen.append((is_faded(dash.numbers), is_faded(dash.figures["training"]),
                         'data-state="ready"' in dash.status.value))
        settle = dash.view.settle

        def settle_and_move(progress=None):  # a key press lands while the loss is computed
            png = settle(progress)
            if dash.controls["accumulate"].value == 4:
                dash.controls["accumulate"].value = 5
            return png

        dash.view.settle = settle_and_move
        for _ in range(100):
            await asyncio.sleep(0.05)
            if 'data-state="ready"' in dash.status.value:
                break
        return [seen, dash]

    seen, dash = asyncio.run(scenario())
    assert seen == [(True, True, False)] * 3  # faded and not ready while moving
    assert 'data-state="ready"' in dash.status.value
    assert dash.settings.accumulate == 5 and dash.numbers_for == dash.settings
    assert dash.view.current(dash.settings) and dash.run.settings.accumulate == 5
    assert describe(dash.run) in dash.numbers.value
    assert not is_faded(dash.numbers) and not is_faded(dash.figures["training"])


@pytest.mark.parametrize("name", ["default", "000", "001", "002"])
def test_switching_mode_at_defaults_never_collapses_without_the_reason_on_screen(name):
    """SSP applies each push at the full lr (SSP(0) is sync at N x lr): where another mode
    trains worse than sync or diverges, the reason and the fix stand under the numbers, and
    the fix (the lr they name) trains as well as sync."""
    dash = Dashboard(name, settle_delay=None)
    dash.set(mode="sync")
    sync_acc = dash.run.final_accuracy
    assert dash.why.value == ""
    for mode in ("async", "SSP"):
        dash.set(mode=mode, lr=PRESETS[name].lr)
        run = dash.run
        collapsed = run.diverged or run.final_accuracy < sync_acc - 0.05
        if collapsed:
            why = html.unescape(dash.why.value)
            ssp0 = f"SSP(0) is sync at lr {run.workers * PRESETS[name].lr:g}"
            assert f"applies all {run.workers} pushes" in why, (name, mode, why)
            # SSP(0) named only where SSP is on show: in async mode it is a word too many
            assert (ssp0 in why) == (mode == "SSP"), (name, mode, why)
            if run.diverged:  # the lr that trains in this mode comes first
                assert "DIVERGED" in why
                fix = float(why.split("Learning rate ")[1].split(" trains")[0])
            else:
                fix = float(re.search(r"try lr ([\d.]*\d)", why)[1])
            dash.set(lr=fix)
            assert not dash.run.diverged and dash.run.final_accuracy > sync_acc - 0.1, \
                (name, mode, fix, dash.run.final_accuracy, sync_acc)


@pytest.mark.parametrize("name", ["default", "000", "001", "002"])
@pytest.mark.parametrize("lr", [10.0, 5.0, 2.0])
def test_sync_collapsing_at_a_large_lr_is_explained_with_an_lr_that_trains(name, lr):
    """Sync at the lr slider's top end blows up as async does: a red line says why and names
    a learning rate, and at that lr sync trains (does not diverge, beats chance by far)."""
    dash = Dashboard(name, settle_delay=None)
    dash.set(mode="sync", lr=lr)
    if not dash.run.diverged:
        assert "DIVERGED" not in dash.why.value
        return
    why = html.unescape(dash.why.value)
    assert "DIVERGED. Why: at learning rate" in why and "sync" in why and "#c62828" in why, why
    fix = float(why.split("Learning rate ")[1].split(" trains")[0])
    assert fix < lr
    dash.set(lr=fix)
    assert not dash.run.diverged and dash.run.final_accuracy > 0.5, (name, lr, fix)
    assert "DIVERGED" not in dash.why.value


@pytest.mark.parametrize("mode", ["async", "SSP"])
def test_one_worker_diverging_in_any_mode_is_explained(mode):
    """With one worker async and SSP are plain SGD, as sync is: at lr 10 they diverge too and
    the red line says why (it was empty: the async/SSP line compares N pushes with their mean,
    and there is one)."""
    dash = Dashboard("000", settle_delay=None, workers=1, mode=mode, lr=10.0)
    assert dash.run.diverged
    why = html.unescape(dash.why.value)
    assert why.count("DIVERGED. Why: at learning rate 10") == 1 and "plain SGD" in why, why
    assert "#c62828" in why, why


@pytest.mark.parametrize("name", ["default", "000", "002"])
def test_async_diverging_names_an_lr_that_trains_in_async(name):
    """At the lr slider's top end async diverges, and sync's step (lr / N) may diverge too: the
    red line names the largest lr below that trains in async, and at that lr async trains."""
    dash = Dashboard(name, settle_delay=None, mode="async", lr=10.0)
    assert dash.run.diverged
    why = html.unescape(dash.why.value)
    assert why.count("DIVERGED. Why") == 1 and "#c62828" in why, why
    fix = float(why.split("Learning rate ")[1].split(" trains")[0])
    assert fix < 10.0
    dash.set(lr=fix)
    assert not dash.run.diverged and dash.run.final_accuracy > 0.5, (name, fix)


def test_sync_at_the_largest_lr_diverges_in_every_preset():
    """The case the test above explains is real: sync at lr 10 diverges in each preset."""
    for name in ("default", "000", "001", "002"):
        assert Dashboard(name, settle_delay=None, mode="sync", lr=10.0).run.diverged, name


def test_async_ending_later_than_sync_is_explained_under_the_numbers():
    dash = Dashboard("000", settle_delay=None)  # async: 87.25 s against sync's 84.00 s
    sync = dash.view.sync_twin()
    assert dash.run.makespan > sync.makespan
    assert (f"Why async ends later ({dash.run.makespan:.2f} s, sync "
            f"{sync.makespan:.2f} s)") in dash.why.value
    why = html.unescape(dash.why.value)
    assert "GPU-s" not in why and "at the 2 shards" in why and "slow G0" in why, why
    assert "working as long in each" in why, why
    # the two waits it names differ by what the makespans differ by (to the shown rounding)
    waits, sync_waits = (float(why.split(key)[1].split(" s")[0]) for key in
                         ("but waits ", "in sync "))
    assert abs((waits - sync_waits) - (dash.run.makespan - sync.makespan)) <= 0.011, why
    dash.set(mode="sync")
    assert "ends later" not in dash.why.value
    dash = Dashboard("002", settle_delay=None, mode="async")  # async first here: no line
    assert dash.run.makespan < dash.view.sync_twin().makespan
    assert "ends later" not in dash.why.value


@pytest.mark.parametrize("name", ["default", "000", "001", "002"])
def test_live_plots_read_at_10_px_and_fit_one_screen_at_1024x768(name):
    """Text >= 10 px (the browser draws every label at FONT px, a cell wide, unshrunk); the
    timeline and the loss curve are short enough to share ~500 px of notebook with the
    controls (the browser test checks the real page)."""
    from pslab.notebook.browser_plots import FONT

    dash = Dashboard(name, settle_delay=None)
    dash.set(workers=16, shards=8) if name != "001" else dash.set(workers=16)
    specs = [dash.figures[n].layout_spec for n in ("timeline", "training", "staleness")]
    assert FONT >= 10 and all(s["font"] >= 10 for s in specs)
    assert specs[0]["height"] + specs[1]["height"] <= 360
    assert len(rows(dash)) == 16 + 8 if name != "001" else 16


def test_timeline_hover_says_what_each_block_is():
    """What a hover shows (worker, kind, step, start, end, shard, why it waited) is each
    visible span's own, block for block."""
    from pslab.timeline import EVERY_KIND, NOTES

    dash = Dashboard("default", settle_delay=None, mode="async")
    panel = dash.figures["timeline"].panels[0]
    hover, tables = panel["hover"], panel["hover"]["tables"]
    got = {k: column(v).tolist() for k, v in hover["cols"].items()}
    x0, x1 = column(panel["rects"]["x0"]), column(panel["rects"]["x1"])
    shown = [s for s in dash.run.timeline if s.end > s.start]
    assert len(shown) == len(x0)
    seen = set()
    for i in range(len(x0)):
        who = tables["who"][got["who"][i]]
        kind = EVERY_KIND[got["kind"][i]]
        shard = None if got["shard"][i] < 0 else got["shard"][i]
        note = None if got["note"][i] < 0 else list(NOTES)[got["note"][i]]
        worker = int(who[1:]) if who.startswith("G") else None
        span = (worker, shard, kind, x0[i], x1[i], got["step"][i], note)
        seen.add(span)
    assert seen == {(s.worker, s.shard, s.kind, np.float32(s.start), np.float32(s.end), s.step,
                     s.note) for s in shown}  # block edges are sent as float32
    assert {n for *_, n in seen} >= {None, "queue"}  # why a white block waited: it shows
    assert tables["why"] == [NOTES[n] for n in NOTES]


def test_a_step_sends_only_what_changed():
    dash = Dashboard("002", settle_delay=None)
    sent = {n: f.sends for n, f in dash.figures.items()}
    dash.set(lr=0.1)  # the clock does not move: neither timeline nor side panel is re-sent
    assert dash.figures["timeline"].sends == sent["timeline"]
    assert dash.figures["staleness"].sends == sent["staleness"]
    assert dash.figures["training"].sends == sent["training"] + 1  # a new loss curve
    dash.set(workers=4)
    assert dash.figures["timeline"].sends == sent["timeline"] + 1


def test_a_transfer_share_that_grows_with_the_shards_says_why_under_the_shares():
    """Figure 000's set-up in sync: more shards shorten the run while the transfers (latency-
    bound: 0.25 s a message, microseconds of bytes) take the same time, so their share grows;
    the side panel's caption says so. At a bandwidth where the bytes dominate it says nothing."""
    dash = Dashboard("000", settle_delay=None, mode="sync")
    shares, spans = [], []
    for k in (1, 8):
        dash.set(shards=k)
        split = dash.view.shares()
        transfer = sum(p["transfer"] for p in split)
        shares.append(transfer / (dash.run.workers * dash.run.makespan))
        spans.append((transfer, dash.run.makespan))
        assert "latency-bound" in dash.captions["staleness"].value
    assert shares[1] > shares[0] and spans[1][1] < spans[0][1]
    assert spans[1][0] == pytest.approx(spans[0][0], rel=0.01)  # the transfers' own time
    dash.set(bandwidth=1e3, shards=1)  # now the bytes take seconds: no such line
    assert "latency-bound" not in dash.captions["staleness"].value


def test_figure_001s_blue_is_named_for_the_mode_shown():
    """Sync: the blue column is the gradient sync; async: the same blue is each push's
    transfers and server update, and the legend says that instead."""
    dash = Dashboard("001", settle_delay=None)
    labels = [e["label"] for e in dash.figures["timeline"].legend]
    assert "gradient sync" in labels and "transfers and server updates" not in labels
    dash.set(mode="async")
    labels = [e["label"] for e in dash.figures["timeline"].legend]
    assert "transfers and server updates" in labels and "gradient sync" not in labels


def test_an_async_run_ending_on_one_workers_fresh_updates_says_so():
    """The line that says why a straggler's async run ends well trained: its last k updates
    are one worker's, each at staleness 0 (plain SGD). On seeded random settings the line
    names exactly that worker and that k, and is absent when fewer than two such updates end
    the run (or in sync)."""
    from pslab.notebook.explain import alone_note

    rng = np.random.default_rng(29)
    seen = set()
    for _ in range(16):
        mode = str(rng.choice(["sync", "async", "SSP(0)", "SSP(1)"]))
        workers = int(rng.integers(2, 6))
        slow = float(rng.choice([1.0, 0.4, 0.25]))  # G0's speed: a straggler or not
        run = pslab.train(mode=pslab.SSP(int(mode[4])) if "(" in mode else mode,
                          workers=workers, steps=int(rng.integers(6, 15)), numerics=False,
                          seed=int(rng.integers(1000)),
                          cluster=pslab.Cluster(speeds=[slow] + [1.0] * (workers - 1)))
        note = alone_note(run)
        h, k = run.history, 0
        while k < len(h) and h[-1 - k].worker == h[-1].worker and h[-1 - k].staleness == 0:
            k += 1
        if run.mode == "sync" or k < 2 or h[-1].worker is None:  # SSP(0): averaged rounds
            assert note is None, (mode, note)
        else:
            assert note.startswith(f"Its last {k} updates are G{h[-1].worker}'s alone"), note
        seen.add(note is None)
    assert seen == {True, False}  # both cases were generated


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", ["000", "001"])
def test_the_timelines_caption_counts_idle_time_as_the_bold_numbers_do(name, mode):
    """Idle time is summed over the workers: the bold numbers and the caption under the
    timeline both say GPU-seconds (never plain seconds for the same sum beside it)."""
    dash = Dashboard(name)
    dash.set(mode=mode)
    caption = dash.view.captions()["timeline"]
    assert "GPU-seconds" in html.unescape(dash.numbers.value)
    assert re.search(r"idle [\d.]+ GPU-seconds", caption), caption
    assert not re.search(r"[\d.]+ s (\(|\+|queued|in sync|during)", caption), caption


def test_a_control_moved_during_a_why_run_stops_the_second_part_without_an_error():
    """A key press handled while one run of the why-line's learning-rate search is under way
    (`_stop_finish` from `_changed`) ends that search quietly: the browser test saw the status
    say "TypeError: 'NoneType' object is not an iterator" (the next turn read the stopped
    search) and never "ready"."""
    import asyncio

    async def scenario():
        dash = Dashboard("000", settle_delay=0.01, mode="async", lr=10.0)
        dash._changed(None)
        for _ in range(400):  # the settle, then its second part's first run
            await asyncio.sleep(0.01)
            if dash._finishing is not None:
                break
        assert dash._finishing is not None, "no second part to interrupt"
        inner = dash._finishing

        def moved_meanwhile():  # the next run, with a key press handled during it
            text = next(inner, None)
            dash._stop_finish()
            yield text
        dash._finishing = moved_meanwhile()
        for _ in range(50):
            await asyncio.sleep(0.01)
        return dash

    dash = asyncio.run(scenario())
    assert not dash.errors, dash.errors
    assert dash._finishing is None and dash._finish_handle is None


def test_a_faded_part_is_said_to_the_page():
    """What fades is sent to the browser: an HTML part by the class live_note.js styles, a
    browser figure by its synced `faded` trait (its view keeps only the classes it started
    with); a Layout has no opacity trait, so setting one would send nothing."""
    from pathlib import Path

    import ipywidgets as W

    from pslab.notebook import browser_figure
    from pslab.notebook.browser_figure import BrowserFigure
    from pslab.notebook.dashboard import FADED, show_faded

    assert "opacity" not in W.Layout.class_trait_names()
    dash = Dashboard("000", settle_delay=None)
    dash.controls["workers"].value += 1
    figure, html_part = dash.figures["training"], dash.numbers
    assert isinstance(figure, BrowserFigure) and "faded" in figure.keys
    for older in (True, False):
        show_faded(figure, older)
        show_faded(html_part, older)
        assert figure.faded is older and is_faded(figure) is older
        assert (FADED in html_part._dom_classes) is older and is_faded(html_part) is older
    here = Path(browser_figure.__file__)
    assert 'model.on("change:faded"' in here.with_name("browser_figure.js").read_text()
    assert ".pslab-faded { opacity: 0.45; }" in here.with_name("live_note.js").read_text()
