"""One door to a run folder: `RunFolder`, typed rows keyed by (type, name), and the one CSV reader.

`RunFolder.open(path)` reads run.json, Locust's stats and failures and the whole-run exact latency
into frozen rows; every reader of a run folder's CSV files in the standard-library layers goes
through `read_table` here.

    from swarmbench import RunFolder
    run = RunFolder.open("results/examples/r1-w1-AlbumsHttpUser")
    run.aggregated.requests, run.stats[("GET", "GET /albums")].p95_ms, run.exact_ms("p99_ms")

It reads every format `swarmbench history import` accepts: a folder holding only run.json and
locust_stats.csv, or only Locust's CSVs (no run.json; Locust 2.8 to today, the older header
spellings of folder.LEGACY_ALIASES too), run.json schema 1 and 2. Anything else is refused with one
error, RunFolderError, whose text names the file and the line (`PATH: line N: problem`).

The per-window latency (locust_latency_windows.csv) is read by the latency layer's one reader,
`swarmbench.latency.windows.Windows.read_csv(run.windows_path)`: core may not import latency (its
HDR histograms need hdrhistogram), so the door names the file and latency parses it.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections import namedtuple
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, overload

from swarmbench.core import folder as col
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.exits import InputError
from swarmbench.core.figures import count, number, numbers

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it so)
if TYPE_CHECKING:
    from swarmbench.core.manifest import RunManifest

MISSING = "missing"
"""RunFolderError's problem for a file that is not there."""


