"""Progress in a notebook: a bar for a sweep of runs, and a plain table of their numbers.

    runs = sweep(range(1, 9), lambda n: dict(workers=n, steps=20), "workers")
    print(table([(r.workers, r.makespan) for r in runs], ["workers", "makespan"]))

The bar's text (what nbval compares) is fixed when it is shown, so outputs stay deterministic.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import ipywidgets as W

from ..model import single_thread
from ..result import Run
from ..training import train
from ..text import table  # noqa: F401 - public here too

__all__ = ["Progress", "sweep", "table", "widget_bundle"]


def widget_bundle(widget: Any, include: Any, exclude: Any) -> dict[str, Any]:
    """The widget's own MIME bundle as a plain dict (ipywidgets may return (data, metadata))."""
    bundle = widget._repr_mimebundle_(include=include, exclude=exclude)
    if isinstance(bundle, tuple):
        bundle = bundle[0]
    return dict(bundle or {})


class Progress:
    """A progress bar for long work in a notebook: an ipywidgets bar and a label.

    Its text (what nbval compares) is fixed when it is shown, so outputs stay deterministic;
    outside a notebook it shows nothing.
    """

    def __init__(self, total: int, description: str = ""):
        self.total, self.done = total, 0
        self.bar = W.IntProgress(value=0, min=0, max=max(total, 1), description=description)
        self.label = W.Label(f"0/{total}")
        self.widget = W.HBox([self.bar, self.label])
        self.widget.add_class("pslab-progress")
        self.description = description

    def step(self, text: str = "") -> None:
        self.done += 1
        self.bar.value = self.done
        self.label.value = f"{self.done}/{self.total} {text}".rstrip()
        if self.done >= self.total:
            self.bar.bar_style = "success"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = widget_bundle(self.widget, include, exclude)
        bundle["text/plain"] = f"{self.description or 'progress'}: {self.total} runs"
        return bundle


def sweep(values: Iterable[Any], make: Callable[[Any], dict[str, Any]],
          description: str = "runs", show: bool = True) -> list[Run]:
    """Train one run per value, with a progress bar: `make(value)` gives `train`'s kwargs.

        runs = pw.sweep(range(1, 9), lambda n: dict(workers=n, steps=20), "workers")
    """
    if not callable(make):
        raise ValueError(f"make must be a function from a value to train's keyword arguments, "
                         f"e.g. lambda n: dict(workers=n) (got {make!r})")
    values = list(values)
    bar = Progress(len(values), description)
    if show:
        try:
            from IPython import get_ipython
            from IPython.display import display
            if get_ipython() is not None:
                display(bar)
        except ImportError:  # pragma: no cover
            pass
    runs = []
    with single_thread():
        for v in values:
            runs.append(train(**make(v)))
            bar.step(f"{description}={v}")
    return runs


