"""Sphinx configuration of pslab's documentation site: `make docs` builds it into docs/_build/html.

Sphinx + MyST-NB + sphinx-book-theme: the notebooks are rendered from their saved outputs (never
executed here), the API reference is generated from the docstrings of the public names at every
build (docs/reference/, git-ignored, so a renamed or added name needs no edit here), and the
benchmark tables are read from bench/results/*.json. Nothing is fetched from the network.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # this checkout's pslab and bench, whatever is installed
sys.path.insert(0, str(DOCS))

import apipages  # noqa: E402  (docs/apipages.py, beside this file)
import benchpages  # noqa: E402
import layerspage  # noqa: E402

project = "pslab"
author = "pslab's authors"
copyright = "pslab's authors, MIT licence"  # noqa: A001  (Sphinx's name for it)

extensions = ["myst_nb", "sphinx.ext.autodoc"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# Markdown pages and notebooks (MyST); saved outputs only.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# A dashboard's output holds its widget view, a text line and the picture matplotlib drew when
# the notebook was saved. The dashboards' plots are anywidget canvases, which the embedded
# ipywidgets manager cannot draw (and it is loaded from a CDN, so offline it draws nothing), so
# the page shows the saved picture; outputs with no picture (progress bars, notebook 05's
# knobs) keep their widget view, drawn when the page is read online.
nb_mime_priority_overrides = [
    ("html", "image/png", 5), ("html", "application/vnd.jupyter.widget-view+json", 10),
]
nb_merge_streams = True

# The docstrings use Markdown's `code`: read a single backquote as code, not italics.
default_role = "code"
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True}

html_theme = "sphinx_book_theme"
html_title = "pslab — the parameter-server lab"
html_static_path: list[str] = []
html_theme_options = {
    "repository_url": "",
    "use_download_button": False,  # it links the page sources, not copied (html_copy_source)
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_last_updated_fmt = None
html_copy_source = False


def copy_notebooks(folder: Path) -> None:
    """The notebooks and the pictures they embed, copied into the site's sources (a symbolic link
    would make their links to each other point outside it); only what changed is copied."""
    for source in [*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("notebooks/img/*.png")]:
        target = folder / source.relative_to(ROOT / "notebooks")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != source.read_bytes():
            target.write_bytes(source.read_bytes())
    for stale in [*folder.glob("*.ipynb"), *folder.glob("img/*.png")]:
        if not (ROOT / "notebooks" / stale.relative_to(folder)).exists():
            stale.unlink()


def generate(app) -> None:  # noqa: ANN001
    """builder-inited: the pages made from the code, the results and the notebooks."""
    apipages.write(DOCS / "reference")
    benchpages.write(DOCS / "reference")
    layerspage.write(DOCS / "reference")
    copy_notebooks(DOCS / "notebooks")


def setup(app):  # noqa: ANN001, ANN201  (Sphinx's hook)
    app.connect("autodoc-process-docstring", apipages.plain_docstrings)
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True}
