"""The dashboards in a real browser: key press -> new pixels, timeline and loss curve.

    python -m bench --only browser          (or: python bench/browser_latency.py [--steps 20])

For each dashboard (default, 000, 001, 002) a one-cell notebook (`pw.dashboard(name)`) runs in a
real JupyterLab (bench/browser.py: 127.0.0.1, a temporary root) in headless Chromium. The
workers slider gets `--steps` key presses, right and left in turn; before each press the
dashboard's run cache is emptied from the kernel, so every press really re-simulates. Timed in
the page, from the keydown: the timeline's next frame (its <canvas> counts frames in
data-frame; drawn from a frame the kernel sent ahead when it has one, see
pslab/notebook/prefetch.py), the timeline's frame from the kernel's own answer (re-simulated:
before each press the page forgets its frames, the kernel sends the neighbours ahead as when
idle and then empties its run cache), and the loss curve's next frame (after the sliders rest
and the arithmetic ran). Then a held key: 5 presses right and 5 left, 60 ms apart, each timed
until the timeline shows its value or a later one's (no goal: the goals are of one press at a time).
Prints median and worst with the goals and returns rows for `python -m bench` (met or not).
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
PRESETS = ("default", "000", "001", "002")
GOALS = {"timeline": (0.050, 0.150), "kernel": (0.050, 0.150),
         "curve": (0.400, None)}  # median, worst (seconds)
LABELS = (("timeline", "key -> timeline pixels"),
          ("kernel", "key -> timeline from the kernel"),  # re-simulated, nothing sent ahead
          ("curve", "key -> loss curve pixels"))

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden) .pslab-dashboard"
PROBE = """
const dash = document.querySelector(arguments[0]);
const canvas = n => dash && dash.querySelector(`.pslab-${n} canvas`);
const ready = dash && dash.querySelector('.pslab-status [data-state="ready"]');
if (!ready || !canvas('timeline') || !canvas('training')) return false;
const probe = {t0: null, timeline: [], curve: [], seen: {}, draw: [], kernel: [], source: []};
document.addEventListener('keydown', () => { probe.t0 = performance.now(); probe.seen = {}; },
                          true);
for (const [name, list] of [['timeline', probe.timeline], ['training', probe.curve]]) {
  new MutationObserver(() => {
    if (probe.t0 === null) return;
    const c = canvas(name), t = performance.now() - probe.t0;
    if (name === 'timeline' && c.dataset.source !== 'ahead' && !probe.seen.kernel) {
      probe.seen.kernel = true;  // the kernel's own answer (a frame sent ahead comes first)
      probe.kernel.push(t);
    }
    if (probe.seen[name]) return;
    probe.seen[name] = true;
    list.push(t);
    if (name === 'timeline') {
      probe.draw.push(parseFloat(c.dataset.ms));
      probe.source.push(c.dataset.source || 'kernel');
    }
  }).observe(canvas(name), {attributes: true, attributeFilter: ['data-frame']});
}
window.__pslabBench = probe;
dash.scrollIntoView();
return true;
"""
KERNEL = """
const done = arguments[arguments.length - 1];
const w = window.jupyterapp.shell.currentWidget;
const future = w.sessionContext.session.kernel.requestExecute({code: arguments[0],
    silent: true, store_history: false});
future.done.then(() => done(true), () => done(false));
"""
READY = """
const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
const s = w && w.sessionContext;
return !!(s && s.isReady && s.session && s.session.kernel
          && s.session.kernel.status === 'idle' && w.content.widgets.length > 0);
"""


def notebook(preset: str) -> dict:
    code = f"import pslab.notebook.widgets as pw\npw.setup()\npw.dashboard({preset!r})"
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "code", "id": "dash", "metadata": {}, "execution_count": None,
                   "outputs": [], "source": code}]}


def measure(driver, base: str, preset: str, steps: int, prefetch: bool = True
            ) -> dict[str, list]:
    """Key press -> next timeline frame and next loss-curve frame, in ms, `steps` times."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from bench.browser import wait

    driver.get(f"{base}/lab/tree/bench_{preset}.ipynb?reset")
    wait(driver, READY, timeout=120, what="the notebook and its kernel")
    driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
    wait(driver, PROBE, (PANEL,), timeout=120, what=f"dashboard {preset} to be ready")
    handle = driver.find_element(By.CSS_SELECTOR, f"{PANEL} .pslab-workers .noUi-handle")
    # every press from scratch: the page forgets the frames it kept, the kernel sends the
    # neighbours ahead as it does when idle (ahead=True), then forgets its runs, so that its own
    # answer re-simulates
    ahead = ("_d._stop_ahead(); _d.figures['timeline'].forget(); _d.prefetch(); "
             if prefetch else "_d._stop_ahead(); _d.figures['timeline'].forget(); ")
    clear = ("import pslab.notebook.widgets as _w; _d = _w.Dashboard.latest; " + ahead
             + "_d.view.cache._runs.clear()")
    for k in range(steps):
        driver.execute_async_script(KERNEL, clear)
        handle.send_keys(Keys.ARROW_RIGHT if k % 2 == 0 else Keys.ARROW_LEFT)
        wait(driver, f"const p = window.__pslabBench; return p.timeline.length > {k} && "
             f"p.kernel.length > {k} && p.curve.length > {k} && "
             f"!!document.querySelector('{PANEL} .pslab-status "
             "[data-state=\"ready\"]');", timeout=60, interval=0.05,
             what=f"dashboard {preset}: press {k + 1} drawn")
    probe = driver.execute_script("return window.__pslabBench;")
    out = {n: probe[n] for n in ("timeline", "kernel", "curve", "draw", "source")}
    out["burst"] = burst(driver, handle, clear)
    return out


