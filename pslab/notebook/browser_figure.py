"""A live plot drawn by the browser: the dashboards' timeline, curves and side panel.

A whole matplotlib PNG redrawn in the kernel would take 100-200 ms a slider step, two thirds
of it drawing and encoding. `BrowserFigure` sends the plot's data instead (a few kB of numbers:
block edges, colours, row names, line points) and a small canvas renderer in the browser
(browser_figure.js, an anywidget module: no JupyterLab extension to build) draws it in a few
milliseconds, shows a block's details on hover and zooms a busy region (drag, wheel;
double-click for the whole run).

The data is split in three traits so that a step sends only what changed: `layout` (sizes,
axis names; set once), `legend` (with the runs compared) and `panels` (the data). Matplotlib
still draws every static figure, replay and export, and the picture a saved notebook keeps.

A dashboard may also key its frames by its controls' values (`keyed`: the controls' model ids,
`key`: the values the panels are of; see pslab.notebook.prefetch) and send frames ahead
(`ahead`): the page keeps them and draws the one for the controls' values the moment a control
moves, and a kernel frame of values the controls have already left is kept but not drawn.

A new view says hello: the frames it keeps start empty (`kept` is cleared).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["BrowserFigure"]

KEEP = 64  # frames a page keeps (browser_figure.js's KEEP)


class BrowserFigure(anywidget.AnyWidget):
    """Panels of rectangles and lines drawn by the browser (see browser_figure.js).

    `show(panels, legend)` replaces the data; a part equal to what the browser has is not
    sent again (traitlets send a trait only when its value changes).
    """

    _esm = Path(__file__).with_name("browser_figure.js")
    layout_spec = traitlets.Dict().tag(sync=True)
    legend = traitlets.List().tag(sync=True)
    panels = traitlets.List().tag(sync=True)
    key = traitlets.Unicode("").tag(sync=True)  # the controls' values `panels` are of
    keyed = traitlets.List().tag(sync=True)  # model ids of the controls that make a key
    faded = traitlets.Bool(False).tag(sync=True)  # of older values than the controls: pale

    def __init__(self, layout_spec: dict[str, Any], **kwargs: Any):
        super().__init__(layout_spec=layout_spec, **kwargs)
        self.sends = 0  # data updates made (a test and the benchmark read it)
        self.ahead_sent = 0  # frames sent ahead
        # the keys the page keeps a frame of, in the order it keeps them (it drops the oldest
        # past KEEP): a frame there is not sent again; a new view says hello and starts empty
        self.kept: OrderedDict[str, None] = OrderedDict()
        self.on_msg(self._on_page)

    def _on_page(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("hello"):
            self.kept.clear()

    def _keep(self, key: str) -> None:
        self.kept.pop(key, None)
        self.kept[key] = None
        while len(self.kept) > KEEP:
            self.kept.popitem(last=False)

    def show(self, panels: list[dict[str, Any]], legend: list[dict[str, Any]] | None = None,
             key: str = "") -> None:
        """Put new data on screen: one message with the parts that changed."""
        with self.hold_sync():
            if legend is not None and legend != self.legend:
                self.legend = legend
            if panels != self.panels:
                self.panels = panels
                self.sends += 1
            if key != self.key:
                self.key = key
        if key:
            self._keep(key)

    def ahead(self, key: str, panels: list[dict[str, Any]]) -> None:
        """Send the panels of other control values (`key`), for the page to keep and draw when
        its controls get there (one custom message; the columns' bytes as binary buffers)."""
        buffers: list[bytes] = []
        self.send({"ahead": key, "panels": _lift(panels, buffers)}, buffers)
        self.ahead_sent += 1
        self._keep(key)

    def forget(self) -> None:
        """Make the page drop the frames it keeps (the benchmark: each press from scratch)."""
        self.send({"forget": True})
        self.kept.clear()


def _lift(value: Any, buffers: list[bytes]) -> Any:
    """`value` with each packed column's bytes moved into `buffers` ({"dtype", "buffer": i})."""
    if isinstance(value, list):
        return [_lift(v, buffers) for v in value]
    if isinstance(value, dict):
        if isinstance(value.get("data"), bytes) and "dtype" in value:
            buffers.append(value["data"])
            return {"dtype": value["dtype"], "buffer": len(buffers) - 1}
        return {k: _lift(v, buffers) for k, v in value.items()}
    return value
