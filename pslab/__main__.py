"""`python -m pslab figures --out DIR`: every replayed seed figure as PNG, SVG and TikZ
(`--docs`: in place, the README's docs/figures and the notebooks' img/, as `make figures`).
`python -m pslab demo`: a short sync-vs-async run, summarised in the terminal.

The arguments are parsed and checked before anything heavy is imported (torch, matplotlib):
a mistyped command is refused at once. The work lives in `pslab.cli`.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def _writable_folder(ap: argparse.ArgumentParser, out: Path) -> Path:
    """The --out folder, made if missing; a usage error (exit 2, one line) if it cannot be."""
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out}: a file is there, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        ap.error(f"--out {out}: cannot make the folder ({err.strerror})")
    if not os.access(out, os.W_OK | os.X_OK):
        ap.error(f"--out {out}: the folder cannot be written")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m pslab", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="pslab, the parameter-server lab, from the command line.",
        epilog="Example: python -m pslab figures --out out/figures")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND",
                            title="commands")
    fig = sub.add_parser("figures", help="write every replayed seed figure as PNG, SVG and "
                         "TikZ (headless, byte-stable)")
    where = fig.add_mutually_exclusive_group()
    where.add_argument("--out", default="figures-out", help="folder to write into")
    where.add_argument("--docs", action="store_true",
                       help="re-make the pictures README.md and the notebooks embed, in place: "
                            "docs/figures and notebooks/img (make figures)")
    sub.add_parser("demo", help="train sync and async on 4 workers with a straggler (seed 0) "
                   "and print their makespan, idle, updates, staleness and accuracy")
    args = ap.parse_args(argv)
    if args.command == "figures" and args.docs:
        from .cli import docs_figures

        written, missing = docs_figures()
        print(f"wrote {len(written)} files:")
        for p in written:
            print("  ", p)
        if missing:
            raise SystemExit(missing)
    elif args.command == "figures":
        out = _writable_folder(ap, Path(args.out))
        from .cli import figures

        written = figures(out)
        print(f"wrote {len(written)} files to {out.resolve()}:")
        for p in written:
            print("  ", p.name)
    else:
        from .cli import demo

        demo()


if __name__ == "__main__":
    main()
