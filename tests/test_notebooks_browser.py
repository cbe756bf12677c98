"""The notebooks in a real browser: JupyterLab + headless Chromium, every cell run, a dashboard
slider moved with the keyboard, its plot seen to change, and the round trip timed.

Needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver); no
browser is downloaded. Without them the test skips, or fails when the environment variable CI
is set. The test starts its own JupyterLab on 127.0.0.1 (a free port, no token, a temporary
root, settings and runtime directory, copies of the notebooks) and stops it at the end; every
wait has a timeout, and a page that did not load is retried once.

The round trip (key press on a slider -> new plot pixels on screen) is printed per notebook and
overall (`python -m bench --only browser` measures it against its goals, 20 presses a
dashboard). A browser-drawn timeline must show a block's details on hover and zoom on the wheel.

Each dashboard must fit its cell at a large window (1600x1000) and at a projector's 1024x768
with the file browser open: nothing wider than the cell, every control and read-out on screen,
and its controls, timeline and loss curve on screen together (the dashboard scrolled to the
top).
With PSLAB_BROWSER_SHOTS=<folder>, screenshots of each dashboard at both sizes are saved there
(`make screenshots` writes them to docs/screenshots/). The presenter view (`make present`,
Voila on notebooks/present.ipynb) is checked the same way.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from bench.browser import chromium, evidence, free_port as _free_port, get as _get, jupyterlab
from bench.browser import missing, network_events, serve
from bench.browser import wait as _wait

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PRESSES = 5  # key presses per dashboard
SIZES = {"large": (1600, 1000), "1024": (1024, 768)}  # a desktop, and a projector
RUN_ALL_TIMEOUT = 240  # s, all cells of one notebook
ROUND_TRIPS: list[float] = []

pytestmark = pytest.mark.timeout(1800)


def _require_browser() -> None:
    gone = missing()
    if gone:
        msg = (f"{' and '.join(gone)} not found: apt-get install chromium chromium-driver "
               "(and pip install selenium)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def lab():
    """A hermetic JupyterLab serving copies of the notebooks; yields (base_url, log_path). Its
    log has every HTTP request with its duration (DEBUG), for bench.browser.evidence."""
    _require_browser()
    with jupyterlab(ROOT / "notebooks", log_level="DEBUG") as served:
        yield served


@pytest.fixture(scope="module")
def browser(lab):
    with chromium(SIZES["large"]) as driver:
        yield driver


# ---- JavaScript run in the page -------------------------------------------------------------
STATUS_READY = """
const el = document.querySelector(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard .pslab-status [data-state]');
return !!el && el.getAttribute('data-state') === 'ready';
"""
PANEL = """
const app = window.jupyterapp;
if (!app || !app.shell) return null;
const w = app.shell.currentWidget;
if (!w || !w.content || !w.context || !w.context.path.endsWith(arguments[0])) return null;
"""
READY = PANEL + """
const s = w.sessionContext;
return !!(s && s.isReady && s.session && s.session.kernel && s.session.kernel.status === 'idle'
          && w.content.widgets.length > 0);
"""
PROGRESS = PANEL + """
const cells = w.content.widgets.filter(c => c.model.type === 'code');
const done = cells.filter(c => c.model.executionCount !== null
                          && !(c.promptNode && c.promptNode.textContent.includes('*'))).length;
const total = cells.length;
"""
ERRORS = PANEL + """
const out = [];
w.content.widgets.forEach((c, i) => {
  if (c.model.type !== 'code') return;
  c.model.outputs.toJSON().forEach(o => {
    if (o.output_type === 'error') out.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
  });
  const text = c.node.innerText || '';
  if (text.includes('Error displaying widget')) out.push(`cell ${i}: Error displaying widget`);
});
return out;
"""
# The timeline: a <canvas> the browser draws (pslab.notebook.browser_figure; it counts its
# frames in data-frame), or a PNG <img> (none left: every dashboard's timeline is a canvas). The probe times key press -> new
# pixels and hashes every picture.
TIMELINE = "img.pslab-timeline, .pslab-timeline canvas"
INSTRUMENT = """
const dash = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard');
if (!dash) return false;
const img = dash.querySelector('img.pslab-timeline, .pslab-timeline canvas');
if (!img || (img.tagName === 'CANVAS' && !img.dataset.frame)) return false;
const probe = {t0: null, times: [], srcs: [], hashes: [], loads: 0, tsrc: null};
const hash = () => {
  let c = img;
  if (img.tagName === 'IMG') {
    c = document.createElement('canvas');
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    c.getContext('2d').drawImage(img, 0, 0);
  }
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let h = 0;
  for (let i = 0; i < d.length; i += 7) h = (h * 31 + d[i]) | 0;
  return `${c.width}x${c.height}:${h}`;
};
probe.hashes.push(hash());
document.addEventListener('keydown', () => { probe.t0 = performance.now(); }, true);
const drawn = () => {
  probe.loads += 1;
  if (probe.t0 === null) return;
  const t = performance.now() - probe.t0;
  probe.t0 = null;
  probe.times.push(t);
  probe.srcs.push(probe.tsrc);
  probe.tsrc = null;
  probe.hashes.push(hash());
};
if (img.tagName === 'CANVAS') {  // drawn in place: the frame counter moves after each drawing
  new MutationObserver(drawn).observe(img, {attributes: true, attributeFilter: ['data-frame']});
} else {
  new MutationObserver(() => {
    if (probe.t0 !== null && probe.tsrc === null) probe.tsrc = performance.now() - probe.t0;
  }).observe(img, {attributes: true, attributeFilter: ['src']});
  img.addEventListener('load', drawn);
}
window.__pslabProbe = probe;
dash.scrollIntoView();
return true;
"""

# The pointer over the browser-drawn timeline, point by point, until a block's details show
# (ones that match arguments[1]: any block's by default).
HOVER = """
const scope = document.querySelector(arguments[0]);
const want = new RegExp(arguments[1] || 'step|round');
const c = scope.querySelector('.pslab-dashboard .pslab-timeline canvas');
if (!c) return null;
const tip = c.parentElement.querySelector('.figure-tip');
const r = c.getBoundingClientRect();
for (let y = r.top + 30; y < r.bottom - 42; y += 5)
  for (let x = r.left + 70; x < r.right - 12; x += 7) {
    c.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
    if (tip.style.display === 'block' && want.test(tip.textContent)) {
      const text = tip.textContent;
      c.dispatchEvent(new MouseEvent('mouseleave', {}));  // the details go with the pointer
      return tip.style.display === 'none' && text;
    }
  }
return null;
"""

# The wheel over the timeline zooms in (new pixels), a double-click shows the whole run again.
ZOOM = """
const scope = document.querySelector(arguments[0]);
const c = scope.querySelector('.pslab-dashboard .pslab-timeline canvas');
const r = c.getBoundingClientRect();
const at = {clientX: r.left + r.width * 0.6, clientY: r.top + r.height / 2, bubbles: true};
const pixels = () => c.toDataURL();
const frames = [pixels()];
for (let k = 0; k < 3; k++) c.dispatchEvent(new WheelEvent('wheel', {...at, deltaY: -100,
                                                                     cancelable: true}));
await new Promise(done => setTimeout(done, 50));
frames.push(pixels());
c.dispatchEvent(new MouseEvent('dblclick', at));
await new Promise(done => setTimeout(done, 50));
frames.push(pixels());
return {zoomed: frames[1] !== frames[0], back: frames[2] === frames[0]};
"""


def _hover_and_zoom(driver, scope: str, name: str) -> None:
    """A browser-drawn timeline shows a block's worker, kind, step, start and end on hover,
    and zooms (wheel) and unzooms (double-click)."""
    text = _wait(driver, HOVER, (scope,), timeout=10, what=f"{name}: a block's hover details")
    assert ("step" in text or "round" in text) and "start" in text and " s, end " in text, text
    assert text.split(":")[0].startswith(("G", "GPU", "S", "server", "C")), text
    if name.startswith("04"):  # the NAS timeline: a child's block says what it was
        text = _wait(driver, HOVER, (scope, "held-out accuracy"), timeout=10,
                     what=f"{name}: a child's hover details")
        assert text.startswith("C") and "child " in text and "%" in text, text
    zoom = driver.execute_script("return (async () => {" + ZOOM + "})();", scope)
    assert zoom == {"zoomed": True, "back": True}, f"{name}: {zoom}"


# Every box of a dashboard inside its cell, nothing scrolled sideways, every control with its
# description and read-out visible: what a class sees on a projector.
FIT = """
const scope = arguments[0] ? document.querySelector(arguments[0]) : document;
const out = [];
scope.querySelectorAll('.pslab-dashboard').forEach((dash, d) => {
  const cell = dash.closest('.jp-OutputArea-output') || dash.parentElement;
  const box = cell.getBoundingClientRect();
  if (dash.scrollWidth > dash.clientWidth + 1)
    out.push(`dashboard ${d}: scrolls sideways (${dash.scrollWidth} > ${dash.clientWidth} px)`);
  const inside = (el, what) => {
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) out.push(`dashboard ${d}: ${what} is hidden`);
    else if (r.right > box.right + 1 || r.left < box.left - 1)
      out.push(`dashboard ${d}: ${what} overflows its cell (${Math.round(r.left)}-` +
               `${Math.round(r.right)} px, cell ${Math.round(box.left)}-${Math.round(box.right)})`);
  };
  dash.querySelectorAll('[class*="pslab-"]').forEach(el => {
    const name = [...el.classList].find(c => c.startsWith('pslab-'));
    if (name === 'pslab-dashboard' || el.closest('details:not([open])')) return;
    if (name === 'pslab-tip') return;  // a block's hover details: shown only under the pointer
    if (el.tagName !== 'IMG' && !el.querySelector('canvas') && !el.textContent.trim())
      return;  // an empty line: nothing to see
    inside(el, name);
    el.querySelectorAll('.widget-label, .widget-readout, select').forEach(part => {
      if (part.tagName === 'SELECT' || part.textContent.trim())  // an empty label is no text
        inside(part, `${name} ${part.className.split(' ')[0]}`);
    });
  });
});
return out;
"""


# Each dashboard scrolled to the top of the page: its controls, its timeline, its loss curve
# (the NAS dashboard's reward curve), its status, its bold numbers and the lines that explain
# them must all be inside the visible part of the page together, so that a class sees the
# curve move and reads why while a slider moves.
TOGETHER = """
const scope = arguments[0] ? document.querySelector(arguments[0]) : document;
const out = [];
const scroller = el => {
  for (let p = el.parentElement; p; p = p.parentElement) {
    const st = getComputedStyle(p);
    if (/(auto|scroll)/.test(st.overflowY) && p.scrollHeight > p.clientHeight + 1) return p;
  }
  return null;
};
scope.querySelectorAll('.pslab-dashboard').forEach((dash, d) => {
  const box = scroller(dash);
  const top = dash.getBoundingClientRect().top;
  if (box) box.scrollTop += top - box.getBoundingClientRect().top - 4;
  else window.scrollBy(0, top - 4);
  const view = box ? box.getBoundingClientRect() : {top: 0, bottom: window.innerHeight};
  const low = Math.max(view.top, 0), high = Math.min(view.bottom, window.innerHeight);
  const said = el => el && el.innerText.trim() ? [el] : [];  // an empty line shows nothing
  const parts = [['the controls', [...dash.querySelectorAll('.widget-slider, .widget-dropdown')]],
                 ['the timeline', [dash.querySelector('img.pslab-timeline, .pslab-timeline canvas')]],
                 ['the loss curve', [dash.querySelector(
                     'img.pslab-training, .pslab-training canvas, .pslab-rewards canvas')]],
                 ['the status', [dash.querySelector('.pslab-status [data-state]')]],
                 ['the bold numbers', [dash.querySelector('.pslab-numbers b')]],
                 ['the explanation lines', said(dash.querySelector('.pslab-why'))]];
  for (const [what, els] of parts) {
    for (const el of els) {
      if (!el) { out.push(`dashboard ${d}: no ${what}`); continue; }
      const r = el.getBoundingClientRect();
      if (r.height < 2 || r.top < low - 1 || r.bottom > high + 1)
        out.push(`dashboard ${d}: ${what} not on screen with the rest (${Math.round(r.top)}-` +
                 `${Math.round(r.bottom)} px, visible ${Math.round(low)}-${Math.round(high)})`);
    }
  }
});
return out;
"""


HANDLE_STATE = """
const h = arguments[0], r = h.getBoundingClientRect(), hidden = [];
for (let e = h; e && e !== document.body; e = e.parentElement) {
  const st = getComputedStyle(e);
  if (st.display === 'none' || st.visibility !== 'visible' || st.contentVisibility === 'hidden'
      || e.inert || e.hasAttribute('disabled'))
    hidden.push(`${e.tagName}.${[...e.classList].join('.')}: display ${st.display}, `
                + `visibility ${st.visibility}, content-visibility ${st.contentVisibility}`);
}
const dialog = document.querySelector('.jp-Dialog');
const active = document.activeElement;
return {connected: h.isConnected, rect: [r.x, r.y, r.width, r.height].map(Math.round),
        window: [innerWidth, innerHeight], hidden,
        dialog: dialog ? dialog.innerText.slice(0, 200) : null,
        focus: active ? `${active.tagName}.${[...active.classList].join('.')}` : null};
