"""Draw docs/comment.png: the golden failing PR comment as GitHub shows it, for the README.

Renders ``tests/golden/render/comment_failed.md`` (the whole comment the
renderer produces, checked by tests/test_render.py) with markdown-it-py (GFM
tables, HTML blocks such as <details>) inside a page styled like a GitHub
comment, 1000 px wide, and screenshots its first screen with headless
Chromium (Debian's ``chromium``; Chrome works too)::

    python docs/comment_png.py            # writes docs/comment.png
    python docs/comment_png.py --html x   # also keeps the page it drew

Run it again after changing the comment's layout and commit the new PNG.
"""

from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
import tempfile
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
    text = page(GOLDEN.read_text(encoding="utf-8"))
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
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
