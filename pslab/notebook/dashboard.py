"""What every pslab dashboard shares: the layout, the two paths, the fade, the status, display.

A dashboard is controls in front of a live run. While a control moves, the fast path
(`refresh`: the clock only) redraws the timeline at once and the parts of slower values fade;
when the controls have been still for `settle_delay` seconds the slow path (`compute`: the run
with its arithmetic) redraws everything, and "ready" shows only when everything on screen is
of the controls' values. Without a running event loop (tests, scripts) the slow path runs at
once. A kernel may call a dashboard from two threads, each with its loop (the widgets' messages
on a subshell's thread, a cell on the main one): its callbacks take turns, and a turn a moved
control stopped does nothing (`pslab.notebook.turns`).

A subclass builds its `controls` (name -> widget, in the order they are laid out) and its
`figures` (name -> `BrowserFigure`: "timeline" first, then the main curve), passes them to
`DashboardBase.__init__`, and fills in the hooks:

    settings   property: what the controls say now (compared with ==)
    run        property: what is on show (None before the first run)
    refresh()  the fast path: draw the clock-only run of `settings`
    compute()  the slow path: the full run drawn, `numbers` (and `why`) written; returns the
               settings it drew (the base checks they are still the controls')
    finish()   the slow path's second part, if it has one (default None): a generator that
               writes `why` and yields a line of status before each piece of work it still
               needs (a run, or a part of one). With an event loop it runs one piece per turn,
               so a control that moves meanwhile is answered after one piece and stops it;
               `why` stays faded and the status busy until it ends, and only then "ready".
               Without a loop it runs at once.
    describe() the bold numbers as one line of text (also the notebook's text/plain)
    snapshot() the PNG a saved notebook shows readers without a kernel
    code_text() the run as one line of Python ("" for none)
    plain()    the text/plain a notebook keeps (default: "pslab dashboard (preset): numbers")

`ready_text()`, `current(drawn)`, `faded()`, `check(values)`, `place(name, value)` and
`pending` may be overridden. `extra` widgets (a side panel,
memory bars, captions) go under the two main plots; a control added to `controls` before
`__init__` (e.g. a link model) joins the columns.

A saved dashboard opened before its notebook runs says at its top that it is a picture and
what to press, and shows no status (`LiveNote`).

Layout (one screen at 1024x768 with JupyterLab's file browser open: about 500 px of a
577-px-wide cell): the controls in two columns (an odd count leaves the right one a row, which
takes the status line), the bold numbers and the lines that explain them, then the timeline
and the main curve; the rest under them.
"""
from __future__ import annotations

import base64
import html
import time
from contextlib import contextmanager
from typing import Any, Iterator

import ipywidgets as W

from .browser_figure import BrowserFigure
from .controls import check_settle_delay, within
from .live_note import LiveNote
from .prefetch import Ahead
from .progress import widget_bundle
from .turns import Turn, running_loop, serial

__all__ = ["DashboardBase", "TEXT_STYLE", "count", "is_faded", "show_faded", "status_html"]

TEXT_STYLE = "font-size:12px;line-height:1.2;text-align:left"
COLOURS = {"ready": "#2e7d32", "busy": "#b26a00", "error": "#c62828"}
FADED = "pslab-faded"  # the class of a part that shows older values than the controls: the
# page draws it at opacity 0.45 (live_note.js; a widget's Layout has no opacity to send)


def show_faded(part: W.DOMWidget, older: bool) -> None:
    """Fade a part that shows older values than the controls, or restore it (a browser figure
    by its `faded` trait: its view keeps only the classes it started with)."""
    if isinstance(part, BrowserFigure):
        part.faded = older
    elif older:
        part.add_class(FADED)
    else:
        part.remove_class(FADED)


def is_faded(part: W.DOMWidget) -> bool:
    return part.faded if isinstance(part, BrowserFigure) else FADED in part._dom_classes


