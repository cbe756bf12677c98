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
SCREEN_PX = 504  # the notebook area's height there (y 91 to 595)
READABLE_PX = 10.0
DPI = 80  # pw.setup()'s figure.dpi


def png_size(fig: Figure) -> tuple[int, int]:
    """The inline PNG's (width, height) in pixels, cropped as the inline backend crops it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=fig.dpi)
    return Image.open(buf).size


def png_width(fig: Figure) -> int:
    return png_size(fig)[0]


def shown_height(fig: Figure, cell_px: int = CELL_PX) -> float:
    """How many pixels high `fig` shows in a cell `cell_px` wide (shrunk to fit, never grown)."""
    width, height = png_size(fig)
    return height * min(1.0, cell_px / width)


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


# ---- the hand-drawn seeds (figures/00?_*.tex), shown as PNGs in markdown cells -------------
MARKDOWN_PX = 550  # a markdown cell's image width at 1024x768 with the file browser open
SEED_DPI = 220  # pslab.drawing.seeds.DPI


def pdf_words(pdf) -> tuple[float, list[tuple[float, float, float, float, str]]]:
    """The page width and every word's box (x0, y0, x1, y1, text), in points (pdftotext)."""
    import re
    import subprocess

    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    width = float(re.search(r'<page width="([\d.]+)"', html)[1])
    words = [(float(m[1]), float(m[2]), float(m[3]), float(m[4]), m[5]) for m in re.finditer(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>',
        html)]
    return width, words


def _script(word, words) -> bool:
    """A subscript or superscript: at most 3 characters, right against a taller word's end
    (W_o's o, w_new's new). It reads with its base; every other word must read on its own."""
    x0, y0, x1, y1, text = word
    return len(text) <= 3 and any(abs(o[2] - x0) < 1.5 and o[3] - o[1] > y1 - y0
                                  and o[1] < y1 and y0 < o[3] for o in words)


def seed_texts(pdf) -> list[tuple[float, str]]:
    """Every word of a seed as (pixels high where a markdown cell shows it, its text),
    smallest first. A word's box is as high as its font's ascent to descent, about 0.9 of its
    size in points; the PNG is SEED_DPI and shown at most MARKDOWN_PX wide."""
    width, words = pdf_words(pdf)
    scale = min(MARKDOWN_PX, width / 72 * SEED_DPI) / width  # px per point
    return sorted(((w[3] - w[1]) * scale, w[4]) for w in words if not _script(w, words))
