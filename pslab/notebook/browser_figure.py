"""A live plot drawn by the browser: the dashboards' timeline, curves and side panel.

A slider step used to redraw a whole matplotlib PNG in the kernel (100-200 ms, two thirds of
it drawing and encoding). `BrowserFigure` sends the plot's data instead (a few kB of numbers:
block edges, colours, row names, line points) and a small canvas renderer in the browser
(browser_figure.js, an anywidget module: no JupyterLab extension to build) draws it in a few
milliseconds, shows a block's details on hover and zooms a busy region (drag, wheel;
double-click for the whole run).

The data is split in three traits so that a step sends only what changed: `layout` (sizes,
axis names; set once), `legend` (with the runs compared) and `panels` (the data). Matplotlib
still draws every static figure, replay and export, and the picture a saved notebook keeps.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["BrowserFigure"]


class BrowserFigure(anywidget.AnyWidget):
    """Panels of rectangles and lines drawn by the browser (see browser_figure.js).

    `show(panels, legend)` replaces the data; a part equal to what the browser has is not
    sent again (traitlets send a trait only when its value changes).
    """

    _esm = Path(__file__).with_name("browser_figure.js")
    layout_spec = traitlets.Dict().tag(sync=True)
    legend = traitlets.List().tag(sync=True)
    panels = traitlets.List().tag(sync=True)

    def __init__(self, layout_spec: dict[str, Any], **kwargs: Any):
        super().__init__(layout_spec=layout_spec, **kwargs)
        self.sends = 0  # data updates made (a test and the benchmark read it)

    def show(self, panels: list[dict[str, Any]], legend: list[dict[str, Any]] | None = None
             ) -> None:
        """Put new data on screen: one message with the parts that changed."""
        with self.hold_sync():
            if legend is not None and legend != self.legend:
                self.legend = legend
            if panels != self.panels:
                self.panels = panels
                self.sends += 1
