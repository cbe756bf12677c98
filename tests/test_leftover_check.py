"""The check the process tests end with (conftest's `nothing_left`) sees a run folder left in
this process's multiprocessing folder (pymp-*), where a forkserver launch keeps it: that
folder is made once per Python, often under an earlier test's temporary folder."""
import multiprocessing.util
import pathlib

import pytest


def test_a_run_folder_left_in_multiprocessing_s_folder_is_seen(nothing_left, tmp_path):
    left = pathlib.Path(multiprocessing.util.get_temp_dir()) / "pslab-run-left"
    left.mkdir()
    try:
        with pytest.raises(AssertionError):
            nothing_left(tmp_path)
    finally:
        left.rmdir()
    nothing_left(tmp_path)
