"""The documentation site builds clean and every page of it works in a browser.

`make docs` builds it (Sphinx, MyST-NB, sphinx-book-theme; docs/conf.py). Here it is built
fresh with warnings as errors, then every page is opened in headless Chromium from the files
(no server, nothing fetched from the network): each page loads with its title, every picture
on it is drawn (decoded, wider than 0 px), and every link inside the site reaches a page that
exists and, when it names a place (#anchor), a place that exists on that page.

Needs Sphinx, MyST-NB and sphinx-book-theme (pip install -e ".[test]") and, for the browser
half, Debian's chromium and chromium-driver (skipped without them, failed under CI).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from bench.browser import chromium, missing

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"search.html", "genindex.html"}  # filled in by scripts, nothing of ours on them

# Each page's links, pictures and anchors, read once it has loaded.
PAGE_FACTS = """
const imgs = [...document.images].map(i => [i.currentSrc || i.src, i.complete, i.naturalWidth]);
const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
const ids = [...document.querySelectorAll('[id]')].map(e => e.id)
    .concat([...document.querySelectorAll('a[name]')].map(e => e.name));
return {title: document.title, imgs: imgs, links: links, ids: ids,
        text: document.body ? document.body.innerText.length : 0};
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("myst_nb", reason='the docs extra: pip install -e ".[test]"')
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-E", "-W",
                           "--keep-going", "-q", str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, f"the docs build warned or failed:\n{done.stderr[-6000:]}"
    return out


@pytest.mark.processes
def test_the_site_has_its_parts(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    for part in ("index.html", "install.html", "teachers_guide.html", "internals.html",
                 "benchmarks.html", "changelog.html", "reference/api_pslab.html",
                 "reference/bench_results.html"):
        assert part in pages, part
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks and all(f"notebooks/{n}.html" in pages for n in notebooks)
    # the notebooks are shown with their saved outputs: their figures are pictures on the page
    page = (site / "notebooks" / "02_sync_vs_async.html").read_text()
    assert page.count("<img") >= 4
    # the API reference is the docstrings of the public names
    api = (site / "reference" / "api_pslab.html").read_text()
    assert 'id="pslab.train"' in api and 'id="pslab.Run"' in api


def _local(url: str, site: Path) -> tuple[Path, str] | None:
    """The file a link inside the site points to and its #place; None for other links."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path)), unquote(parts.fragment)


@pytest.mark.processes
def test_every_page_loads_with_its_pictures_and_links(site):
    gone = missing()
    if gone:
        if os.environ.get("CI"):
            pytest.fail(f"{' and '.join(gone)} not found: apt-get install chromium chromium-driver")
        pytest.skip(f"{' and '.join(gone)} not found")
    pages = sorted(p for p in site.rglob("*.html") if p.name not in SKIPPED
                   and not p.relative_to(site).parts[0].startswith("_"))
    facts, problems = {}, []
    with chromium((1024, 768)) as driver:
        for page in pages:
            driver.get(page.as_uri())
            facts[page] = f = driver.execute_script(PAGE_FACTS)
            name = page.relative_to(site)
            if not f["title"] or f["text"] < 100:
                problems.append(f"{name}: loads empty (title {f['title']!r})")
            for src, complete, width in f["imgs"]:
                if not complete or not width:
                    problems.append(f"{name}: picture not drawn: {src}")
    for page, f in facts.items():
        for url in f["links"]:
            target = _local(url, site)
            if target is None:
                continue
            path, place = target
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                problems.append(f"{page.relative_to(site)}: link to a missing file: {url}")
            elif place and path in facts and place not in facts[path]["ids"]:
                problems.append(f"{page.relative_to(site)}: link to a missing place: {url}")
    assert len(pages) >= 20, [p.name for p in pages]
    assert not problems, "\n".join(sorted(set(problems))[:40])
