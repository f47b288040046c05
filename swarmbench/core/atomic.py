"""Replacing a file whole: every file Swarmbench writes for someone else to read (run.json, the run
page, junit.xml, compare's and the history's outputs) goes through here, so a reader sees the old
file or the new one, never half of one, and a write that fails leaves the old file as it was.

How: the new content goes to a hidden temp file beside the target (same folder, so the same file
system), named `.NAME.tmp-<pid>-<random>`, created exclusively; on success it is renamed over the
target (os.replace: one atomic rename on POSIX); on any error it is removed. Hidden and with its
suffix after the name, a temp file is skipped by every folder listing and never matches a pattern on
the target's extension (`*_stats.csv`, `*.json`). A file that already exists keeps its permission
bits; a new one gets the process's umask, as open() would give it.

No fsync, anywhere, on purpose: the rename protects against what this tool meets (a reader polling
the file, a writer killed by a signal, the OOM killer or `docker stop`): the data is in the page cache
and the rename is atomic. Only a power loss or kernel crash between the write and the disk's flush
could leave a new file empty, and a run under way at that moment is lost anyway. An fsync, instead,
blocks for milliseconds to seconds on a busy disk, and some of these files (live.json, the run's end)
are written inside Locust's event loop, where a blocked loop is latency the run then measures.

Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

TEMP_MARK = ".tmp-"
"""Between a temp file's name and its process id and random part: `.run.json.tmp-4242-9f3a1c`."""


def temp_name(path: Path) -> Path:
    """A fresh hidden name beside PATH for its replacement (the process id says whose it is, if one is
    ever left behind; the random part keeps two writers of one file, threads or containers, apart:
    os.urandom, as secrets.token_hex reads it, without importing secrets, random and base64 into
    every reader of a run folder)."""
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{os.urandom(3).hex()}")


def write_atomic(path: Path | str, data: str | bytes, encoding: str = "utf-8") -> Path:
    """Replace PATH by DATA (text is written in ENCODING, its newlines as given); PATH back."""
    path = Path(path)
    with atomic_file(path, "wb") as f:
        f.write(data.encode(encoding) if isinstance(data, str) else data)
    return path


class Unchanged(Exception):  # noqa: N818 -- a signal, not an error
    """Raised inside `with atomic_file(...)`: PATH is to stay as it was (the temp file is removed, no
    error): a writer that finds nothing to change need not rewrite the file."""


@contextmanager
def atomic_file(
    path: Path | str, mode: str = "w", encoding: str = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """`with atomic_file(PATH) as f:` a file to write PATH's new content to, streamed (a CSV written
    row by row); PATH is replaced when the block ends, and left as it was (the temp file removed)
    when the block raises (Unchanged: silently). MODE "w" (text, ENCODING and NEWLINE as open()
    takes them) or "wb"."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_file: mode {mode!r} (only 'w' and 'wb' replace a file whole)")
    path = Path(path)
    tmp = _create(path)
    text = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
    try:
        with open(tmp, mode, **text) as f:
            yield f
        _keep_mode(path, tmp)
        os.replace(tmp, path)
    except Unchanged:
        tmp.unlink(missing_ok=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create(path: Path) -> Path:
    """An exclusively created, empty temp file beside PATH (mode 0o666 less the umask, as open())."""
    for _ in range(100):
        tmp = temp_name(path)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: no free temp name beside it")


def _keep_mode(path: Path, tmp: Path) -> None:
    """A replaced file keeps its permission bits (a rewrite is not a new file)."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return
    os.chmod(tmp, mode)
