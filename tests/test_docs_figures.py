"""The pictures README.md and the notebooks embed are what the code draws today: each is drawn
again (`python -m pslab figures --docs` makes them) and compared with the committed file, pixel
by pixel. Matplotlib rasterises with its own fonts, so the replays must match to the pixel but
for a sliver of antialiasing; the seeds go through pdflatex and poppler, whose versions may
move an edge by a pixel: they get the same small allowance, and no more."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pslab import cli
from pslab.drawing.seeds import NOTEBOOK_IMG, render_seeds, seeds_renderable

DOCS = Path(__file__).resolve().parent.parent / "docs" / "figures"
MOST_PIXELS_OFF = 0.002  # of the picture's pixels, each off by more than 24/255 in a channel
HOW_TO_FIX = "re-make it: make figures (python -m pslab figures --docs), then commit"


def differs(committed: Path, drawn: Path) -> str | None:
    """Why the two pictures differ, or None when they match within the allowance."""
    a = np.asarray(Image.open(committed).convert("RGB"), dtype=np.int16)
    b = np.asarray(Image.open(drawn).convert("RGB"), dtype=np.int16)
    if a.shape != b.shape:
        return f"{committed.name}: {a.shape[1]}x{a.shape[0]} px committed, code draws " \
               f"{b.shape[1]}x{b.shape[0]}; {HOW_TO_FIX}"
    off = float((np.abs(a - b).max(axis=2) > 24).mean())
    if off > MOST_PIXELS_OFF:
        return f"{committed.name}: {off:.2%} of its pixels differ from what the code draws; " \
               f"{HOW_TO_FIX}"
    return None


def test_differs_sees_a_changed_picture(tmp_path):
    img = np.full((40, 60, 3), 255, np.uint8)
    Image.fromarray(img).save(tmp_path / "a.png")
    img[10:20, 10:30] = 0  # 200 of 2400 pixels
    Image.fromarray(img).save(tmp_path / "b.png")
    assert differs(tmp_path / "a.png", tmp_path / "a.png") is None
    assert "8.33% of its pixels" in differs(tmp_path / "a.png", tmp_path / "b.png")
    Image.fromarray(img[:30]).save(tmp_path / "c.png")
    assert "60x30" in differs(tmp_path / "a.png", tmp_path / "c.png")


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> Path:
    """docs/figures as `make figures` writes them (SVG, then PNG, then TikZ), elsewhere."""
    out = tmp_path_factory.mktemp("docs-figures")
    cli.figures(out)
    return out


@pytest.mark.parametrize("name", sorted(cli.JOBS))
def test_readme_figure_is_what_the_code_draws(name, drawn):
    problem = differs(DOCS / f"{name}.png", drawn / f"{name}.png")
    assert problem is None, problem
    assert (DOCS / f"{name}.tex").read_text(encoding="utf-8") == \
        (drawn / f"{name}.tex").read_text(encoding="utf-8"), \
        f"{name}.tex differs from what pslab.tikz writes; {HOW_TO_FIX}"


@pytest.mark.processes
def test_notebook_seed_pictures_are_what_the_seeds_draw(tmp_path):
    if not seeds_renderable():
        pytest.skip("pdflatex and pdftoppm are needed to render the seeds (make system)")
    drawn = render_seeds(tmp_path)
    assert [p.name for p in drawn] == sorted(p.name for p in NOTEBOOK_IMG.glob("*.png"))
    problems = [differs(NOTEBOOK_IMG / p.name, p) for p in drawn]
    assert not any(problems), [p for p in problems if p]