"""


def _press(driver, handle, key: str, what: str) -> None:
    """A key on a slider's handle, in the middle of the window first (where a presenter has
    the slider they move); if the browser refuses the key, what the page shows there."""
    from selenium.common.exceptions import ElementNotInteractableException

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", handle)
    try:
        handle.send_keys(key)
    except ElementNotInteractableException as exc:
        raise AssertionError(f"{what}: the browser refused a key on the slider: "
                             f"{driver.execute_script(HANDLE_STATE, handle)}") from exc


def _resize(driver, size: str) -> None:
    """The window at SIZES[size], JupyterLab's file browser open (as a presenter has it)."""
    driver.set_window_size(*SIZES[size])
    driver.execute_script("window.jupyterapp && window.jupyterapp.commands.execute("
                          "'filebrowser:activate');")
    time.sleep(1.5)  # layout settles (JupyterLab re-lays the panels on resize)


def _fit_problems(driver, size: str, scope: str | None = None) -> list[str]:
    """Resize the window (`_resize`) and list what does not fit."""
    _resize(driver, size)
    return driver.execute_script(FIT, scope) + driver.execute_script(TOGETHER, scope)


def _shoot(driver, name: str, size: str, selector: str) -> None:
    shots = os.environ.get("PSLAB_BROWSER_SHOTS")  # a folder: keep pictures for a look
    if not shots:
        return
    from selenium.webdriver.common.by import By

    Path(shots).mkdir(parents=True, exist_ok=True)
    stem = Path(name).stem
    driver.save_screenshot(f"{shots}/{stem}_{size}_window.png")
    driver.find_element(By.CSS_SELECTOR, selector).screenshot(f"{shots}/{stem}_{size}.png")
    if size == "1024":  # the whole dashboard at the same width (a taller window, same layout)
        driver.set_window_size(SIZES[size][0], 1800)
        time.sleep(1.0)
        driver.execute_script("document.querySelector(arguments[0]).scrollIntoView();",
                              selector)
        driver.find_element(By.CSS_SELECTOR, selector).screenshot(
            f"{shots}/{stem}_{size}_full.png")
        driver.set_window_size(*SIZES[size])


