"""A real headless Chromium for the tests that look at pages (the web console, eval reports), driven by
Playwright for Python (the `playwright` package of the test extra) on the system's Chromium.

`launch()` starts it; `ensure_chromium()` first installs the Debian `chromium` package with apt-get when
/usr/bin/chromium is missing (once, under a file lock, as tests/conftest.py installs the Node packages).
Where no browser can be had, the tests that use it fail and say why; they never skip. `watch(page)` collects
what a page must never do: run a script it was not given (a dialog, or a console message the injected markup
would log), or reach outside its own origin.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
LOCK = os.path.join(tempfile.gettempdir(), "sagepy-chromium-install.lock")


def ensure_chromium() -> str:
    """The path of the system's Chromium, installed with apt-get when it is missing."""
    import fcntl
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(CHROMIUM):
            return CHROMIUM
        apt = shutil.which("apt-get")
        if apt is None:
            pytest.fail(f"no browser for the tests: {CHROMIUM} is missing and apt-get is not on PATH to install "
                        "the Debian `chromium` package", pytrace=False)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
            except subprocess.TimeoutExpired:
                pytest.fail(f"no browser for the tests: `{' '.join(command)}` did not finish in 15 minutes",
                            pytrace=False)
            if done.returncode != 0:
                tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-10:])
                pytest.fail(f"no browser for the tests: `{' '.join(command)}` failed (exit {done.returncode}; "
                            f"installing needs root):\n{tail}", pytrace=False)
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no browser for the tests: apt-get installed `chromium` but {CHROMIUM} is still missing",
                    pytrace=False)
    return CHROMIUM


def launch():
    """(the Playwright driver, a headless Chromium): stop with `close(...)`."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("no browser for the tests: the `playwright` package is missing (pip install -e '.[test]')",
                    pytrace=False)
    executable = ensure_chromium()
    driver = sync_playwright().start()
    try:
        return driver, driver.chromium.launch(executable_path=executable, args=FLAGS)
    except Exception as exc:
        driver.stop()
        pytest.fail(f"no browser for the tests: Chromium at {executable} did not start: {exc}", pytrace=False)


def close(driver, browser) -> None:
    browser.close()
    driver.stop()


@dataclass
class Watch:
    """What a page did that it must not: dialogs opened, console messages, requests outside its origin."""
    origin: str
    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


def watch(page, origin: str) -> Watch:
    """Collect the page's dialogs (dismissed), console messages and requests to anywhere but `origin`."""
    seen = Watch(origin)

    def dialog(d) -> None:
        seen.dialogs.append(d.message)
        d.dismiss()

    def request(r) -> None:
        parts = urlsplit(r.url)
        if parts.scheme in ("data", "blob", "about"):
            return
        if f"{parts.scheme}://{parts.netloc}" != origin:
            seen.outside.append(r.url)

    page.on("dialog", dialog)
    page.on("console", lambda m: seen.console.append(m.text))
    page.on("request", request)
    return seen
