"""Every pslab name and repository file the README and the documentation pages mention exists.

The API reference is generated from the code, but the prose is written by hand: a renamed
function or a moved file would leave it pointing at nothing. Here each `pslab.a.b` written in
backquotes in README.md and docs/*.md is resolved (modules imported, attributes looked up, as
a reader would type it), and each path of a file in the repository written in backquotes (`pslab/...py`,
`tests/...py`, `bench/...`, `notebooks/...ipynb`, ...) must be there. CHANGELOG.md is history
and is left out.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from surface import resolve

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = re.compile(r"`([^`\n]+)`")  # inline code; links and pictures are the browser test's
NAME = re.compile(r"\b(pslab(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"\b((?:pslab|tests|bench|tools|notebooks|docs|figures)/[\w./*-]*\w"
                  r"\.(?:py|ipynb|json|md|c|tex|png|js|cfg))\b")


def mentions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    return sorted({(page.relative_to(ROOT).as_posix(), m.group(1)) for page in PAGES
                   for code in CODE.findall(page.read_text()) for m in pattern.finditer(code)})


def test_the_pages_mention_names_and_files():
    assert len(mentions(NAME)) >= 20 and len(mentions(PATH)) >= 20


@pytest.mark.parametrize("page,name", mentions(NAME))
def test_every_pslab_name_in_the_docs_exists(page, name):
    try:
        resolve(name)
    except LookupError as e:
        pytest.fail(f"{page} mentions `{name}`, which does not exist ({e!r}): say today's name")


@pytest.mark.parametrize("page,path", mentions(PATH))
def test_every_repository_file_in_the_docs_exists(page, path):
    generated = path.startswith(("docs/_build/", "docs/reference/"))
    assert generated or any(ROOT.glob(path)), f"{page} mentions {path}, which is not there"


def test_resolve_tells_a_missing_name():
    assert resolve("pslab.train") is not None
    with pytest.raises(LookupError):
        resolve("pslab.no_such_name")
