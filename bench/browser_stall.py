"""Does a dashboard always come back to "ready" after a burst of slider moves? (a stress hunt)

    python bench/browser_stall.py [--rounds 3] [--presets default,000,001,002] [--timeout 20]

For each dashboard (bench/browser_latency.py's one-cell notebooks in a real JupyterLab and
headless Chromium) it plays bursts without waiting between moves: a held key (presses right,
then left, 60, 30 and 10 ms apart, timed inside the browser by one selenium action chain),
several controls in alternation, and mouse drags across the workers slider; every other round
first makes the page forget its kept frames and the kernel its runs (as bench --only browser
does before its held key). After each burst it waits `--timeout` seconds for "ready"; when it
does not come it prints what the page and the kernel say (status text, controls' values, the
kernel's pending settle and sending ahead, whether the run shown is the settled one) and counts
a stall. Prints, per dashboard, bursts played, stalls and the slowest settle (s from the
burst's last move to "ready"), with the load beside it.

The kind of stall it hunts: a held key back to the settled values before the sliders rest,
the settled run dropped from the run cache, "ready" never coming
(pslab.notebook.liveruns.LiveRuns.settle; the one it found is in CHANGELOG.md).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.browser_latency import KERNEL, PANEL, PROBE, READY, notebook  # noqa: E402

READY_NOW = (f"return !!document.querySelector('{PANEL} .pslab-status "
             "[data-state=\"ready\"]');")
PAGE_STATE = f"""
const dash = document.querySelector('{PANEL}');
const c = dash.querySelector('.pslab-timeline canvas');
const st = dash.querySelector('.pslab-status');
return {{status: st ? st.innerText : null, key: c.dataset.key, source: c.dataset.source,
        frame: c.dataset.frame,
        values: [...dash.querySelectorAll('.widget-readout, .widget-dropdown select')]
                .map(e => e.tagName === 'SELECT' ? e.value : e.innerText)}};
"""
KERNEL_STATE = """
import json as _j, pslab.widgets as _w
_d = _w.Dashboard.latest
print(_j.dumps({"status": _d.status.value, "pending": _d.pending, "handle": _d._handle is not None,
  "ahead": _d._ahead_handle is not None, "errors": _d.errors[-3:],
  "controls": {n: str(c.value) for n, c in _d.controls.items()},
  "view_settings_is_controls": _d.view.settings == _d.settings,
  "settled_for_is_controls": _d.view._settled_for == _d.settings,
  "run_is_settled": _d.view.run is _d.view.settled, "changes": len(_d.latencies_ms),
  "kept": len(_d.figures["timeline"].kept), "ahead_sent": _d.figures["timeline"].ahead_sent}))
"""
ASK = """
const done = arguments[arguments.length - 1];
const w = window.jupyterapp.shell.currentWidget;
const future = w.sessionContext.session.kernel.requestExecute({code: arguments[0],
    silent: false, store_history: false});
