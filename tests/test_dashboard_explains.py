"""What the dashboards explain, headless: the why-lines under the numbers, the captions, the
hover, when the page says "ready", and the fade of what is no longer the controls' values.
"""
from __future__ import annotations

import asyncio
import html
import re

import numpy as np
import pytest

import pslab
from pslab.notebook.browser_plots import column
from pslab.notebook.dashboard import is_faded
from pslab.notebook.dashboard_settings import PRESETS
from pslab.notebook.widgets import Dashboard, describe

from dashboard_view import rows


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
