"""Staging mode: secret request headers, the host requirement, and a real staging run of the compose
stack against a target container of this test's own (never an outside address).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from harness import FIXTURES, ROOT, free_port, run_locust, swarmbench
from make_runs import compose_env, make
from runs import only_run, stats, total
from staging_hosts import image, make_staging, private_file

STAGING = FIXTURES / "staging"


def secret() -> str:
    return f"s3cr3t-{uuid.uuid4().hex}"


def assert_not_in_folder(folder: Path, *secrets: str) -> None:
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files, f"nothing in {folder}"
    for path in files:
        data = path.read_bytes()
        for s in secrets:
            assert s.encode() not in data, f"a secret header value leaked into {path}"


# --- headers on a local Locust process -----------------------------------------------------------


@pytest.fixture
def auth_server():
    """The stand-in staging API on loopback; it answers 401 unless both expected headers arrive."""
    port = free_port()
    creds = {"EXPECT_AUTHORIZATION": f"Bearer {secret()}", "EXPECT_TENANT": secret()}
    proc = subprocess.Popen(
        [sys.executable, str(STAGING / "auth_server.py"), str(port)], env={**os.environ, **creds}
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                pytest.fail("the server must refuse a request without the headers")
            except urllib.error.HTTPError as e:
                assert e.code == 401
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url, creds
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_headers_from_file_and_env_reach_both_clients_and_stay_out_of_results(auth_server, tmp_path):
    url, creds = auth_server
    headers_file = tmp_path / "headers"
    headers_file.write_text(f"# staging token\nAuthorization: {creds['EXPECT_AUTHORIZATION']}\n\n")
    results = tmp_path / "results"
    env = {"LOCUST_HEADERS_FILE": str(headers_file), "LOCUST_HEADERS": f"X-Tenant: {creds['EXPECT_TENANT']}"}
    res = run_locust(
        "-f", "locustfiles/swarmbench_plugin.py," + str(STAGING / "headers_locustfile.py"),
        "--headless", "-H", url, "-u", "4", "-r", "4", "-t", "3s", "--results-dir", str(results), env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    run_dir = only_run(results)
    rows = stats(run_dir)
    for client in ("HttpUser", "FastHttpUser"):
        assert int(rows[("GET", f"GET / ({client})")]["Request Count"]) > 5
    assert total(rows, "Failure Count") == 0, (run_dir / "locust_failures.csv").read_text()
    man = json.loads((run_dir / "run.json").read_text())
    assert man["request_headers"] == ["Authorization", "X-Tenant"]
    assert_not_in_folder(run_dir, *creds.values())
    for s in creds.values():
        assert s not in res.stdout + res.stderr, "a secret header value was logged"


def test_without_the_headers_the_same_run_fails(auth_server, tmp_path):
    """The control: the server really refuses requests without the credentials."""
    url, _ = auth_server
    res = run_locust(
        "-f", "locustfiles/swarmbench_plugin.py," + str(STAGING / "headers_locustfile.py"),
        "--headless", "-H", url, "-u", "2", "-r", "2", "-t", "2s", "--results-dir", str(tmp_path),
    )  # fmt: skip
    assert res.returncode == 5  # every request refused: a failed run (nothing was served)
    assert total(stats(only_run(tmp_path)), "Failure Count") > 0


def test_malformed_headers_file_fails_without_echoing_it(tmp_path):
    token = secret()
    bad = tmp_path / "headers"
    bad.write_text(f"Authorization: Bearer ok\nBearer {token}\n")  # line 2: a value without a name
    res = run_locust(
        "--headless", "-H", "http://127.0.0.1:9", "-t", "2s", "--results-dir", str(tmp_path / "r"),
        env={"LOCUST_HEADERS_FILE": str(bad)}, timeout=30,
    )  # fmt: skip
    assert res.returncode == 2
    assert f"swarmbench: error: headers file {bad} line 2: expected 'Name: value'" in res.stderr
    assert token not in res.stdout + res.stderr
    assert not (tmp_path / "r").exists()


# --- `make staging`: fast, clear errors before anything starts -----------------------------------


@pytest.mark.parametrize(
    ("host", "message"),
    [
        (
            None,
            "swarmbench: error: staging mode tests an external host and starts no target: set LOCUST_HOST",
        ),
        ("", "swarmbench: error: staging mode tests an external host and starts no target: set LOCUST_HOST"),
        ("staging.example.com", "swarmbench: error: LOCUST_HOST='staging.example.com' is not an http://"),
        ("https://", "swarmbench: error: LOCUST_HOST='https://' is not an http://"),
        ("https://staging.example.com:http", "has an invalid port"),
        ("https://bot:pa55@staging.example.com", "LOCUST_HOST must not contain credentials"),
    ],
)
def test_staging_without_a_valid_host_fails_fast(tmp_path, docker_shim, host, message):
    env = compose_env(tmp_path) if host is None else compose_env(tmp_path, LOCUST_HOST=host)
    res = swarmbench("headless", "--staging", env={**env, "PATH": docker_shim.path}, timeout=30)
    assert res.returncode == 2
    assert message in res.stderr
    assert "pa55" not in res.stderr
    assert docker_shim.calls() == [], "Docker was asked before the settings were checked"
    assert not (tmp_path / "results").exists(), "nothing may start before the settings are valid"


def test_make_staging_without_host_names_the_fix(tmp_path):
    res = make("staging", env=compose_env(tmp_path), timeout=60)
    assert res.returncode == 2  # make's code for a failed recipe
    assert "set LOCUST_HOST, e.g. LOCUST_HOST=https://staging.example.com make staging" in res.stderr
    assert "Container" not in res.stdout + res.stderr, "compose must not have started anything"


def test_headers_file_the_containers_cannot_read_is_refused_up_front(tmp_path):
    from swarmbench.core.exits import UsageError
    from swarmbench.runner import compose

    path = tmp_path / "headers"
    path.write_text("Authorization: Bearer x\n")
    path.chmod(0o600)
    me, other = os.getuid(), os.getuid() + 4242
    compose.check_headers_readable(str(path), {"SWARMBENCH_UID": str(me), "SWARMBENCH_GID": str(os.getgid())})
    with pytest.raises(
        UsageError, match=rf"not readable by the containers' user \(uid {other}\).*chown {other} "
    ):
        compose.check_headers_readable(
            str(path), {"SWARMBENCH_UID": str(other), "SWARMBENCH_GID": str(other)}
        )


@pytest.mark.docker
def test_plain_compose_still_has_the_target_and_staging_leaves_it_out(docker_compose):
    def services(*files: str, **env: str) -> set[str]:
        cmd = ["docker", "compose", "--project-directory", str(ROOT)]
        for f in files:
            cmd += ["-f", str(ROOT / f)]
        out = subprocess.run(
            [*cmd, "config", "--services"],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        return set(out.stdout.split())

    assert services("docker-compose.yml") == {"target", "master", "worker"}
    staging = ("docker-compose.yml", "compose/headless.yml", "compose/staging.yml")
    assert services(*staging, LOCUST_HOST="https://staging.example.com") == {"master", "worker"}


# --- real staging runs: the stack against containers of ours, on a network of their own ----------


@pytest.mark.docker
def test_make_staging_runs_the_bundled_scenario_without_the_target(staging_net, tmp_path):
    host = (
        "http://" + staging_net.start("albums", image("target"), ready=["/albums", "-healthcheck"]) + ":8080"
    )
    env = compose_env(
        tmp_path, LOCUST_HOST=host, SWARMBENCH_NETWORK=staging_net.name, LOCUST_CHECKS="fail_ratio<0.01;rps>1"
    )
    res, seen = make_staging(env)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert {"master", "worker"} <= seen and "target" not in seen, seen
    assert "swarmbench: check PASS fail_ratio<0.01 (Aggregated)" in out
    run_dir = only_run(tmp_path / "results")
    man = json.loads((run_dir / "run.json").read_text())
    assert man["host"] == host and man["checks_passed"] is True
    suite = ET.parse(run_dir / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "0")
    # The load reached our staging container: its own counters match Locust's.
    assert man["totals"]["requests"] > 50 and man["target"]["album_requests"] == man["totals"]["requests"]


@pytest.mark.docker
def test_make_staging_sends_secret_headers_from_a_mounted_file(staging_net, tmp_path):
    """Your own locustfile against a host that answers 401 without the headers: no failures means
    every request of every worker carried them; the secret is nowhere in the results or the log."""
    creds = {"EXPECT_AUTHORIZATION": f"Bearer {secret()}", "EXPECT_TENANT": secret()}
    server = staging_net.start(
        "auth",
        *(
            "-e",
            f"EXPECT_AUTHORIZATION={creds['EXPECT_AUTHORIZATION']}",
            "-e",
            f"EXPECT_TENANT={creds['EXPECT_TENANT']}",
        ),
        *("-e", "BIND=0.0.0.0", "-v", f"{STAGING}:/srv:ro", "--entrypoint", "python"),
        image("master"),
        *("/srv/auth_server.py", "8080"),
    )
    headers = private_file(
        tmp_path / "headers",
        f"Authorization: {creds['EXPECT_AUTHORIZATION']}\nX-Tenant: {creds['EXPECT_TENANT']}\n",
    )
    env = compose_env(
        tmp_path,
        LOCUST_HOST=f"http://{server}:8080",
        SWARMBENCH_NETWORK=staging_net.name,
        SWARMBENCH_HEADERS_FILE=str(headers),
        SWARMBENCH_MOUNT=str(STAGING),
        LOCUST_LOCUSTFILE="/mnt/locust/headers_locustfile.py",
        LOCUST_CHECKS="fail_ratio<=0",
        LOCUST_RUN_TIME="4s",
    )
    res, seen = make_staging(env)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "target" not in seen
    assert "swarmbench: check PASS fail_ratio<=0 (Aggregated): measured 0" in out
    run_dir = only_run(tmp_path / "results")
    rows = stats(run_dir)
    for client in ("HttpUser", "FastHttpUser"):
        assert int(rows[("GET", f"GET / ({client})")]["Request Count"]) > 5
    man = json.loads((run_dir / "run.json").read_text())
    assert man["request_headers"] == ["Authorization", "X-Tenant"]
    assert_not_in_folder(run_dir, *creds.values())
    for s in creds.values():
        assert s not in out
