"""LaTeX side of the figures: the shared style file, and a compile helper (TeX -> PDF -> SVG).

`style_preamble()` turns `pslab.drawing.palette` into \\definecolor lines and TikZ styles, so the
hand-drawn figures in figures/ and the generated ones share colours defined once, in Python.
figures/pslab-style.tex is that text, written by ``python -m pslab.drawing.tex`` (a test checks
it is not stale). `compile_tex` runs pdflatex in a scratch directory with a timeout (a TeX
error must never hang a test or a notebook) and converts the PDF to SVG for the web.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..files import write_atomic
from .palette import (EVERY_KIND, LABELS, PALETTES, ROLE_LABELS, ROLES, TEX_PREFIX,
                      tex_colour_name)

FIGURES_DIR = Path(__file__).resolve().parents[2] / "figures"  # the repository's figures/
STYLE_FILE = FIGURES_DIR / "pslab-style.tex"
_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"~": r"\textasciitilde{}",
                                                "^": r"\textasciicircum{}",
                                                "\\": r"\textbackslash{}"}


def escape(text: str) -> str:
    """`text` as TeX typesets it literally (a label a student types: `lr 10^-3`,
    `C:\\runs\\new`): its special characters \\ { } $ & # ^ _ ~ % escaped."""
    return "".join(_SPECIAL.get(c, c) for c in text)


def coordinate(x: float) -> str:
    """A TikZ coordinate: at most four decimals, no trailing zeros."""
    return f"{x:.4f}".rstrip("0").rstrip(".") or "0"


def round_ticks(right: float) -> list[float]:
    """About five round tick values in [0, right] (a TikZ time axis)."""
    raw = right / 5 or 1.0
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(right / step + 1e-9) + 1)]


def style_preamble() -> str:
    """The text of figures/pslab-style.tex: TikZ libraries, colours, styles, label macros."""
    out = ["% pslab-style.tex -- GENERATED from pslab/drawing/palette.py by `python -m pslab.drawing.tex`;",
           "% edit the palette, not this file. \\input it after \\documentclass[tikz]{standalone}.",
           r"\usetikzlibrary{arrows.meta,positioning,fit,backgrounds,calc}", ""]
    styles = [r"  block/.style={draw, rectangle, inner sep=1pt, font=\scriptsize},"]

    def define(name: str, hexcolour: str) -> None:
        out.append(f"\\definecolor{{{name}}}{{HTML}}{{{hexcolour.lstrip('#').upper()}}}")

    for palette, colours in PALETTES.items():
        out.append(f"% timeline blocks, palette {palette!r}")
        for kind in EVERY_KIND:
            define(tex_colour_name(kind, palette), colours[kind])
            styles.append(f"  {TEX_PREFIX[palette]} {kind}/.style={{block, "
                          f"fill={tex_colour_name(kind, palette)}}},")
    out.append("% roles of the diagrams (002, 003) and the arrows of 000")
    for role, hexcolour in ROLES.items():
        define(tex_colour_name(role), hexcolour)
        if role in ("gradient", "weight"):  # flows are arrows, the rest are boxes
            styles.append(f"  {role} flow/.style={{-{{Stealth[length=2.2mm]}}, very thick, "
                          f"draw={tex_colour_name(role)}}},")
        else:
            styles.append(f"  role {role}/.style={{draw, thick, rounded corners=2pt, "
                          f"align=center, fill={tex_colour_name(role)}}},")
    styles[-1] = styles[-1].rstrip(",")
    out += ["", r"\tikzset{", *styles, "}", "",
            r"% \kindlabel{ps}{fetch} -> F ; \rolelabel{server} -> Parameter server",
            r"\providecommand{\kindlabel}[2]{\csname pslab@kind@#1@#2\endcsname}",
            r"\providecommand{\rolelabel}[1]{\csname pslab@role@#1\endcsname}"]
    for palette, labels in LABELS.items():
        for kind in EVERY_KIND:
            out.append(f"\\expandafter\\def\\csname pslab@kind@{TEX_PREFIX[palette]}@{kind}"
                       f"\\endcsname{{{escape(labels[kind])}}}")
    for role, text in ROLE_LABELS.items():
        out.append(f"\\expandafter\\def\\csname pslab@role@{role}\\endcsname{{{escape(text)}}}")
    return "\n".join(out) + "\n"


def write_style(path: Path | str = STYLE_FILE) -> Path:
    """(Re)write figures/pslab-style.tex from the palette; returns its path."""
    path = Path(path)
    write_atomic(path, style_preamble().encode("utf-8"))
    return path


