"""An HTML page reduced to its outline: the elements, attributes and text a reader meets."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"meta", "link", "br", "input", "img", "hr", "col", "source", "wbr"}
SVG_LEAVES = {"line", "rect", "circle", "polyline", "path"}
KEPT_ATTRS = ("id", "class", "data-key", "data-id", "data-tags", "data-count", "type", "lang")
TEXT_OF = {"h1", "h2", "h3", "th", "option", "title", "summary", "figcaption", "a"}


class Outline(HTMLParser):
    """An indented outline of the elements, and every tag and attribute seen."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.depth = 0
        self.stack: list[str] = []
        self.texts: list[list[str]] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        if tag in ("style", "script") or self.stack[-1:] in (["style"], ["script"]):
            self.stack.append(tag)
            return
        shown = " ".join(f'{k}="{values[k]}"' for k in KEPT_ATTRS if k in values)
        self.lines.append("  " * self.depth + f"<{tag}{' ' + shown if shown else ''}>")
        if tag in VOID or tag in SVG_LEAVES:
            return
        self.stack.append(tag)
        self.texts.append([])
        self.depth += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.tags.append((tag, values))
        shown = " ".join(f'{k}="{values[k]}"' for k in KEPT_ATTRS if k in values)
        self.lines.append("  " * self.depth + f"<{tag}{' ' + shown if shown else ''}/>")

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or tag in SVG_LEAVES or not self.stack:
            return
        opened = self.stack.pop()
        assert opened == tag, f"</{tag}> closes <{opened}>"
        if tag in ("style", "script"):
            self.lines.append("  " * self.depth + f"<{tag}>…</{tag}>")
            return
        self.depth -= 1
        text = " ".join("".join(self.texts.pop()).split())
        if tag in TEXT_OF and text:
            self.lines.append("  " * (self.depth + 1) + f"“{text}”")

    def handle_data(self, data: str) -> None:
        if self.stack[-1:] in (["style"], ["script"]):
            return
        for buffer in self.texts:  # text counts for every element it is inside
            buffer.append(data)


def outline(page: str) -> str:
    return "\n".join(Outline(page).lines) + "\n"
