"""junit.xml: the one JUnit XML writer, for the run's thresholds (plugin/checks.py) and a comparison's
verdicts (compare/report.py), as CI test reporters read it (GitHub, GitLab, Jenkins).

One form: `<testsuites>` holding one `<testsuite>`, both with the totals (tests, failures, errors,
time); a `<testcase>` per check with its line in `<system-out>` (the CI workflow's summary greps
those) and, when it failed, a `<failure message= type=>`. Indented, with an XML declaration.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree as ET

ROOT_NAME = "swarmbench"
"""The <testsuites> element's name: every suite Swarmbench writes is one of its."""


@dataclass(frozen=True)
class Case:
    """One testcase: CLASSNAME and NAME as reporters group and show them, OUT its one-line outcome
    (system-out); FAILURE the failure's message when it failed (None: passed), KIND its type,
    DETAIL its text."""

    classname: str
    name: str
    out: str
    failure: str | None = None
    kind: str = ""
    detail: str | None = None


def junit_xml(
    suite: str,
    cases: Sequence[Case],
    seconds: float = 0.0,
    timestamp: str | None = None,
    hostname: str | None = None,
) -> bytes:
    """The document for SUITE's CASES (SECONDS: how long it ran; TIMESTAMP and HOSTNAME: when and
    where, left out when not given), UTF-8 with its declaration."""
    failures = sum(c.failure is not None for c in cases)
    common = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", name=ROOT_NAME, **common)
    where = {k: v for k, v in (("timestamp", timestamp), ("hostname", hostname)) if v is not None}
    node = ET.SubElement(root, "testsuite", name=suite, skipped="0", **where, **common)
    for c in cases:
        case = ET.SubElement(node, "testcase", classname=c.classname, name=c.name, time="0")
        ET.SubElement(case, "system-out").text = c.out
        if c.failure is not None:
            failure = ET.SubElement(case, "failure", message=c.failure, type=c.kind)
            failure.text = c.detail
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
