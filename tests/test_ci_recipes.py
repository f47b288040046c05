"""The CI recipes end to end (marked `docker`): `make staging` with BASELINE against a slower deploy,
and the GitHub workflow's own steps for a push to main and then a pull request.

GitHub Actions cannot run on this machine, so the workflow test plays GitHub's part and nothing else:
- every `run:` script of .github/workflows/loadtest.yml runs as GitHub runs it (`bash --noprofile
  --norc -eo pipefail`), in a copy of this tree (the checkout), with the files a runner gives a step
  (GITHUB_ENV, GITHUB_STEP_SUMMARY, RUNNER_TEMP) and the step's `env:`;
- a step runs when its `if:` holds; the conditions are a table below, and a condition not in it
  fails the test (teach it the new one rather than skip a step);
- `uses:` steps: the checkout is the copy, setup-python is this venv first on PATH, an upload copies
  its `path` to an artifact folder;
- `gh` is a script on PATH: `gh run list` names main's run when its artifact exists, `gh run
  download` copies that artifact.
The load runs, the comparison and every path between the steps are real: `make headless` through
Docker compose against the bundled target (ALBUMS_DELAY stands for the pull request's slower code).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from harness import ROOT
from make_runs import compose_env, run_on_stack
from staging_hosts import image, make_staging

WORKFLOW = ROOT / ".github" / "workflows" / "loadtest.yml"
MAIN_RUN_ID = "7001"
PR_RUN_ID = "7002"

# Repository variables as a user would set them for a short smoke test: 10 users, 6 s, 1 worker.
JOB_ENV = {
    "LOCUST_HOST": "",  # push and pull_request test the bundled target
    "LOCUST_USERS": "10",
    "LOCUST_RUN_TIME": "6s",
    "WORKERS": "1",
    "LOCUST_CHECKS": "p95<500;fail_ratio<0.01",
}

GH = """#!/bin/sh
# gh, as the workflow calls it: `run list ... --jq ...` and `run download RUN --name N --dir D`.
artifacts="$FAKE_GH_ARTIFACTS"
case "$1 $2" in
  "run list") [ -d "$artifacts/loadtest-baseline-main" ] && echo "$FAKE_GH_MAIN_RUN"; exit 0 ;;
  "run download")
    shift 2; run="$1"; shift
    while [ $# -gt 0 ]; do
      case "$1" in --name) name="$2"; shift 2 ;; --dir) dir="$2"; shift 2 ;; *) shift ;; esac
    done
    [ "$run" = "$FAKE_GH_MAIN_RUN" ] && [ -d "$artifacts/$name" ] || { echo "no artifact $name" >&2; exit 1; }
    mkdir -p "$dir" && cp -r "$artifacts/$name/." "$dir/" ;;
  *) echo "gh stand-in: unexpected $*" >&2; exit 2 ;;
esac
"""


@dataclass
class Job:
    """One job's run: GitHub's context, the runner's files, each step's outcome."""

    event: str
    run_id: str
    env: dict[str, str]
    work: Path
    artifacts: Path
    ok: bool = True
    outcomes: dict[str, str] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return "refs/heads/main" if self.event == "push" else "refs/pull/1/merge"

    def expr(self, text: str) -> str:
        """A `${{ ... }}` expression of a step's env, name or path (the ones the steps use)."""
        values = {
            "secrets.LOADTEST_HEADERS": "",
            "github.token": "gh-token",
            "github.run_id": self.run_id,
            "github.run_attempt": "1",
            "env.LOCUST_RUN_ID": self.env["LOCUST_RUN_ID"],
        }

        def one(m: re.Match) -> str:
            key = m[1].strip()
            assert key in values, f"the workflow uses ${{{{ {key} }}}}: teach this test its value"
            return values[key]

        return re.sub(r"\$\{\{(.*?)\}\}", one, text)


CONDITIONS = {
    None: lambda j: j.ok,
    "github.event_name == 'pull_request'": lambda j: j.ok and j.event == "pull_request",
    "always()": lambda j: True,
    "always() && env.BASELINE != ''": lambda j: bool(j.env.get("BASELINE")),
    "success() && github.event_name == 'push' && github.ref == 'refs/heads/main'": lambda j: (
        j.ok and j.event == "push" and j.ref == "refs/heads/main"
    ),
    "always() && hashFiles(format('results/{0}/run.json', env.LOCUST_RUN_ID)) != ''": lambda j: (
        j.work / "results" / j.env["LOCUST_RUN_ID"] / "run.json"
    ).is_file(),
    "always() && steps.report.outcome == 'success'": lambda j: j.outcomes.get("report") == "success",
}
"""Each `if:` of the workflow's steps, as GitHub evaluates it (no status function means success())."""


