"""`swarmbench compare --calibrate DIR` on two real repeats (tests/fixtures/exact): the calibration
is written once; the same runs again leave it as it is (seeded: the same file); a different one
already there is never written over (one line naming it, exit 2)."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT, run_module

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
