"""How big pslab draws a figure for a notebook cell, so that a projector's back row reads it.

At 1024x768 with JupyterLab's file browser open a notebook cell is about 590 px wide, and an
inline PNG wider than its cell is shrunk to fit. A figure CELL_IN inches wide is 590 px at the
80 dpi `pw.setup()` draws at (the inline backend's crop margin included), so its text shows at
its own size: MIN_PT points are 10 px there. At any other dpi the figure is shrunk or not in
proportion, so text of MIN_PT still reads at >= 10 px on that screen. A figure drawn wider
than CELL_IN must enlarge its text by its width / CELL_IN (tests/test_legible.py checks).
"""
from __future__ import annotations

CELL_IN = 7.1  # inches: a 590-px cell at 80 dpi, less the crop margins and a title's overhang
MIN_PT = 9.0  # points: 10 px at 80 dpi
LESSON_PT = 10.8  # points: 12 px at 80 dpi, the dashboards' text: a label that carries a lesson
