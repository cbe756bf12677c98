"""Where one key press's time goes, from the keydown to the timeline's new pixels.

    python bench/browser_trace.py [--steps 20] [--presets default 000]

The same real JupyterLab and headless Chromium as bench/browser_latency.py, with clocks read
at each hop of a workers-slider press (all on one machine, so the page's
`performance.timeOrigin + performance.now()` and the kernel's `time.time()` are one clock):

    key       the keydown in the page
    ws send   the page's first websocket send after it (the slider's comm message)
    kernel    the dashboard's refresh starts in the kernel (the comm message handled)
    run       the run is there (the clock re-simulated: the run cache is emptied first)
    sent      the timeline's data handed to the kernel's comm (`BrowserFigure.show` returned)
    model     the timeline's model changed in the page (the message received and decoded)
    drawn     the timeline's canvas drew the kernel's frame

and "refresh after sent": the kernel's work after the timeline (side panel, captions). The
page forgets the frames sent ahead before each press, so this is the kernel's round trip.
Prints the median of each hop over the presses (TRACE_RAW=1: the first presses' raw marks).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[1]

PAGE = """
const dash = document.querySelector(arguments[0]);
const canvas = dash && dash.querySelector('.pslab-timeline canvas');
const ready = dash && dash.querySelector('.pslab-status [data-state="ready"]');
if (!ready || !canvas || !canvas.dataset.frame) return false;
const now = () => performance.timeOrigin + performance.now();
const trace = {presses: [], cur: null};
document.addEventListener('keydown', () => {
  trace.cur = {key: now(), recv: []};
  trace.presses.push(trace.cur);
}, true);
const send = WebSocket.prototype.send;
const hooked = new WeakSet();
WebSocket.prototype.send = function (data) {
  const c = trace.cur;
  if (c && c.send === undefined) c.send = now();
  if (!hooked.has(this)) {
    hooked.add(this);
    this.addEventListener('message', ev => {
      const c = trace.cur;
      if (!c || now() - c.key > 300) return;
      // (this listener runs after JupyterLab's own: a message's time here is after it was
      // handled, so the raw dump only says which messages came, and how big)
      const d = ev.data, text = typeof d === 'string' ? d
        : new TextDecoder().decode(new Uint8Array(d).slice(0, 4000));
      const m = text.match(/"msg_type": ?"(\w+)"/);
      c.recv.push([now(), typeof d === 'string' ? d.length : d.byteLength, m ? m[1] : '?']);
    });
  }
  return send.call(this, data);
};
new MutationObserver(() => {
  const c = trace.cur;
  if (!c || c.drawn !== undefined || canvas.dataset.source !== 'kernel') return;
  c.drawn = now();
  c.model = parseFloat(canvas.dataset.changed);
}).observe(canvas, {attributes: true, attributeFilter: ['data-frame']});
window.__pslabTrace = trace;
dash.scrollIntoView();
return true;
"""
# kernel side: the dashboard's refresh, its run and the timeline's send, timed in place
PATCH = """
import time as _t, pslab.widgets as _w
_d = _w.Dashboard.latest
_T = []
def _wrap(obj, name, key):
    orig = getattr(obj, name)
    def timed(*a, **k):
        if key == 'kernel':
            _T.append({})
        out = orig(*a, **k)
        if _T:
            _T[-1][key] = _t.time() * 1000
        return out
    setattr(obj, name, timed)
_orig_refresh = _d.refresh
def _refresh():
    _T.append({'kernel': _t.time() * 1000})
    _orig_refresh()
    _T[-1]['done'] = _t.time() * 1000
_d.refresh = _refresh
_wrap(_d.view, 'step', 'run')
_wrap(_d.figures['timeline'], 'show', 'sent')
"""


def trace(driver, base: str, preset: str, steps: int, out: Path) -> list[dict]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from bench.browser import wait
    from bench.browser_latency import KERNEL, PANEL, READY

    driver.get(f"{base}/lab/tree/bench_{preset}.ipynb?reset")
    wait(driver, READY, timeout=120, what="the notebook and its kernel")
    driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
    wait(driver, PAGE, (PANEL,), timeout=120, what=f"dashboard {preset} to be ready")
    driver.execute_async_script(KERNEL, PATCH)
    handle = driver.find_element(By.CSS_SELECTOR, f"{PANEL} .pslab-workers .noUi-handle")
    clear = "_d._stop_ahead(); _d.figures['timeline'].forget(); _d.view.cache._runs.clear()"
    for k in range(steps):
        driver.execute_async_script(KERNEL, clear)
        handle.send_keys(Keys.ARROW_RIGHT if k % 2 == 0 else Keys.ARROW_LEFT)
        wait(driver, f"const p = window.__pslabTrace.presses; return p.length > {k} && "
             f"p[{k}].drawn !== undefined && !!document.querySelector('{PANEL} .pslab-status "
             "[data-state=\"ready\"]');", timeout=60, interval=0.05,
             what=f"dashboard {preset}: press {k + 1} drawn")
    dump = out / f"kernel_{preset}.json"
    driver.execute_async_script(KERNEL, f"import json as _j; open({str(dump)!r}, 'w')"
                                ".write(_j.dumps(_T))")
    page = driver.execute_script("return window.__pslabTrace.presses;")
    kernel = [k for k in json.loads(dump.read_text()) if "sent" in k]
    return [dict(p, **k) for p, k in zip(page, kernel)]


def hops(press: dict) -> dict[str, float]:
    """ms spent between the marks of one press."""
    size = max((s for _, s, *_ in press["recv"]), default=0)
    marks = [("key", press["key"]), ("ws send", press["send"]), ("kernel", press["kernel"]),
             ("run", press["run"]), ("sent", press["sent"]), ("model", press["model"]),
             ("drawn", press["drawn"])]
    out = {f"{a}->{b}": tb - ta for (a, ta), (b, tb) in zip(marks, marks[1:])}
    out["total"] = press["drawn"] - press["key"]
    out["refresh after sent"] = press["done"] - press["sent"]
    out["largest msg kB"] = size / 1000
    return out


def raw(press: dict) -> dict:
    """One press's marks in ms after its keydown (and the messages that came, with sizes)."""
    k = press["key"]
    return {n: [(round(t - k, 1), *r) for t, *r in v] if isinstance(v, list) else
            round(v - k, 1) for n, v in press.items()}


def main(argv: list[str] | None = None) -> int:
    from bench.browser import chromium, jupyterlab
    from bench.browser_latency import PRESETS, notebook

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--presets", nargs="*", default=list(PRESETS))
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with TemporaryDirectory(prefix="pslab-trace-") as folder:
        for preset in args.presets:
            (Path(folder) / f"bench_{preset}.ipynb").write_text(json.dumps(notebook(preset)))
        with jupyterlab(Path(folder), env) as (base, _), chromium((1400, 1100)) as driver:
            for preset in args.presets:
                presses = trace(driver, base, preset, args.steps, Path(folder))
                if os.environ.get("TRACE_RAW"):
                    for p in presses[:4]:
                        print(raw(p))
                rows = [hops(p) for p in presses]
                print(f"dashboard {preset} ({len(rows)} presses), median ms (max):")
                for name in rows[0]:
                    xs = [r[name] for r in rows]
                    print(f"  {name:20} {statistics.median(xs):7.1f}  ({max(xs):6.1f})")
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
