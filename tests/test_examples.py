"""results/examples, the README's showcase, is what today's code makes of its runs: a real sweep
recorded with the run page (HDR files, run status), its committed report and run pages equal to what
the code makes from those runs now. A change that alters either fails here until results/examples is
regenerated (results/examples/README.md says how).

What is normalised: the report's "generated <time>" line, and nothing else. Everything else is a
function of the folders: the bootstrap is seeded, the PNG charts come from the pinned matplotlib
(Agg, its own bundled fonts: the same bytes run to run), the run pages hold no time but the run's.
"""

from __future__ import annotations

import re
import shutil

import pytest
from harness import ROOT

from swarmbench.core import folder
from swarmbench.core.manifest import COMPLETE, RunManifest
from swarmbench.page import run as run_page

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

EXAMPLES = ROOT / "results" / "examples"
RUNS = sorted(p.parent for p in EXAMPLES.glob("*/run.json"))
GENERATED = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def test_the_examples_are_a_sweep_recorded_with_todays_harness():
    assert len(RUNS) == 4 and (EXAMPLES / folder.SWEEP_JSON).is_file()
    for run_dir in RUNS:
        m = RunManifest.read(run_dir / folder.MANIFEST)
        assert m.status == COMPLETE and m.latency and m.latency.exact, run_dir.name
        assert all((run_dir / name).is_file() for name in folder.LATENCY_FILES)
        assert run_page.is_run_page(run_dir / folder.REPORT_HTML)


@pytest.mark.parametrize("run_dir", RUNS, ids=lambda p: p.name)
def test_each_committed_run_page_is_what_the_code_makes(run_dir):
    assert (run_dir / folder.REPORT_HTML).read_text() == run_page.render(run_dir), (
        "regenerate the pages (results/examples/README.md)"
    )


def test_the_committed_report_is_what_the_code_makes(tmp_path, monkeypatch):
    """`python -m analysis report results/examples -o results/examples/report`, as the README says,
    on a copy of the runs: every file equal to the committed one, the report's time aside."""
    from swarmbench.cli import analysis_main

    copy = tmp_path / "results" / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("report"))
    monkeypatch.chdir(tmp_path)
    assert analysis_main(["report", "results/examples", "-o", "results/examples/report"]) == 0
    made, committed = copy / "report", EXAMPLES / "report"
    assert sorted(p.name for p in made.iterdir()) == sorted(p.name for p in committed.iterdir())
    for path in sorted(committed.iterdir()):
        if path.name == folder.REPORT_HTML:
            want = GENERATED.sub("generated <time>", path.read_text())
            got = GENERATED.sub("generated <time>", (made / path.name).read_text())
            assert got == want, "report.html differs: regenerate it (results/examples/README.md)"
        else:
            assert (made / path.name).read_bytes() == path.read_bytes(), f"{path.name} differs"
