"""What a headless dashboard shows, read as a browser draws it (shared by the dashboard tests)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image

from pslab.notebook.browser_plots import column
from pslab.notebook.widgets import Dashboard


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def rows(dash: Dashboard) -> list[str]:
    """The timeline's row names, as the browser draws them."""
    return [name for _, name in dash.figures["timeline"].panels[0]["yticks"]]


def worker_rows(dash: Dashboard) -> list[str]:
    return [r for r in rows(dash) if r.startswith("G")]


def blocks(dash: Dashboard, name: str = "timeline") -> dict[str, np.ndarray]:
    """The blocks a browser figure draws (edges and colour codes), as arrays."""
    return {k: column(v) for k, v in dash.figures[name].panels[0]["rects"].items()}
