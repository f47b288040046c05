"""The one atomic write (swarmbench/core/atomic.py): a reader sees the old file or the new, never half
of one; a write that fails, or a writer killed halfway, leaves the old file as it was; its temp files
are hidden, cleaned up on errors, and skipped by the run page's file list."""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from swarmbench.core import folder
from swarmbench.core.atomic import TEMP_MARK, Unchanged, atomic_file, temp_name, write_atomic

OLD = "old content\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    path.write_text(OLD)
    return path


def entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def test_text_and_bytes_replace_the_file_whole(target):
    assert write_atomic(target, "é\n") == target and target.read_bytes() == "é\n".encode()
    write_atomic(target, b"\x00\xff")
    assert target.read_bytes() == b"\x00\xff"
    with atomic_file(target, newline="") as f:
        f.write("a\r\nb\n")
    assert target.read_bytes() == b"a\r\nb\n" and entries(target) == ["run.json"]


def test_an_error_while_writing_leaves_the_old_file_and_no_temp(target):
    with pytest.raises(RuntimeError), atomic_file(target) as f:
        f.write("half of the new")
        f.flush()
        raise RuntimeError("the writer broke halfway")
    assert target.read_text() == OLD and entries(target) == ["run.json"]
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "a lone surrogate \udcff")
    assert target.read_text() == OLD and entries(target) == ["run.json"]


def test_a_failed_rename_leaves_the_target_and_no_temp(tmp_path):
    there = tmp_path / "report.html"
    there.mkdir()  # a folder in the way: the rename fails
    (there / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_atomic(there, "<p>new</p>")
    assert (there / "inside").read_text() == "kept" and entries(there) == ["report.html"]


def test_unchanged_keeps_the_file_untouched(target):
    before = target.stat()
    with atomic_file(target, "wb") as f:
        f.write(b"a different content")
        raise Unchanged
    after = target.stat()
    assert target.read_text() == OLD and entries(target) == ["run.json"]
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_writer_killed_halfway_never_leaves_a_half_file(target):
    """SIGKILL in the middle of the write (as the OOM killer or `docker kill` would): the target is
    the old file; what is left is a hidden temp file naming the dead process."""
    code = (
        "import os, signal, sys\n"
        "from swarmbench.core.atomic import atomic_file\n"
        "with atomic_file(sys.argv[1]) as f:\n"
        "    f.write('half of the new'); f.flush()\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert target.read_text() == OLD
    [left] = [n for n in entries(target) if n != "run.json"]
    assert left.startswith(".run.json" + TEMP_MARK) and left.split(TEMP_MARK)[1].split("-")[0].isdigit()


def test_a_reader_sees_the_old_file_or_the_new_never_half(target):
    """One thread rewrites a 1 MB file over and over (each version one repeated letter), another reads
    it meanwhile: every read is one whole version."""
    versions = [c * 1_000_000 for c in "ABCD"]
    write_atomic(target, versions[0])
    done = threading.Event()

    def writer() -> None:
        for i in range(60):
            write_atomic(target, versions[i % len(versions)])
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set() or reads < 10:
        text = target.read_text()
        assert text in versions, f"a read of {len(text)} characters, {sorted(set(text))}"
        reads += 1
    thread.join()
    assert reads >= 10 and entries(target) == ["run.json"]


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_umask(tmp_path, target):
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.stat().st_mode & 0o777 == 0o640
    umask = os.umask(0o022)
    try:
        fresh = write_atomic(tmp_path / "fresh.json", "{}")
    finally:
        os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o644


def test_temp_names_are_hidden_and_match_no_pattern_of_the_target(tmp_path):
    """A temp file is skipped by a folder listing (its name starts with a dot) and by every pattern
    on the target's extension; the run page's file list leaves it out without a filter of its own."""
    path = tmp_path / folder.STATS_CSV
    tmp = temp_name(path)
    assert tmp.parent == path.parent and tmp.name.startswith(".") and tmp != temp_name(path)
    assert not fnmatch.fnmatch(tmp.name, "*_stats.csv") and not fnmatch.fnmatch(tmp.name, "*.csv")
    from swarmbench.page import run as run_page

    path.write_text("x\n")
    tmp.write_text("half")
    assert [name for name, _ in run_page._files(tmp_path, [])] == [folder.STATS_CSV]


def test_only_write_or_write_binary(target):
    with pytest.raises(ValueError, match="mode 'a'"), atomic_file(target, "a"):
        pass
    assert entries(target) == ["run.json"]


def test_write_json_atomic_writes_what_json_dump_wrote(target, tmp_path):
    """The same bytes as before it went through write_atomic (json.dump, indented, a final newline)."""
    import json

    data = {"b": [1, 2.5, None], "a": "é", "c": {"d": True}}
    with open(tmp_path / "dumped.json", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    folder.write_json_atomic(target, data)
    assert target.read_bytes() == (tmp_path / "dumped.json").read_bytes()
