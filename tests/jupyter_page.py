"""JupyterLab in headless Chromium, seen as a class sees it: the page's scripts and the driver's
moves shared by the browser tests (tests/test_notebooks_browser.py, the notebooks run live;
tests/test_saved_and_presenter_browser.py, the presenter view and notebooks opened unrun)."""
from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from bench.browser import get as _get, missing
from bench.browser import wait as _wait

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"large": (1600, 1000), "1024": (1024, 768)}  # a desktop, and a projector
RUN_ALL_TIMEOUT = 240  # s, all cells of one notebook


def require_browser() -> None:
    gone = missing()
    if gone:
        msg = (f"{' and '.join(gone)} not found: apt-get install chromium chromium-driver "
               "(and pip install selenium)")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


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


def hover_and_zoom(driver, scope: str, name: str) -> None:
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


def press(driver, handle, key: str, what: str) -> None:
    """A key on a slider's handle, in the middle of the window first (where a presenter has
    the slider they move); if the browser refuses the key, what the page shows there."""
    from selenium.common.exceptions import ElementNotInteractableException

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", handle)
    try:
        handle.send_keys(key)
    except ElementNotInteractableException as exc:
        raise AssertionError(f"{what}: the browser refused a key on the slider: "
                             f"{driver.execute_script(HANDLE_STATE, handle)}") from exc


# The layout settled after a resize: the window at the asked size (arguments[0], [1]) and the
# boxes of the side panel, the notebook, the dashboards and their canvases (with the canvases'
# own pixel sizes, which a redraw sets) unchanged for 8 samples in a row, one a frame and 50 ms
# apart; false after 15 s without that.
SETTLED = """
const [w, h] = arguments;
const boxes = () => JSON.stringify([outerWidth, outerHeight, ...[...document.querySelectorAll(
    '#jp-left-stack, .jp-NotebookPanel:not(.lm-mod-hidden), .pslab-dashboard, '
    + '.pslab-dashboard canvas')].map(el => {
  const r = el.getBoundingClientRect();
  return [r.x, r.y, r.width, r.height, el.width || 0, el.height || 0];
})]);
const deadline = performance.now() + 15000;
let last = null, same = 0;
while (performance.now() < deadline) {
  const now = boxes();
  same = outerWidth === w && outerHeight === h && now === last ? same + 1 : 0;
  if (same >= 8) return true;
  last = now;
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 50)));
}
return false;
"""


def resize(driver, size: str) -> None:
    """The window at SIZES[size], JupyterLab's file browser open (as a presenter has it), once
    the layout has settled (JupyterLab re-lays the panels on resize, the dashboards redraw)."""
    driver.set_window_size(*SIZES[size])
    driver.execute_script("window.jupyterapp && window.jupyterapp.commands.execute("
                          "'filebrowser:activate');")
    driver.execute_script("return (async () => {" + SETTLED + "})();", *SIZES[size])


def fit_problems(driver, size: str, scope: str | None = None) -> list[str]:
    """Resize the window (`resize`) and list what does not fit."""
    resize(driver, size)
    return driver.execute_script(FIT, scope) + driver.execute_script(TOGETHER, scope)


def shoot(driver, name: str, size: str, selector: str) -> None:
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


# The saved widget views of the notebook in front (trusted, ipywidgets' "saveState" on), once
# JupyterLab's widget manager has restored the state the notebook saved and every view has
# settled (none still "Loading widget..."); null before. jupyterlab_widgets 3.0.x has a
# check-then-act race there: a view's renderer looks for its model every 100 ms for 2 s, then, if
# the manager says it has restored, gives up for good ("Error displaying widget: model not
# found"); when the restore registers the saved models just after a renderer's last look and
# finishes before it wakes, the view is dead though its model is there (all 3 of notebook 05's
# knobs at once, load 3-11; a teacher sees the same, and a reload brings them back).
# `dead`: those views' model ids; arguments[0] true: draw them again, as jupyterlab_widgets' own
# re-render does (`redrawn`). `missing`: a view whose model the saved state lacks; `broken`: any
# other widget error. The manager is found through the notebook's widget renderer (its private
# `_manager`: none there -> an error, not a silent pass).
SAVED_VIEWS = """
const D = 'application/vnd.jupyter.widget-view+json';
const w = window.jupyterapp.shell.currentWidget;
if (!w || !w.content || !w.content.rendermime) return null;
const probe = w.content.rendermime.createRenderer(D);
if (!probe._manager) throw new Error('jupyterlab_widgets changed: no _manager on its renderer');
const manager = await Promise.race([probe._manager.promise,
                                    new Promise(done => setTimeout(done, 100))]);
probe.dispose();
if (!manager || !manager.restoredStatus) return null;
const out = {views: 0, loading: 0, dead: [], redrawn: 0, missing: [], broken: []};
for (const cell of w.content.widgets) {
  if (cell.model.type !== 'code' || !cell.outputArea) continue;
  const area = cell.outputArea;
  area.widgets.forEach((item, j) => {
    const output = j < area.model.length ? area.model.get(j) : null;
    const view = output && output.data[D];
    if (!view || !view.model_id) return;
    out.views += 1;
    const renderer = [...item.children()].find(c => c.mimeType === D && 'renderModel' in c);
    const text = renderer ? renderer.node.textContent : 'Loading widget...';
    if (text.startsWith('Loading widget')) out.loading += 1;
    else if (text.startsWith('Error displaying widget: model not found')) {
      if (!manager.has_model(view.model_id)) out.missing.push(view.model_id);
      else if (!arguments[0]) out.dead.push(view.model_id);
      else {
        renderer.node.textContent = '';
        renderer.removeClass('jupyter-widgets');
        renderer.renderModel(output);
        out.redrawn += 1;
      }
    } else if (text.startsWith('Error displaying widget')) out.broken.push(text.slice(0, 200));
  });
}
return out.loading ? null : out;
"""


def saved_views(driver, name: str, timeout: float = 90) -> int:
    """Wait until the notebook in front has restored its saved widget state and every saved
    view has settled (SAVED_VIEWS); redraw the views jupyterlab_widgets' renderer race left
    dead. Fails on a view whose model the saved state lacks, or on any other widget error.
    Returns how many views were redrawn (0 but for the race)."""
    script = "return (async () => {" + SAVED_VIEWS + "})();"
    state = _wait(driver, script, (False,), timeout=timeout,
                  what=f"{name}: the saved widget state restored and its views settled")
    assert state["views"] > 0, f"{name}: no saved widget view"
    assert state["missing"] == [] and state["broken"] == [], f"{name}: {state}"
    if not state["dead"]:
        return 0
    redrawn = driver.execute_script(script, True)
    assert redrawn and redrawn["redrawn"] == len(state["dead"]), f"{name}: {state} {redrawn}"
    return redrawn["redrawn"]


def open_notebook(driver, base: str, name: str) -> None:
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


def shutdown_kernels(base: str) -> None:
    try:
        sessions = json.loads(_get(f"{base}/api/sessions"))
        for s in sessions:
            req = urllib.request.Request(f"{base}/api/sessions/{s['id']}", method="DELETE")
            urllib.request.urlopen(req, timeout=10).close()  # noqa: S310
    except OSError:
        pass