def _svg_commands(pdf: Path, svg: Path) -> list[list[str]]:
    # dvisvgm needs Ghostscript for PDF input; pdf2svg (poppler) is the fallback.
    # --no-fonts draws glyphs as paths, so the SVG looks the same in any browser.
    cmds = [["dvisvgm", "--pdf", "--no-fonts", "--exact-bbox", "-o", str(svg), str(pdf)],
            ["pdf2svg", str(pdf), str(svg)]]
    return [c for c in cmds if shutil.which(c[0])]


def tex_available(svg: bool = True) -> bool:
    """True when pdflatex (and, if `svg`, dvisvgm or pdf2svg) is on the PATH."""
    has_svg = any(shutil.which(tool) for tool in ("dvisvgm", "pdf2svg"))
    return shutil.which("pdflatex") is not None and (has_svg or not svg)


def _tail(text: str, n: int = 30) -> str:
    lines = text.splitlines()
    # a TeX error starts with "!"; show it and what follows rather than the memory statistics
    first = next((i for i, line in enumerate(lines) if line.startswith("!")), None)
    return "\n".join(lines[first:first + n] if first is not None else lines[-n:])


def compile_tex(tex_path: Path | str, out_dir: Path | str, svg: bool = True,
                timeout: float = 120.0) -> dict[str, Path]:
    """Compile a standalone .tex to ``out_dir/<stem>.pdf`` (and ``.svg``); returns the paths.

    Files the document \\input's are found next to `tex_path` (TEXINPUTS). Raises
    RuntimeError, with the tail of the TeX log, when a tool is missing, fails or times out.
    """
    tex_path, out_dir = Path(tex_path).resolve(), Path(out_dir)
    if shutil.which("pdflatex") is None:
        raise RuntimeError("pdflatex not found: install TeX Live (see .ci/run for the apt packages)")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = tex_path.stem
    with tempfile.TemporaryDirectory(prefix="pslab-tex-") as tmp:
        # the trailing separator keeps TeX's own search path after the figure's folder
        env = dict(os.environ, TEXINPUTS=os.pathsep.join(
            [str(tex_path.parent), os.environ.get("TEXINPUTS", "")]))
        cmd = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
               f"-output-directory={tmp}", str(tex_path)]
        log = Path(tmp) / f"{stem}.log"
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RuntimeError(f"pdflatex timed out after {timeout:g}s on {tex_path}") from exc
        pdf = Path(tmp) / f"{stem}.pdf"
        if proc.returncode != 0 or not pdf.exists():
            text = log.read_text(errors="replace") if log.exists() else proc.stdout
            raise RuntimeError(f"pdflatex failed on {tex_path} (exit {proc.returncode}); "
                               f"the TeX log from its first error:\n{_tail(text)}")
        out = {"pdf": Path(shutil.copy(pdf, out_dir / f"{stem}.pdf"))}
    if svg:
        out["svg"] = _to_svg(out["pdf"], out_dir / f"{stem}.svg", timeout)
    return out


def _to_svg(pdf: Path, svg: Path, timeout: float) -> Path:
    cands = _svg_commands(pdf, svg)
    if not cands:
        raise RuntimeError("no PDF->SVG converter: install dvisvgm (with Ghostscript) or pdf2svg")
    errors = []
    for cmd in cands:  # the first converter that gives a real SVG wins
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            errors.append(f"{cmd[0]}: timed out after {timeout:g}s")
            continue
        if proc.returncode == 0 and svg.exists() and b"<svg" in svg.read_bytes()[:4096]:
            return svg
        errors.append(f"{cmd[0]} (exit {proc.returncode}):\n{_tail(proc.stderr + proc.stdout, 10)}")
    raise RuntimeError(f"could not convert {pdf} to SVG:\n" + "\n".join(errors))


def main(argv: list[str] | None = None) -> None:
    """``python -m pslab.drawing.tex`` rewrites figures/pslab-style.tex; ``--compile OUT`` also builds."""
    ap = argparse.ArgumentParser(prog="python -m pslab.drawing.tex", description=main.__doc__)
    ap.add_argument("--check", action="store_true", help="exit 1 if pslab-style.tex is stale")
    ap.add_argument("--compile", metavar="OUT", help="compile figures/*.tex into OUT")
    args = ap.parse_args(argv)
    if args.check:
        stale = not STYLE_FILE.exists() or STYLE_FILE.read_text(encoding="utf-8") != style_preamble()
        raise SystemExit(f"{STYLE_FILE} is stale: run python -m pslab.drawing.tex" if stale else 0)
    print("wrote", write_style())
    if args.compile:
        for tex in sorted(FIGURES_DIR.glob("*.tex")):
            if tex != STYLE_FILE:
                print(tex.name, "->", ", ".join(str(p) for p in compile_tex(tex, args.compile).values()))


if __name__ == "__main__":
    main()
