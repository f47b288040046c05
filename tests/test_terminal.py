"""What a headless run shows (runner/terminal.py), with real parts and no Docker: a real Locust run (a
master and one worker, local processes, against the real Go target) writes its live status into a
real results folder (plugin/live.py), and the Console the compose and swarm runners use shows it.

  - on a terminal (a pty): one progress line rewritten in place, then the summary last, whose numbers
    are the folder's files exactly; Locust's own output only in the folder's swarmbench.log; no live
    status left behind
  - a run that fails without a folder: its log's last lines and where the log is
  - a folder with bad or missing files: the summary says what it could not read, never a traceback
    (a property over what the files may hold)
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import termios
import threading
from io import StringIO
from pathlib import Path

import pytest
from harness import ROOT, locust_cmd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runs import assert_summary_last, only_run

from swarmbench.core import folder
from swarmbench.core.answer import read_answer, summary_text
from swarmbench.core.exits import InputError
from swarmbench.core.live import LiveStatus, read_live
from swarmbench.runner.terminal import ANSI, TAIL_LINES, Console

CLEAR = "\r\x1b[K"


class Pty:
    """A terminal 140 columns wide: what the Console writes to it, as the screen receives it."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
        self.out = os.fdopen(slave, "w")
        self.received = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the other side is closed
                return
            if not chunk:
                return
            self.received += chunk

    def close(self) -> str:
        self.out.close()
        self._reader.join(timeout=10)
        os.close(self.master)
        return self.received.decode("utf-8", "replace").replace("\r\n", "\n")  # the tty's own \n -> \r\n


def local_run(url: str, results: Path, *extra: str) -> list[str]:
    return locust_cmd(
        "--headless", "--processes", "1", "-H", url, "-u", "4", "-r", "4", "-t", "6s",
        "--wait-time", "constant 0.1", "--results-dir", str(results), *extra,
    )  # fmt: skip


