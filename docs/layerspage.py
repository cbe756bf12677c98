"""The layers as CI checks them: pyproject.toml's import-linter layers contract, as a table.

Written at every build into docs/reference/layers.inc (included by internals.md; not a page of its own), top layer
first, each module with the first sentence of its docstring (read from the source, not
imported), so the page says what the contract says today.
"""
from __future__ import annotations

import ast
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: no TOML reader in the standard library
    tomllib = None

ROOT = Path(__file__).resolve().parents[1]


def _summary(module: str) -> str:
    base = ROOT.joinpath(*module.split("."))
    source = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not source.is_file():
        return ""
    doc = ast.get_docstring(ast.parse(source.read_text())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    sentence = first.split(". ")[0].rstrip(".") + "."  # its first sentence
    return sentence.replace("|", "\\|")


def _layers() -> list[str]:
    if tomllib is None:
        return []
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config.get("tool", {}).get("importlinter", {}).get("contracts", [])
    return next((c.get("layers", []) for c in contracts if c.get("type") == "layers"), [])


def write(folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    layers = _layers()
    lines = ["| layer | module | what it is (its docstring) |", "|---|---|---|"]
    for number, layer in enumerate(layers):
        siblings = [m.strip() for m in layer.replace(":", "|").split("|") if m.strip()]
        for module in siblings:
            lines.append(f"| {len(layers) - number} | `{module}` | {_summary(module)} |")
    if not layers:
        lines = ["*The contract could not be read here (Python 3.11's tomllib is needed).*"]
    text = "\n".join(lines) + "\n"
    target = folder / "layers.inc"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
