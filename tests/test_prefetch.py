"""Timelines sent ahead: each is exactly what a slider step to its values sends, under the key
the page computes from the controls (pslab.notebook.prefetch, browser_figure.js)."""
from __future__ import annotations

import asyncio
import time

import ipywidgets as W
import pytest

import pslab.notebook.widgets as pw
from pslab.notebook.browser_figure import BrowserFigure, _lift
from pslab.notebook.liveruns import LiveRuns
from pslab.notebook.prefetch import KEYED, key_of, neighbours, part


def _sent(fig: BrowserFigure) -> dict[str, list]:
    """Capture the frames `fig.ahead` sends (key -> panels, the bytes put back)."""
    got: dict[str, list] = {}

    def send(content, buffers=None):
        if "ahead" in content:
            got[content["ahead"]] = _lower(content["panels"], buffers or [])

    fig.send = send
    return got


def _lower(value, buffers):
    """What browser_figure.js's `lower` does: {"dtype", "buffer": i} -> the bytes again."""
    if isinstance(value, list):
        return [_lower(v, buffers) for v in value]
    if isinstance(value, dict):
        if "buffer" in value and "dtype" in value:
            return {"dtype": value["dtype"], "data": buffers[value["buffer"]]}
        return {k: _lower(v, buffers) for k, v in value.items()}
    return value


def test_lift_moves_every_column_into_buffers_and_back():
    panels = [{"rects": {"x0": {"dtype": "f4", "data": b"abcd"}, "c": {"dtype": "i1",
                                                                      "data": b"\x01"}},
               "lines": [{"x": [1, 2]}], "vline": None}]
    buffers: list[bytes] = []
    lifted = _lift(panels, buffers)
    assert buffers == [b"abcd", b"\x01"]
    assert lifted[0]["rects"]["x0"] == {"dtype": "f4", "buffer": 0}
    assert _lower(lifted, buffers) == panels


def test_keys_are_the_values_as_the_page_writes_them():
    assert part(W.IntSlider(8, min=1, max=16)) == "8"
    assert part(W.FloatSlider(1.25, min=1, max=4, step=0.25)) == "1.25"
    assert part(W.FloatSlider(2.0, min=1, max=4, step=0.25)) == "2"  # JS: String(2) is "2"
    choice = W.SelectionSlider(options=[("1 kB/s", 1e3), ("2 kB/s", 2e3)], value=2e3)
    assert part(choice) == "2 kB/s" and part(choice, 1e3) == "1 kB/s"
    assert part(W.Dropdown(options=["sync", "async"], value="async")) == "async"


@pytest.mark.parametrize("preset", ["default", "000", "001", "002"])
def test_a_frame_sent_ahead_is_what_the_step_to_its_values_sends(preset):
    dash = pw.dashboard(preset, steps=6)
    fig = dash.figures["timeline"]
    assert fig.keyed == [dash.controls[n].model_id for n in KEYED]
    assert fig.key == key_of(dash.controls)
    got = _sent(fig)
    sent = dash.prefetch()
    expected = [key for values, key in neighbours(dash.controls)]
    assert sent == len(got) and set(got) <= set(expected) and len(got) >= 4
    # every control step either way: press it and compare with what was sent ahead
    for values, key in neighbours(dash.controls):
        if key not in got:  # a combination the controls refuse (001's fixed work)
            continue
        start = {n: dash.controls[n].value for n in values}
        changed = {n: v for n, v in values.items() if v != start[n]}
        dash.set(**changed)
        assert fig.key == key == key_of(dash.controls)
        assert fig.panels == got[key], f"{preset}: {changed}"
        # settled, the timeline is the run with numerics: the same picture (the same clock)
        assert dash._timeline(dash.view.cache.get(dash.settings, True)) == got[key]
        dash.set(**{n: start[n] for n in changed})


def test_a_disabled_control_has_no_neighbours_and_lr_is_not_in_the_key():
    dash = pw.dashboard("default", steps=4, mode="async")
    keys = [key for _, key in neighbours(dash.controls)]
    assert dash.controls["ssp"].disabled and len(keys) == len(set(keys))
    before = dash.figures["timeline"].key
    dash.set(lr=dash.controls["lr"].options[0][1])  # the clock does not move: same key
    assert dash.figures["timeline"].key == before


