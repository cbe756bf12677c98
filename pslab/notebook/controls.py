"""A dashboard's controls: one widget per setting, with its range, its help, and its checks.

Nine controls (workers, accumulation, learning rate, mode, SSP's s, the straggler's slowdown,
server shards, bandwidth, links), each made from the settings it starts at; log-scale sliders step
through round numbers. `within` refuses a value a control cannot show (a slider would clamp
it without a word), before any work starts.
"""
from __future__ import annotations

from typing import Any, Callable

import ipywidgets as W

from ..checks import number
from .dashboard_settings import RANGES, SLOWDOWN, MODES, Settings, bytes_per_s

# Log-scale sliders step through round numbers (1, 2, 5 per decade), so that a preset's value
# (lr 0.5, 100 kB/s) is exactly a slider position and the front end never rounds it.
LR_VALUES = tuple(m * 10.0 ** e for e in range(-3, 2) for m in (1, 2, 5) if m * 10.0 ** e <= 10)
BANDWIDTHS = tuple(m * 10.0 ** e for e in range(3, 9) for m in (1, 2, 5) if m * 10.0 ** e <= 1e8)


def _options(values: tuple[float, ...], start: float, fmt: Any) -> list[tuple[str, float]]:
    """(label, value) pairs for a SelectionSlider; `start` is added if it is off the grid."""
    values = tuple(sorted(set(values) | {float(start)}))
    show = fmt.format if isinstance(fmt, str) else fmt
    return [(show(round(v, 12)), v) for v in values]


# name -> widget factory (taking the starting value); the names are Settings fields
def _int_slider(name: str, description: str) -> Callable[[Any], W.IntSlider]:
    low, high = RANGES[name]  # the ranges Settings checks, so a preset always fits its slider
    return lambda v: W.IntSlider(v, min=low, max=high, description=description)


def _accumulate(s: Settings) -> W.ValueWidget:
    """1-8, or, when the work is fixed (figure 001), the k that divide it: same total work."""
    if s.minibatches is None:
        return _int_slider("accumulate", "accumulate")(s.accumulate)
    return W.SelectionSlider(options=s.accumulations(), value=s.accumulate,
                             description="accumulate")


# name -> widget factory (taking the starting settings); the names are Settings fields
CONTROLS: dict[str, Callable[[Settings], W.ValueWidget]] = {
    "workers": lambda s: _int_slider("workers", "workers")(s.workers),
    "accumulate": _accumulate,
    "lr": lambda s: W.SelectionSlider(options=_options(LR_VALUES, s.lr, "{:g}"), value=s.lr,
                                      description="learning rate"),
    "mode": lambda s: W.Dropdown(options=list(MODES), value=s.mode, description="mode"),
    "ssp": lambda s: _int_slider("ssp", "SSP s")(s.ssp),
    "slowdown": lambda s: W.FloatSlider(s.slowdown, min=SLOWDOWN[0], max=SLOWDOWN[1],
                                        step=0.25, readout_format=".2f",
                                        description="straggler ×"),
    "shards": lambda s: _int_slider("shards", "shards")(s.shards),
    "bandwidth": lambda s: W.SelectionSlider(
        options=_options(BANDWIDTHS, s.bandwidth, bytes_per_s), value=s.bandwidth,
        description="bandwidth"),
    "links": lambda s: W.Dropdown(options=[("duplex", "duplex"),
                                           ("one at a time", "one-at-a-time")],
                                  value=s.links, description="links"),
}
HELP = {
    "workers": "GPU workers, each with its own data slice",
    "accumulate": "minibatches per push (gradient accumulation, figure 001)",
    "lr": "SGD step size α in w ← w − α·∂L/∂w",
    "mode": "sync: barrier, one averaged update; async: each push applied as it comes; "
            "SSP: async, but no worker more than s steps ahead of the slowest",
    "ssp": "the staleness bound s of SSP(s)",
    "slowdown": "how many times slower G0 (the straggler of figure 000) computes",
    "shards": "server shards: each has its own link and updates in parallel",
    "bandwidth": "bytes per second of each shard's link",
    "links": "duplex: a shard's link carries a fetch and a push at once, as a real one does; "
             "one at a time: the seed figures' link, where a fetch waits for a push",
}


def dress(name: str, control: W.ValueWidget, tooltip: str) -> W.ValueWidget:
    """A control as every dashboard shows it: live while dragged, two columns of them fit a
    cell at 1024x768, its help on hover, and a class (`pslab-NAME`) the tests find it by."""
    control.continuous_update = True
    control.style = {"description_width": "88px"}
    control.layout = W.Layout(width="auto", min_width="240px", max_width="380px",
                              height="23px", margin="0 2px")
    control.tooltip = tooltip
    control.add_class(f"pslab-{name}")
    return control


def check_settle_delay(seconds: Any) -> None:
    """None (settle at once) or seconds of quiet before the slow path; a minute at most."""
    if seconds is not None:
        number("settle_delay (seconds)", seconds, high=60)


def within(name: str, control: W.ValueWidget, value: Any) -> None:
    """Refuse a value the control cannot show (a slider would clamp it without a word)."""
    if isinstance(control, (W.IntSlider, W.FloatSlider)):
        kind = int if isinstance(control, W.IntSlider) else (int, float)
        ok = isinstance(value, kind) and not isinstance(value, bool) and \
            control.min <= value <= control.max
        allowed = f"a number from {control.min} to {control.max}"
    else:
        options = [o[1] if isinstance(o, tuple) else o for o in getattr(control, "options", ())]
        ok = any(o == value and isinstance(o, bool) == isinstance(value, bool) for o in options)
        allowed = f"one of {', '.join(map(repr, options))}"  # (True == 1.0 is not a choice)
    if not ok:
        raise ValueError(f"{name} must be {allowed} (got {value!r})")
