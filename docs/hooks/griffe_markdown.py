"""Griffe extension for the API reference: xsched's docstrings as Markdown.

The docstrings are written for ``help()`` and doctest: reST roles (``:class:`~a.B```),
``::`` before literal blocks, and ``>>>`` examples. Read as Markdown, ``>>>`` would start
nested block quotes. This extension rewrites them when the docs are built; the source
is left alone.

- ``>>>`` examples (with their ``...`` lines and output) become ``pycon`` code blocks,
  without their ``# doctest:`` directives;
- ``:role:`~pkg.mod.Name``` becomes ```Name``` (``:role:`pkg.mod.Name``` keeps the path);
- a paragraph ending in ``::`` ends in ``:`` (the indented block after it stays code);
- a docstring that spells ``\\n`` escapes (in an example's string) is shown as written.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

import griffe

_DOCTEST_DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")
_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj|const):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def to_markdown(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    fence = None  # indentation of the open ``` fence written by the author, if any
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith("```"):
            fence = None if fence is not None else indent
            out.append(line)
            i += 1
            continue
        if fence is None and stripped.startswith(">>>"):
            if out and out[-1].strip():
                out.append("")
            out.append(f"{indent}```pycon")
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                out.append(_DOCTEST_DIRECTIVE.sub("", lines[i]))
                i += 1
            out.append(f"{indent}```")
            if i < len(lines) and lines[i].strip():
                out.append("")
            continue
        if fence is None:
            line = _ROLE.sub(_role, line)
            if line.rstrip().endswith("::") and not line.rstrip().endswith(" ::"):
                line = line.rstrip()[:-1]
            elif line.rstrip().endswith(" ::"):
                line = line.rstrip()[:-3]
        out.append(line)
        i += 1
    return "\n".join(out)


_ESCAPE = re.compile(r"\\[ntr]")


@functools.lru_cache(maxsize=None)
def _source_lines(path: str) -> list[bytes]:
    """A module's lines, read once: every docstring of the module is cut from them."""
    return Path(path).read_bytes().split(b"\n")


def _segment(path: str, node: ast.expr) -> str:
    """The source of ``node`` (as ``ast.get_source_segment``, whose offsets are in bytes),
    without splitting the whole module again for each of its two thousand docstrings."""
    lines = _source_lines(path)
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset:node.end_col_offset].decode("utf-8")
    parts = [lines[first][node.col_offset:], *lines[first + 1:last], lines[last][:node.end_col_offset]]
    return b"\n".join(parts).decode("utf-8")


def _as_written(node: object, obj: griffe.Object) -> str | None:
    """The docstring as it reads in the source, if it spells ``\\n`` (or ``\\t``) escapes.

    Such an escape inside an example (``f.write("x\\n")``) is a real line break in the
    string Python builds, which breaks the example and the docstring's indentation. Shown
    as written, the example reads as the code it is.
    """
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Constant):
        return None
    try:
        segment = _segment(str(obj.filepath), body[0].value)
    except (OSError, TypeError, IndexError, UnicodeDecodeError):
        return None
    match = re.fullmatch(r'(?s)([uU]?)("""|\'\'\')(.*)\2', segment)
    if not match or not _ESCAPE.search(match.group(3)):
        return None
    return inspect.cleandoc(match.group(3).replace("\\\\", "\\"))


class DocstringMarkdown(griffe.Extension):
    """Rewrite every docstring of the loaded objects with :func:`to_markdown`."""

    def on_instance(self, *, node: object, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            text = _as_written(node, obj) or obj.docstring.value
            obj.docstring.value = to_markdown(text)
