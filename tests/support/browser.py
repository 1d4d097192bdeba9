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


#: the documentation's pictures, taken by the browser tests
DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")


def doc_picture(shot, name: str) -> None:
    """Copy the screenshot ``shot`` to ``docs/<name>``: when missing, or refreshed with
    ``XSCHED_UPDATE_DOCS=1`` (so that a test run does not change the work tree)."""
    import shutil

    doc = os.path.join(DOCS, name)
    if not os.path.exists(doc) or os.environ.get("XSCHED_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, doc)


def open_by_palette(page, label: str) -> None:
    """Run a command through the command palette, typed as a user would (again when a pane that
    was still opening took the focus and closed the palette)."""
    from playwright.sync_api import Error as PlaywrightError, expect

    search = page.locator(".lm-CommandPalette-input")
    active = page.locator(".lm-CommandPalette-item.lm-mod-active")
    for attempt in range(3):
        try:
            page.keyboard.press("Escape")
            page.locator("#jp-top-panel").click(position={"x": 600, "y": 5})  # focus out of any editor
            page.keyboard.press("Control+Shift+C")
            search.fill(label, timeout=5_000)
            # the best match is the active item: Enter runs it (a click may land on a list being redrawn)
            expect(active).to_contain_text(label, timeout=5_000)
            page.keyboard.press("Enter")
            return
        except (AssertionError, PlaywrightError):
            if attempt == 2:
                raise



def open_pane(page, label: str, kind: str, timeout: float = 10_000) -> None:
    """Open the pane ``kind`` by its palette command ("xsched: Open <label>") and wait until it
    shows; once more when it does not (an Enter that reached a palette a pane closed, or a busy
    machine), as a user would try again."""
    from playwright.sync_api import expect

    pane = page.locator(f"#xsched-pane-{kind}")
    for attempt in range(3):
        open_by_palette(page, f"xsched: Open {label}")
        try:
            expect(pane).to_be_visible(timeout=timeout)
            return
        except AssertionError:
            if attempt == 2:
                raise