"""A real JupyterLab (or Voila) and a headless Chromium, started and stopped cleanly.

Shared by the browser test (tests/test_notebooks_browser.py) and the browser benchmark
(bench/browser_latency.py). Uses Debian's chromium and chromium-driver; nothing is downloaded.
Servers listen on 127.0.0.1 only, on a free port, with no token, and are stopped with every
process they started (their own process group); every wait has a timeout.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p
                 and Path(p).exists()), None)
CHROMEDRIVER = next((p for p in ("/usr/bin/chromedriver", shutil.which("chromedriver") or "")
                     if p and Path(p).exists()), None)


class ServerFailed(RuntimeError):
    """A server exited or did not answer in time (its log's tail is in the message)."""


def missing() -> list[str]:
    """What is missing to drive a browser: chromium, chromedriver, selenium."""
    out = [n for n, p in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not p]
    try:
        import selenium  # noqa: F401
    except ImportError:
        out.append("selenium")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - local server
        return r.read()


@contextmanager
def serve(what: str, cmd: list[str], cwd: Path, env: dict, port: int,
          log_path: Path) -> Iterator[tuple[str, Path]]:
    """Start a server on 127.0.0.1:port, wait until it answers, yield (base_url, log_path);
    then stop it with every process it started (its own process group)."""
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise ServerFailed(f"{what} exited ({proc.returncode}):\n"
                                   f"{log_path.read_text()[-3000:]}")
            try:
                get(f"{base}/api/status")
                break
            except urllib.error.HTTPError:  # an answer (voila guards its API): it is up
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ServerFailed(f"{what} did not start in 90 s:\n"
                                       f"{log_path.read_text()[-3000:]}") from None
                time.sleep(0.5)
        yield base, log_path
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


@contextmanager
def jupyterlab(notebooks: Path, env: dict | None = None, widget_state: bool = False,
               log_level: str = "INFO") -> Iterator[tuple[str, Path]]:
    """A hermetic JupyterLab serving a copy of the folder `notebooks`: its own temporary root,
    settings and runtime directory, no news, no token. Yields (base_url, log_path).
    widget_state: show the widgets a notebook saved (ipywidgets' "saveState" setting).
    log_level: the server's (DEBUG logs every HTTP request with its duration)."""
    tmp = Path(tempfile.mkdtemp(prefix="pslab-lab-"))
    root = tmp / "root"
    shutil.copytree(notebooks, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = tmp / "settings"
    news = settings / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    if widget_state:
        widgets = settings / "@jupyter-widgets" / "jupyterlab-manager"
        widgets.mkdir(parents=True)
        (widgets / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    env = dict(env or os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), IPYTHONDIR=str(tmp / "ipython"),
               JUPYTER_PLATFORM_DIRS="1", PYTHONUNBUFFERED="1")
    env.pop("PSLAB_HIDE_ANSWERS", None)
    port = free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", "--IdentityProvider.token=",
           "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={tmp / 'ws'}",
           "--LabApp.extension_manager=readonly", "--ServerApp.terminals_enabled=False",
           f"--ServerApp.log_level={log_level}", "--allow-root"]
    try:
        with serve("JupyterLab", cmd, root, env, port, tmp / "lab.log") as served:
            yield served
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# Run in every page before its own scripts: each fetch that fails (the browser's own refusal,
# no HTTP answer) and each websocket that closes, with wall-clock times (ms since the epoch, as
# the server's log has them), and when a dialog first shows; read back by `evidence`.
NET_WATCH = """
(() => {
  const net = window.__pslabNet = {loaded: Date.now(), fails: [], closed: [], dialogs: []};
  const fetch0 = window.fetch;
  window.fetch = function (input, init) {
    const url = String(typeof input === 'string' ? input : (input && input.url) || input);
    const method = (init && init.method) || (input && input.method) || 'GET';
    const t = Date.now();
    return fetch0.apply(this, arguments).catch(e => {
      net.fails.push({method, url, at: t, after_ms: Date.now() - t, error: String(e)});
      throw e;
    });
  };
  const WS = window.WebSocket;
  window.WebSocket = class extends WS {
    constructor(...args) {
      super(...args);
      const t = Date.now(), url = String(args[0]).split('?')[0];
      this.addEventListener('close', ev => net.closed.push(
          {url, opened: t, at: Date.now(), code: ev.code, reason: ev.reason, clean: ev.wasClean}));
    }
  };
  setInterval(() => {
    const d = document.querySelector('.jp-Dialog');
    const text = d && d.innerText.slice(0, 80);
    if (text && (!net.dialogs.length || net.dialogs[net.dialogs.length - 1].text !== text))
      net.dialogs.push({at: Date.now(), text});
  }, 250);
})();
"""


@contextmanager
def chromium(size: tuple[int, int] = (1400, 1100)):
    """A headless Chromium driven by selenium (its own temporary profile), quit at the end;
    every page it opens runs NET_WATCH first, and its console is kept (for `evidence`)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="pslab-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 f"--window-size={size[0]},{size[1]}"):
        opts.add_argument(flag)
    opts.set_capability("unhandledPromptBehavior", "accept")  # "leave page?" never blocks
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # driver.get_log("browser")
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must not download anything
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NET_WATCH})
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _clock(ms: float) -> str:
    """Epoch milliseconds as the server log's time of day (UTC, as the log writes it)."""
    return time.strftime("%H:%M:%S", time.gmtime(ms / 1000)) + f".{int(ms % 1000):03d}"


def network_events(net: dict | None) -> list[str]:
    """What NET_WATCH saw in a page (`window.__pslabNet`), one line each, in time order."""
    if not net:
        return []
    events = ([(e["at"], f"fetch FAILED after {e['after_ms']} ms: {e['method']} {e['url']}: "
                f"{e['error']}") for e in net["fails"]]
              + [(e["at"], f"websocket closed (code {e['code']}, clean {e['clean']}, open "
                  f"{(e['at'] - e['opened']) / 1000:.1f} s): {e['url']}") for e in net["closed"]]
              + [(e["at"], f"dialog: {e['text']!r}") for e in net["dialogs"]])
    return [f"{_clock(at)} {text}" for at, text in sorted(events)]


def evidence(driver, base: str, log_path: Path, what: str) -> str:
    """After a failure in a page `chromium` opened on the server at `base`: what the server
    and the browser said, kept for a look in a new private folder under $TMPDIR
    (tempfile.mkdtemp; nothing is kept when a test passes): the server's
    log, the browser's console, the page's failed requests, closed websockets and dialogs
    (NET_WATCH), a screenshot, and whether the server answers now and how fast. Returns the
    report to print: the folder, the server's answer, the network events, the console's and
    the log's tails."""
    keep = Path(tempfile.mkdtemp(prefix=f"pslab-browser-{what[:40].replace('/', '_')}-"))
    out = [f"--- evidence kept in {keep} ---"]

    def step(label, fn):  # one broken piece (a dead browser) must not hide the others
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            out.append(f"{label}: could not be read ({type(exc).__name__}: {exc})"[:300])
            return None

    t = time.monotonic()
    answer = step("the server now", lambda: get(f"{base}/api/status", timeout=20))
    out.append(f"the server now: GET /api/status "
               f"{'answered' if answer is not None else 'FAILED'} in {time.monotonic() - t:.2f} s")
    if log_path.exists():
        shutil.copy(log_path, keep / "lab.log")
        lines = log_path.read_text(errors="replace").splitlines()
        requests = [ln for ln in lines if ln.startswith("[D") and "ms" in ln and
                    any(f" {m} /" in ln for m in ("GET", "POST", "PUT", "PATCH", "DELETE"))]
        out.append("--- JupyterLab log, last 20 requests ---\n" + "\n".join(requests[-20:]))
        shown, debug = [], False
        for ln in lines:  # a record's continuation lines go with it
            debug = ln.startswith("[D") or (debug and not ln.startswith("["))
            if not debug:
                shown.append(ln)
        out.append("--- JupyterLab log (tail, no DEBUG) ---\n" + "\n".join(shown)[-3000:])
    net = step("the page's network events", lambda: driver.execute_script(
        "return window.__pslabNet || null;"))
    if net:
        (keep / "network.json").write_text(json.dumps(net, indent=1))
        out.append(f"--- the page (loaded {_clock(net['loaded'])}): failed requests, closed "
                   "websockets, dialogs ---\n" + "\n".join(network_events(net)[-30:]))
    console = step("the browser console", lambda: driver.get_log("browser"))
    if console is not None:
        (keep / "console.txt").write_text("\n".join(
            f"{_clock(e['timestamp'])} {e['level']} {e['message']}" for e in console))
        out.append("--- browser console (tail) ---\n" + "\n".join(
            f"{_clock(e['timestamp'])} {e['level']} {e['message'][:300]}"
            for e in console[-25:]))
    step("a screenshot", lambda: driver.save_screenshot(str(keep / "page.png")))
    return "\n".join(out)


def wait(driver, script: str, args=(), timeout: float = 60.0, what: str = "condition",
         interval: float = 0.2):
    """Run `script` in the page until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = driver.execute_script(script, *args)
        if last:
            return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")
