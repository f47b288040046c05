"""The GitHub Actions workflow: actionlint (with shellcheck where installed) passes, and it is the
workflow the docs promise (inputs, schedule, pinned actions, artifacts, failing on the exit code).

actionlint is a Go program: `make tools` builds the pinned version into .venv/bin; failing that the
test runs it with `go run` (the Go module proxy). With neither it skips locally, and FAILS in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from harness import ROOT, missing

WORKFLOW = ROOT / ".github" / "workflows" / "loadtest.yml"


def actionlint_version() -> str:
    m = re.search(r"^override ACTIONLINT_VERSION := (v\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, "the Makefile pins ACTIONLINT_VERSION"
    return m[1]


@pytest.fixture(scope="session")
def actionlint() -> list[str]:
    version = actionlint_version()
    for candidate in (ROOT / ".venv" / "bin" / "actionlint", shutil.which("actionlint")):
        if candidate and os.access(candidate, os.X_OK):
            out = subprocess.run([str(candidate), "-version"], capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and out.stdout.split()[:1] == [version]:
                return [str(candidate)]
    if shutil.which("go"):
        cmd = ["go", "run", f"github.com/rhysd/actionlint/cmd/actionlint@{version}"]
        out = subprocess.run([*cmd, "-version"], capture_output=True, text=True, timeout=300)
        if out.returncode == 0:
            return cmd
        reason = f"`go run` could not build actionlint {version}: {out.stderr.strip()[-500:]}"
    else:
        reason = f"neither actionlint {version} (make tools) nor Go is available"
    missing(reason)


def lint(actionlint: list[str], *paths: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*actionlint, "-no-color", *paths], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_actionlint_passes(actionlint):
    out = lint(actionlint, str(WORKFLOW.relative_to(ROOT)))
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_is_live(actionlint, tmp_path):
    """The same workflow with a typo in an input's name must fail: the lint really checks it."""
    broken = tmp_path / ".github" / "workflows" / "loadtest.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("inputs.run_time", "inputs.runtime", 1))
    out = lint(actionlint, str(broken))
    assert out.returncode == 1 and "runtime" in out.stdout, out.stdout + out.stderr


def test_workflow_shape():
    text = WORKFLOW.read_text()
    assert re.search(r"^  workflow_dispatch:\n    inputs:\n", text, re.M)
    for name in ("host", "users", "run_time", "workers", "checks"):
        assert re.search(rf"^      {name}:\n        description: ", text, re.M), f"input {name}"
    assert re.search(r'^  schedule:\n(    #.*\n)*    - cron: "', text, re.M)
    # Every action pinned to a full commit, not a movable tag (an action in a folder of its
    # repository, actions/cache/restore, too).
    uses = re.findall(r"uses: (\S+)", text)
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)*@[0-9a-f]{40}", u) for u in uses), uses
    assert "actions/upload-artifact" in text and text.count("if: always()") >= 2
    assert "path: results/${{ env.LOCUST_RUN_ID }}/" in text
    assert "python -m analysis report" in text and "path: analysis-report/" in text
    # The run's own exit code reaches the log (make would turn every failure into 2).
    assert re.search(r"^ +python -m swarmbench headless --staging$", text, re.M)
    assert not re.search(r"^ +make (staging|headless)$", text, re.M)
    # Secrets enter only as a step's environment variable (then a private file), never inline in
    # a script, where they would be part of the script text itself.
    secret_lines = [ln for ln in text.splitlines() if "secrets." in ln and not ln.lstrip().startswith("#")]
    assert secret_lines and all(
        re.fullmatch(r"\s+[A-Z_]+: \$\{\{ secrets\.\w+ \}\}", ln) for ln in secret_lines
    )


