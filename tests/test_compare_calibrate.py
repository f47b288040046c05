"""`swarmbench compare --calibrate DIR` on two real repeats (tests/fixtures/exact): the calibration
is written once; the same runs again leave it as it is (seeded: the same file); a different one
already there is never written over (one line naming it, exit 2)."""

from __future__ import annotations

import json
import shutil

from harness import ROOT, run_module

from swarmbench.compare.noise import NOISE_JSON

FIXTURES = ROOT / "tests" / "fixtures" / "exact"


def test_a_calibration_is_written_once_and_never_over_another(tmp_path):
    for name in ("repeat-1", "repeat-2"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    res = run_module("swarmbench", "compare", "--calibrate", tmp_path)
    assert res.returncode == 0, res.stderr
    written = (tmp_path / NOISE_JSON).read_text()
    assert set(json.loads(written)["runs"]) == {"repeat-1", "repeat-2"}
    again = run_module("swarmbench", "compare", "--calibrate", tmp_path)
    assert again.returncode == 0 and (tmp_path / NOISE_JSON).read_text() == written, again.stderr
    other = json.dumps({"noise": {"p95": 0.5}})
    (tmp_path / NOISE_JSON).write_text(other)
    refused = run_module("swarmbench", "compare", "--calibrate", tmp_path)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert str(tmp_path / NOISE_JSON) in lines[0] and "nothing is written over" in lines[0], lines
    assert (tmp_path / NOISE_JSON).read_text() == other


def test_repeats_pool_with_a_calibration_of_other_runs_never_of_their_own(tmp_path):
    """compare.json says which sides pooled their runs' spread with the calibration's (stats.pooled):
    a calibration of other runs lends its runs to both sides of repeats; one measured on these very
    runs lends none (their spread would count twice)."""
    for side in ("a", "b"):
        for name in ("repeat-1", "repeat-2"):
            shutil.copytree(FIXTURES / name, tmp_path / side / name)
    other = tmp_path / "other-noise.json"
    other.write_text(
        json.dumps(
            {"runs": ["x1", "x2", "x3"], "started": ["2026-01-01T00:00:00+00:00"] * 3, "noise": {"p95": 0.02}}
        )
    )
    res = run_module(
        "swarmbench", "compare", tmp_path / "a", tmp_path / "b", "--noise", other, "-o", tmp_path / "o1"
    )
    assert res.returncode in (0, 3), res.stderr
    pooled = json.loads((tmp_path / "o1" / "compare.json").read_text())["noise"]["pooled_runs"]
    assert pooled == {"baseline": 3, "candidate": 3}, pooled
    assert "pooled with the calibration's 3 runs (baseline), 3 runs (candidate)" in res.stdout

    assert run_module("swarmbench", "compare", "--calibrate", tmp_path / "a").returncode == 0
    res = run_module("swarmbench", "compare", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "o2")
    assert res.returncode in (0, 3), res.stderr
    pooled = json.loads((tmp_path / "o2" / "compare.json").read_text())["noise"]["pooled_runs"]
    assert pooled == {"baseline": 0, "candidate": 0}, pooled  # a's own runs (and b's copies of them)
