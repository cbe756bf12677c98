"""The presenter view and notebooks opened before they run, in a real browser: `make present`'s
Voila page shows every dashboard and no code; a notebook opened without its kernel run draws its
dashboards (and notebook 05 its knobs) from the widget state it saved and says it is a picture.
Needs Debian's chromium and chromium-driver, as tests/test_notebooks_browser.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.browser import chromium, evidence, free_port as _free_port, jupyterlab, serve
from bench.browser import wait as _wait

from jupyter_page import (HOVER, ROOT, RUN_ALL_TIMEOUT, SIZES, fit_problems, hover_and_zoom,
                          open_notebook, require_browser, resize, saved_views, shoot,
                          shutdown_kernels)

pytestmark = [pytest.mark.timeout(1800), pytest.mark.processes]  # JupyterLab, Chromium, kernels


@pytest.fixture(scope="module")
def browser():
    require_browser()
    with chromium(SIZES["large"]) as driver:
        yield driver


@pytest.fixture(scope="module")
def presenter():
    """`make present`'s server: Voila on notebooks/present.ipynb, on 127.0.0.1, stopped after."""
    require_browser()
    tmp = Path(tempfile.mkdtemp(prefix="pslab-voila-"))
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), JUPYTER_DATA_DIR=str(tmp / "data"),
               IPYTHONDIR=str(tmp / "ipython"), JUPYTER_PLATFORM_DIRS="1")
    env.pop("PSLAB_HIDE_ANSWERS", None)
    port = _free_port()
    cmd = [sys.executable, "-m", "voila", str(ROOT / "notebooks" / "present.ipynb"),
           "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1", "--Voila.port_retries=0"]
    try:
        with serve("voila", cmd, ROOT, env, port, tmp / "voila.log") as served:
            yield served
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_presenter_view_shows_every_dashboard_without_code_or_exercises(presenter, browser,
                                                                         capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, log_path = presenter
    driver = browser
    driver.set_window_size(*SIZES["large"])
    try:
        driver.get(base)
        # all six ready (returning on five raced the last dashboard's first settle)
        count = _wait(driver, "const d = document.querySelectorAll('.pslab-dashboard "
                      ".pslab-status [data-state=\"ready\"]'); return d.length >= 6 && d.length;",
                      timeout=RUN_ALL_TIMEOUT, what="six dashboards in the presenter view")
        # figures 000, 001, 002, the NAS dashboard of 003, pipelines (08) and 07's ZeRO one
        assert count == 6
        assert driver.execute_script("return document.querySelectorAll('.pslab-dashboard "
                                     ".pslab-hidden').length;") == 1, "no ZeRO dashboard"
        text = driver.execute_script("return document.body.innerText;")
        for code in ("pw.dashboard", "import ", "replay.figure", ".check(", "quiz"):
            assert code not in text, f"the presenter view shows code or exercises: {code!r}"
        assert driver.execute_script("return document.querySelectorAll('.jp-InputArea-editor, "
                                     ".CodeMirror, .cm-editor').length;") == 0
        assert driver.execute_script(
            "return document.querySelectorAll('img, .pslab-dashboard canvas').length;") >= 12
        # the first dashboard answers a key press with a new timeline, and hovers and zooms
        frame = "return document.querySelector('.pslab-timeline canvas').dataset.frame;"
        before = driver.execute_script(frame)
        handle = driver.find_element(By.CSS_SELECTOR, ".pslab-dashboard .pslab-workers "
                                                      ".noUi-handle")
        handle.send_keys(Keys.ARROW_RIGHT)
        _wait(driver, frame[:-1] + " !== arguments[0];",
              (before,), timeout=30, what="the presenter dashboard to redraw")
        hover_and_zoom(driver, "body", "presenter")
        for size in ("large", "1024"):
            problems = fit_problems(driver, size)
            driver.execute_script("document.querySelector('.pslab-dashboard')"
                                  ".scrollIntoView();")
            shoot(driver, "present", size, ".pslab-dashboard")
            assert problems == [], f"presenter view at {SIZES[size]}: {problems}"
        driver.set_window_size(*SIZES["large"])
    except Exception:
        with capsys.disabled():
            print("\n" + evidence(driver, base, log_path, "presenter"))
        raise


# a saved dashboard's (or knob's) note, whether a "ready" shows, and how many broken-link marks
# show; arguments[0]: which (a CSS selector), arguments[1]: its index on the page
NOT_LIVE = """
const all = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) ' + arguments[0]);
const dash = all[arguments[1] || 0];
const note = dash && dash.querySelector('.pslab-not-live');
if (!note || !note.getBoundingClientRect().height) return null;
const shown = el => el.getBoundingClientRect().height > 0;
return {note: note.innerText, count: all.length,
        ready_shown: [...dash.querySelectorAll('[data-state=ready]')].filter(shown).length,
        broken: [...dash.querySelectorAll('.jupyter-widgets-disconnected')].filter(el =>
            !['none', ''].includes(getComputedStyle(el, '::before').content)).length};
"""


SAVED = ("02_sync_vs_async.ipynb", "05_classic_results.ipynb")  # opened before they run


@pytest.fixture(scope="module")
def saved_lab():
    """JupyterLab showing the widgets a notebook saved (ipywidgets' "saveState" on), the
    notebooks in SAVED trusted in its own trust database; yields (base_url, log_path)."""
    require_browser()
    with tempfile.TemporaryDirectory(prefix="pslab-saved-") as tmp:
        env = dict(os.environ, JUPYTER_DATA_DIR=tmp)  # its own trust database
        subprocess.run([sys.executable, "-m", "jupyter", "trust",
                        *(str(ROOT / "notebooks" / name) for name in SAVED)],
                       env=env, check=True, capture_output=True, timeout=60)
        with jupyterlab(ROOT / "notebooks", env, widget_state=True,
                        log_level="DEBUG") as served:
            yield served


@contextmanager
def _saved(name: str, saved_lab, driver, capsys):
    """Notebook `name` opened in `saved_lab` (its kernel started, no cell run) in the browser,
    its saved widget state restored and every saved view drawn (jupyter_page.saved_views: a
    view jupyterlab_widgets' renderer race left dead is drawn again, and said); yields the
    driver. A failure inside prints and keeps what the server and the browser said
    (bench.browser.evidence); the notebook's kernel is shut down after."""
    base, log_path = saved_lab
    driver.set_window_size(*SIZES["large"])
    try:
        open_notebook(driver, base, name)
        redrawn = saved_views(driver, name)
        if redrawn:
            with capsys.disabled():
                print(f"\n{name}: {redrawn} saved view(s) drawn again: jupyterlab_widgets' "
                      "renderer gave up on them while the saved state was being restored")
        yield driver
    except Exception:
        with capsys.disabled():
            print("\n" + evidence(driver, base, log_path, Path(name).stem))
        raise
    finally:
        shutdown_kernels(base)


def test_a_saved_notebook_draws_its_dashboard_from_the_widget_state(saved_lab, browser, capsys):
    """Opened without a kernel run (trusted, ipywidgets' "saveState" on), notebook 02 draws its
    dashboard's timeline and curves from the data the notebook saved, and says at its top that
    it is a picture until the notebook runs (never "ready"); an untrusted notebook shows the
    static matplotlib picture instead (JupyterLab renders no widget there)."""
    with _saved(SAVED[0], saved_lab, browser, capsys) as driver:
        driver.execute_script(
            "const w = window.jupyterapp.shell.currentWidget; const i = w.content.widgets"
            ".findIndex(c => c.model.sharedModel.getSource().includes('pw.dashboard('));"
            "w.content.activeCellIndex = i; w.content.scrollToItem(i, 'start');")
        # both plots drawn (a wait that returned on the first would race the second)
        drawn = _wait(driver, "const n = [...document.querySelectorAll("
                      "'.pslab-dashboard :is(.pslab-timeline, .pslab-training) canvas')]"
                      ".filter(c => +c.dataset.frame > 0 && c.width > 100).length;"
                      "return n >= 2 && n;", timeout=90, what="the saved dashboard's plots")
        assert drawn == 2
        assert _wait(driver, HOVER, (".jp-NotebookPanel:not(.lm-mod-hidden)",),
                     timeout=10, what="a saved block's hover details")
        # it says plainly that it is a picture and what to press; never "ready", no
        # broken-link marks on its parts
        said = _wait(driver, NOT_LIVE, (".pslab-dashboard", 0), timeout=20,
                     what="the saved dashboard's note")
        assert said["note"].startswith("Not live yet") and "Run All" in said["note"]
        assert said["ready_shown"] == 0 and said["broken"] == 0, said
        resize(driver, "1024")
        shoot(driver, "saved_02", "1024", ".jp-NotebookPanel:not(.lm-mod-hidden) "
               ".pslab-dashboard")


def test_notebook_05s_saved_knobs_say_they_are_pictures(saved_lab, browser, capsys):
    """Notebook 05's knobs (ipywidgets.interactive over a matplotlib picture), opened before
    the notebook runs: each says at its top that it is a picture and what to press, and shows
    no broken-link marks (pslab.notebook.live_note, as the dashboards)."""
    with _saved(SAVED[1], saved_lab, browser, capsys) as driver:
        # all three rendered: JupyterLab renders the saved widgets one after another, and a
        # wait that returned on the first count found 2 of 3 once (1 run in 7 at load 3-4)
        knobs = _wait(driver, "const n = document.querySelectorAll('.jp-NotebookPanel:not("
                      ".lm-mod-hidden) .pslab-knob').length; return n >= 3 && n;", timeout=90,
                      what="the saved knobs")
        assert knobs == 3
        for k in range(knobs):
            driver.execute_script(
                "document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
                ".pslab-knob')[arguments[0]].scrollIntoView();", k)
            said = _wait(driver, NOT_LIVE, (".pslab-knob", k), timeout=20,
                         what=f"knob {k}'s note")
            assert said["note"].startswith("Not live yet") and "Run All" in said["note"]
            assert said["broken"] == 0, said
        resize(driver, "1024")
        shoot(driver, "saved_05", "1024", ".jp-NotebookPanel:not(.lm-mod-hidden) "
               ".pslab-knob")
