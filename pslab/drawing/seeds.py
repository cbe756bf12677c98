"""The hand-drawn seed figures (figures/00?_*.tex) as the PNGs the notebooks embed.

Each seed is compiled with `compile_tex` (pdflatex) and rasterised with poppler's pdftoppm, one
PNG a page: `<seed>.png`, then `<seed>_b.png`, ... (figure 000 draws its two panels on two pages,
so that each fits one screen of a notebook). map.png puts the first pages side by side for
notebook 00. PNGs carry no dates, so re-rendering an
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
    """pdflatex, pdftoppm and pdfinfo are there (make system installs them)."""
    return tex_available(svg=False) and all(shutil.which(t) for t in ("pdftoppm", "pdfinfo"))


def render_seeds(out: Path = NOTEBOOK_IMG, dpi: int = DPI) -> list[Path]:
    """Every seed as out/<seed>.png, and out/map.png; returns the paths written."""
    if not seeds_renderable():
        raise RuntimeError("rendering the seed figures needs pdflatex and pdftoppm "
                           "(make system, or apt-get install texlive-pictures poppler-utils)")
    out.mkdir(parents=True, exist_ok=True)
    written, firsts = [], []
    with tempfile.TemporaryDirectory(prefix="pslab-img-") as tmp:
        for tex in sorted(FIGURES_DIR.glob("00[0-9]_*.tex")):
            pdf = compile_tex(tex, tmp, svg=False)["pdf"]
            for page in range(1, pages(pdf) + 1):
                name = tex.stem + ("" if page == 1 else "_" + "abcdefgh"[page - 1])
                subprocess.run(["pdftoppm", "-png", "-r", str(dpi), "-f", str(page), "-l",
                                str(page), "-singlefile", str(pdf), str(out / name)],
                               check=True, timeout=120)
                written.append(out / f"{name}.png")
                if page == 1:
                    firsts.append(written[-1])
    written.append(make_map(firsts, out / "map.png"))
    return written


def pages(pdf: Path) -> int:
    """How many pages `pdf` has (poppler's pdfinfo), 1 to 8."""
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    count = next((int(line.split()[-1]) for line in info.splitlines()
                  if line.startswith("Pages:")), 1)
    if not 1 <= count <= 8:
        raise RuntimeError(f"{pdf.name}: {count} pages (a seed has 1 to 8)")
    return count


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
