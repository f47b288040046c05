"""The one JUnit writer (swarmbench/core/junit.py) and its two users: the thresholds' junit.xml
(plugin/checks.py) and a comparison's (compare/report.py) parse as CI reporters read them
(testsuites > testsuite > testcase, a <failure> per failed case, the totals counted)."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

from harness import FIXTURES, swarmbench

from swarmbench.core.junit import Case, junit_xml


def suite_of(xml: bytes) -> tuple[ET.Element, ET.Element]:
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    return root, suite


def test_failures_are_counted_and_each_case_says_its_line():
    cases = [
        Case("swarmbench.checks", "p95<300", "PASS p95<300 (Aggregated): measured 12 ms"),
        Case("swarmbench.checks", "p99<1", "FAIL p99<1", failure="measured 5 ms, limit < 1 ms",
             kind="ThresholdBroken", detail="p99<1: measured 5 ms, limit < 1 ms"),
        Case("compare.GET /a & <b>", "p50", 'p50 "x" -> y: regressed', 'p50 "x" -> y', "regressed"),
    ]  # fmt: skip
    xml = junit_xml("s", cases, 2.5, "2026-01-01T00:00:00", "host1")
    assert xml.startswith(b"<?xml version='1.0' encoding='utf-8'?>\n")
    root, suite = suite_of(xml)
    for node in (root, suite):
        assert (node.get("tests"), node.get("failures"), node.get("errors"), node.get("time")) == (
            "3", "2", "0", "2.500",
        )  # fmt: skip
    assert (suite.get("name"), suite.get("timestamp"), suite.get("hostname")) == (
        "s",
        "2026-01-01T00:00:00",
        "host1",
    )
    got = [
        (c.get("classname"), c.get("name"), c.findtext("system-out"), c.find("failure"))
        for c in suite.iter("testcase")
    ]
    assert [g[:3] for g in got] == [(c.classname, c.name, c.out) for c in cases]  # escaped and back
    assert got[0][3] is None
    assert (got[1][3].get("message"), got[1][3].get("type"), got[1][3].text) == (
        "measured 5 ms, limit < 1 ms", "ThresholdBroken", "p99<1: measured 5 ms, limit < 1 ms",
    )  # fmt: skip
    assert (got[2][3].get("message"), got[2][3].get("type")) == ('p50 "x" -> y', "regressed")


def test_no_cases_is_an_empty_passing_suite_without_when_and_where():
    root, suite = suite_of(junit_xml("empty", []))
    assert (root.get("tests"), root.get("failures")) == ("0", "0") and suite.findall("testcase") == []
    assert suite.get("timestamp") is None and suite.get("hostname") is None


def test_each_system_out_is_one_line_the_ci_summary_greps():
    """.github/workflows/loadtest.yml greps `<system-out>[^<]*` out of junit.xml: each case's line."""
    xml = junit_xml("s", [Case("c", f"n{i}", f"line {i} < {i + 1}") for i in range(3)])
    found = subprocess.run(["grep", "-o", "<system-out>[^<]*"], input=xml, capture_output=True, check=True)
    assert found.stdout.decode().splitlines() == [f"<system-out>line {i} &lt; {i + 1}" for i in range(3)]


def test_a_comparisons_junit_counts_its_regressions(tmp_path):
    """A real comparison through the CLI: one testcase per (name, metric) of compare.json, a failure
    for each regressed one (and, with --fail-on-inconclusive, each inconclusive one)."""
    import json

    a, b = FIXTURES / "exact" / "repeat-1", FIXTURES / "exact" / "repeat-2"
    res = swarmbench("compare", a, b, "-o", tmp_path / "out", "--fail-on-inconclusive")
    data = json.loads((tmp_path / "out" / "compare.json").read_text())
    verdicts = [r["verdict"] for r in data["results"]]
    root, suite = suite_of((tmp_path / "out" / "junit.xml").read_bytes())
    cases = suite.findall("testcase")
    assert len(cases) == len(verdicts) > 0
    failing = sum(v in ("regressed", "inconclusive") for v in verdicts)
    assert failing > 0 and res.returncode != 0, "the fixtures' repeats are inconclusive on some metric"
    assert root.get("failures") == suite.get("failures") == str(failing)
    assert [c.find("failure") is not None for c in cases] == [
        v in ("regressed", "inconclusive") for v in verdicts
    ]
    assert all(c.findtext("system-out", "").endswith(f": {v}") for c, v in zip(cases, verdicts, strict=True))