def steps() -> list[dict]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["loadtest"]
    assert set(job["env"]) == {*JOB_ENV, "LOCUST_RUN_ID"}, "the job's env changed: update JOB_ENV"
    return job["steps"]


def run_step(job: Job, step: dict, timeout: float = 600) -> None:
    condition = step.get("if")
    assert condition in CONDITIONS, f"step {step.get('name')!r}: teach this test the condition {condition!r}"
    if not CONDITIONS[condition](job):
        return
    outcome = "success"
    if "run" in step:
        script = job.work.parent / "step.sh"
        script.write_text(step["run"])
        env = {**job.env, **{k: job.expr(str(v)) for k, v in step.get("env", {}).items()}}
        github_env = job.work.parent / "github_env"
        github_env.write_text("")
        env["GITHUB_ENV"] = str(github_env)
        res = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=job.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        name = step.get("name") or f"Run {step['run'].splitlines()[0]}"  # GitHub's name for it
        job.codes[name] = res.returncode
        with (job.work.parent / "log").open("a") as f:
            f.write(f"## {name}: {res.returncode}\n{res.stdout}{res.stderr}")
        for line in github_env.read_text().splitlines():
            name, eq, value = line.partition("=")
            assert eq and "<<" not in name, f"GITHUB_ENV line {line!r}"
            job.env[name] = value
        if res.returncode != 0:
            outcome = "failure"
    elif step["uses"].startswith("actions/upload-artifact@"):
        src = job.work / job.expr(step["with"]["path"])
        if src.is_dir():
            shutil.copytree(src, job.artifacts / job.expr(step["with"]["name"]))
        elif step["with"].get("if-no-files-found") == "error":
            outcome = "failure"
    else:
        assert step["uses"].startswith(("actions/checkout@", "actions/setup-python@")), step["uses"]
    if "id" in step:
        job.outcomes[step["id"]] = outcome
    job.ok = job.ok and outcome == "success"


def new_job(tmp_path: Path, event: str, run_id: str, artifacts: Path, **extra: str) -> Job:
    root = tmp_path / f"{event}-{run_id}"
    work = root / "checkout"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    (root / "temp").mkdir()
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(GH)
    (bin_dir / "gh").chmod(0o755)
    env = compose_env(tmp_path)  # a project name of its own, nothing of the caller's settings
    for name in ("SWARMBENCH_RESULTS", "LOCUST_SPAWN_RATE", "LOCUST_WAIT_TIME"):
        env.pop(name)  # results/... in the checkout, as the workflow's paths say; its default load
    env.update(JOB_ENV, LOCUST_RUN_ID=f"gha-{run_id}-1", **extra)
    env.update(
        PATH=f"{bin_dir}:{Path(sys.executable).parent}:{env['PATH']}",
        GITHUB_EVENT_NAME=event,
        GITHUB_REPOSITORY="swarmbench/swarmbench",
        GITHUB_STEP_SUMMARY=str(root / "summary.md"),
        RUNNER_TEMP=str(root / "temp"),
        FAKE_GH_ARTIFACTS=str(artifacts),
        FAKE_GH_MAIN_RUN=MAIN_RUN_ID,
    )
    return Job(event, run_id, env, work, artifacts)


def log(job: Job) -> str:
    path = job.work.parent / "log"
    return path.read_text()[-4000:] if path.exists() else ""


