"""Hardening (issue 10): the probes of a hostile or careless user, each refused with one line, an
exit code and nothing saved changed; secrets never reach results or logs; a service on the host
is reachable from the containers through host.docker.internal.

The bad-input corpus is here, one parametrized list per entry point: headers (file and env, real
Locust runs), analysis files, settings and thresholds (`python -m swarmbench`), make variables.
"""

from __future__ import annotations

import csv
import hashlib
import io
import ipaddress
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ROOT, free_port, run_locust, run_module, wait_http
from make_runs import compose_env

from swarmbench.analysis.cli import write_atomically
from swarmbench.core import exits
from swarmbench.core.errors import UsageError
from swarmbench.plugin import redact
from swarmbench.runner import compose

FIXTURES = ROOT / "tests" / "fixtures"
HARDENING = FIXTURES / "hardening"
SWEEP = FIXTURES / "analysis" / "sweep"
RUN = SWEEP / "20261121T194528Z_AlbumsHttpUser_local"  # stats row 5 is Aggregated: 8442 requests
PLUGIN_AND_ECHO = f"locustfiles/swarmbench_plugin.py,{HARDENING / 'echo_locustfile.py'}"


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file and folder under FOLDER: content hash and mode (what "nothing changed" means)."""
    if not folder.exists():
        return {}
    out = {}
    for p in sorted(folder.rglob("*")):
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        out[str(p.relative_to(folder))] = (digest, stat.S_IMODE(p.stat().st_mode))
    return out


def error_lines(text: str, prog: str) -> list[str]:
    assert "Traceback" not in text, text[-3000:]
    return [line for line in text.splitlines() if line.startswith(f"{prog}: error: ")]


def swarmbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return run_module("swarmbench", *args, env=env, timeout=60)


def analysis(*args: str | Path) -> subprocess.CompletedProcess:
    return run_module("analysis", *args)


def assert_one_analysis_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    assert proc.returncode == 2, proc.stderr
    errors = error_lines(proc.stderr, "analysis")
    assert len(errors) == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


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
    res = subprocess.run(
        ["make", "--no-print-directory", "-o", ".venv/.installed", target,
         f"{variable}={value.format(marker=marker)}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2  # make's code for a failed recipe (the CLI's own is 2 as well)
    errors = error_lines(res.stderr, "swarmbench")
    assert len(errors) == 1 and message in errors[0], res.stderr
    others = [ln for ln in res.stderr.splitlines() if ln not in errors]
    # make's own "Error 2" ("make[1]: ***" when the tests themselves run under `make test`)
    assert all(re.match(r"make(\[\d+\])?: \*\*\* ", ln) for ln in others), res.stderr
    assert not marker.exists(), "a shell ran the value"
    assert "Container" not in res.stdout + res.stderr, "compose must not have started"
    assert not (tmp_path / "results").exists()


# --- headers: a value that cannot be sent is refused, never quoted ------------------------------

SECRET = "SECRET9f8e7d"


HEADER_CASES = [
    # (where, content, line, problem): each a value no HTTP client can send as written
    ("file", f"X-Ok: fine\nX-Api-Key: \u201c{SECRET}\u201d\n", 2, "has a non-ASCII character at position 1"),
    ("env", f"X-Api-Key: {SECRET}\u20ac", 1, "has a non-ASCII character at position 13"),
    ("file", f"X-Api-Key: {SECRET}\x00x\n", 1, "has a control character at position 13"),
    ("env", f"X-Api-Key: {SECRET}\rX-Evil: 1", 1, "has a control character at position 13"),
    ("file", f"# token\n\nX-Api-Key: Bearer\u00a0{SECRET}\n", 3, "has a non-ASCII character at position 7"),
    ("env", f"X-Api-Key: {SECRET}\u2028tail", 1, "has a non-ASCII character at position 13"),
    ("file", "X-Api-Key:   \n", 1, "the value of X-Api-Key is empty"),
    ("file", b"X-Ok: fine\r\nX-Api-Key: \x93" + SECRET.encode() + b"\x94\r\n", 2, "not UTF-8 text"),
]  # fmt: skip
HEADER_IDS = ["curly-quote", "euro", "nul", "cr", "nbsp", "u2028", "empty", "cp1252"]


def header_source(tmp_path: Path, where: str, content: str | bytes, line: int) -> tuple[dict[str, str], str]:
    """The case as a file or LOCUST_HEADERS: the variables that carry it, and the error's source."""
    if where == "env":
        assert isinstance(content, str)
        return {"LOCUST_HEADERS": content}, f"LOCUST_HEADERS line {line}"
    path = tmp_path / "headers"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return {"LOCUST_HEADERS_FILE": str(path)}, f"headers file {path} line {line}"