BURST = """
const canvas = document.querySelector(arguments[0] + ' .pslab-timeline canvas');
const log = {keys: [], frames: []};
document.addEventListener('keydown', () => log.keys.push(performance.now()), true);
new MutationObserver(() => log.frames.push([performance.now(), canvas.dataset.key]))
  .observe(canvas, {attributes: true, attributeFilter: ['data-frame']});
window.__pslabBurst = log;
return canvas.dataset.key;
"""


def burst(driver, handle, clear: str, presses: int = 5, gap: float = 0.06) -> list[float]:
    """A held key: `presses` presses right then as many left, `gap` s apart, no waiting; for
    each, ms from its keydown until the timeline shows its value or a later press's (the
    page's kept frames and the kernel's runs forgotten first)."""
    import time

    from selenium.webdriver.common.keys import Keys

    from bench.browser import wait

    driver.execute_async_script(KERNEL, clear)
    start = int(driver.execute_script(BURST, PANEL).split("|")[0])
    want = []
    for k in range(2 * presses):
        right = k < presses
        handle.send_keys(Keys.ARROW_RIGHT if right else Keys.ARROW_LEFT)
        want.append(start + (k + 1 if right else 2 * presses - k - 1))
        time.sleep(gap)
    wait(driver, f"return document.querySelector('{PANEL} .pslab-status "
         "[data-state=\"ready\"]');", timeout=60, interval=0.05, what="the burst to settle")
    log = driver.execute_script("return window.__pslabBurst;")
    out = []
    for i, t0 in enumerate(log["keys"]):
        # its value, or a later press's (after that press: a value the keys ran past counts
        # as caught up)
        shown = [t for t, key in log["frames"] for j in range(i, len(want))
                 if t >= log["keys"][j] and key.split("|")[0] == str(want[j])]
        out.append(min(shown) - t0 if shown else float("inf"))
    return out


def run(steps: int, presets=PRESETS) -> dict[str, dict[str, list[float]]]:
    from bench.browser import chromium, jupyterlab

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out = {}
    with TemporaryDirectory(prefix="pslab-bench-") as folder:
        for preset in presets:
            (Path(folder) / f"bench_{preset}.ipynb").write_text(json.dumps(notebook(preset)))
        with jupyterlab(Path(folder), env) as (base, _), chromium((1400, 1100)) as driver:
            for preset in presets:
                out[preset] = measure(driver, base, preset, steps)
    return out


def rows(quick: bool, steps: int = 20) -> list[dict]:
    """Section "browser" of `python -m bench`: per dashboard, key press -> pixels."""
    from bench.browser import missing

    if missing():
        return [{"section": "browser", "name": f"not measured: no {', '.join(missing())}"}]
    load = os.getloadavg()[0]
    out = []
    for preset, times in run(steps).items():
        for what, label in LABELS:
            xs = [t / 1000 for t in times[what]]
            median, worst = statistics.median(xs), max(xs)
            goal_median, goal_worst = GOALS[what]
            goal = f"<= {goal_median * 1e3:.0f} ms median" if goal_median < 0.1 else \
                f"<= {goal_median:g} s median"
            met = median <= goal_median
            if goal_worst is not None:
                goal += f", <= {goal_worst * 1e3:.0f} ms worst"
                met = met and worst <= goal_worst
            out.append({"section": "browser", "name": f"dashboard {preset}: {label}",
                        "median": median, "min": min(xs), "max": worst, "runs": len(xs),
                        "goal": goal, "met": met, "load": load})
            if what == "timeline":  # of which the canvas drawing itself; frames sent ahead
                out[-1]["draw_ms"] = statistics.median(times["draw"])
                out[-1]["ahead"] = times["source"].count("ahead")
        xs = [t / 1000 for t in times["burst"]]  # no goal: the goal is of one press at a time
        out.append({"section": "browser", "name": f"dashboard {preset}: held key -> its "
                    "timeline", "median": statistics.median(xs), "min": min(xs),
                    "max": max(xs), "runs": len(xs), "load": load})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for r in rows(False, args.steps):
        if "median" not in r:
            print(r["name"])
            continue
        draw = (f", drawing {r['draw_ms']:.1f} ms, {r['ahead']} drawn ahead"
                if "draw_ms" in r else "")
        goal = (f"  goal {r['goal']}: {'met' if r['met'] else 'NOT met'}" if "goal" in r
                else "")
        print(f"{r['name']:44} median {r['median'] * 1e3:6.0f} ms  worst {r['max'] * 1e3:6.0f} "
              f"ms  ({r['runs']} presses{draw}){goal}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
