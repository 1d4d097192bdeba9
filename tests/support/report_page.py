"""Reading a performance report page (or one of its SVG figures) with the standard library's
``html.parser``: the elements with their attributes, in document order, the text of each
element by id, and every reference to something outside the page."""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: attributes through which a page loads or links something
REFERENCES = {"src", "href", "xlink:href", "action", "data", "poster", "srcset", "background", "formaction"}


class Page(HTMLParser):
    """``elements``: [(tag, {attr: value})] in order; ``text_of[id]``: the text inside the
    element with that id (nested text included); ``texts``: every text node, in order."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.texts: list[str] = []
        self.text_of: dict[str, str] = {}
        self.styles: list[str] = []
        self._open: list[tuple[str, str | None]] = []  # (tag, id) of the open elements
        self._in_style = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = {k: (v if v is not None else "") for k, v in attrs}
        self.elements.append((tag, attributes))
        self._in_style = tag == "style"
        if tag not in ("meta", "br", "img", "link", "input", "hr", "line", "rect", "circle", "polyline"):
            self._open.append((tag, attributes.get("id")))
            if attributes.get("id"):
                self.text_of.setdefault(attributes["id"], "")

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, {k: (v if v is not None else "") for k, v in attrs}))

    def handle_endtag(self, tag):
        self._in_style = False
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == tag:
                del self._open[i:]
                break

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)
            return
        self.texts.append(data)
        for _, ident in self._open:
            if ident:
                self.text_of[ident] += data

    # ------------------------------------------------------------------ queries
    def by_id(self, ident: str) -> dict:
        found = [a for _, a in self.elements if a.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def tags(self, tag: str) -> list[dict]:
        return [a for t, a in self.elements if t == tag]

    def external_references(self) -> list[str]:
        """Every attribute or CSS rule that points outside the page (anything but ``#fragment``
        references), plus any script element (the page needs none)."""
        out = [f"<script {a}>" for a in self.tags("script")]
        for tag, attrs in self.elements:
            for name, value in attrs.items():
                if name in REFERENCES and not value.startswith("#"):
                    out.append(f"<{tag} {name}={value!r}>")
                if name == "style" and re.search(r"url\(\s*['\"]?(?!#)", value):
                    out.append(f"<{tag} style={value!r}>")
        for css in self.styles:
            out += re.findall(r"@import[^;]*|url\(\s*['\"]?(?!#)[^)]*\)", css)
        return out
