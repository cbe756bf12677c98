"""Write pslab/nas/children.json: the children notebook 04 trains, with their accuracies.

    PYTHONPATH=. python tools/nas_children_table.py

Runs every code cell of notebooks/04_nas_hierarchy.ipynb from a cleared child cache (plots
drawn off-screen), then writes the cache's children with the default budget through
pslab.nas.child.write_table. The table only warms the cache: the numbers are `train`'s own,
and tests/test_nas_table.py trains a sample of them again and compares. Re-run it when the
notebook's searches or the children's training change.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    from pslab.nas import child

    child.clear_cache()  # and no shipped table: every child is trained here
    notebook = json.loads((ROOT / "notebooks" / "04_nas_hierarchy.ipynb").read_text())
    scope: dict = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            exec("".join(cell["source"]), scope)  # noqa: S102 - our own notebook
    n = child.write_table(child.TABLE)
    print(f"{n} children ({child.stats['trained']} trained) written to {child.TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