def step(text: str, name: str) -> str:
    """The workflow's step named NAME, as text (up to the next step)."""
    start = text.index(f"      - name: {name}")
    end = text.find("\n      - ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_main_records_into_a_history_that_pull_requests_are_gated_against():
    """Pushes to main record their run into the history (SWARMBENCH_RECORD=1); pull requests run
    with BASELINE=history, never recording. The history is the Actions cache (restored by prefix,
    saved by main's pushes as a new entry), or PostgreSQL from the LOADTEST_HISTORY secret."""
    text = WORKFLOW.read_text()
    assert re.search(r"^  push:\n    branches: \[main\]\n  pull_request:\n", text, re.M)
    assert re.search(r"^permissions:\n  contents: read\n\n", text, re.M)  # nothing to write, no gh
    chosen = step(text, "Run history")
    assert "if: github.event_name == 'push' || github.event_name == 'pull_request'" in chosen
    assert "HISTORY_URL: ${{ secrets.LOADTEST_HISTORY }}" in chosen
    assert 'echo "BASELINE=history" >> "$GITHUB_ENV"' in chosen
    assert 'echo "SWARMBENCH_RECORD=1" >> "$GITHUB_ENV"' in chosen and "refs/heads/main" in chosen
    restore, save = step(text, "Restore the run history"), step(text, "Save the run history")
    assert "uses: actions/cache/restore@" in restore and "if: env.HISTORY_STORE == 'cache'" in restore
    assert "restore-keys: loadtest-history-\n" in restore
    assert "uses: actions/cache/save@" in save and "github.ref == 'refs/heads/main'" in save
    key = "key: loadtest-history-${{ github.run_id }}-${{ github.run_attempt }}"
    assert key in restore and key in save  # restore never hits its own key: the newest by prefix
    for part in (restore, save):
        assert "path: results/history.sqlite" in part
    for name in ("Load test", "Trend of main's last runs"):
        assert "SWARMBENCH_HISTORY: ${{ secrets.LOADTEST_HISTORY }}" in step(text, name)
    # The gate and the trend land in the job summary and as artifacts.
    gate = step(text, "Gate against main's history")
    assert (
        "if: always() && env.BASELINE == 'history'" in gate and '"results/$LOCUST_RUN_ID-vs-history"' in gate
    )
    assert "path: results/${{ env.LOCUST_RUN_ID }}-vs-history/" in step(text, "Upload the gate")
    trend = step(text, "Trend of main's last runs")
    assert "python -m swarmbench trend --last 30 -o trend" in trend and "$GITHUB_STEP_SUMMARY" in trend
    assert "path: trend/" in step(text, "Upload the trend page")
    # Pull requests and pushes load the bundled target, never the staging host of the schedule.
    assert "(github.event_name == 'schedule' && vars.LOADTEST_HOST) || ''" in text


@pytest.mark.parametrize("short", [1, 0])
def test_pull_requests_require_a_baseline_once_main_has_runs(tmp_path, short):
    """The step's own script, on a real store: SWARMBENCH_REQUIRE_BASELINE=1 goes to GITHUB_ENV once
    main has the runs the gate needs (then a pull request the gate cannot judge fails), not before
    (a feature branch's runs do not count)."""
    import dataclasses
    import sys

    from history_runs import history, stored

    from swarmbench.compare.trend import GATE_MIN_RUNS

    part = step(WORKFLOW.read_text(), "Require a baseline once main has runs")
    assert "if: env.BASELINE == 'history'" in part
    assert "SWARMBENCH_HISTORY: ${{ secrets.LOADTEST_HISTORY }}" in part
    script = re.search(r"python - <<'EOF'\n(.*?)\n\s*EOF\n", part, re.S)[1]
    script = "\n".join(line.removeprefix(" " * 10) for line in script.splitlines())
    main = history(GATE_MIN_RUNS - short, 0.01)
    feature = [dataclasses.replace(r, branch="feature", run_key=f"f-{r.run_key}") for r in history(3, 0.01)]
    store = stored(tmp_path / "h.sqlite", main + feature)
    github_env = tmp_path / "github_env"
    github_env.write_text("")
    env = {**os.environ, "SWARMBENCH_HISTORY": store, "GITHUB_ENV": str(github_env)}
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert github_env.read_text() == ("" if short else "SWARMBENCH_REQUIRE_BASELINE=1\n")
