"""Where the runner finds the checkout: from the working directory up, never from the installed
package (after a plain `pip install .` that is site-packages); a command that needs one and has
none says so in one line, before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from harness import ROOT

from swarmbench.core.exits import UsageError
from swarmbench.runner.settings import checkout, find_checkout


def test_the_checkout_is_found_from_a_subfolder_and_never_from_the_install(tmp_path, monkeypatch):
    assert find_checkout(ROOT / "swarmbench" / "runner") == ROOT
    monkeypatch.chdir(ROOT / "docs")
    assert checkout("swarmbench headless") == ROOT
    monkeypatch.chdir(tmp_path)
    assert find_checkout() is None
    with pytest.raises(UsageError) as e:
        checkout("swarmbench headless")
    assert str(e.value) == (
        "swarmbench headless needs a Swarmbench checkout (a folder with docker-compose.yml and compose/): "
        f"none in {tmp_path.resolve()} or any folder above it"
    )
    # One marker alone is not a checkout (a folder that merely has a docker-compose.yml).
    (tmp_path / "docker-compose.yml").write_text("services: {}\n")
    assert find_checkout() is None
    (tmp_path / "compose").mkdir()
    assert find_checkout(tmp_path / "compose") == tmp_path.resolve()


def test_a_run_outside_a_checkout_stops_at_once_with_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LOCUST_USERS": "5"}
    env.pop("SWARMBENCH_RESULTS", None)
    res = subprocess.run(
        [sys.executable, "-m", "swarmbench", "headless"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        "swarmbench: error: swarmbench headless needs a Swarmbench checkout (a folder with "
        f"docker-compose.yml and compose/): none in {tmp_path.resolve()} or any folder above it"
    ]
