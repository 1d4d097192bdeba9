"""MkDocs hook: the configuration page's table of keys, from xsched's own schema.

``<!-- config-keys -->`` in a page becomes a table per section of every key with its default,
its meaning and what it accepts, read from ``xsched.config.describe()`` (the text ``xsched config
--describe`` prints), so the page never disagrees with the code. If that text ever changes
shape, the page shows it as it is rather than failing the build.
"""

from __future__ import annotations

import re

MARKER = "<!-- config-keys -->"
_HEADER = re.compile(r"^(?P<key>[\w.-]+): (?P<accepts>.*); default (?P<default>.*)$")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").strip()


def config_table(text: str) -> str | None:
    """One table per section (``scheduler``, ``worker``, ...), or None if ``text`` has another shape."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith(" "):
            if not rows:
                return None
            rows[-1][3] = f"{rows[-1][3]} {line.strip()}".strip()
            continue
        match = _HEADER.match(line)
        if not match:
            return None
        rows.append([match["key"], match["accepts"], match["default"], ""])
    if not rows:
        return None
    out: list[str] = []
    section = None
    for key, accepts, default, meaning in rows:
        top, _, rest = key.partition(".")
        if top != section:
            section = top
            out += ["", f"### `{top}`", "", "| key | default | meaning |", "|---|---|---|"]
        out.append(f"| `{rest or top}` | `{_cell(default)}` | {_cell(meaning)} *Accepts {_cell(accepts)}.* |")
    return "\n".join(out).strip()


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    from xsched import config as xconfig

    text = xconfig.describe()
    table = config_table(text) or f"```text\n{text}\n```"
    return markdown.replace(MARKER, table)
