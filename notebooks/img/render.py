"""Render figures/00?_*.tex to the PNGs the notebooks show (committed: figures/build is not).

    python notebooks/img/render.py

Each figure is compiled with `pslab.tex.compile_tex` (pdflatex) and rasterised with poppler's
pdftoppm; map.png puts the four side by side for 00_start_here. PNGs carry no dates, so
re-rendering an unchanged figure gives the same bytes.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

from pslab.tex import FIGURES_DIR, compile_tex

HERE = Path(__file__).resolve().parent
DPI = 220  # the 001 block widths a question asks about read at 100 % (~12 px digits)


def render(dpi: int = DPI) -> list[Path]:
    out = []
    with tempfile.TemporaryDirectory(prefix="pslab-img-") as tmp:
        for tex in sorted(FIGURES_DIR.glob("00[0-9]_*.tex")):
            pdf = compile_tex(tex, tmp, svg=False)["pdf"]
            target = HERE / tex.stem
            subprocess.run(["pdftoppm", "-png", "-r", str(dpi), "-singlefile", str(pdf),
                            str(target)], check=True, timeout=120)
            out.append(target.with_suffix(".png"))
    out.append(make_map(out))
    return out


def make_map(pngs: list[Path], width: int = 560) -> Path:
    """The figures as thumbnails, two per row."""
    thumbs = []
    for p in pngs:
        im = Image.open(p).convert("RGB")
        thumbs.append(im.resize((width, round(im.height * width / im.width)), Image.LANCZOS))
    rows = [thumbs[i:i + 2] for i in range(0, len(thumbs), 2)]
    heights = [max(t.height for t in r) for r in rows]
    sheet = Image.new("RGB", (2 * width + 30, sum(heights) + 30 * len(rows)), "white")
    y = 10
    for r, h in zip(rows, heights):
        for i, t in enumerate(r):
            sheet.paste(t, (10 + i * (width + 10), y))
        y += h + 30
    path = HERE / "map.png"
    sheet.save(path, optimize=True)
    return path


if __name__ == "__main__":
    for p in render():
        print(p.relative_to(HERE.parent.parent))
    sys.exit(0)
