"""How big pslab draws a figure for a notebook cell, so that a projector's back row reads it.

At 1024x768 with JupyterLab's file browser open a notebook cell is about 590 px wide, and an
inline PNG wider than its cell is shrunk to fit. A figure CELL_IN inches wide is 590 px at the
80 dpi `pw.setup()` draws at (the inline backend's crop margin included), so its text shows at
its own size: MIN_PT points are 10 px there. At any other dpi the figure is shrunk or not in
proportion, so text of MIN_PT still reads at >= 10 px on that screen. A figure drawn wider
than CELL_IN must enlarge its text by its width / CELL_IN (tests/test_legible.py checks).

The same screen shows about 504 px of notebook (y 91 to 595): a figure at most SCREEN_IN high
is seen whole (SLIDER_IN less under a knob's slider), and a figure with many rows gives each row
less height rather than grow past it (ROW_MIN_IN still fits a MIN_PT name).
"""
from __future__ import annotations

CELL_IN = 7.1  # inches: a 590-px cell at 80 dpi, less the crop margins and a title's overhang
MIN_PT = 9.0  # points: 10 px at 80 dpi
SCREEN_IN = 5.75  # inches: 460 px at 80 dpi (+ the crop's margin and a cell's, in 504 px)
SLIDER_IN = 0.45  # inches: an ipywidgets slider row with its margins (34 px)
ROW_MIN_IN = 0.17  # inches: a timeline row at its thinnest (13.6 px; its name is 10 px)
LESSON_PT = 10.8  # points: 12 px at 80 dpi, the dashboards' text: a label that carries a lesson
