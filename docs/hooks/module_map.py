"""MkDocs hook: the architecture page's module map must list every module under xsched/.

The map is the first code block of ``architecture.md`` that starts with ``xsched/``; each
entry is indented two spaces per level under its package. A module (``.py`` or ``.yaml``,
empty ``__init__.py`` files aside) missing from the map, or an entry whose file is gone, is
a warning, and ``mkdocs build --strict`` (``make docs``) fails on it: add the module with a
phrase saying what it is for.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.module_map")

PAGE = "architecture.md"
SKIP_DIRS = {"__pycache__", "labextension"}  # labextension/: built assets, listed as one entry


def map_entries(markdown: str) -> set[str] | None:
    """Paths (``graph/spec.py``, ``graph/``) listed in the module map, or None if there is none."""
    match = re.search(r"^```[^\n]*\nxsched/\n(.*?)^```", markdown, re.S | re.M)
    if not match:
        return None
    entries: set[str] = set()
    stack: list[str] = []
    for line in match.group(1).splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        level = max(indent // 2 - 1, 0)
        name = line.split()[0]
        stack = stack[:level]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
            entries.add("/".join(stack) + "/")
        else:
            entries.add("/".join([*stack, name]))
    return entries


def tree_entries(package: Path) -> set[str]:
    out: set[str] = set()
    for path in package.rglob("*"):
        rel = path.relative_to(package)
        if any(part in SKIP_DIRS for part in rel.parts[:-1]) or rel.name == "__pycache__":
            continue
        if path.is_dir():
            out.add(rel.as_posix() + "/")
        elif path.suffix in (".py", ".yaml") and not (rel.name == "__init__.py" and not path.read_text().strip()):
            out.add(rel.as_posix())
    return out


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    listed = map_entries(markdown)
    if listed is None:
        log.warning("%s: no module map (a code block starting with 'xsched/') found", PAGE)
        return markdown
    package = Path(config.config_file_path).resolve().parent / "xsched"
    present = tree_entries(package)
    for missing in sorted(present - listed):
        log.warning("%s: the module map lacks xsched/%s; add it with a phrase saying what it is for", PAGE, missing)
    for gone in sorted(listed - present):
        log.warning("%s: the module map lists xsched/%s, which no longer exists", PAGE, gone)
    return markdown
