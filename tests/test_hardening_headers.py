"""Hardening (issue 10), request headers: a value no HTTP client can send is refused by line,
never quoted (Locust and `python -m swarmbench`); secret values a careless locustfile echoes are
redacted from the run folder and the log.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hardening import HARDENING, snapshot
from harness import error_lines, free_port, run_locust, swarmbench, wait_http
from make_runs import compose_env

from swarmbench.core import exits
from swarmbench.core.headers import REDACTED, RedactingFilter, Redactor, secrets_of

PLUGIN_AND_ECHO = f"locustfiles/swarmbench_plugin.py,{HARDENING / 'echo_locustfile.py'}"

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
    """The runner reads the same lines (core/headers.py) before any image is built."""
    env, source = header_source(tmp_path, where, content, line)
    if "LOCUST_HEADERS_FILE" in env:
        env = {"SWARMBENCH_HEADERS_FILE": env.pop("LOCUST_HEADERS_FILE")}
    before = snapshot(tmp_path)
    env = compose_env(tmp_path, LOCUST_HOST="http://host.docker.internal:9", **env)
    res = swarmbench("headless", "--staging", env=env, timeout=60)
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
    assert REDACTED in (run_dir / "locust_failures.csv").read_text()
    assert REDACTED in (run_dir / "report.html").read_text()  # the run page lists the failures
    assert REDACTED in (run_dir / "locust_report.html").read_text()
    assert f"token in use: {REDACTED}" in log
    man = json.loads((run_dir / "run.json").read_text())
    assert man["request_headers"] == ["X-Api-Key", "X-Auth", "X-Env", "X-Stage"]
    # A value that is also a word of Locust's own report code is redacted from the data only:
    # the report's JavaScript (which says "production") is left intact.
    page = (run_dir / "locust_report.html").read_text()
    (data,) = [line for line in page.splitlines() if line.strip().startswith("window.templateArgs =")]
    assert "production" in page and "production" not in data and REDACTED in data
    assert man["totals"]["failures"] > 0


def test_redactor_finds_every_escaping_of_a_value():
    secret = "p\"<&'\\w0rdXYZ"
    r = Redactor(secrets_of({"X-Key": secret, "X-Short": "1"}))
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
        assert REDACTED in clean and "w0rdXYZ" not in clean, text
        assert "w0rdXYZ" not in r.data(text.encode()).decode()
    # A short value is not a secret worth corrupting numbers for: "1" stays in "8442".
    assert r.text("8442 requests") == "8442 requests"


def test_logging_filter_redacts_messages_arguments_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    secret = "Bearer sekrit-token-123"
    handler.addFilter(RedactingFilter(Redactor(secrets_of({"Authorization": secret}))))
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
    assert "sekrit" not in out and out.count(REDACTED) == 3, out
