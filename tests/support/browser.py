"""Debian's chromium driven by Playwright for Python, as the browser tests use it: where it
is, how it is launched, and the skip when it (or playwright) is missing."""

from __future__ import annotations

import os

import pytest

CHROMIUM = os.environ.get("XSCHED_CHROMIUM", "/usr/bin/chromium")
#: headless, no sandbox (root in CI), nothing fetched or synced in the background
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]


def skip_without_browser() -> None:
    """Skip the calling test (or fixture) naming what to install when chromium or playwright
    is missing (``sh tests/support/browser_deps.sh`` installs chromium)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no chromium at {CHROMIUM}: run `sh tests/support/browser_deps.sh` as root (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright for Python is not installed (pip install -e '.[test]')")
