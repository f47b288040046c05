"""Hardening (issue 10): the probes of a hostile or careless user, each refused with one line, an
exit code and nothing saved changed; secrets never reach results or logs; a service on the host
is reachable from the containers through host.docker.internal.

The bad-input corpus, one parametrized list per entry point: here make variables, settings and
thresholds (`python -m swarmbench`) and results/ ownership; headers (file and env, real Locust runs)
in test_hardening_headers.py, analysis files in test_hardening_analysis.py, the host service in
test_hardening_host.py.
"""

from __future__ import annotations

import csv
import os
import re
import stat
import uuid

import pytest
from hardening import HARDENING, snapshot
from harness import error_lines, swarmbench
from make_runs import compose_env, make

from swarmbench.core.exits import UsageError
from swarmbench.runner import compose

# --- make: no value reaches a shell ------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "variable", "value", "message"),
    [
        ("up", "WORKERS", "1; touch {marker}", "swarmbench: error: WORKERS='1; touch "),
        (
            "sweep-stores",
            "STORES",
            'bogus" --dry-run; touch {marker}; echo "',
            "swarmbench: error: STORES: unknown 'bogus\"'",
        ),
        ("sweep", "SWEEP_ARGS", "--dry-run ; touch {marker}", "unrecognized arguments: ; touch "),
    ],
)
def test_make_variables_are_never_run_by_a_shell(tmp_path, target, variable, value, message):
    marker = tmp_path / f"pwned-{uuid.uuid4().hex[:8]}"
    env = compose_env(tmp_path)
    # -o: never (re)install the venv here; the test is about the recipe, not pip.
    assignment = f"{variable}={value.format(marker=marker)}"
    res = make("-o", ".venv/.installed", target, assignment, env=env, timeout=60)
    assert res.returncode == 2  # make's code for a failed recipe (the CLI's own is 2 as well)
    errors = error_lines(res.stderr, "swarmbench")
    assert len(errors) == 1 and message in errors[0], res.stderr
    others = [ln for ln in res.stderr.splitlines() if ln not in errors]
    # make's own "Error 2" ("make[1]: ***" when the tests themselves run under `make test`)
    assert all(re.match(r"make(\[\d+\])?: \*\*\* ", ln) for ln in others), res.stderr
    assert not marker.exists(), "a shell ran the value"
    assert "Container" not in res.stdout + res.stderr, "compose must not have started"
    assert not (tmp_path / "results").exists()


# --- settings and thresholds: one line, exit 2, before anything starts -------------------------


def settings_cases() -> list[tuple[dict[str, str], str]]:
    """Bad settings and the one line each must produce (fixtures/hardening/bad_settings.csv)."""
    with open(HARDENING / "bad_settings.csv", newline="", encoding="utf-8") as f:
        return [({r["variable"]: r["value"]}, r["message"]) for r in csv.DictReader(f)]


SETTINGS_CASES = settings_cases()


@pytest.mark.parametrize(("settings", "message"), SETTINGS_CASES)
@pytest.mark.parametrize("command", [("headless", "--staging"), ("up",)], ids=["staging", "up"])
def test_bad_settings_stop_before_anything_starts(tmp_path, settings, message, command):
    results = tmp_path / "results"
    results.mkdir()
    (results / "earlier-run").mkdir()
    (results / "earlier-run" / "run.json").write_text("{}")
    before = snapshot(tmp_path)
    env = compose_env(tmp_path, **{"LOCUST_HOST": "http://host.docker.internal:9", **settings})
    res = swarmbench(*command, env=env, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert error_lines(res.stderr, "swarmbench") == res.stderr.strip().splitlines()
    assert len(res.stderr.strip().splitlines()) == 1 and message in res.stderr, res.stderr
    assert "pa55" not in res.stderr
    assert snapshot(tmp_path) == before


# --- results/ ownership --------------------------------------------------------------------------


def test_results_are_never_world_writable(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    results.chmod(0o777)  # what an older Swarmbench left behind
    env: dict[str, str] = {}
    compose.prepare_results(env, results)
    st = results.stat()
    assert not st.st_mode & stat.S_IWOTH
    if os.getuid() == 0:
        # Root's containers run as the image's user: it, and only it, may write here.
        assert (st.st_uid, env["SWARMBENCH_UID"]) == (compose.CONTAINER_UID, str(compose.CONTAINER_UID))
    else:
        assert (st.st_uid, env["SWARMBENCH_UID"]) == (os.getuid(), str(os.getuid()))


def test_root_containers_need_an_explicit_opt_in(tmp_path, capsys):
    with pytest.raises(UsageError, match="SWARMBENCH_UID=0 would run the containers as root"):
        compose.prepare_results({"SWARMBENCH_UID": "0"}, tmp_path / "results")
    assert not (tmp_path / "results").exists()
    env = {"SWARMBENCH_UID": "0", "SWARMBENCH_GID": "0", compose.ALLOW_ROOT: "1"}
    compose.prepare_results(env, tmp_path / "results")
    warning = capsys.readouterr().err.strip().splitlines()
    assert warning == [
        "swarmbench: warning: SWARMBENCH_UID=0 and SWARMBENCH_ALLOW_ROOT=1: the containers run as root"
    ]
    assert env["SWARMBENCH_UID"] == "0"