def _open(driver, base: str, name: str) -> None:
    """Open a notebook in a fresh workspace and wait for its kernel; one retry."""
    for attempt in (1, 2):
        try:
            driver.get(f"{base}/lab/tree/{name}?reset")
            _wait(driver, READY, (name,), timeout=90, what=f"{name} and its kernel")
            return
        except Exception:
            if attempt == 2:
                raise
            time.sleep(2)


def _shutdown_kernels(base: str) -> None:
    try:
        sessions = json.loads(_get(f"{base}/api/sessions"))
        for s in sessions:
            req = urllib.request.Request(f"{base}/api/sessions/{s['id']}", method="DELETE")
            urllib.request.urlopen(req, timeout=10).close()  # noqa: S310
    except OSError:
        pass


KERNEL_LATENCIES = PANEL + """
const done = arguments[arguments.length - 1];
const code = "import pslab.notebook.widgets as _w; print(_w.Dashboard.latest.latencies_ms if "
             + "_w.Dashboard.latest else [])";
const future = w.sessionContext.session.kernel.requestExecute({code: code, silent: false,
                                                                store_history: false});
let text = '';
future.onIOPub = msg => { if (msg.header.msg_type === 'stream') text += msg.content.text; };
future.done.then(() => done(text), () => done(''));
"""


