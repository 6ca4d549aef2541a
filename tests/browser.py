"""Headless Chromium for the report tests: load a page, return its DOM after ``load`` and
every console message it produced; take a screenshot."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]
_CONSOLE = re.compile(r":CONSOLE(?::|\()\d+\)?\] (.*)$")


@dataclass
class Page:
    dom: str
    console: list[str]

    def body_attribute(self, name: str) -> str | None:
        match = re.search(r"<body\b[^>]*\b" + re.escape(name) + r'="([^"]*)"', self.dom)
        return match.group(1) if match else None


def chromium() -> str:
    """The browser, or a skip (a failure on CI, where `.ci/run` installs it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (make test and .ci/run install Debian's chromium)")
        pytest.skip("chromium is not installed (`make browser` installs it)")
    return path


def _run(args: list[str], timeout_s: float = 90.0) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="fleetcast-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout_s)


def load(page: Path, width: int | None = None, height: int = 900) -> Page:
    """The page's DOM after ``load`` (in a window ``width`` × ``height`` pixels when given)."""
    size = [f"--window-size={width},{height}"] if width else []
    done = _run([*size, "--dump-dom", Path(page).resolve().as_uri()])
    console = [m.group(1) for line in done.stderr.splitlines() if (m := _CONSOLE.search(line))]
    return Page(done.stdout, console)


def screenshot(page: Path, png: Path, width: int = 1100, height: int = 5200) -> None:
    _run([f"--screenshot={png}", f"--window-size={width},{height}", Path(page).resolve().as_uri()])
