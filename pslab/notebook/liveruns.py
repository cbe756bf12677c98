"""What a dashboard shows, without drawing it: settings -> runs, fast while a slider moves.

A slider step runs the clock only (`numerics=False`, a few ms) and shows that run; when the
sliders rest, `settle` repeats it with the arithmetic for the loss curve, keeping the settled
run before it for comparison. `RunCache` keeps the last runs, so moving a slider back is free.
Both renderers read a `LiveRuns`: the browser plots of the dashboards
(`pslab.notebook.browser_plots`) and the matplotlib `View` (`pslab.notebook.liveview`: the static
picture a saved notebook keeps, tests, the benchmark's "before").
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generator

from ..drawing.busy_plot import busy_title
from ..drawing.timeline_plot import title_text
from ..drawing.training_plot import curves_title, staleness_title
from ..model import single_thread
from ..result import Run
from ..training import train, train_in_parts
from .dashboard_settings import PRESETS, Settings, describe_change
from .explain import latency_note


# the gradients and scores a part of a run made in turns holds (RunCache.make): ~120 of the
# digits MLP's are ~75 ms on a quiet 2-core machine, a quarter of figure 000's 8 x 30 run
WORK_PER_PART = 120


class RunCache:
    """The last `size` runs by settings (an LRU): moving a slider back is free."""

    def __init__(self, size: int = 64):
        self.size = size
        self._runs: OrderedDict[tuple, Run] = OrderedDict()
        self.hits = self.misses = 0

    @staticmethod
    def key(settings: Settings, numerics: bool) -> tuple:
        # lr changes the arithmetic, never the clock: timing-only runs ignore it
        return (settings if numerics else settings.changed(lr=1.0), numerics)

    def has(self, settings: Settings, numerics: bool) -> bool:
        return self.key(settings, numerics) in self._runs

    def shown(self, settings: Settings) -> Run:
        """The run a slider step shows for `settings`: the one with numerics when it is kept
        (its loss curve is then ready too), else the timing-only one (made when missing)."""
        return self.get(settings, self.has(settings, True))

    def get(self, settings: Settings, numerics: bool) -> Run:
        key = self.key(settings, numerics)
        run = self._runs.get(key)
        if run is not None:
            self._runs.move_to_end(key)
            self.hits += 1
            return run
        self.misses += 1
        with single_thread():
            run = train(numerics=numerics, **settings.train_kwargs())
        return self._keep(key, run)

    def make(self, settings: Settings, status: str) -> Generator[str, None, None]:
        """Make and keep the run with numerics of `settings` (unless kept) in parts, yielding
        `status` before each and after the last: a caller's event loop runs one part per turn,
        and what it does with the run in a turn after them. A part is at most about
        `WORK_PER_PART` gradients and scores, each part an equal share of the updates, read off
        the clock-only run (the same clock: numerics add only the arithmetic)."""
        key = self.key(settings, True)
        if key in self._runs:
            return
        clock = self.get(settings, False)
        updates = clock.history
        work = len(clock.push_staleness) * settings.accumulate + len(updates)
        parts = max(1, -(-work // WORK_PER_PART))
        pauses = sorted({updates[len(updates) * k // parts - 1].time for k in range(1, parts)
                         if len(updates) * k // parts})
        making = train_in_parts(pauses, numerics=True, **settings.train_kwargs())
        while True:
            yield status
            with single_thread():
                try:
                    next(making)
                except StopIteration as done:
                    self.misses += 1
                    self._keep(key, done.value)
                    break
        yield status  # what the caller does with the run comes in a turn of its own

    def _keep(self, key: tuple, run: Run) -> Run:
        self._runs[key] = run
        if len(self._runs) > self.size:
            self._runs.popitem(last=False)
        return run


class LiveRuns:
    """The runs on show for the settings the controls say now.

    `step(settings)` is the fast path: it returns True when the clock changed (False when only
    the learning rate moved: the timeline stays); `settle()` adds the arithmetic and returns
    True when the loss curve has something new to show.
    """

    def __init__(self, settings: Settings | None = None, cache: RunCache | None = None):
        self.settings = settings or PRESETS["default"]
        self.cache = cache or RunCache()
        self.run: Run | None = None  # what the timeline shows (timing-only until settled)
        self.settled: Run | None = None  # the latest run with numerics
        self.previous: tuple[Settings, Run] | None = None  # the one before, for comparison
        self._settled_for: Settings | None = None
        self._shown_key: tuple | None = None
        self._split: tuple[Run, list[dict[str, float]]] | None = None

    def shares(self) -> list[dict[str, float]]:
        """`run.shares()` of the run on show, once per run (it walks every span: ~10 ms at
        8 workers x 30 steps, read by the side panel and its caption)."""
        if self._split is None or self._split[0] is not self.run:
            self._split = (self.run, self.run.shares())
        return self._split[1]

    @property
    def pending(self) -> bool:
        """True while the loss curve still shows other settings than the timeline."""
        return self._settled_for != self.settings

    def step(self, settings: Settings) -> bool:
        """Fast path: the timing-only run (or a cached one) of `settings`."""
        self.settings = settings
        key = self.cache.key(settings, False)
        if key == self._shown_key:  # only lr moved: same clock, same pictures
            if self.cache.has(settings, True):
                self.run = self.cache.get(settings, True)
            return False
        self.run, self._shown_key = self.cache.shown(settings), key
        return True

    def settle(self, progress: Callable[[str], None] | None = None) -> bool:
        """Slow path: the run with numerics for the current settings (False: already shown)."""
        settings = self.settings
        if self._settled_for == settings:
            # back to the settled values before the sliders rested: the step showed a
            # timing-only run when the cache had dropped the settled one (frames sent ahead
            # fill it); show the settled run again, or `current` never holds and "ready" waits
            # forever
            self.run = self.settled
            return False
        if progress is not None and not self.cache.has(settings, True):
            progress(f"training: {settings.workers} workers x {settings.run_steps} steps x "
                     f"{settings.accumulate} minibatch(es)")
        run = self.cache.get(settings, True)
        if self.settled is not None and self._settled_for is not None:
            self.previous = (self._settled_for, self.settled)
        self.settled, self._settled_for, self.run = run, settings, run
        return True

    def curves(self) -> tuple[list[Run], list[str]]:
        """The runs the loss curve compares, and their names: now, and the settings before."""
        if self.settled is None:
            return [], []
        runs, labels = [self.settled], ["now"]
        if self.previous is not None and self.previous[0] != self._settled_for:
            runs.append(self.previous[1])
            labels.append("before: " + describe_change(self._settled_for, self.previous[0]))
        return runs, labels

    def current(self, settings: Settings) -> bool:
        """True when the timeline, the loss curve and `run` are all of `settings`."""
        return self.settings == settings and self._settled_for == settings \
            and self.run is self.settled

    def sync_twin(self) -> Run:
        """The same settings in sync mode, clock only (cached): what a mode is compared to."""
        return self.cache.get(self.settings.changed(mode="sync"), False)

    def captions(self) -> dict[str, str]:
        """The plots' titles, shown as text beside them: timeline, loss curve, side panel."""
        run = self.run
        column = self.settings.palette == "accumulation"
        if run is None:
            return {"timeline": "", "training": "", "staleness": ""}
        side = (busy_title(run, self.shares()) if run.mode == "sync" else staleness_title(run))
        note = latency_note(run, self.settings.latency, self.settings.bandwidth)
        if note:  # said under the shares it explains
            side += "\n" + note
        return {"timeline": title_text(run, None, column),
                "training": curves_title(*self.curves()),
                "staleness": side}
