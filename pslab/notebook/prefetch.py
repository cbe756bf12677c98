"""The timeline one slider step away, drawn before the key is pressed.

A key press that waited for the kernel's answer would wait for the comm message through the
Jupyter server, the clock re-run and the timeline's data back (25-60 ms on a 2-core machine,
most of it in the hops, not in the work). So after each step and when the dashboard settles,
the kernel computes the timelines of the neighbouring values (one step either way on each
control that changes the clock; after a step, two steps on the way the control moved first: a
held key goes there next) with the same code as a slider step, one per turn of its event loop,
and sends each to the browser once, keyed by the controls' values. The browser
(browser_figure.js) draws the kept frame as soon as a control's value changes in the page; the
kernel's own answer follows and is drawn over it (the same picture: it is the same function of
the same run), then the loss curve as before.

A key is the controls' values as the page sees them: a selection's label, a number's shortest
text (`part`), joined by "|". The learning rate is not in it: it never changes the clock.
"""
from __future__ import annotations

from typing import Any, Iterator

import ipywidgets as W

from .turns import Serial, Turn, running_loop, serial

KEYED = ("workers", "accumulate", "mode", "ssp", "slowdown", "shards", "bandwidth", "links")


def part(control: W.ValueWidget, value: Any = None) -> str:
    """A control's value as browser_figure.js writes it into a key."""
    if isinstance(control, (W.SelectionSlider, W.Dropdown)):
        if value is None:
            return control.label
        return next(label for label, v in zip(control._options_labels,  # noqa: SLF001
                                               _values(control)) if v == value)
    value = control.value if value is None else value
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def _values(control: W.ValueWidget) -> list[Any]:
    return [o[1] if isinstance(o, tuple) else o for o in control.options]


def key_of(controls: dict[str, W.ValueWidget], names: tuple[str, ...] = KEYED) -> str:
    """The key of what the controls say now."""
    return "|".join(part(controls[n]) for n in names)


def neighbours(controls: dict[str, W.ValueWidget], names: tuple[str, ...] = KEYED,
               moved: tuple[str, int] | None = None
               ) -> Iterator[tuple[dict[str, Any], str]]:
    """(values, key) one step either way on each enabled control, in `names`' order; `moved`
    (a control's name, +1 or -1: the way it just moved) goes first, two steps on that way (a
    held key gets there next) before one back."""
    now = {n: controls[n].value for n in names}
    parts = [part(controls[n]) for n in names]
    order = sorted(range(len(names)), key=lambda i: moved is None or names[i] != moved[0])
    for i in order:
        name, control = names[i], controls[names[i]]
        if control.disabled:
            continue
        ways = (moved[1], 2 * moved[1], -moved[1]) if moved and moved[0] == name else (1, -1)
        for value in _steps(control, ways):
            key = "|".join(parts[:i] + [part(control, value)] + parts[i + 1:])
            yield dict(now, **{name: value}), key


def direction(control: W.ValueWidget, old: Any, new: Any) -> int:
    """+1 when a control's value went up (a selection: to a later option), else -1."""
    if isinstance(control, (W.SelectionSlider, W.Dropdown)):
        values = _values(control)
        old, new = (values.index(v) if v in values else 0 for v in (old, new))
    return 1 if new > old else -1


def _steps(control: W.ValueWidget, ways: tuple[int, ...] = (1, -1)) -> list[Any]:
    """The values `ways` steps from the control's (those within its range)."""
    if isinstance(control, (W.SelectionSlider, W.Dropdown)):
        values, i = _values(control), control.index
        return [values[i + w] for w in ways if 0 <= i + w < len(values)]
    return [control.value + w * control.step for w in ways
            if control.min <= control.value + w * control.step <= control.max]


class Ahead(Serial):
    """A dashboard's frames sent ahead (a base of `pslab.notebook.dashboard.DashboardBase`,
    whose subclass has `controls`, `figures`, `settings`, `view`, `errors` and `_timeline`).
    `_start_ahead` when idle and ready, `_stop_ahead` when a control moves; the frames follow
    one per turn of the loop of the thread that started them (`pslab.notebook.turns`)."""

    _ahead: Iterator[tuple[dict[str, Any], str]] | None = None
    _ahead_handle: Turn | None = None

    @serial
    def prefetch(self, limit: int | None = None) -> int:
        """Send the page the timelines one control step away (at most `limit`); how many were
        sent. While idle the dashboard does this itself, one per turn of the event loop."""
        if self._ahead is None or limit is None:  # (all of them: a round of its own)
            self._ahead = neighbours(self.controls)
        sent = 0
        for values, key in self._ahead:
            if key in self.figures["timeline"].kept:  # the page has it already
                continue
            try:
                settings = self.settings.changed(**values)
            except ValueError:  # a combination the controls cannot show (e.g. 001's work)
                continue
            run = self.view.cache.shown(settings)  # what a slider step to these values shows
            self.figures["timeline"].ahead(key, self._timeline(run))
            sent += 1
            if limit is not None and sent >= limit:
                return sent
        self._ahead = iter(())
        return sent

    @serial
    def _prefetch_later(self, turn: Turn) -> None:
        if turn is not self._ahead_handle:  # stopped meanwhile (perhaps on the other thread)
            return
        self._ahead_handle = None
        try:
            sent = self.prefetch(limit=1)
        except Exception as exc:  # asyncio would only log it where nobody looks: keep it in
            self._ahead = iter(())  # `errors` (tests read them); the steps still answer
            self.errors.append(f"sending ahead: {type(exc).__name__}: {exc}")
            return
        if sent:
            self._ahead_handle = Turn(turn.loop, None, self._prefetch_later)

    def _stop_ahead(self) -> None:
        """A control moved: the neighbours are of other values now."""
        if self._ahead_handle is not None:
            self._ahead_handle.cancel()
            self._ahead_handle = None
        self._ahead = None

    def _start_ahead(self, moved: tuple[str, int] | None = None) -> None:
        """Compute the neighbours' timelines, one per turn of the event loop (a key press waits
        for one at most), `moved`'s way first; without a loop (tests, scripts) nothing."""
        self._stop_ahead()
        if not self.figures["timeline"].keyed:  # a dashboard whose frames are not keyed (NAS)
            return
        loop = running_loop()
        if loop is None:
            return
        self._ahead = neighbours(self.controls, moved=moved)
        self._ahead_handle = Turn(loop, None, self._prefetch_later)

    def _moved(self, change: Any) -> tuple[str, int] | None:
        """(name, +1 or -1) of the control a change moved, if it is one that makes a key."""
        if not isinstance(change, dict) or "owner" not in change:
            return None
        name = next((n for n in KEYED if self.controls.get(n) is change["owner"]), None)
        if name is None:
            return None
        return name, direction(change["owner"], change["old"], change["new"])