def test_a_moved_control_goes_first_two_steps_its_way_and_nothing_is_sent_twice():
    dash = pw.dashboard("default", steps=4)
    controls = dash.controls
    first = [values["workers"] for values, _ in neighbours(controls, moved=("workers", -1))][:3]
    w = controls["workers"].value
    assert first == [w - 1, w - 2, w + 1]
    bw = controls["bandwidth"]
    up = [values["bandwidth"] for values, _ in neighbours(controls, moved=("bandwidth", 1))][:3]
    options = [v for _, v in bw.options]
    i = options.index(bw.value)
    assert up == [options[j] for j in (i + 1, i + 2, i - 1) if 0 <= j < len(options)]
    fig = dash.figures["timeline"]
    _sent(fig)
    assert dash.prefetch() >= 4 and fig.key in fig.kept
    dash._ahead = None
    assert dash.prefetch() == 0  # the page keeps them all: none sent again
    fig.forget()
    assert not fig.kept and dash.prefetch() >= 4
    fig._on_page(fig, {"hello": True}, [])  # a new view keeps nothing yet
    assert not fig.kept


def test_back_to_the_settled_values_after_the_cache_dropped_their_run_settles():
    """A held key there and back before the sliders rest, while the frames sent ahead push the
    settled run out of the run cache: the step back shows a timing-only run of the settled
    values, and the settle must show the settled run again (it once never did: "loss curve:
    waiting for the sliders to rest" for ever, a dashboard that stops answering)."""
    view = LiveRuns(pw.preset("default", steps=6))
    start = view.settings
    view.step(start)
    view.settle()
    view.step(start.changed(workers=start.workers + 1))
    view.cache._runs.clear()  # what a held key's frames sent ahead do to a 64-run cache
    view.step(start)
    assert view.run is not view.settled  # re-simulated, clock only
    view.settle()
    assert view.current(start) and view.run is view.settled


def test_a_held_key_there_and_back_ends_ready_when_frames_ahead_evict_the_settled_run():
    async def scenario() -> tuple:
        dash = pw.Dashboard("default", steps=6, settle_delay=0.05)
        dash.view.cache.size = 6  # a few frames sent ahead evict the settled run
        workers = dash.controls["workers"]
        start, settings = workers.value, dash.settings
        for value in (start + 1, start + 2, start + 3, start + 2, start + 1, start):
            workers.value = value
            await asyncio.sleep(0.01)  # the event loop sends a frame ahead between presses
        evicted = not dash.view.cache.has(settings, True)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if 'data-state="ready"' in dash.status.value:
                break
        return evicted, dash

    evicted, dash = asyncio.run(scenario())
    assert evicted  # the case this is about
    assert 'data-state="ready"' in dash.status.value, dash.status.value
    assert not dash.pending and dash.view.current(dash.settings)


def test_a_failure_while_sending_ahead_is_kept_in_errors_and_the_steps_still_answer():
    """An exception in an event-loop callback is only logged by asyncio, where nobody looks:
    the dashboard keeps it in `errors` (the tests read them) and stops sending ahead."""
    async def scenario() -> pw.Dashboard:
        dash = pw.Dashboard("default", steps=6, settle_delay=0.02)

        def broken(key, panels):
            raise RuntimeError("no frame")

        dash.figures["timeline"].ahead = broken
        dash.controls["workers"].value += 1
        for _ in range(100):
            await asyncio.sleep(0.02)
            if 'data-state="ready"' in dash.status.value and dash._ahead_handle is None:
                break
        return dash

    dash = asyncio.run(scenario())
    assert dash.errors[:1] == ["sending ahead: RuntimeError: no frame"]
    assert 'data-state="ready"' in dash.status.value  # what is on screen is right
    assert dash.figures["timeline"].key == key_of(dash.controls)


def test_no_frame_is_sent_ahead_while_the_settle_and_its_search_run():
    """Once the controls rest, "ready" comes first: the why-line search's turns are not shared
    with neighbours' runs (at 16 workers each is a clock run of its own), which start after."""
    async def scenario() -> tuple[list[int], int, pw.Dashboard]:
        dash = pw.Dashboard("000", settle_delay=0.01, mode="async", lr=10.0)
        while dash.pending:
            await asyncio.sleep(0)
        dash.controls["workers"].value = 5  # diverged at 5 too: a search of several runs
        sent, deadline = [], time.monotonic() + 120
        while time.monotonic() < deadline:
            await asyncio.sleep(0)  # (a timer's wake-up would see every other turn)
            if dash._finishing is not None:  # the search runs
                assert dash._ahead_handle is None
                sent.append(dash.figures["timeline"].ahead_sent)
            elif 'data-state="ready"' in dash.status.value:
                break
        while time.monotonic() < deadline and dash._ahead_handle is not None:
            await asyncio.sleep(0.001)  # then the neighbours' frames
        return sent, dash.figures["timeline"].ahead_sent, dash

    sent, after, dash = asyncio.run(scenario())
    assert len(sent) >= 2 and len(set(sent)) == 1, sent  # turns of the search, none sent
    assert 'data-state="ready"' in dash.status.value and after > sent[-1]