class RunFolderError(InputError, ValueError):
    """A run folder (or one of its files) that cannot be read: `str()` is one line, `PATH: line N:
    problem` (`PATH: problem` where no line is to blame: a missing or empty file). An InputError, so
    every command already exits with it cleanly."""

    def __init__(self, path: str | Path, problem: str, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        super().__init__(path, f"line {line}: {problem}" if line is not None else problem)


# --- the CSV files: one parser ----------------------------------------------------------------------

LOCUST_COLUMNS = {
    c.lower(): c
    for c in (col.TYPE, col.NAME, col.REQUEST_COUNT, col.FAILURE_COUNT, col.MEDIAN_RT, col.AVG_RT, col.MIN_RT,
              col.MAX_RT, col.AVG_SIZE, col.RPS, col.FAILURES_PER_S, col.TIMESTAMP, col.USER_COUNT,
              col.TOTAL_REQUEST_COUNT, col.TOTAL_FAILURE_COUNT, col.TOTAL_MEDIAN_RT, col.TOTAL_AVG_RT,
              col.FAIL_ERROR, col.FAIL_OCCURRENCES)
} | {alias.lower(): name for alias, name in col.LEGACY_ALIASES.items() if name != col.TYPE}  # fmt: skip
"""A Locust header, lower-cased -> folder.py's name for it: Locust's older spellings ("# requests",
"Median response time") read as today's. (LEGACY_ALIASES' "Method" is the Type only where a file
has no Type column and is not the failures file, whose Method column is its own.)"""


RowClass = TypeVar("RowClass", bound=type)


def _row(cls: RowClass) -> RowClass:
    """CLS's annotated fields, in their order, as an immutable row: a tuple whose items are named
    (collections.namedtuple), with CLS's docstring and methods; `row.field`, equality, hashing and
    repr as a frozen dataclass has them. Not a frozen dataclass: one costs ~8x as much to build per
    row and ~7x as much to define at import, and every reader of a run folder builds a row per line
    of its CSV files (issue 31: reading is no slower than before RunFolder)."""
    body = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    base = namedtuple(cls.__name__, tuple(cls.__annotations__))  # type: ignore[misc]
    return type(cls.__name__, (base,), {**body, "__slots__": ()})  # type: ignore[return-value]


@_row
class Table:
    """A CSV file's rows as read: `header` (Locust's names made canonical for a Locust file), each
    row a dict by column, and `lines[i]` the line row i starts on (for errors)."""

    path: Path
    header: tuple[str, ...]
    rows: tuple[dict[str, str], ...]
    lines: tuple[int, ...]

    def numbered(self) -> Iterable[tuple[int, dict[str, str]]]:
        """(line, row) for each row."""
        return zip(self.lines, self.rows, strict=True)


LOCUST_FILES = (col.STATS_CSV, col.HISTORY_CSV, col.FAILURES_CSV, col.EXCEPTIONS_CSV)
"""Locust's own CSV files (their headers are Locust's, whose spelling changed over versions)."""


def read_table(
    path: Path, *, locust: bool | None = None, notes: list[str] | None = None, required: bool = True
) -> Table:
    """PATH's rows. LOCUST (by default: the file is one of LOCUST_FILES): a Locust CSV, its header made
    canonical (LOCUST_COLUMNS; a stats file's `Method` is its Type); otherwise the header as written
    (the harness's own files: locust_latency_hdr.csv, locust_latency_windows.csv, ...).

    Strict without NOTES: RunFolderError naming the file, and the line, when it is missing, not UTF-8,
    not CSV, empty, or has a row with more or fewer fields than its header (a cut-off file). With
    NOTES (the run page's and the terminal's policy: show what can be read), each such problem is one
    line appended to NOTES naming the file, never raised; a bad row is left out; a missing file is
    noted only when REQUIRED.

    (Long on purpose: both error policies, strict and noted, side by side for each way a file can be
    wrong, so that no reader of a run folder has a third.)"""
    path = path if isinstance(path, Path) else Path(path)  # Path(a Path) parses it again
    try:
        with open(path, "rb") as f:  # as open(newline="", encoding="utf-8") reads it, for less
            text = f.read().decode("utf-8")
    except FileNotFoundError:
        if notes is None:
            raise RunFolderError(path, MISSING) from None
        if required:
            notes.append(f"{path.name}: missing")
        return Table(path, (), (), ())
    except (OSError, UnicodeDecodeError) as e:
        if notes is None:
            raise RunFolderError(path, f"cannot read ({getattr(e, 'strerror', None) or e})") from None
        notes.append(f"{path.name}: unreadable ({getattr(e, 'strerror', None) or e})")
        return Table(path, (), (), ())
    cut = bool(text) and not text.endswith("\n")
    reader = csv.reader(io.StringIO(text, newline=""))  # a quoted field may hold any line break
    records: list[tuple[int, list[str]]] = []
    start = 1
    try:
        for row in reader:
            if row:
                records.append((start, row))
            start = reader.line_num + 1
    except csv.Error as e:
        if notes is None:
            raise RunFolderError(path, f"not CSV ({e})", reader.line_num) from None
        notes.append(f"{path.name}: unreadable ({e})")
        return Table(path, (), (), ())
    if not records:
        if notes is None:
            raise RunFolderError(path, "empty file")
        return Table(path, (), (), ())
    name = path.name
    header = _header(tuple(records[0][1]), locust if locust is not None else name in LOCUST_FILES, name)
    body = records[1:]
    if cut and notes is not None:
        body = body[:-1]
        notes.append(f"{path.name}: cut off (its last line is incomplete and left out)")
    rows, lines = [], []
    for line, row in body:
        if len(row) != len(header):
            if notes is None:
                hint = " (a cut-off file?)" if (line, row) == body[-1] else ""
                raise RunFolderError(path, f"{len(row)} fields, the header has {len(header)}{hint}", line)
            continue
        rows.append(dict(zip(header, row, strict=False)))  # as long as the header: checked above
        lines.append(line)
    if notes is not None and len(rows) < len(body):
        notes.append(f"{path.name}: {len(body) - len(rows)} row(s) with a wrong number of fields, left out")
    return Table(path, header, tuple(rows), tuple(lines))


@functools.lru_cache(maxsize=64)
def _header(cells: tuple[str, ...], locust: bool, name: str) -> tuple[str, ...]:
    """A CSV file's header as read_table keys its rows: each cell stripped; LOCUST: Locust's names
    made canonical (LOCUST_COLUMNS; `Method` is the Type where there is no Type column, except in
    the failures file NAME). Kept per header: every file of a kind has the same one."""
    header = [h.strip() for h in cells]
    if locust:
        header = [LOCUST_COLUMNS.get(h.lower(), h) for h in header]
        if col.TYPE not in header and name != col.FAILURES_CSV:
            header = [col.TYPE if h.lower() == "method" else h for h in header]
    return tuple(header)


@overload
def read_json_object(path: Path) -> dict[str, Any]: ...
@overload
def read_json_object(path: Path, missing_ok: bool) -> dict[str, Any] | None: ...
def read_json_object(path: Path, missing_ok: bool = False) -> dict[str, Any] | None:
    """PATH's JSON object (run.json, locust_latency_hdr.json): RunFolderError naming the file (and
    the line of invalid JSON); None where it is missing and MISSING_OK."""
    try:
        with open(path, "rb") as f:  # as open(encoding="utf-8") reads it, for less
            text = f.read().decode("utf-8")
    except FileNotFoundError:
        if missing_ok:
            return None
        raise RunFolderError(path, "missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunFolderError(path, f"cannot read ({type(e).__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        # the line as a text-mode read numbers it: \r\n, \r and \n each end one
        line = text.count("\n", 0, e.pos) + text.count("\r", 0, e.pos) - text.count("\r\n", 0, e.pos) + 1
        raise RunFolderError(path, f"invalid JSON at line {line}: {e.msg}") from None
    if not isinstance(data, dict):
        raise RunFolderError(path, f"expected a JSON object, got {type(data).__name__}")
    return data


# --- the rows ---------------------------------------------------------------------------------------

PERCENTILES = {"p50_ms": col.P50, "p66_ms": "66%", "p75_ms": "75%", "p80_ms": "80%", "p90_ms": col.P90,
               "p95_ms": col.P95, "p98_ms": "98%", "p99_ms": col.P99, "p999_ms": col.P999,
               "p9999_ms": "99.99%", "p100_ms": col.P100}  # fmt: skip
"""StatsRow's percentile fields -> locust_stats.csv's columns (Locust's, rounded to 2 digits)."""


@_row
class StatsRow:
    """One row of locust_stats.csv: a (type, name), or Aggregated (type ""). Milliseconds and rates
    are None where Locust wrote N/A (a name without responses) or nothing."""

    type: str
    name: str
    requests: int
    failures: int
    median_ms: float | None
    avg_ms: float | None
    min_ms: float | None
    max_ms: float | None  # Locust's true maximum (its 100% column is rounded)
    avg_size: float | None
    rps: float | None
    failures_per_s: float | None
    p50_ms: float | None
    p66_ms: float | None
    p75_ms: float | None
    p80_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p98_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    p9999_ms: float | None
    p100_ms: float | None
    line: int  # of locust_stats.csv

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.name)


@_row
class FailureRow:
    """One row of locust_failures.csv: an error of one request (method, name) and how often."""

    method: str
    name: str
    error: str
    occurrences: int
    line: int


EXACT_COLUMNS = {"p50_ms": "p50_ms", "p90_ms": "p90_ms", "p95_ms": "p95_ms", "p99_ms": "p99_ms",
                 "p999_ms": "p99.9_ms", "p9999_ms": "p99.99_ms", "max_ms": "max_ms"}  # fmt: skip
"""ExactRow's fields -> locust_latency_hdr.csv's columns (latency/histogram.py CSV_COLUMNS)."""

SERVICE = "service"
"""locust_latency_hdr.csv's kind of Locust's own response time (every run recorded with it)."""
INTENDED = "intended"
"""Its kind of the time since the intended start (open-model runs only)."""


@_row
class ExactRow:
    """One row of locust_latency_hdr.csv: a (kind, type, name)'s whole-run exact percentiles, ms."""

    kind: str
    type: str
    name: str
    count: int
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    p999_ms: float | None
    p9999_ms: float | None
    max_ms: float | None
    line: int

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.name)


STATS_NUMBERS = (col.MEDIAN_RT, col.AVG_RT, col.MIN_RT, col.MAX_RT, col.AVG_SIZE, col.RPS,
                 col.FAILURES_PER_S, *PERCENTILES.values())  # fmt: skip
"""The columns of StatsRow's float fields, in the fields' order (median_ms ... p100_ms)."""

EXACT_NUMBERS = tuple(EXACT_COLUMNS.values())
"""The columns of ExactRow's float fields, in the fields' order (p50_ms ... max_ms)."""


def stats_row(row: dict[str, str], line: int) -> StatsRow:
    """A locust_stats.csv row (read_table's) as a StatsRow."""
    get = row.get
    return StatsRow(  # in its field order (STATS_NUMBERS: median_ms ... p100_ms)
        get(col.TYPE) or "",
        get(col.NAME) or "",
        count(get(col.REQUEST_COUNT)),
        count(get(col.FAILURE_COUNT)),
        *numbers([get(column) for column in STATS_NUMBERS]),
        line,
    )


def exact_row(row: dict[str, str], line: int) -> ExactRow:
    """A locust_latency_hdr.csv row (read_table's, locust=False) as an ExactRow."""
    get = row.get
    return ExactRow(  # in its field order (EXACT_NUMBERS: p50_ms ... max_ms)
        get("kind") or SERVICE,
        get("type") or "",
        get("name") or "",
        count(get("count")),
        *numbers([get(column) for column in EXACT_NUMBERS]),
        line,
    )


# --- the folder -------------------------------------------------------------------------------------


class RunFolder:
    """A run folder, read: `open()` reads run.json's JSON and locust_stats.csv (and refuses a folder
    that is not a run's); run.json's type check, the failures and the exact latency are done when
    first asked for (each refusal is the same RunFolderError, naming the file and line)."""

    def __init__(
        self, path: Path, stats: dict[tuple[str, str], StatsRow], manifest_json: dict[str, Any] | None = None
    ):
        self.path = path
        self.stats = stats
        """locust_stats.csv's rows by (type, name), in the file's order, Aggregated ("", AGGREGATED)."""
        self.manifest_json = manifest_json
        """run.json's object as written (None without one): for readers of its keys as stored."""

    @cached_property
    def manifest(self) -> RunManifest | None:
        """run.json, type-checked (schema 1 read as 2); None for a plain Locust folder. Checked when
        first asked for: the check walks every timeline and costs more than reading the CSVs."""
        if self.manifest_json is None:
            return None
        from swarmbench.core.manifest import RunManifest  # here: most readers never ask for it

        path = self.path / col.MANIFEST
        try:
            return RunManifest.from_json(self.manifest_json, path)
        except InputError as e:
            raise RunFolderError(path, e.problem) from None

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        """PATH's run. RunFolderError naming the file and line when it is not a readable run folder."""
        path = path if isinstance(path, Path) else Path(path)
        stats_path = path / col.STATS_CSV
        if not stats_path.is_file():
            raise RunFolderError(
                path, f"not a run folder (no {col.STATS_CSV})" if path.is_dir() else "not a folder"
            )
        manifest_path = path / col.MANIFEST
        data = read_json_object(manifest_path, missing_ok=True)  # None: a plain Locust folder
        table = read_table(stats_path)
        missing = [c for c in (col.NAME, col.REQUEST_COUNT, col.FAILURE_COUNT) if c not in table.header]
        if missing:
            raise RunFolderError(stats_path, f"not a Locust stats file (no column {missing[0]!r})", 1)
        stats: dict[tuple[str, str], StatsRow] = {}
        for line, row in table.numbered():
            parsed = stats_row(row, line)
            key = (parsed.type, parsed.name)
            if key in stats:
                raise RunFolderError(stats_path, f"{parsed.type} {parsed.name!r} a second time", line)
            if not parsed.requests and number(row.get(col.REQUEST_COUNT)) is None:  # 0: a count, or none
                cell = row.get(col.REQUEST_COUNT)
                raise RunFolderError(stats_path, f"{col.REQUEST_COUNT} {cell!r} is not a number", line)
            stats[key] = parsed
        if not stats:
            raise RunFolderError(stats_path, "no rows", 2)
        return cls(path, stats, data)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def run_id(self) -> str:
        """run.json's run id, else the folder's name."""
        run_id = (self.manifest_json or {}).get("run_id")
        return run_id if isinstance(run_id, str) and run_id else self.path.name

    @property
    def aggregated(self) -> StatsRow | None:
        """locust_stats.csv's Aggregated row (None in a file without one)."""
        return self.stats.get(("", AGGREGATED)) or next(
            (r for r in self.stats.values() if r.name == AGGREGATED), None
        )

    @cached_property
    def failures(self) -> tuple[FailureRow, ...]:
        """locust_failures.csv's rows (none where the file is absent)."""
        path = self.path / col.FAILURES_CSV
        if not path.exists():
            return ()
        table = read_table(path)
        return tuple(
            FailureRow(
                method=row.get(col.FAIL_METHOD) or row.get(col.TYPE) or "",
                name=row.get(col.FAIL_NAME) or "",
                error=row.get(col.FAIL_ERROR) or "",
                occurrences=count(row.get(col.FAIL_OCCURRENCES)),
                line=line,
            )
            for line, row in table.numbered()
        )

    @cached_property
    def exact_rows(self) -> dict[tuple[str, str, str], ExactRow]:
        """locust_latency_hdr.csv's rows by (kind, type, name); {} for a run without it (rounded)."""
        try:
            table = read_table(self.path / col.LATENCY_HDR_CSV)
        except RunFolderError as e:
            if e.problem == MISSING:
                return {}
            raise
        rows = (exact_row(row, line) for line, row in table.numbered())
        return {(r.kind, r.type, r.name): r for r in rows}

    @property
    def exact(self) -> dict[tuple[str, str], ExactRow]:
        """The whole-run exact service time per (type, name), Aggregated included; {} when rounded."""
        return {(t, n): r for (k, t, n), r in self.exact_rows.items() if k == SERVICE}

    @property
    def windows_path(self) -> Path | None:
        """locust_latency_windows.csv, for `swarmbench.latency.windows.Windows.read_csv`; None
        when the run has none."""
        path = self.path / col.LATENCY_WINDOWS_CSV
        return path if path.is_file() else None