def _kernel_latencies(driver, name: str) -> list[float]:
    """The dashboard's own timing of its fast path, read from the kernel (ms per change)."""
    text = driver.execute_async_script(
        KERNEL_LATENCIES.replace("return null;", "{ arguments[arguments.length - 1]('');"
                                 " return; }"), name)
    try:
        return [float(x) for x in json.loads(text or "[]")]
    except ValueError:
        return []


# the workers slider's read-out and what the bold numbers say it is (NAS: K, the controllers)
SHOWN_WORKERS = """
const dash = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard');
const status = dash.querySelector('.pslab-status [data-state]');
const text = dash.querySelector('.pslab-numbers').innerText;
const m = text.match(/(\\d+) workers|K=(\\d+)/);
return {state: status && status.getAttribute('data-state'),
        readout: dash.querySelector('.pslab-workers .widget-readout').textContent.trim(),
        numbers: m ? (m[1] || m[2]) : text, opacity: getComputedStyle(
            dash.querySelector('.pslab-numbers')).opacity};
"""


def _quick_presses_end_ready_with_their_numbers(driver, handle, name: str) -> None:
    """Three key presses in a row, no waiting: once 'ready' has held for a while, the bold
    numbers are of the slider's value on screen, not of an earlier one, and not faded."""
    from selenium.webdriver.common.keys import Keys

    for _ in range(3):
        handle.send_keys(Keys.ARROW_LEFT)
    deadline, since = time.monotonic() + 60, None
    while time.monotonic() < deadline:
        shown = driver.execute_script(SHOWN_WORKERS)
        if shown["state"] != "ready":
            since = None
        elif since is None:
            since = time.monotonic()
        elif time.monotonic() - since > 2.0:
            break
        time.sleep(0.1)
    assert shown["state"] == "ready", f"{name}: not ready after quick presses: {shown}"
    assert shown["numbers"] == shown["readout"] and float(shown["opacity"]) == 1.0, \
        f"{name}: 'ready' with numbers of another value: {shown}"