def test_on_a_terminal_one_line_moves_then_the_summary_comes_last(albums_target, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    pty = Pty()
    with Console(results, out=pty.out) as console:
        proc = console.start(
            local_run(albums_target.url, results, "AlbumsFastHttpUser"), os.environ, cwd=ROOT
        )
        code = proc.wait(timeout=120)
    console.finish(code)
    screen = pty.close()
    assert code == 0, screen[-3000:]
    run_dir = only_run(results)
    # One line, rewritten in place: the live status's, never a new line until the run is over.
    during, _, after = screen.rpartition(CLEAR)
    moving = [frame for frame in during.split(CLEAR) if "users" in frame]
    assert len(moving) >= 3, during[-2000:]
    assert all("\n" not in frame for frame in during.split(CLEAR)[1:]), during[-2000:]
    assert any(" · 4 users · 1/1 workers · " in f and "(exact, so far)" in f for f in moving), moving
    assert "Response time percentiles" not in screen, "Locust's own tables belong in the log"
    # Then the folder and its summary, last, with exactly the files' numbers.
    assert after.startswith(f"swarmbench: results in {run_dir}/\n"), after[:300]
    assert_summary_last(after, run_dir)
    log = (run_dir / folder.RUNNER_LOG).read_text()
    assert "Response time percentiles (approximated)" in log and "Aggregated" in log
    assert not (run_dir / folder.LIVE_JSON).exists(), "the live status outlived its run"
    assert not (results / folder.LOGS_DIR).exists(), "the log moved into the run folder"


def test_a_run_that_fails_prints_its_logs_last_lines(albums_target, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    out = StringIO()
    with Console(results, out=out) as console:
        proc = console.start(local_run(albums_target.url, results, "NoSuchUser"), os.environ, cwd=ROOT)
        code = proc.wait(timeout=60)
    console.finish(code)
    text = out.getvalue()
    assert code == 1, text
    [log] = (results / folder.LOGS_DIR).iterdir()
    assert text.startswith("swarmbench: the run failed (exit code 1, no run folder written); the last lines")
    assert "Unknown User(s): NoSuchUser" in text
    assert text.rstrip().endswith(f"swarmbench: the whole log: {log}")
    shown = text.splitlines()[1:-1]
    assert shown == [f"  {line}" for line in ANSI.sub("", log.read_text()).splitlines()[-TAIL_LINES:]]
    assert not [p for p in results.iterdir() if p.name != folder.LOGS_DIR], "no run folder, only the log"


def test_verbose_shows_the_runs_own_output_and_keeps_it(albums_target, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    out = StringIO()
    with Console(results, verbose=True, out=out) as console:
        proc = console.start(local_run(albums_target.url, results, "NoSuchUser"), os.environ, cwd=ROOT)
        code = proc.wait(timeout=60)
    console.finish(code)
    text = out.getvalue()
    [log] = (results / folder.LOGS_DIR).iterdir()
    assert "Unknown User(s): NoSuchUser" in text.split("swarmbench: the run failed")[0], "shown as it came"
    assert text.rstrip().endswith(
        f"swarmbench: the run failed (exit code 1, no run folder written); its log: {log}"
    )
    assert "Unknown User(s): NoSuchUser" in log.read_text()


FILES = (folder.MANIFEST, folder.STATS_CSV, folder.LATENCY_HDR_CSV)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(
        st.one_of(
            st.none(),
            st.text(max_size=200),
            st.binary(max_size=200),
            st.just("Type,Name,Request Count,Failure Count,Requests/s,50%,95%,99%,Max Response Time\n"),
            st.just('{"status": "complete", "checks": [{"expr": "p95<1"}]}'),
        ),
        min_size=len(FILES),
        max_size=len(FILES),
    )
)
def test_a_folder_with_bad_or_missing_files_still_gets_a_summary(tmp_path_factory, contents):
    run_dir = tmp_path_factory.mktemp("run")
    for name, content in zip(FILES, contents, strict=True):
        if isinstance(content, bytes):
            (run_dir / name).write_bytes(content)
        elif content is not None:
            (run_dir / name).write_text(content)
    answer = read_answer(run_dir)
    text = summary_text(answer, run_dir / folder.REPORT_HTML, exit_code=5)
    assert text.splitlines()[0].startswith(f"Run {run_dir.name}: ")
    if contents[0] is None:
        assert f"Missing: {folder.MANIFEST}: not written" in text
    if contents[1] is None:
        assert f"Missing: {folder.STATS_CSV}: " in text
    assert text.splitlines()[-1] == f"Run page: not written ({folder.REPORT_HTML})"


@given(
    st.one_of(
        st.text(max_size=100),
        st.binary(max_size=100),
        st.dictionaries(
            st.text(max_size=20),
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            max_size=20,
        ),
    )
)
def test_a_live_status_file_is_read_or_none_never_an_error(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("live") / folder.LIVE_JSON
    if isinstance(content, dict):
        path.write_text(json.dumps(content))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    status = read_live(path)
    assert status is None or isinstance(status.line(), str)
    whole = LiveStatus(
        run_id="r", elapsed_s=3, run_time_s=30, users=5, workers=1, workers_expected=2, p95_ms=1.5
    )
    path.write_text(json.dumps(whole.to_json()))
    assert read_live(path) == whole


@pytest.mark.parametrize(
    ("data", "field", "lenient"),
    [
        ({"users": "5", "requests": 7}, '"users" should be an integer, got "5"', {"requests": 7}),
        ({"p95_ms": float("nan"), "rps": 2}, '"p95_ms" should be a finite number, got NaN', {"rps": 2.0}),
        ({"workers": True, "run_id": "r"}, '"workers" should be an integer, got true', {"run_id": "r"}),
        ({"run_id": 3, "elapsed_s": 1}, '"run_id" should be a string, got 3', {"elapsed_s": 1.0}),
    ],
)
def test_a_wrong_live_status_field_keeps_its_default_or_strictly_is_named(data, field, lenient):
    assert LiveStatus.from_json(data) == LiveStatus(**lenient)
    with pytest.raises(InputError) as raised:
        LiveStatus.from_json(data, strict=True)
    assert str(raised.value) == f"{folder.LIVE_JSON}: {field}"
    assert LiveStatus.from_json({"p95_ms": 2, "run_time_s": None}, strict=True) == LiveStatus(p95_ms=2.0)