@pytest.mark.parametrize(("where", "content", "line", "problem"), HEADER_CASES, ids=HEADER_IDS)
def test_unsendable_header_values_stop_locust_by_line_without_the_value(
    tmp_path, where, content, line, problem
):
    env, source = header_source(tmp_path, where, content, line)
    results = tmp_path / "results"
    res = run_locust(
        "-f", PLUGIN_AND_ECHO, "--headless", "-H", "http://127.0.0.1:9", "-t", "2s",
        "--results-dir", str(results), timeout=60,
        env={"LOCUST_HEADERS_FILE": "", "LOCUST_HEADERS": "", **env},
    )  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    errors = error_lines(res.stderr, "swarmbench")
    assert len(errors) == 1, res.stderr
    assert errors[0].startswith(f"swarmbench: error: {source}: "), errors[0]
    assert problem in errors[0]
    assert SECRET not in res.stdout + res.stderr
    assert not results.exists()


@pytest.mark.parametrize(("where", "content", "line", "problem"), HEADER_CASES, ids=HEADER_IDS)
def test_unsendable_header_values_stop_make_staging_before_docker(tmp_path, where, content, line, problem):
    """The runner reads the same lines (core/headerlines.py) before any image is built."""
    env, source = header_source(tmp_path, where, content, line)
    if "LOCUST_HEADERS_FILE" in env:
        env = {"SWARMBENCH_HEADERS_FILE": env.pop("LOCUST_HEADERS_FILE")}
    before = snapshot(tmp_path)
    res = swarmbench(
        "headless", "--staging", env=compose_env(tmp_path, LOCUST_HOST="http://host.docker.internal:9", **env)
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == error_lines(res.stderr, "swarmbench")
    (error,) = error_lines(res.stderr, "swarmbench")
    assert error.startswith(f"swarmbench: error: {source}: ") and problem in error, error
    assert SECRET not in res.stdout + res.stderr
    assert snapshot(tmp_path) == before


# --- headers: the last line of defence ---------------------------------------------------------


@pytest.fixture
def plain_server(tmp_path):
    """A stdlib file server on loopback (GET / answers 200), bounded by the test."""
    port = free_port()
    (tmp_path / "www").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        cwd=tmp_path / "www", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("distributed", [False, True], ids=["standalone", "master+worker"])
def test_secret_header_values_echoed_by_a_locustfile_are_redacted_everywhere(
    plain_server, tmp_path, distributed
):
    """A careless locustfile puts every header value into failures, exceptions and log lines; none
    of it may reach the run folder or the log, and the redaction marks are there instead."""
    tag = uuid.uuid4().hex[:10]
    # Characters every escaping touches: repr (\\ '), CSV ("), HTML and Jinja's JSON (< > & ').
    tricky = f"key\"<&'\\{tag}A"
    token = f"tok{tag}B"
    env_secret = f"env{tag}C"
    headers = tmp_path / "headers"
    headers.write_text(f"X-Api-Key: {tricky}\nX-Auth: Bearer {token}\n")
    results = tmp_path / "results"
    extra = ["--processes", "1"] if distributed else []
    res = run_locust(
        "-f", PLUGIN_AND_ECHO, "--headless", "-H", plain_server, "-u", "2", "-r", "2", "-t", "3s",
        "--results-dir", str(results), *extra,
        env={"LOCUST_HEADERS_FILE": str(headers),
             "LOCUST_HEADERS": f"X-Env: {env_secret}\nX-Stage: production"},
        timeout=90,
    )  # fmt: skip
    log = res.stdout + res.stderr
    # The echoed failures: 1 (some failed) or 5 (every request did); never a config error.
    assert res.returncode not in (exits.OK, exits.CONFIG_ERROR), log[-3000:]
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    for secret in (tag, token, env_secret):
        assert secret not in log, f"{secret} in the log"
        for path in (p for p in run_dir.rglob("*") if p.is_file()):
            assert secret.encode() not in path.read_bytes(), f"{secret} in {path.name}"
    # Not vacuous: the echoes happened, and were replaced.
    assert redact.REDACTED in (run_dir / "locust_failures.csv").read_text()
    assert redact.REDACTED in (run_dir / "report.html").read_text()
    assert f"token in use: {redact.REDACTED}" in log
    man = json.loads((run_dir / "run.json").read_text())
    assert man["request_headers"] == ["X-Api-Key", "X-Auth", "X-Env", "X-Stage"]
    # A value that is also a word of Locust's own report code is redacted from the data only:
    # the report's JavaScript (which says "production") is left intact.
    page = (run_dir / "report.html").read_text()
    (data,) = [line for line in page.splitlines() if line.strip().startswith("window.templateArgs =")]
    assert "production" in page and "production" not in data and redact.REDACTED in data
    assert man["totals"]["failures"] > 0


def test_redactor_finds_every_escaping_of_a_value():
    secret = "p\"<&'\\w0rdXYZ"
    r = redact.Redactor(redact.secrets_of({"X-Key": secret, "X-Short": "1"}))
    message = repr(ValueError(f"invalid value for header field 'X-Key': {secret!r}"))
    cell = io.StringIO()
    csv.writer(cell).writerow([message])
    nested = [
        secret,
        message,
        cell.getvalue(),
        json.dumps({"error": message}),
        json.dumps(message).replace("<", "\\u003c").replace("&", "\\u0026").replace("'", "\\u0027"),
    ]
    for text in nested:
        clean = r.text(text)
        assert redact.REDACTED in clean and "w0rdXYZ" not in clean, text
        assert "w0rdXYZ" not in r.data(text.encode()).decode()
    # A short value is not a secret worth corrupting numbers for: "1" stays in "8442".
    assert r.text("8442 requests") == "8442 requests"


def test_logging_filter_redacts_messages_arguments_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    secret = "Bearer sekrit-token-123"
    handler.addFilter(redact.RedactingFilter(redact.Redactor(redact.secrets_of({"Authorization": secret}))))
    logger = logging.getLogger(f"test-redact-{uuid.uuid4().hex}")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        raise RuntimeError("server said sekrit-token-123")
    except RuntimeError:
        logger.exception("auth %s failed", secret)
    logger.removeHandler(handler)
    out = stream.getvalue()
    # The message, the traceback's source line and its exception line.
    assert "sekrit" not in out and out.count(redact.REDACTED) == 3, out


# --- analysis: impossible data, duplicate ids, OUT ---------------------------------------------


def set_cell(path: Path, row: int, column: str, value: str) -> None:
    """Row as in the error message: the header is row 1; a row past the end is appended."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    col = rows[0].index(column)
    if row > len(rows):
        rows.append(["0"] * len(rows[0]))
    rows[row - 1][col] = value
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


ANALYSIS_CASES = [
    # (file, row, column, value, the error after "FILE: ")
    ("locust_stats.csv", 5, "Request Count", "-5", "row 5: 'Request Count' is -5; a count must be a whole"),
    ("locust_stats.csv", 2, "Request Count", "12.5", "row 2: 'Request Count' is 12.5; a count must be"),
    ("locust_stats.csv", 3, "Request Count", "1e400", "row 3: 'Request Count' is inf; a count"),
    ("locust_stats.csv", 2, "Requests/s", "inf", "row 2: 'Requests/s' is inf; a rate must be a finite"),
    ("locust_stats.csv", 4, "Failures/s", "-0.5", "row 4: 'Failures/s' is -0.5; a rate must be"),
    (
        "locust_stats.csv", 5, "Failure Count", "99999999",
        "row 5: 'Failure Count' 99999999 is more than 'Request Count' 8442",
    ),
    ("locust_stats.csv", 3, "95%", "-1", "row 3: '95%' is -1; a response time must be a finite number >= 0"),
    ("locust_stats.csv", 2, "Request Count", "lots", "row 2: column 'Request Count': 'lots' is not a number"),
    ("locust_failures.csv", 2, "Occurrences", "-3", "row 2: 'Occurrences' is -3; a count"),
    ("locust_exceptions.csv", 2, "Count", "1.5", "row 2: 'Count' is 1.5; a count"),
    ("locust_stats_history.csv", 5, "User Count", "-1", "row 5: 'User Count' is -1; a count"),
    ("locust_stats_history.csv", 4, "Requests/s", "inf", "row 4: 'Requests/s' is inf; a rate"),
    ("locust_stats_history.csv", 7, "99%", "-2", "row 7: '99%' is -2; a response time"),
    (
        "locust_stats_history.csv", 9, "Total Failure Count", "99999999",
        "row 9: 'Total Failure Count' 99999999 is more than 'Total Request Count'",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "row", "column", "value", "problem"), ANALYSIS_CASES)
def test_impossible_numbers_are_refused_with_file_and_row(tmp_path, name, row, column, value, problem):
    run = shutil.copytree(RUN, tmp_path / "run")
    if name == "locust_exceptions.csv":
        (run / name).write_text("Count,Message,Traceback,Nodes\r\n")
    set_cell(run / name, row, column, value)
    out = tmp_path / "out"  # a previous report, which must survive
    out.mkdir()
    for previous in ("report.html", "scaling.json", "summary.csv"):
        (out / previous).write_text(f"previous {previous}")
    before = snapshot(tmp_path)
    proc = analysis("report", run, "-o", out)
    assert_one_analysis_error(proc, f"analysis: error: {run / name}: {problem}")
    assert snapshot(tmp_path) == before, "a refused input changed something saved"


def test_the_probes_numbers_give_no_summary(tmp_path):
    """The issue's probe: -5 requests, inf requests/s, 99,999,999 failures out of 8,305."""
    run = shutil.copytree(RUN, tmp_path / "run")
    set_cell(run / "locust_stats.csv", 5, "Failure Count", "99999999")
    proc = analysis("summary", run)
    assert_one_analysis_error(proc, "is more than 'Request Count'")
    assert proc.stdout == ""


def test_two_sweeps_under_one_folder_are_told_apart_by_path(tmp_path):
    both = tmp_path / "both"
    runs = [RUN, *SWEEP.glob("*_AlbumsHttpUser_w2")]  # two runs per "sweep": a short report
    for name in ("sweep-a", "sweep-b"):
        for run in runs:
            shutil.copytree(run, both / name / run.name)
    proc = analysis("summary", both, "--aggregated", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    ids = [r["run_id"] for r in rows]
    assert len(ids) == 2 * len(runs) == len(set(ids))
    assert f"sweep-a/{RUN.name}" in ids and f"sweep-b/{RUN.name}" in ids
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 1 and f"{len(runs)} run id(s) appear in more than one folder" in warnings[0]
    out = tmp_path / "report"
    rep = analysis("report", both, "-o", out)
    assert rep.returncode == 0, rep.stderr[-3000:]
    summary = list(csv.DictReader(io.StringIO((out / "summary.csv").read_text())))
    assert len({r["run_id"] for r in summary if r["endpoint"] == "Aggregated"}) == 2 * len(runs)


@pytest.mark.parametrize(
    ("make_out", "message"),
    [
        (lambda tmp: shutil.copytree(RUN, tmp / "run"), "is a run folder; its report.html is Locust's own"),
        (lambda tmp: tmp, "is not empty and not a previous report (in)"),
        (lambda tmp: _with(tmp / "mine", "notes.txt"), "is not empty and not a previous report (notes.txt)"),
        (lambda tmp: _with(tmp, "file") / "file", "exists and is not a folder"),
    ],
    ids=["run-folder", "parent-of-the-runs", "someone-elses-folder", "a-file"],
)
def test_out_that_would_lose_something_is_refused(tmp_path, make_out, message):
    shutil.copytree(RUN, tmp_path / "in" / "r1")
    out = make_out(tmp_path)
    target = tmp_path / "run" if (tmp_path / "run").exists() else tmp_path / "in"
    before = snapshot(tmp_path)
    proc = analysis("report", target, "-o", out)
    assert_one_analysis_error(proc, f"analysis: error: {out}: {message}")
    assert snapshot(tmp_path) == before


def _with(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("keep me")
    return folder


def test_out_is_replaced_whole_and_a_failed_write_names_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir(mode=0o750)
    (out / "report.html").write_text("previous")
    (out / "over_time_old-run.png").write_bytes(b"stale chart")
    write_atomically(out, {"summary.csv": b"new", "report.html": b"new page"})
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "summary.csv"]  # no stale chart
    assert stat.S_IMODE(out.stat().st_mode) == 0o750
    before = snapshot(tmp_path)
    with pytest.raises(OSError) as failed:
        write_atomically(out, {"summary.csv": b"newer", "no/such/dir.png": b"x", "report.html": b"newer"})
    assert failed.value.filename == str(out) and ".new-" not in str(failed.value)
    assert snapshot(tmp_path) == before, "OUT (and its folder) as it was, no temp folder left"


# --- settings and thresholds: one line, exit 2, before anything starts -------------------------


SETTINGS_CASES = [
    ({"LOCUST_HOST": "http://localhost:8080"}, "use http://host.docker.internal:8080 "),
    ({"LOCUST_HOST": "https://127.0.0.1/api"}, "127.0.0.1 is the container itself: use https://host.docker.internal/api"),
    ({"LOCUST_HOST": "http://[::1]:9000"}, "use http://host.docker.internal:9000"),
    ({"LOCUST_HOST": "http://api.localhost:81"}, "use http://host.docker.internal:81"),
    ({"LOCUST_HOST": "http://bot:pa55@example.com"}, "LOCUST_HOST must not contain credentials"),
    ({"WORKERS": "0"}, "WORKERS='0' must be at least 1"),
    ({"LOCUST_RUN_TIME": "soon"}, "LOCUST_RUN_TIME='soon' is not a duration"),
    ({"LOCUST_CHECKS": "p95<fast"}, "LOCUST_CHECKS: 'p95<fast': 'fast' is not a number"),
    ({"LOCUST_CHECKS": "p95<inf"}, "the limit must be a finite number >= 0"),
    ({"LOCUST_CHECKS": "fail_ratio<2"}, "fail_ratio is a fraction from 0 to 1"),
    ({"SWARMBENCH_HEADERS_FILE": "/nonexistent/h"}, "SWARMBENCH_HEADERS_FILE='/nonexistent/h' is not a file"),
    ({"SWARMBENCH_UID": "0"}, "SWARMBENCH_UID=0 would run the containers as root; set SWARMBENCH_ALLOW_ROOT"),
    ({"SWARMBENCH_UID": "me"}, "SWARMBENCH_UID='me' is not a numeric user/group id"),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "message"), SETTINGS_CASES)
@pytest.mark.parametrize("command", [("headless", "--staging"), ("up",)], ids=["staging", "up"])
def test_bad_settings_stop_before_anything_starts(tmp_path, settings, message, command):
    results = tmp_path / "results"
    results.mkdir()
    (results / "earlier-run").mkdir()
    (results / "earlier-run" / "run.json").write_text("{}")
    before = snapshot(tmp_path)
    env = compose_env(tmp_path, **{"LOCUST_HOST": "http://host.docker.internal:9", **settings})
    res = swarmbench(*command, env=env)
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


# --- a service on the user's own machine -----------------------------------------------------------


def docker_bridge_address() -> str:
    """The default bridge's gateway: the host as containers see it, what host-gateway maps to.
    Older engines leave Gateway out of the IPAM config: it is then the subnet's first address."""
    out = subprocess.run(
        ["docker", "network", "inspect", "bridge", "--format", "{{json .IPAM.Config}}"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    config = json.loads(out.stdout)[0]
    return config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


class CountingServer:
    """A tiny HTTP service "on the user's machine": 200 to every GET, counted; stops with the test."""

    LIFETIME_S = 240.0
    """Upper bound even if the test hangs: the server shuts itself down."""

    def __init__(self, address: str) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.httpd = ThreadingHTTPServer((address, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.timer = threading.Timer(self.LIFETIME_S, self.httpd.shutdown)

    def __enter__(self) -> CountingServer:
        self.thread.start()
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.docker
def test_a_service_on_the_host_is_reachable_as_host_docker_internal(docker_compose, tmp_path):
    # Bound to the bridge gateway, not 0.0.0.0: reachable by the containers, not by the network.
    with CountingServer(docker_bridge_address()) as server:
        env = compose_env(
            tmp_path,
            LOCUST_HOST=f"http://host.docker.internal:{server.port}",
            SWARMBENCH_MOUNT=str(HARDENING),
            LOCUST_LOCUSTFILE="/mnt/locust/ping_locustfile.py",
            LOCUST_USER_CLASSES="PingUser",
            LOCUST_USERS="2",
            LOCUST_SPAWN_RATE="2",
            LOCUST_RUN_TIME="5s",
        )
        try:
            res = subprocess.run(
                [sys.executable, "-m", "swarmbench", "headless", "--staging"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
            )  # fmt: skip
        finally:
            subprocess.run(
                ["docker", "compose", "-p", env["COMPOSE_PROJECT_NAME"], "down", "--remove-orphans",
                 "-t", "5"],
                capture_output=True, timeout=60,
            )  # fmt: skip
        served = server.requests
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    (run_dir,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    assert {p.name for p in run_dir.iterdir()} >= {
        "locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv", "locust_exceptions.csv",
        "report.html", "run.json",
    }  # fmt: skip
    man = json.loads((run_dir / "run.json").read_text())
    assert man["host"] == env["LOCUST_HOST"] and man["totals"]["failures"] == 0
    # Every request Locust counted reached our server (the pre-flight check adds one more).
    assert man["totals"]["requests"] > 20 and served >= man["totals"]["requests"]
