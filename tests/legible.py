"""How big a figure's text reads where a notebook shows it.

JupyterLab shows an inline PNG at its own size, shrunk to the cell's width when wider. At
1024x768 with the file browser open a cell is about 590 px wide, so a figure's text reads at
its size in points x dpi / 72 x min(1, 590 / the PNG's width). pw.setup() draws at 80 dpi and
the inline backend crops to the drawn area (bbox_inches="tight"), as here.
"""
from __future__ import annotations

import io

from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

CELL_PX = 590  # a notebook cell at 1024x768 with the file browser open
READABLE_PX = 10.0
DPI = 80  # pw.setup()'s figure.dpi


def png_width(fig: Figure) -> int:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    return Image.open(buf).width


def shown(artist) -> bool:
    while artist is not None:
        if not artist.get_visible():
            return False
        artist = getattr(artist, "axes", None) if artist is not getattr(artist, "axes", None) \
            else None
    return True


def texts(fig: Figure, cell_px: int = CELL_PX) -> list[tuple[float, str]]:
    """Every visible, non-empty text of `fig` as (pixels high where shown, its text), smallest
    first."""
    scale = min(1.0, cell_px / png_width(fig))
    out = []
    for t in fig.findobj(Text):
        if t.get_text().strip() and shown(t):
            out.append((t.get_fontsize() * fig.dpi / 72 * scale, t.get_text()))
    return sorted(out)