def _switch_mode_to_diverge(driver, dash_css: str, name: str) -> str:
    """The learning rate to its top end (where there is one), then the mode switched through
    the page (sync <-> async): a core dashboard's run diverges and its red line says why. The
    explanation lines shown, once 'ready'."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    lr = driver.find_elements(By.CSS_SELECTOR, f"{dash_css} :is(.pslab-lr) .noUi-handle")
    if lr:
        for _ in range(16):  # past the top: the slider stops there
            lr[0].send_keys(Keys.ARROW_RIGHT)
        _wait(driver, STATUS_READY, timeout=120, what=f"{name}: ready at the largest lr")
    if not driver.find_elements(By.CSS_SELECTOR, f"{dash_css} .pslab-mode select"):
        # a pipeline dashboard (08): no update mode and no learning rate to diverge with; its
        # schedule is the switch, and the page must still fit with the new schedule's numbers
        select = Select(driver.find_element(By.CSS_SELECTOR, f"{dash_css} .pslab-schedule "
                                                             "select"))
        now = select.first_selected_option.get_attribute("value")
        select.select_by_value(next(o.get_attribute("value") for o in select.options
                                    if o.get_attribute("value") != now))
        _wait(driver, STATUS_READY, timeout=120, what=f"{name}: ready after a new schedule")
        return driver.execute_script(f"return document.querySelector('{dash_css} "
                                     ".pslab-numbers').innerText;")
    select = Select(driver.find_element(By.CSS_SELECTOR, f"{dash_css} .pslab-mode select"))
    options = [o.get_attribute("value") for o in select.options]
    now = select.first_selected_option.get_attribute("value")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});",
                          select._el)  # noqa: SLF001
    want = next(o for o in ("async", "sync") if o in options and o != now)
    select.select_by_value(want)
    nas = not driver.find_elements(By.CSS_SELECTOR, f"{dash_css} .pslab-mode option[value=SSP]"
                                   ) and "allreduce" not in options
    _wait(driver, STATUS_READY[:-2] + " && (arguments[1] || document.querySelector("
          f"'{dash_css} .pslab-numbers').innerText.startsWith(arguments[0]));",
          (want, nas), timeout=120, what=f"{name}: ready after the switch to {want}")
    text = driver.execute_script(f"return document.querySelector('{dash_css} .pslab-why')"
                                 ".innerText;")
    if driver.find_elements(By.CSS_SELECTOR, f"{dash_css} .pslab-staleness"):
        # a core dashboard at lr 10: the run diverged, and a red line says why
        assert "DIVERGED. Why" in text, f"{name}: no reason on screen: {text!r}"
    return text


# what a dashboard shows: its status, the start of its numbers and its sliders' read-outs
ON_SCREEN = """
const d = document.querySelector(arguments[0]);
return {status: d.querySelector('.pslab-status').innerText,
        numbers: d.querySelector('.pslab-numbers').innerText.slice(0, 90),
        readouts: [...d.querySelectorAll('.widget-readout')].map(r => r.textContent.trim())};
