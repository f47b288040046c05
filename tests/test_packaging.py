"""Installable as users expect: the package from this checkout, into fresh virtual environments, with
the extras pyproject.toml declares, and nothing that looks for the checkout's .venv.

- `pip install .` (no extra): the command line starts, and a command that needs numpy says which
  extra to install in one line, exit 2 (the runner's commands need nothing).
- `pip install '.[analysis]'`: `swarmbench compare` and `swarmbench report` work on real run folders,
  and `python -m analysis` is their short name.

pip takes the wheels from its cache where `make .venv/.installed` left them (else from PyPI).
"""

from __future__ import annotations

import shutil
import subprocess
import venv
from pathlib import Path

from harness import FIXTURES, ROOT

EXACT = FIXTURES / "exact"
SWEEP = FIXTURES / "analysis" / "sweep"


def source(tmp: Path) -> Path:
    """What a source distribution holds (pyproject.toml and the packages), copied: pip builds in the
    tree it is given, and the checkout must not gain build/ or egg-info from a test."""
    src = tmp / "src"
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src)
    for package in ("swarmbench", "analysis"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    return src


def fresh_env(tmp: Path, extra: str = "") -> Path:
    """A new venv under TMP with the package installed (not editable: what a user gets), with
    EXTRA (e.g. "[analysis]"); its bin/."""
    where = tmp / "env"
    venv.create(where, with_pip=True)
    bin_dir = where / "bin"
    # --no-compile: the same files installed, without pip byte-compiling every module of numpy,
    # pandas, matplotlib and scipy up front (half the install's time; Python compiles on import).
    pip = [bin_dir / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    res = subprocess.run([*pip, f"{source(tmp)}{extra}"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return bin_dir


def run(bin_dir: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [bin_dir / str(args[0]), *map(str, args[1:])], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_no_extra_runs_the_command_line_and_names_the_extra_a_command_needs(tmp_path):
    bin_dir = fresh_env(tmp_path)
    help_ = run(bin_dir, "swarmbench", "--help", cwd=tmp_path)
    assert help_.returncode == 0 and "compare" in help_.stdout and "headless" in help_.stdout
    res = run(bin_dir, "swarmbench", "compare", EXACT / "repeat-1", EXACT / "repeat-2", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        "swarmbench: error: swarmbench compare needs numpy, hdrh: pip install 'swarmbench[compare]' "
        "(or `make .venv/.installed` and the venv's python)"
    ]
    # The runner's checks need nothing installed: a bad setting is refused before anything starts.
    bad = subprocess.run(
        [bin_dir / "swarmbench", "headless"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "LOCUST_USERS": "abc"},
    )  # fmt: skip
    assert bad.returncode == 2 and "LOCUST_USERS='abc' is not a whole number" in bad.stderr, bad.stderr


def test_the_analysis_extra_gives_a_working_compare_and_report(tmp_path):
    bin_dir = fresh_env(tmp_path, "[analysis]")
    out = tmp_path / "cmp"
    res = run(
        bin_dir, "swarmbench", "compare", EXACT / "repeat-1", EXACT / "repeat-2", "-o", out, cwd=tmp_path
    )
    assert res.returncode in (0, 3), res.stderr[-2000:]
    assert {"compare.json", "compare.html", "junit.xml", "compare.txt"} <= {p.name for p in out.iterdir()}
    report = tmp_path / "report"
    res = run(bin_dir, "swarmbench", "report", SWEEP, "-o", report, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (report / "report.html").is_file() and (report / "summary.csv").is_file()
    # The short name, from any folder: the installed package, not the checkout.
    alias = run(bin_dir, "python", "-m", "analysis", "summary", SWEEP, "--aggregated", cwd=tmp_path)
    assert alias.returncode == 0 and "Aggregated" in alias.stdout, alias.stderr[-2000:]
    where = run(bin_dir, "python", "-c", "import swarmbench; print(swarmbench.__file__)", cwd=tmp_path)
    assert str(tmp_path / "env") in where.stdout, "the test must use the installed copy"