@pytest.mark.docker
def test_a_pull_request_is_compared_with_mains_run_and_fails_on_a_regression(docker_compose, tmp_path):
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()

    main = new_job(tmp_path, "push", MAIN_RUN_ID, artifacts, ALBUMS_DELAY="2ms")
    for step in steps():
        run_step(main, step)
    assert main.ok and main.codes["Load test"] == 0, log(main)
    assert not any(n.startswith("Baseline from main") for n in main.codes)  # pushes compare with nothing
    kept = artifacts / "loadtest-baseline-main"
    assert (kept / "run.json").is_file() and (kept / "junit.xml").is_file(), log(main)
    assert "p95<500" in Path(main.env["GITHUB_STEP_SUMMARY"]).read_text()

    pr = new_job(tmp_path, "pull_request", PR_RUN_ID, artifacts, ALBUMS_DELAY="12ms")
    for step in steps():
        run_step(pr, step)
    assert pr.env.get("BASELINE") == str(Path(pr.env["RUNNER_TEMP"]) / "baseline"), log(pr)
    assert pr.codes["Load test"] == 3 and not pr.ok, log(pr)  # a regression fails the job
    summary = Path(pr.env["GITHUB_STEP_SUMMARY"]).read_text()
    assert f"Baseline: main's run {MAIN_RUN_ID}" in summary, summary
    assert "### Compared with main's run" in summary and "regressed" in summary, summary
    compared = artifacts / f"loadtest-compare-{PR_RUN_ID}-1"
    assert (compared / "compare.json").is_file() and (compared / "junit.xml").is_file()
    assert (artifacts / f"loadtest-results-{PR_RUN_ID}-1" / "run.json").is_file()
    assert (
        not (artifacts / f"loadtest-report-{PR_RUN_ID}-1").exists() or pr.outcomes.get("report") == "success"
    )
    assert len(list(artifacts.glob("loadtest-baseline-main*"))) == 1  # a pull request never replaces it


def test_a_pull_request_without_a_baseline_says_so_and_is_not_compared(tmp_path):
    """The step alone (no run needed): no successful push run of main yet."""
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    pr = new_job(tmp_path, "pull_request", PR_RUN_ID, artifacts)
    fetch = next(s for s in steps() if s.get("name", "").startswith("Baseline from main"))
    run_step(pr, fetch)
    assert pr.ok and pr.codes[fetch["name"]] == 0, log(pr)
    assert "BASELINE" not in pr.env
    assert "No baseline from main yet" in Path(pr.env["GITHUB_STEP_SUMMARY"]).read_text()


# --- staging with BASELINE: the plain-shell recipe -----------------------------------------------


def staging(env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python3 -m swarmbench headless --staging`, as docs/ci.md's recipe calls it (not make, which
    would turn the run's exit code into 2)."""
    return run_on_stack("headless", "--staging", env=env)


@pytest.mark.docker
def test_staging_with_a_baseline_fails_the_build_on_a_regression(staging_net, tmp_path):
    """main's run is saved, then a pull request's run is made with BASELINE=that folder against a
    deploy 10 ms slower: exit 3, the comparison beside the run, both run folders kept; `make
    staging` fails the same way, with make's own exit code 2 and the run's in its message."""
    ready = ["/albums", "-healthcheck"]
    fast = staging_net.start("fast", "-e", "ALBUMS_DELAY=2ms", image("target"), ready=ready)
    slow = staging_net.start("slow", "-e", "ALBUMS_DELAY=12ms", image("target"), ready=ready)
    results = tmp_path / "results"
    net = {"SWARMBENCH_NETWORK": staging_net.name}

    res = staging(compose_env(tmp_path, LOCUST_HOST=f"http://{fast}:8080", LOCUST_RUN_ID="main", **net))
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    baseline = results / "main"
    assert (baseline / "run.json").is_file()

    slower = dict(LOCUST_HOST=f"http://{slow}:8080", BASELINE=str(baseline), **net)
    res = staging(compose_env(tmp_path, LOCUST_RUN_ID="pr-1", **slower))
    assert res.returncode == 3, (res.stdout + res.stderr)[-3000:]
    assert (results / "pr-1" / "run.json").is_file() and (baseline / "run.json").is_file()
    data = json.loads((results / "pr-1-vs-baseline" / "compare.json").read_text())
    p50 = next(r for r in data["results"] if (r["name"], r["metric"]) == ("Aggregated", "p50"))
    assert p50["verdict"] == "regressed" and p50["ci"][0] > 5, p50
    hosts = next(s for s in data["settings_differ"] if s["setting"] == "host")
    assert (hosts["baseline"], hosts["candidate"]) == (f"http://{fast}:8080", f"http://{slow}:8080")
    assert "regressed" in (results / "pr-1-vs-baseline" / "compare.txt").read_text()

    res, _ = make_staging(compose_env(tmp_path, LOCUST_RUN_ID="pr-2", **slower))
    assert res.returncode == 2 and "Error 3" in res.stderr, (res.stdout + res.stderr)[-3000:]
    assert (results / "pr-2-vs-baseline" / "compare.json").is_file()