def status_html(state: str, text: str) -> str:
    """A status line: "ready" (green), "busy" (amber) or "error" (red), and its text (HTML)."""
    return (f'<div data-state="{state}" style="{TEXT_STYLE};color:{COLOURS[state]}">'
            f'{text}</div>')


def count(n: int, thing: str) -> str:
    """"1 worker", "3 workers": a number and its noun, singular or plural."""
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


class DashboardBase(Ahead):
    """Controls, a status line, numbers, explanations and browser-drawn plots (see the module
    docstring for the hooks). Display it as the last line of a cell."""

    latest: "DashboardBase | None" = None  # the dashboard made last (for a look from outside)
    def __init__(self, controls: dict[str, W.ValueWidget], figures: dict[str, BrowserFigure],
                 *, settle_delay: float | None, preset: str, extra: tuple[W.Widget, ...] = ()):
        check_settle_delay(settle_delay)
        super().__init__()  # the lock its callbacks take turns by (`turns.Serial`)
        self.settle_delay, self.preset = settle_delay, preset
        self.controls, self.figures = controls, figures
        for n, fig in figures.items():
            fig.layout = W.Layout(width="auto", min_width="0", margin="0")
            fig.add_class(f"pslab-{n}")
        self.status, self.numbers, self.why, self.code = (W.HTML(), W.HTML(), W.HTML(),
                                                               W.HTML())
        for name, part in (("status", self.status), ("numbers", self.numbers),
                           ("why", self.why)):
            part.add_class(f"pslab-{name}")
        self.widget = self._layout(extra)
        self.widget.add_class("pslab-dashboard")
        self.latencies_ms: list[float] = []  # fast path (clock only) per change
        self.settle_ms: list[float] = []  # slow path per settle (`compute`)
        self.finish_ms: list[float] = []  # its second part (`finish`), per turn of the loop
        self.ready_ms: list[float] = []  # from a settle's start to "ready"
        self._finishing: Iterator[str] | None = None  # the second part, while it runs
        self._finish_handle: Turn | None = None  # its next turn
        self.errors: list[str] = []
        self._handle: Turn | None = None  # the settle, when the sliders have rested
        self._holding = False
        self.numbers_for: Any = None  # the settings the bold numbers are of
        for c in self.controls.values():
            c.observe(self._changed, names="value")
        self.refresh()
        self.settle()
        DashboardBase.latest = self  # what the notebook tests read the latencies from

    def _layout(self, extra: tuple[W.Widget, ...]) -> W.VBox:
        """Controls in two columns (the first half left; the status under the right one when
        it is a row short), the status, numbers and why-lines in one compact block, the
        timeline and the main curve, then `extra`."""
        names = list(self.controls)
        half = (len(names) + 1) // 2
        parts = [[self.controls[n] for n in part] for part in (names[:half], names[half:])]
        lines = [self.numbers, self.why]
        if len(names) % 2:  # the right column's empty last row takes the status: a line saved
            # for the explanations (at most two lines there, so the columns keep their height)
            self.status.layout = W.Layout(margin="2px 4px", max_height="2.5em",
                                          overflow="hidden")
            parts[1].append(self.status)
        else:
            lines.insert(0, self.status)
        column = W.Layout(flex="1 1 260px", min_width="0", overflow="hidden")
        columns = W.HBox([W.VBox(part, layout=column) for part in parts],
                         layout=W.Layout(flex_flow="row wrap", width="100%", max_width="1200px",
                                         align_items="flex-start"))
        texts = W.VBox(lines, layout=W.Layout(margin="0 4px", min_width="0", max_width="1200px"))
        main = list(self.figures.values())[:2]
        # one under the other in a projector's cell, side by side when wide; there the
        # timeline takes two thirds of what the cell has beyond the two (it carries the lesson)
        for fig, flex in zip(main, ("2 1 560px", "1 1 400px")):
            fig.layout.flex = flex
        plots = W.HBox(main, layout=W.Layout(flex_flow="row wrap", width="100%",
                                             align_items="flex-start"))
        # (a slider's 28-px inner row overflows its 23-px box by a few px: padded in)
        # at the top: "Not live yet" while no kernel is behind a saved view (live_note.js)
        return W.VBox([LiveNote(), columns, texts, plots, *extra, self.code],
                      layout=W.Layout(width="100%", padding="3px 0 0 0"))

    # ---- hooks ------------------------------------------------------------------------------
    @property
    def settings(self) -> Any:
        raise NotImplementedError

    @property
    def run(self) -> Any:
        raise NotImplementedError

    def refresh(self) -> None:
        """The fast path: the clock-only run of `settings` drawn."""
        raise NotImplementedError

    def compute(self) -> Any:
        """The slow path: the full run drawn, numbers and why-lines written; its settings."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def snapshot(self) -> bytes:
        raise NotImplementedError

    def code_text(self) -> str:
        return ""

    def plain(self) -> str:
        """The text a notebook keeps (nbval compares it): deterministic."""
        return f"pslab dashboard ({self.preset}): {self.describe()}"

    def ready_text(self) -> str:
        return "ready: all shown here is of these controls"

    def current(self, drawn: Any) -> bool:
        """True when everything on screen is of the controls' values (`drawn`: what the slow
        path drew)."""
        return drawn == self.settings

    def finish(self) -> Iterator[str] | None:
        """The slow path's second part: writes `why`, yielding a status line before each run
        it still needs (see the module docstring); None: `compute` wrote everything."""
        return None

    def faded(self) -> tuple[W.Widget, ...]:
        """The parts of the slow path, faded while they show older values than the timeline."""
        return (list(self.figures.values())[1], self.numbers, self.why)

    @property
    def pending(self) -> bool:
        """True while a slow path is owed (the sliders have not rested yet, or its second part
        still runs)."""
        return self._handle is not None or self._finishing is not None

    # ---- public ------------------------------------------------------------------------------
    @serial
    def set(self, **values: Any) -> "DashboardBase":
        """Set several controls and re-simulate once: `dash.set(workers=5, mode="async")`."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"no control named {', '.join(sorted(unknown))}; "
                             f"the controls are {', '.join(self.controls)}")
        self.check(values)
        with self._hold():
            for name, value in values.items():
                self.place(name, value)
        self._changed(None)
        return self

    def check(self, values: dict[str, Any]) -> None:
        """Refuse values the controls cannot show, before any control moves (ValueError)."""
        for name, value in values.items():
            within(name, self.controls[name], value)

    def place(self, name: str, value: Any) -> None:
        """Move one control to a checked value (no run yet)."""
        self.controls[name].value = value

    @serial
    def settle(self) -> None:
        """Run the slow path for the controls' values now and redraw everything."""
        self._cancel_settle()
        self._stop_finish()
        self._stop_ahead()  # the controls rest: "ready" first, the neighbours' frames after
        try:
            t0 = time.perf_counter()
            drawn = self.compute()
            self.settle_ms.append((time.perf_counter() - t0) * 1000)
            self.numbers_for = drawn
            self.fade(False)
            code = self.code_text()
            self.code.value = "" if not code else (
                "<details><summary>this run in one line of Python</summary><code>"
                + html.escape(code) + "</code></details>")
            if not self.current(drawn):  # a control moved meanwhile: draw that too first
                self.refresh()
                self.fade(True)
                self._schedule_settle()
                return
            self._finish(self.finish(), t0)
        except Exception as exc:
            self.fail(exc)

    def _finish(self, steps: Iterator[str] | None, t0: float) -> None:
        """The slow path's second part: all at once without an event loop; else up to its
        first piece now and one piece per turn of the loop after (`_finish_step`); then
        "ready"."""
        if steps is not None and running_loop() is None:
            for _ in steps:
                pass
            steps = None
        if steps is None:
            self._ready(t0)
            return
        self._finishing = steps
        self._finish_step(t0)

    @serial
    def _finish_turn(self, turn: Turn, t0: float) -> None:
        """The second part's turn of the loop; nothing if a control stopped it meanwhile (on
        this thread or the other: see `pslab.notebook.turns`)."""
        if turn is self._finish_handle:
            self._finish_handle = None
            start = time.perf_counter()
            self._finish_step(t0)
            self.finish_ms.append((time.perf_counter() - start) * 1000)

    def _finish_step(self, t0: float) -> None:
        """One step of the second part: up to its next run, then its status line and its next
        turn; or, when it has written the why-lines, "ready"."""
        steps = self._finishing
        try:
            text = next(steps, None)
        except Exception as exc:
            self._finishing = None
            self.fail(exc)
            return
        if self._finishing is not steps:  # stopped by a callback inside the run on this
            return  # thread (`serial` keeps the other thread's out until the run ends)
        if text is None:
            self._finishing = None
            show_faded(self.why, False)
            self._ready(t0)
            return
        show_faded(self.why, True)  # a run is needed: in the next turn, after any key
        self.set_status("busy", html.escape(text))
        self._finish_handle = Turn(running_loop(), None, self._finish_turn, t0)

    def _stop_finish(self) -> None:
        """A control moved (or a new settle began): the second part is of other values."""
        if self._finish_handle is not None:
            self._finish_handle.cancel()
            self._finish_handle = None
        self._finishing = None

    def _ready(self, t0: float) -> None:
        self.ready_ms.append((time.perf_counter() - t0) * 1000)
        self.set_status("ready", self.ready_text())
        self._start_ahead()

    def set_status(self, state: str, text: str) -> None:
        """The status line: "ready" (green), "busy" (amber) or "error" (red), and its text."""
        self.status.value = status_html(state, text)

    def fail(self, exc: Exception) -> None:
        """Show an error in the status line and keep it in `errors` (never raised in a
        callback, where the kernel would swallow it)."""
        self.errors.append(f"{type(exc).__name__}: {exc}")
        self.set_status("error", html.escape(self.errors[-1]))

    def fade(self, older: bool) -> None:
        """Fade (or restore) the parts the slow path draws."""
        for part in self.faded():
            show_faded(part, older)

    # ---- the two paths -----------------------------------------------------------------------
    @contextmanager
    def _hold(self) -> Iterator[None]:
        self._holding = True
        try:
            yield
        finally:
            self._holding = False

    @serial
    def _changed(self, change: Any) -> None:
        if self._holding:
            return
        self._stop_ahead()
        self._stop_finish()
        try:
            t0 = time.perf_counter()
            self.refresh()
            self.fade(True)
            self.latencies_ms.append((time.perf_counter() - t0) * 1000)
        except Exception as exc:  # a callback must never die silently in the kernel
            self.fail(exc)
            return
        self._schedule_settle()
        self._start_ahead(self._moved(change))  # a held key's next values, while it is held

    def _cancel_settle(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule_settle(self) -> None:
        self._cancel_settle()
        loop = running_loop()
        if loop is None or self.settle_delay is None:
            self.settle()
            return
        self.set_status("busy", "waiting for the sliders to rest…")
        self._handle = Turn(loop, self.settle_delay, self._settle_later)

    @serial
    def _settle_later(self, turn: Turn) -> None:
        if turn is self._handle:  # else a control moved since (perhaps on the other thread)
            self._handle = None
            self.settle()

    # ---- display -----------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = widget_bundle(self.widget, include, exclude)
        # Deterministic text (nbval compares it) and a static picture for readers without a
        # kernel (GitHub, an untrusted notebook): the widget view is preferred where it works.
        bundle["text/plain"] = self.plain()
        bundle["image/png"] = base64.b64encode(self.snapshot()).decode("ascii")
        return bundle

