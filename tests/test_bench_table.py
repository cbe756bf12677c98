"""`python -m bench.table` rewrites only the table between docs/benchmarks.md's two markers,
from a bench result read as untrusted data; the docs page holds the markers once each."""
import json

import pytest

from bench import table

RESULT = {"machine": {"cpu": "CPU", "cores": 2, "python": "3.11", "torch": "2", "load_average":
                      "0.5 0.7 0.9", "python_loop_1e7_s_before": 0.29,
                      "python_loop_1e7_s": 0.31},
          "quick": True,
          "rows": [{"section": "clock", "name": "a | b", "median": 0.25, "min": 0.2, "max": 1.5,
                    "ratio": 1.5, "goal": "<= 0.4 s", "met": True},
                   {"section": "files", "name": "slow", "median": 2.0, "min": 2.0, "max": 2.0,
                    "goal": "<= 1 s", "met": False},
                   "not a row"]}


def test_the_page_is_rewritten_between_its_markers_only(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"before\n{table.START}\nold table\n{table.END}\nafter\n")
    (tmp_path / "r.json").write_text(json.dumps(RESULT))
    assert table.main([str(tmp_path / "r.json"), "--page", str(page)]) == 0
    text = page.read_text()
    assert text.startswith(f"before\n{table.START}\n") and text.endswith(f"{table.END}\nafter\n")
    assert "old table" not in text and "load average 0.5 0.7 0.9" in text
    assert "| clock | a \\| b | 250.0 ms (200.0 ms–1.50 s) | 1.50× | <= 0.4 s | met |" in text
    assert "| files | slow | 2.00 s (2.00 s–2.00 s) |  | <= 1 s | **NOT met** |" in text


@pytest.mark.parametrize("page", ["no markers", f"{table.END}\n{table.START}\n",
                                  f"{table.START}\n{table.START}\n{table.END}\n"])
def test_a_page_without_its_markers_in_order_is_refused(page):
    with pytest.raises(ValueError, match="marker lines"):
        table.rewrite(page, ["x"])


@pytest.mark.parametrize("blob", [b"[1, 2]", b"{\"rows\": 3}", b"\xff not json"])
def test_a_file_that_is_not_a_result_is_refused(tmp_path, blob, capsys):
    (tmp_path / "r.json").write_bytes(blob)
    page = tmp_path / "page.md"
    page.write_text(f"{table.START}\n{table.END}\n")
    assert table.main([str(tmp_path / "r.json"), "--page", str(page)]) == 2
    assert "not a bench result" in capsys.readouterr().err
    assert page.read_text() == f"{table.START}\n{table.END}\n"


def test_the_docs_page_holds_the_markers():
    text = table.PAGE.read_text()
    assert text.count(table.START) == 1 and text.count(table.END) == 1
