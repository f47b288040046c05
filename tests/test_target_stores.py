"""The target's store strategies and core's STORES (the sweep's choices) are one list.

Asked from the real binary, not its source: a bogus ALBUMS_STORE makes it print the values it
accepts, and each of STORES must start and report itself on /metrics.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from harness import Target

from swarmbench.core import target
from swarmbench.core.loadspec import STORES


def test_the_target_accepts_exactly_cores_stores(albums_binary: Path):
    res = subprocess.run(
        [str(albums_binary)],
        env={**os.environ, "PORT": "1", "ALBUMS_STORE": "bogus"},  # refused before it listens
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2, res.stderr
    m = re.fullmatch(r'albums: invalid ALBUMS_STORE "bogus": want one of (.+)\n', res.stderr)
    assert m, res.stderr
    assert tuple(m[1].split(", ")) == STORES


@pytest.mark.parametrize("store", STORES)
def test_each_store_runs_and_reports_itself_on_metrics(albums_binary: Path, store: str):
    t = Target(albums_binary, ALBUMS_STORE=store)
    try:
        snap = target.scrape(t.url)
    finally:
        t.stop()
    assert snap is not None and snap.store == store
