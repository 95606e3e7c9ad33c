"""Draw docs/comment.png: the golden failing PR comment as GitHub shows it, for the README.

Renders ``tests/golden/render/comment_failed.md`` (the whole comment the
renderer produces, checked by tests/report/test_render.py) with markdown-it-py (GFM
tables, HTML blocks such as <details>) inside a page styled like a GitHub
comment, 1000 px wide, and screenshots its first screen with headless
Chromium (Debian's ``chromium``; Chrome works too)::

    python docs/comment_png.py            # writes docs/comment.png
    python docs/comment_png.py --html x   # also keeps the page it drew

Run it again after changing the comment's layout and commit the new PNG: the
PNG carries the sha256 of the golden it drew (a ``tEXt`` chunk, key
``passk-golden``), and tests/docs/test_docs.py fails when the golden has changed
since.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "render" / "comment_failed.md"
OUT = ROOT / "docs" / "comment.png"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1000, 1320

# GitHub's comment look, approximately: Primer's font stack, colors and spacing.
CSS = """
* { box-sizing: border-box; }
body { margin: 0; padding: 24px; background: #fff; color: #1f2328;
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial,
  sans-serif; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 952px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; color: #59636e; }
.head b { color: #1f2328; }
.head .bot { border: 1px solid #d1d9e0; border-radius: 2em; padding: 0 7px; font-size: 12px;
  margin-left: 4px; }
.body { padding: 16px; }
h3 { font-size: 1.25em; font-weight: 600; margin: 0 0 16px; line-height: 1.25; }
p, ul, table, pre, details { margin: 0 0 16px; }
ul { padding-left: 2em; }
li + li { margin-top: 4px; }
code { font: 85%/1.45 ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas,
  "Liberation Mono", monospace; background: rgba(129, 139, 152, 0.12); border-radius: 6px;
  padding: 0.2em 0.4em; }
pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; display: block; width: max-content; max-width: 100%; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
th { font-weight: 600; }
tr:nth-child(2n) { background: #f6f8fa; }
summary { cursor: pointer; }
hr { height: 0.25em; background: #d1d9e0; border: 0; margin: 24px 0; }
a { color: #0969da; text-decoration: none; }
strong { font-weight: 600; }
"""


def page(markdown: str) -> str:
    """The comment inside a GitHub-like comment box, as a complete HTML page."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    body = md.render(markdown)
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        f"<title>passk comment</title><style>{CSS}</style></head><body>"
        '<div class="comment"><div class="head"><b>github-actions</b>'
        '<span class="bot">bot</span> commented</div>'
        f'<div class="body">{body}</div></div></body></html>'
    )


DIGEST_KEY = b"passk-golden"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def golden_digest(markdown: bytes) -> str:
    """What the PNG records of the golden it drew: its path and sha256."""
    return f"{GOLDEN.relative_to(ROOT).as_posix()} sha256:{hashlib.sha256(markdown).hexdigest()}"


def png_text(png: bytes) -> dict[str, str]:
    """The PNG's ``tEXt`` chunks, key -> text (Latin-1, as the PNG specification says)."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    found, at = {}, len(PNG_SIGNATURE)
    while at + 8 <= len(png):
        length = int.from_bytes(png[at : at + 4], "big")
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            key, _, text = data.partition(b"\0")
            found[key.decode("latin-1")] = text.decode("latin-1")
        at += 12 + length
    return found


def with_text(png: bytes, key: bytes, text: str) -> bytes:
    """The PNG with one ``tEXt`` chunk added right after its header chunk (IHDR)."""
    data = key + b"\0" + text.encode("latin-1")
    chunk = len(data).to_bytes(4, "big") + b"tEXt" + data
    chunk += zlib.crc32(b"tEXt" + data).to_bytes(4, "big")
    header_end = len(PNG_SIGNATURE) + 12 + int.from_bytes(png[8:12], "big")
    return png[:header_end] + chunk + png[header_end:]


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    sys.exit("no Chromium or Chrome on PATH: install Debian's 'chromium' package")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the PNG goes")
    parser.add_argument("--html", type=Path, help="also write the page drawn here")
    args = parser.parse_args(argv)
    golden = GOLDEN.read_bytes()
    text = page(golden.decode("utf-8"))
    if args.html:
        args.html.write_text(text, encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "comment.html"
        source.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [
                browser(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                f"--user-data-dir={Path(tmp) / 'profile'}",
                f"--window-size={WIDTH},{HEIGHT}",
                f"--screenshot={args.out.resolve()}",
                source.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if done.returncode != 0 or not args.out.exists():
        sys.exit(f"chromium failed: {html.unescape(done.stderr[-2000:])}")
    args.out.write_bytes(with_text(args.out.read_bytes(), DIGEST_KEY, golden_digest(golden)))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
