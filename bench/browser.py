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
def jupyterlab(notebooks: Path, env: dict | None = None,
               widget_state: bool = False) -> Iterator[tuple[str, Path]]:
    """A hermetic JupyterLab serving a copy of the folder `notebooks`: its own temporary root,
    settings and runtime directory, no news, no token. Yields (base_url, log_path).
    widget_state: show the widgets a notebook saved (ipywidgets' "saveState" setting)."""
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
           "--allow-root"]
    try:
        with serve("JupyterLab", cmd, root, env, port, tmp / "lab.log") as served:
            yield served
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def chromium(size: tuple[int, int] = (1400, 1100)):
    """A headless Chromium driven by selenium (its own temporary profile), quit at the end."""
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
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium-manager must not download anything
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


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
