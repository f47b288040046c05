"""The HTML document around every page Swarmbench writes or serves (the run page, the sweep report,
compare.html, trend.html, the web UI's exact-latency page) and the one stylesheet they share.

`document(title, body, css=..., head=...)` is the only place a doctype, <html> and <head> are
written: a page gives its title, its body, its own rules (CSS: added after the shared STYLE, so they
win where they differ) and any extra head tags (HEAD: the run page's generator mark, the UI page's
refresh). The head is one line, the CSS compacted: the same markup in every run folder is not a
block of lines repeated file after file. Standard library only.
"""

from __future__ import annotations

from html import escape


def one_line(css: str) -> str:
    """CSS written readably in the source (a rule or a few per line) as the page carries it: one line."""
    return " ".join(line.strip() for line in css.strip().splitlines() if line.strip())


STYLE = one_line("""
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1040px;
margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin:.2em 0;font-size:1.6em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;font-size:14px;margin:.6em 0} th,td{border:1px solid #ddd;padding:3px 8px}
th{background:#f3f3f3;text-align:left} td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:bold;background:#fafafa}
.warn{background:#fff6e0;border-left:4px solid #e0a000;padding:.4em 1em;margin:.8em 0}
.muted{color:#666;font-size:13px} figure{margin:1em 0} figcaption{color:#555;font-size:13px}
img{max-width:100%} .scroll,pre{overflow-x:auto}
details{margin:.6em 0} summary{cursor:pointer;font-weight:bold} code{font-size:90%}
""")
"""The shared look: a readable column of system-font text, tables with light borders and right-aligned
numbers (class n), a bold total row, a yellow warning box (class warn), muted notes and captions."""


def document(title: str, body: str, css: str = "", head: str = "") -> str:
    """The whole document: TITLE (escaped here), BODY as given, the shared STYLE then the page's own
    rules CSS (compacted to one line), HEAD's tags right after the charset (within the first bytes:
    a reader that tells pages apart by a meta tag reads only those)."""
    rules = STYLE + (" " + one_line(css) if css.strip() else "")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{head}'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{rules}</style></head><body>\n{body}\n</body></html>\n"
    )
