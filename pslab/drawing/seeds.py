"""The hand-drawn seed figures (figures/00?_*.tex) as the PNGs the notebooks embed.

Each seed is compiled with `compile_tex` (pdflatex) and rasterised with poppler's pdftoppm;
map.png puts the four side by side for notebook 00. PNGs carry no dates, so re-rendering an
unchanged seed gives the same bytes. `python -m pslab figures --docs` calls `render_seeds`.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from .tex import FIGURES_DIR, compile_tex, tex_available

NOTEBOOK_IMG = FIGURES_DIR.parent / "notebooks" / "img"
DPI = 220  # the 001 block widths a question asks about read at 100 % (~12 px digits)


def seeds_renderable() -> bool:
    """pdflatex and pdftoppm are there (make system installs both)."""
    return tex_available(svg=False) and shutil.which("pdftoppm") is not None


def render_seeds(out: Path = NOTEBOOK_IMG, dpi: int = DPI) -> list[Path]:
    """Every seed as out/<seed>.png, and out/map.png; returns the paths written."""
    if not seeds_renderable():
        raise RuntimeError("rendering the seed figures needs pdflatex and pdftoppm "
                           "(make system, or apt-get install texlive-pictures poppler-utils)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="pslab-img-") as tmp:
        for tex in sorted(FIGURES_DIR.glob("00[0-9]_*.tex")):
            pdf = compile_tex(tex, tmp, svg=False)["pdf"]
            subprocess.run(["pdftoppm", "-png", "-r", str(dpi), "-singlefile", str(pdf),
                            str(out / tex.stem)], check=True, timeout=120)
            written.append(out / f"{tex.stem}.png")
    written.append(make_map(written, out / "map.png"))
    return written


def make_map(pngs: list[Path], path: Path, width: int = 560) -> Path:
    """The figures as thumbnails, two per row."""
    from PIL import Image

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
    sheet.save(path, optimize=True)
    return path
