"""The note a saved dashboard or knob shows until its notebook runs.

A notebook opened with its saved widgets shows its controls as they were saved, moving nothing.
`LiveNote` sits at the top of a dashboard (`DashboardBase`) or a knob (notebook 05's
`classic_explore.knob`); in the browser (live_note.js) it asks the kernel whether it is there,
and while no kernel answers it says that the view is a picture and what to press, hides the
status line and the broken-link marks, and greys the controls. A live kernel answers at once,
and the note never shows.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as W

__all__ = ["LiveNote"]


class LiveNote(anywidget.AnyWidget):
    """Nothing on screen while a kernel answers; "Not live yet: …" while none does."""

    _esm = Path(__file__).with_name("live_note.js")

    def __init__(self, **kwargs: Any):
        super().__init__(layout=W.Layout(margin="0", width="100%"), **kwargs)
        self.on_msg(self._on_page)

    def _on_page(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("hello"):
            self.send({"live": True})