let out = '';
future.onIOPub = msg => { if (msg.content && msg.content.text) out += msg.content.text; };
const timer = setTimeout(() => done('kernel did not answer in 15 s'), 15000);
future.done.then(() => { clearTimeout(timer); done(out); }, e => done('failed ' + e));
"""


def held(driver, handle, presses: int, gap: float, keys) -> None:
    """`presses` presses right then left, `gap` s apart, timed by the browser (one action)."""
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("arguments[0].focus();", handle)
    chain = ActionChains(driver, duration=0)
    for k in range(2 * presses):
        chain.send_keys(keys.ARROW_RIGHT if k < presses else keys.ARROW_LEFT).pause(gap)
    chain.perform()


def mixed(driver, handles, presses: int, gap: float, keys) -> None:
    """Controls in alternation: one press on each in turn, `gap` s apart, right then left."""
    from selenium.webdriver.common.action_chains import ActionChains

    for way in (keys.ARROW_RIGHT, keys.ARROW_LEFT):
        for _ in range(presses):
            for h in handles:
                driver.execute_script("arguments[0].focus();", h)
                ActionChains(driver, duration=0).send_keys(way).perform()
                time.sleep(gap)


def drag(driver, handle, span: int, moves: int) -> None:
    """The workers handle dragged `span` px right and back in `moves` small moves."""
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver, duration=10).click_and_hold(handle)
    for way in (1, -1):
        for _ in range(moves):
            chain.move_by_offset(way * span // moves, 0)
    chain.release().perform()


def kernel_state(driver) -> str:
    try:
        return driver.execute_async_script(ASK, KERNEL_STATE)
    except Exception as exc:  # noqa: BLE001 - a diagnosis, whatever went wrong
        return f"could not ask: {exc}"


def hunt(driver, base: str, preset: str, rounds: int, timeout: float) -> dict:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from bench.browser import wait

    driver.get(f"{base}/lab/tree/bench_{preset}.ipynb?reset")
    wait(driver, READY, timeout=120, what="the notebook and its kernel")
    driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells');")
    wait(driver, PROBE, (PANEL,), timeout=120, what=f"dashboard {preset} to be ready")
    handle = lambda name: driver.find_element(  # noqa: E731
        By.CSS_SELECTOR, f"{PANEL} .pslab-{name} .noUi-handle")
    names = [n for n in ("workers", "accumulate", "slowdown", "shards", "bandwidth")
             if driver.find_elements(By.CSS_SELECTOR, f"{PANEL} .pslab-{n} .noUi-handle")]
    forget = ("import pslab.notebook.widgets as _w; _d = _w.Dashboard.latest; _d._stop_ahead(); "
              "_d.figures['timeline'].forget(); _d.view.cache._runs.clear()")
    bursts = [("held 5 x 60 ms", lambda: held(driver, handle("workers"), 5, 0.06, Keys)),
              ("held 5 x 30 ms", lambda: held(driver, handle("workers"), 5, 0.03, Keys)),
              ("held 7 x 10 ms", lambda: held(driver, handle("workers"), 7, 0.01, Keys)),
              ("held 3 x 0 ms", lambda: held(driver, handle("workers"), 3, 0.0, Keys)),
              ("mixed 2 x 20 ms", lambda: mixed(driver, [handle(n) for n in names[:3]], 2,
                                                0.02, Keys)),
              ("drag", lambda: drag(driver, handle("workers"), 200, 10))]
    played, stalls, slowest = 0, [], 0.0
    for r in range(rounds):
        for what, play in bursts:
            if r % 2:  # every other round from scratch: nothing kept, nothing cached
                driver.execute_async_script(KERNEL, forget)
            play()
            t0 = time.perf_counter()
            played += 1
            try:
                wait(driver, READY_NOW, timeout=timeout, interval=0.05, what="ready")
                slowest = max(slowest, time.perf_counter() - t0)
                continue
            except TimeoutError:  # the stall we hunt: say all we can see
                stalls.append(report(driver, preset, what, r))
            try:
                wait(driver, READY_NOW, timeout=60, interval=0.2, what="ready, late")
            except TimeoutError:  # it never came back: on to the next dashboard
                print(f"  {preset}: still not ready 60 s later", flush=True)
                stalls[-1]["never"] = True
                return {"played": played, "stalls": stalls, "slowest_s": slowest}
    return {"played": played, "stalls": stalls, "slowest_s": slowest}


def report(driver, preset: str, what: str, r: int) -> dict:
    """What the page and the kernel say while "ready" does not come (printed and returned)."""
    page = driver.execute_script(PAGE_STATE)
    kern = kernel_state(driver)
    print(f"STALL {preset} {what} round {r} (load {os.getloadavg()[0]:.1f}): page "
          f"{json.dumps(page)}\n  kernel {kern}", flush=True)
    return {"burst": what, "round": r, "page": page, "kernel": kern}


def main(argv: list[str] | None = None) -> int:
    from bench.browser import chromium, jupyterlab

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--presets", default="default,000,001,002")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)
    presets = args.presets.split(",")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    with TemporaryDirectory(prefix="pslab-stall-") as folder:
        for preset in presets:
            (Path(folder) / f"bench_{preset}.ipynb").write_text(json.dumps(notebook(preset)))
        with jupyterlab(Path(folder), env) as (base, log), chromium((1400, 1100)) as driver:
            for preset in presets:
                load0 = os.getloadavg()[0]
                got = hunt(driver, base, preset, args.rounds, args.timeout)
                print(f"dashboard {preset}: {got['played']} bursts, {len(got['stalls'])} "
                      f"stalls, slowest settle {got['slowest_s']:.2f} s "
                      f"(load {load0:.1f} -> {os.getloadavg()[0]:.1f})", flush=True)
            tail = Path(log).read_text()[-2000:]
            if "Traceback" in tail or "Exception" in tail:
                print("server log tail:\n" + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
