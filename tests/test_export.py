"""pslab.tikz: one rectangle per span at the span's times, in the figures' styles; it compiles."""
import os
import re

import pytest

import pslab
from pslab import replay
from pslab.drawing.export import tikz
from pslab.drawing.tex import compile_tex, style_preamble, tex_available

NUM = r"([-\d.]+)"
RECT = re.compile(rf"\\draw\[(\w+) (\w+)\] \({NUM},{NUM}\) rectangle \({NUM},{NUM}\);")


def rectangles(doc):
    return [(m[0], m[1], float(m[2]), float(m[4])) for m in RECT.findall(doc)]


def test_one_rectangle_per_span_at_its_times():
    _, asyn = replay.figure000()
    doc = tikz(asyn)
    drawn = sorted((kind, start, end) for _, kind, start, end in rectangles(doc))
    expected = sorted((s.kind, round(s.start, 4), round(s.end, 4))
                      for s in asyn.timeline if s.end > s.start)
    assert len(drawn) == len(expected)
    for (k1, a1, b1), (k2, a2, b2) in zip(drawn, expected):
        assert k1 == k2 and a1 == pytest.approx(a2, abs=1e-4) and b1 == pytest.approx(b2, abs=1e-4)
    assert {p for p, *_ in rectangles(doc)} == {"ps"}
    assert f"({asyn.idle_fraction * 100:.1f}\\%)" in doc and "6 updates" in doc


def test_standalone_with_the_shared_style():
    every, twice = replay.figure001()
    doc = tikz([every, twice], labels=["every step", "accumulate two"], palette="accumulation")
    assert doc.startswith("%") and "\\documentclass[tikz" in doc
    assert style_preamble() in doc  # the colours of figures/, inlined: compiles on its own
    assert {p for p, *_ in rectangles(doc)} == {"acc"}
    assert doc.count("{sync};") == 3  # two syncs, then one
    assert "GPU3" in doc and "S0" not in doc  # figure 001 has no server rows


def test_writes_to_path(tmp_path):
    run = pslab.train(mode="sync", workers=2, steps=2, numerics=False)
    path = tmp_path / "t.tex"
    assert tikz(run, path) == path.read_text()


def test_bad_palette_is_refused():
    run = pslab.train(mode="sync", workers=2, steps=1, numerics=False)
    with pytest.raises(ValueError, match="palette"):
        tikz(run, palette="nope")


@pytest.mark.processes
def test_exported_timeline_compiles(tmp_path):
    if not tex_available(svg=False):
        if os.environ.get("CI"):
            pytest.fail("pdflatex is missing in CI: the TikZ export must be checked there")
        pytest.skip("pdflatex not installed")
    sync, asyn = replay.figure000()
    every, twice = replay.figure001()
    tikz([sync, asyn], tmp_path / "fig000.tex", labels=["(a) sync", "(b) async"])
    tikz([every, twice], tmp_path / "fig001.tex", palette="accumulation")
    for name in ("fig000", "fig001"):
        out = compile_tex(tmp_path / f"{name}.tex", tmp_path / "out", svg=False)
        assert out["pdf"].stat().st_size > 1000


@pytest.mark.parametrize("kwargs, name", [
    (dict(width="wide"), "width"), (dict(width=-5), "width"), (dict(width=float("inf")), "width"),
    (dict(labels=["one"]), "labels"), (dict(labels="ab"), "labels"),
    (dict(column="no"), "column")])
def test_tikz_refuses_what_it_cannot_draw_by_name(kwargs, name):
    run = pslab.train(steps=2, numerics=False)
    with pytest.raises(ValueError, match=name):
        pslab.tikz([run, run], **kwargs)
    assert pslab.tikz([run, run], labels=["one", "two"]).count("node[anchor=west") >= 2


@pytest.mark.processes
def test_labels_with_tex_specials_compile(tmp_path):
    """A label is typeset as typed: every TeX special escaped, so pdflatex compiles it."""
    if not tex_available(svg=False):
        if os.environ.get("CI"):
            pytest.fail("pdflatex is missing in CI: the TikZ export must be checked there")
        pytest.skip("pdflatex not installed")
    run = pslab.train(mode="sync", workers=2, steps=2, numerics=False)
    labels = ["lr 10^-3 C:\\runs\\new ~ _ % & # $ {} \\\\ \\end{document}", "50% ^_^ ~/x"]
    doc = tikz([run, run], tmp_path / "specials.tex", labels=labels)
    assert "\\end{document}" not in doc.split("\\begin{document}")[1].rsplit(
        "\\end{document}", 1)[0]
    out = compile_tex(tmp_path / "specials.tex", tmp_path / "out", svg=False)
    assert out["pdf"].stat().st_size > 1000