"""


def _most_rows_all_named(driver, dash_css: str, img, name: str) -> None:
    """The workers and (where there is one) the shards slider at their ends: the most rows the
    timeline shows. A core dashboard (figure 000/001's palettes) names every one of them, in
    columns taking turns where they are close (browser_figure.js)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    if not driver.find_elements(By.CSS_SELECTOR, f"{dash_css} .pslab-staleness"):
        return  # NAS, ZeRO, pipelines: their own rows (the NAS note says which are drawn)
    for part in ("shards", "workers"):  # the workers last: the numbers then say 16 workers
        for handle in driver.find_elements(By.CSS_SELECTOR, f"{dash_css} .pslab-{part} "
                                                            ".noUi-handle"):
            handle.send_keys(Keys.END)
    # "ready" of these values, not the one still on screen before the kernel has them
    try:
        _wait(driver, STATUS_READY[:-2] + " && document.querySelector(arguments[0] + ' "
              ".pslab-numbers').innerText.includes('16 workers');", (dash_css,), timeout=120,
              what=f"{name}: ready at the most workers")
    except TimeoutError as exc:  # say what the page shows instead
        raise TimeoutError(f"{exc}; on screen: {driver.execute_script(ON_SCREEN, dash_css)}")
    readout = driver.execute_script(f"return document.querySelector('{dash_css} .pslab-workers"
                                    " .widget-readout').textContent.trim();")
    assert readout == "16", f"{name}: the workers slider at {readout}"
    # "ready" comes from the kernel; the canvas draws the 16 rows on its next animation frame:
    # read the names of that frame, not of the one before (it had 6 rows in one column)
    _wait(driver, "return +arguments[0].dataset.rows >= 16;", (img,), timeout=20,
          what=f"{name}: the timeline drawn with the 16 workers' rows")
    every, columns = img.get_attribute("data-every"), img.get_attribute("data-columns")
    assert every == "1", f"{name}: at 16 workers 1 row in {every} named"
    assert int(columns) >= 2, f"{name}: 16 workers' names in {columns} column(s)"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_and_dashboard_answers_the_keyboard(name, lab, browser, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, log_path = lab
    driver = browser
    try:
        _open(driver, base, name)
        t0 = time.monotonic()
        # clear the saved outputs and counts first, so "every cell has run" means this run
        driver.execute_script("return window.jupyterapp.commands.execute("
                              "'notebook:clear-all-cell-outputs');")
        _wait(driver, PROGRESS + "return done === 0;", (name,), timeout=20,
              what="the saved outputs to be cleared")
        driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
        time.sleep(1.0)
        _wait(driver, PROGRESS + "return (done === total && w.sessionContext.session.kernel"
              ".status === 'idle') ? {done, total} : null;", (name,),
              timeout=RUN_ALL_TIMEOUT, what=f"all cells of {name} to run", interval=0.5)
        run_s = time.monotonic() - t0
        errors = driver.execute_script(ERRORS, name)
        assert errors == [], f"{name}: error outputs: {errors}"

        has_dashboard = driver.execute_script(
            "return !!document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
            ".pslab-dashboard :is(img.pslab-timeline, .pslab-timeline)');")
        if not has_dashboard:
            with capsys.disabled():
                print(f"\n{name}: ran in {run_s:.1f} s, no dashboard")
            return
        _wait(driver, STATUS_READY, timeout=60, what="the dashboard to be ready")
        _wait(driver, INSTRUMENT, timeout=20, what="dashboard image to instrument")
        handle = driver.find_element(
            By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard "
                             ".pslab-workers .noUi-handle")
        img = driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) "
                                                   f".pslab-dashboard :is({TIMELINE})")
        before_png = img.screenshot_as_png
        for k in range(PRESSES):
            n = len(driver.execute_script("return window.__pslabProbe.times;"))
            # a keyed timeline (pslab.notebook.prefetch) may draw a frame sent ahead at once:
            # then wait for the kernel's own answer too, so "ready" is of this press
            key = img.get_attribute("data-key") or ""
            _press(driver, handle, Keys.ARROW_RIGHT, f"{name}: key press {k + 1}")
            _wait(driver, f"const c = arguments[0]; return window.__pslabProbe.times.length > "
                  f"{n} && (!c.dataset.key || (c.dataset.source === 'kernel' && "
                  f"c.dataset.key !== arguments[1]));", (img, key), timeout=20,
                  what=f"the timeline to change after key press {k + 1}")
            _wait(driver, STATUS_READY, timeout=60, what="the dashboard to settle")
        probe = driver.execute_script("return window.__pslabProbe;")
        after_png = img.screenshot_as_png
        if img.tag_name == "canvas":
            _hover_and_zoom(driver, ".jp-NotebookPanel:not(.lm-mod-hidden)", name)
        _quick_presses_end_ready_with_their_numbers(driver, handle, name)
        dash_css = ".jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard"
        _switch_mode_to_diverge(driver, dash_css, name)
        for size in ("large", "1024"):
            problems = _fit_problems(driver, size, ".jp-NotebookPanel:not(.lm-mod-hidden)")
            driver.execute_script(f"document.querySelector('{dash_css}').scrollIntoView();")
            _shoot(driver, name, size, dash_css)
            assert problems == [], f"{name} at {SIZES[size]}: {problems}"
        driver.set_window_size(*SIZES["large"])
        # every row of the timeline named, or a note on it says which (browser_figure.js)
        every, note = img.get_attribute("data-every"), img.get_attribute("data-note") or ""
        assert every in (None, "1") or "named" in note, f"{name}: rows left unnamed"
        _most_rows_all_named(driver, dash_css, img, name)
        hashes = probe["hashes"]
        assert len(set(hashes)) == len(hashes), f"{name}: a key press left the plot unchanged"
        assert before_png != after_png, f"{name}: the timeline on screen did not change"
        times = probe["times"]
        ROUND_TRIPS.extend(times)
        kernel = _kernel_latencies(driver, name)
        with capsys.disabled():
            print(f"\n{name}: ran in {run_s:.1f} s; key press -> new timeline pixels: median "
                  f"{statistics.median(times):.0f} ms over {len(times)} presses "
                  f"({', '.join(f'{t:.0f}' for t in times)}); all notebooks so far: median "
                  f"{statistics.median(ROUND_TRIPS):.0f} ms over {len(ROUND_TRIPS)}\n"
                  f"  of which key press -> new image received: "
                  f"{', '.join('-' if t is None else f'{t:.0f}' for t in probe['srcs'])} ms;"
                  f" kernel fast path: "
                  f"{', '.join(f'{t:.0f}' for t in kernel[-PRESSES:])} ms")
        assert statistics.median(times) < 5000, "the dashboard answers far too slowly"
    except Exception:
        with capsys.disabled():
            print("\n" + evidence(driver, base, log_path, Path(name).stem))
        raise
    finally:
        try:  # a failed request or a dialog that did not fail this test is still worth a line
            events = network_events(driver.execute_script("return window.__pslabNet;"))
            if events:  # with the browser's own words for them (net::ERR_...)
                events += [f"console: {e['message'][:200]}" for e in driver.get_log("browser")
                           if e["level"] == "SEVERE"][-10:]
                with capsys.disabled():
                    print(f"\n{name}: the page's network events:\n  " + "\n  ".join(events))
            driver.execute_script("window.jupyterapp && window.jupyterapp.commands.execute("
                                  "'docmanager:save');")
        except Exception:
            pass
        _shutdown_kernels(base)



