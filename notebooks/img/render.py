"""Render figures/00?_*.tex to the PNGs the notebooks show (committed: figures/build is not).

    python notebooks/img/render.py        (or: python -m pslab figures --docs, which also
                                           re-makes the README's docs/figures)

The work is `pslab.drawing.seeds.render_seeds`; tests/test_docs_figures.py checks the
committed PNGs are what it draws.
"""
from pslab.drawing.seeds import render_seeds

if __name__ == "__main__":
    for p in render_seeds():
        print(p)
