"""One page skeleton (swarmbench/core/skeleton.py): each of the five HTML documents Swarmbench writes
or serves (the run page, the sweep report, compare.html, trend.html, the web UI's latency page) is one
parseable document with one <head>, its title, the shared stylesheet and then its own rules, and no
other module writes a document's skeleton."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from harness import FIXTURES, ROOT, swarmbench
from history_runs import history, stored

from swarmbench.core import skeleton
from swarmbench.core.checks import AGGREGATED
from swarmbench.page import run as run_page


class _Document(HTMLParser):
    """The skeleton's parts as a browser's parser meets them: declarations, each start and end tag
    of html/head/body anywhere and of title/style before the body (in order; an SVG chart has
    <title>s of its own), the title's and the stylesheet's text."""

    SKELETON = ("html", "head", "title", "style", "body")
    HEAD_ONLY = ("title", "style")

    def __init__(self) -> None:
        super().__init__()
        self.decls: list[str] = []
        self.tags: list[str] = []
        self.text: dict[str, str] = {"title": "", "style": ""}
        self._in: str | None = None
        self.metas: list[dict[str, str | None]] = []

    def handle_decl(self, decl: str) -> None:
        self.decls.append(decl.lower())

    def _counted(self, tag: str) -> bool:
        return tag in self.SKELETON and not (tag in self.HEAD_ONLY and "body" in self.tags)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._counted(tag):
            self.tags.append(tag)
            self._in = tag if tag in self.text else None
        if tag == "meta":
            self.metas.append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if self._counted(tag):
            self.tags.append("/" + tag)
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.text[self._in] += data


def parsed(page: str) -> _Document:
    doc = _Document()
    doc.feed(page)
    doc.close()
    return doc


def assert_one_document(page: str, title: str, own_rules: str) -> _Document:
    """PAGE is one document: one doctype first, html > head (title, one style) then body, closed in
    order; its title TITLE; its stylesheet the shared one, then OWN_RULES (compacted)."""
    assert page.startswith("<!DOCTYPE html>\n"), page[:80]
    doc = parsed(page)
    assert doc.decls == ["doctype html"]
    skeleton_tags = ["html", "head", "title", "/title", "style", "/style", "/head", "body", "/body", "/html"]
    assert doc.tags == skeleton_tags, doc.tags
    assert doc.text["title"] == title
    rules = doc.text["style"]
    assert rules.startswith(skeleton.STYLE), rules[:200]
    if own_rules:
        assert rules == f"{skeleton.STYLE} {skeleton.one_line(own_rules)}"
    assert page.count("<style") == 1 and len(re.findall(r"<head[\s>]", page)) == 1
    assert page.lower().count("<!doctype") == 1
    return doc


# --- the five pages, made from real inputs ---------------------------------------------------------


def test_the_run_page():
    page = run_page.render(FIXTURES / "exact" / "repeat-1")
    doc = assert_one_document(page, "Run repeat-1", run_page.CSS)
    assert page.index(run_page.MARK) < 2048, "is_run_page reads the first 2 KB"
    assert {"name": "generator", "content": "swarmbench run page"} in doc.metas
    assert '<div class="answer" id="answer">' in page and '<table id="numbers">' in page


def test_the_sweep_report():
    from swarmbench.analysis import report
    from swarmbench.analysis.runs import load_runs
    from swarmbench.analysis.summary import summarize

    runs = load_runs([FIXTURES / "analysis" / "sweep"])
    page = report.build_report(runs, summarize(runs), [], [], title="Sweep <x>", answers="<p>box</p>")
    doc = assert_one_document(page, "Sweep <x>", report._CSS)
    assert "<h1>Sweep &lt;x&gt;</h1>" in page and "<p>box</p>" in page
    assert not any(m.get("name") == "generator" for m in doc.metas), "not a run page"


def test_compare_html(tmp_path):
    from swarmbench.compare.report import PAGE_CSS

    out = tmp_path / "out"
    res = swarmbench("compare", FIXTURES / "exact" / "repeat-1", FIXTURES / "exact" / "repeat-2", "-o", out)
    assert res.returncode == 0, res.stderr
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert_one_document(page, "swarmbench compare", PAGE_CSS)
    assert "<h1>Did it get slower?</h1>" in page and page.count("<svg") == 3
    assert re.search(r"<tr class='(inconclusive|no-change|improved|regressed)'><td>GET /albums</td>", page)


def test_trend_html(tmp_path):
    from swarmbench.compare import trend
    from swarmbench.history.store import open_store

    step = {("", AGGREGATED, "p95_ms"): 1.3}
    spec = stored(tmp_path / "h.sqlite", history(12, 0.01, seed=1, step=lambda i: step if i >= 6 else {}))
    with open_store(spec) as store:
        series = trend.trend_series(store, "main")
        found = trend.trend_json(store, "main", None, series)
    page = trend.trend_page("main", found, series)
    assert_one_document(page, "Swarmbench trend", "")
    assert "<h1>Trend: branch main</h1>" in page and "<svg" in page


def test_the_web_uis_latency_page():
    latency_ui = pytest.importorskip("swarmbench.plugin.latency_ui")
    rows = [{"name": AGGREGATED, "type": "", "count": 3, "p50": 1.5, "p95": 2, "p99": 3, "max": 4}]
    page = latency_ui.page({"enabled": True, "rows": rows})
    doc = assert_one_document(page, "Swarmbench: exact latency", latency_ui.PAGE_CSS)
    assert {"http-equiv": "refresh", "content": str(latency_ui.REFRESH_S)} in doc.metas
    assert f"<td>{AGGREGATED}</td>" in page and 'id="swarmbench-latency-chart"' in page


def test_a_page_s_own_rules_come_after_the_shared_ones():
    """Later rules win a tie in the cascade: a page's own rule overrides the shared one."""
    page = skeleton.document("t", "<p>x</p>", css="body{max-width:none}\n.a{color:red}")
    assert parsed(page).text["style"] == skeleton.STYLE + " body{max-width:none} .a{color:red}"
    assert "<title>&lt;b&gt;&amp;</title>" in skeleton.document("<b>&", "")


def test_only_the_skeleton_writes_a_document_head():
    """The goal of one skeleton, held: the doctype is written in one module."""
    writers = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "swarmbench").rglob("*.py")
        if "<!doctype" in p.read_text(encoding="utf-8").lower()
    )
    assert writers == ["swarmbench/core/skeleton.py"]
