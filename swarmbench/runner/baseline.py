"""`--baseline DIR` on headless and staging runs (`BASELINE=DIR make headless|staging`): after the
run, compare it with a saved baseline (a run folder or a folder of repeats) and fail the build on a
regression (exit 3). The run folder itself is kept, whatever the verdict.

The comparison goes NEXT TO the run folder, in results/<run-id>-vs-baseline/, not inside it: a run
folder holds what the run wrote and nothing else, so it can itself be the next baseline (compare
refuses an output folder inside a run for that reason), and a folder of repeats never mistakes
the comparison for a run (it has no run.json).

Standard library only: the comparison runs in the venv (runner/compare.py python()).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from swarmbench.core import exits
from swarmbench.core.errors import UsageError
from swarmbench.core.folder import MANIFEST
from swarmbench.runner import compare
from swarmbench.runner.compose import run_folders
from swarmbench.runner.paths import ROOT, display, results_dir
from swarmbench.runner.settings import Headless

SUFFIX = "-vs-baseline"
"""The comparison folder's name: the run's folder name plus this, beside it."""


def baseline_path(cli_value: str | None, env: Mapping[str, str]) -> Path | None:
    """--baseline, else BASELINE; checked now (UsageError, one line), before anything runs: a
    folder that is a run folder (run.json) or holds run folders, and the venv to compare in."""
    value = cli_value or env.get("BASELINE", "").strip()
    if not value:
        return None
    path = Path(value)
    if not path.is_dir():
        raise UsageError(f"BASELINE={value!r} is not a folder")
    if not (path / MANIFEST).is_file() and not any(
        p.is_dir() and (p / MANIFEST).is_file() for p in path.iterdir()
    ):
        raise UsageError(f"BASELINE={value!r} is not a run folder (no {MANIFEST}) or a folder of run folders")
    compare.python()
    return path.resolve()


def out_dir(run_dir: Path) -> Path:
    return run_dir.parent / f"{run_dir.name}{SUFFIX}"


def compare_with_baseline(run_dir: Path, baseline: Path, run_code: int = exits.OK) -> int:
    """Compare the finished RUN_DIR with BASELINE into out_dir(RUN_DIR); the build's exit code: the
    run's own when it is not 0 (a failed or broken run is reported as such; its numbers are not a
    measurement to judge), else the comparison's (3 regressed, 0, 2 bad input)."""
    if run_code not in exits.MEASURED:
        print(
            f"swarmbench: the run exited {run_code}: not compared with {display(baseline)}", file=sys.stderr
        )
        return run_code
    out = out_dir(run_dir)
    cmd = [compare.python(), "-m", "swarmbench.compare", str(baseline), str(run_dir), "-o", str(out)]
    print(
        f"swarmbench: compare {display(baseline)} {display(run_dir)} -> {display(out)}/",
        file=sys.stderr,
        flush=True,
    )
    code = subprocess.run(cmd, cwd=ROOT).returncode
    return run_code or code


def run_with_baseline(run: Callable[[Headless], int], chosen: Headless, baseline: Path | None) -> int:
    """RUN (compose or swarm) the headless run, then compare the folder it made with BASELINE."""
    if baseline is None:
        return run(chosen)
    results = results_dir(chosen.environ)
    before = run_folders(results)
    code = run(chosen)
    made = sorted(run_folders(results) - before)
    if not made:
        print(
            f"swarmbench: no run folder was written: not compared with {display(baseline)}", file=sys.stderr
        )
        return code or exits.RUN_FAILED
    return compare_with_baseline(made[-1].parent, baseline, code)