@pytest.fixture(scope="module")
def presenter():
    """`make present`'s server: Voila on notebooks/present.ipynb, on 127.0.0.1, stopped after."""
    _require_browser()
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
        _hover_and_zoom(driver, "body", "presenter")
        for size in ("large", "1024"):
            problems = _fit_problems(driver, size)
            driver.execute_script("document.querySelector('.pslab-dashboard')"
                                  ".scrollIntoView();")
            _shoot(driver, "present", size, ".pslab-dashboard")
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


@contextmanager
def _saved(name: str, capsys):
    """JupyterLab showing the widgets `name` saved (trusted, ipywidgets' "saveState" on), its
    kernel not run, and a browser on it; yields the driver. A failure inside prints and keeps
    what the server and the browser said (bench.browser.evidence)."""
    _require_browser()
    with tempfile.TemporaryDirectory(prefix="pslab-saved-") as tmp:
        env = dict(os.environ, JUPYTER_DATA_DIR=tmp)  # its own trust database
        subprocess.run([sys.executable, "-m", "jupyter", "trust", str(ROOT / "notebooks" / name)],
                       env=env, check=True, capture_output=True, timeout=60)
        with jupyterlab(ROOT / "notebooks", env, widget_state=True, log_level="DEBUG") as (
                base, log_path), chromium(SIZES["large"]) as driver:
            try:
                _open(driver, base, name)
                yield driver
            except Exception:
                with capsys.disabled():
                    print("\n" + evidence(driver, base, log_path, Path(name).stem))
                raise


def test_a_saved_notebook_draws_its_dashboard_from_the_widget_state(capsys):
    """Opened without a kernel run (trusted, ipywidgets' "saveState" on), notebook 02 draws its
    dashboard's timeline and curves from the data the notebook saved, and says at its top that
    it is a picture until the notebook runs (never "ready"); an untrusted notebook shows the
    static matplotlib picture instead (JupyterLab renders no widget there)."""
    name = "02_sync_vs_async.ipynb"
    with _saved(name, capsys) as driver:
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
        _resize(driver, "1024")
        _shoot(driver, "saved_02", "1024", ".jp-NotebookPanel:not(.lm-mod-hidden) "
               ".pslab-dashboard")


def test_notebook_05s_saved_knobs_say_they_are_pictures(capsys):
    """Notebook 05's knobs (ipywidgets.interactive over a matplotlib picture), opened before
    the notebook runs: each says at its top that it is a picture and what to press, and shows
    no broken-link marks (pslab.notebook.live_note, as the dashboards)."""
    with _saved("05_classic_results.ipynb", capsys) as driver:
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
        _resize(driver, "1024")
        _shoot(driver, "saved_05", "1024", ".jp-NotebookPanel:not(.lm-mod-hidden) "
               ".pslab-knob")
