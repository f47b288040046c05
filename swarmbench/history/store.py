"""The history store: every run remembered, in one SQLite file (default results/history.sqlite, no
server) or a team's PostgreSQL database (postgresql://...), the same tables in both (below).

    store = open_store("results/history.sqlite")      # created on first use
    store.add(Path("results/20261124T214323Z_AlbumsHttpUser_w2"), branch="main")
    series = store.series(fingerprint, host, testbed, "main", last=200)

A run is added whole or not at all (one transaction); adding it again keeps one copy (its key is
unique; see record.read_run); two processes adding at once both land (SQLite: WAL, a busy
timeout and BEGIN IMMEDIATE; PostgreSQL: INSERT ... ON CONFLICT DO NOTHING). Opening a file that is
not a history, or a history of a newer schema, is a HistoryError and writes nothing.

The tables: one SQL text for SQLite and PostgreSQL (three engine words substituted).

history_meta   what the database is (`format`) and its `schema_version`, checked on every open
history_runs   one row per run: identity, testbed, load fingerprint (and the load itself, as JSON)
history_stats  per run and request name (and Aggregated): counts, throughput, percentiles, max
history_hdr    per run and request name: the whole-run HDR histogram, encoded (kept apart so a
               series query never reads past the numbers)

The two engines behind one small interface: an open, checked connection whose `sql()`
adapts the ? placeholders and whose `write()` is one transaction. SQLite from the standard library;
psycopg 3 imported only when a postgresql:// URL is opened.

Backfill: every run folder under a directory into the store, old formats included.

A run folder is a folder holding locust_stats.csv (with or without run.json or HDR files: those
without HDR files are stored `rounded`). Hidden folders are skipped, as the analysis skips them
(a sweep's .aborted/ partial points and .logs/). A folder that cannot be read is reported and
skipped; the others are added in chunks, each chunk one transaction.

Export: the history as Apache Otava reads it: one CSV per configuration and an otava.yaml naming them.

Otava's CSV importer (otava/importer.py, CsvImporter; docs/CSV.md) takes, per test, one file with a
time column, attribute columns (copied as they are) and one column per metric, every metric cell a
number; an optional `branch` column selects rows with `otava analyze --branch`. One test here is one
configuration (load fingerprint, host, testbed: what may be compared), all its branches in one file:

    time,commit,branch,run_id,Aggregated.rps,Aggregated.p99_ms,GET /albums.p99_ms,...

A metric column is written only when every row has a number for it (Otava refuses an empty cell):
a request name that some runs lack is left out of that file. Then, with Otava installed:

    otava analyze --config-file OUT/otava.yaml --branch main <test name>
"""

from __future__ import annotations

import array
import csv
import functools
import itertools
import json
import math
import operator
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from swarmbench.core import folder as col
from swarmbench.core.atomic import atomic_file, write_atomic
from swarmbench.history.record import METRICS, FolderError, RunData, legacy_host, read_run

# --- the tables -----------------------------------------------------------------------------------

FORMAT = "swarmbench-history"
"""history_meta's `format` value: what tells a history from any other database."""

SCHEMA_VERSION = 2
"""Bumped when a table changes; a store with a newer one is refused (never half-read), an older one
is upgraded on open (MIGRATIONS, one transaction). 2: history_triage."""

_DDL = """
CREATE TABLE history_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE history_runs (
    id {id_column},
    run_key TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    started_at TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    branch TEXT NOT NULL,
    host TEXT NOT NULL,
    testbed TEXT NOT NULL,
    locust_version TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    load TEXT NOT NULL,
    precision TEXT NOT NULL CHECK (precision IN ('exact', 'rounded')),
    status TEXT NOT NULL,
    duration_s DOUBLE PRECISION,
    added_at TEXT NOT NULL
);
CREATE INDEX history_runs_series ON history_runs (fingerprint, host, testbed, branch, started_at);
CREATE TABLE history_stats (
    run BIGINT NOT NULL REFERENCES history_runs (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    requests BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    rps DOUBLE PRECISION,
    p50_ms DOUBLE PRECISION,
    p90_ms DOUBLE PRECISION,
    p95_ms DOUBLE PRECISION,
    p99_ms DOUBLE PRECISION,
    p999_ms DOUBLE PRECISION,
    max_ms DOUBLE PRECISION,
    exact SMALLINT NOT NULL,
    PRIMARY KEY (run, type, name)
){clustered};
CREATE TABLE history_hdr (
    run BIGINT NOT NULL REFERENCES history_runs (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    hdr TEXT NOT NULL,
    PRIMARY KEY (run, type, name)
){clustered};
INSERT INTO history_meta (key, value) VALUES ('format', '{format}');
INSERT INTO history_meta (key, value) VALUES ('schema_version', '{version}');
"""

_TRIAGE_DDL = """
CREATE TABLE history_triage (
    run BIGINT NOT NULL PRIMARY KEY REFERENCES history_runs (id) ON DELETE CASCADE,
    decision TEXT NOT NULL CHECK (decision IN ('accepted')),
    reason TEXT NOT NULL,
    decided_at TEXT NOT NULL,
    decided_by TEXT NOT NULL
){clustered};
"""
"""Schema 2: a person's decision on a run that starts a new level (`history accept`): the trend's
check stops calling the change a regression, and the gate's baseline may start there."""

MIGRATIONS = {1: _TRIAGE_DDL}
"""The statements that take a store from schema version K to K + 1 (run on open, in one
transaction with the version's update: a store is at one version or the next, never between)."""

ENGINE_WORDS = {
    # SQLite: INTEGER PRIMARY KEY is the rowid (assigned on insert); WITHOUT ROWID stores a
    # table in its primary key's order, one B-tree instead of two (a run's rows lie together).
    "sqlite": {"id_column": "INTEGER PRIMARY KEY", "clustered": " WITHOUT ROWID"},
    "postgresql": {"id_column": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "clustered": ""},
}


def statements(engine: str) -> list[str]:
    """The schema of ENGINE ("sqlite" or "postgresql") as separate statements, in order."""
    text = (_DDL + _TRIAGE_DDL).format(format=FORMAT, version=SCHEMA_VERSION, **ENGINE_WORDS[engine])
    return [s.strip() for s in text.split(";") if s.strip()]


def migration(engine: str, version: int) -> list[str]:
    """The statements that take an ENGINE store from schema VERSION to VERSION + 1."""
    text = MIGRATIONS[version].format(**ENGINE_WORDS[engine])
    return [s.strip() for s in text.split(";") if s.strip()]


# --- the two engines ------------------------------------------------------------------------------

BUSY_TIMEOUT_S = 60.0
"""How long an SQLite writer waits for another to commit (an add takes milliseconds; a long import
commits in chunks), before its add fails with "database is locked"."""

WAL_RETRY_S = 0.01
"""How soon an open retries switching a new store to WAL while another process holds it (_wal)."""

LOCK_ID = 0x5357_4842_4849_5354 % (2**63)
"""PostgreSQL advisory lock taken while creating the tables, so two first users cannot both try."""


class HistoryError(Exception):
    """Anything the store refuses: str() is one line naming the file, URL or run folder."""


class Db:
    """An open, checked connection: `sql()` adapts the ? placeholders, `write()` one transaction."""

    engine = ""
    where = ""
    conn: Any
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    """The driver's exceptions, turned into HistoryError (psycopg's only once it is imported)."""

    def sql(self, text: str) -> str:
        return text

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._errors():
            cur = self.conn.cursor()
            cur.execute(self.sql(sql), list(params))
            return list(cur.fetchall())

    @contextmanager
    def write(self) -> Iterator[Any]:
        raise NotImplementedError

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self.errors as e:
            raise HistoryError(f"{self.where}: {_one_line(e)}") from None

    def _check(self, meta: dict[str, str]) -> int:
        """Refuse a database that is not a history, or a history newer than this code; its version."""
        if meta.get("format") != FORMAT:
            raise HistoryError(f"{self.where}: not a swarmbench history (history_meta has no format row)")
        version = meta.get("schema_version", "")
        if not version.isdigit():
            raise HistoryError(f"{self.where}: not a swarmbench history (schema_version {version!r})")
        if int(version) > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.where}: history schema version {version} is newer than this swarmbench's "
                f"({SCHEMA_VERSION}); upgrade swarmbench to use it"
            )
        return int(version)

    def _upgrade(self, version: int) -> None:
        """Bring a store of an older schema VERSION to SCHEMA_VERSION in one transaction, re-reading
        the version under the write lock (another process may have upgraded it meanwhile)."""
        if version >= SCHEMA_VERSION:
            return
        with self.write() as cur:
            self._lock(cur)
            cur.execute(self.sql("SELECT value FROM history_meta WHERE key = 'schema_version'"))
            now = int(cur.fetchone()[0])
            for k in range(now, SCHEMA_VERSION):
                for statement in migration(self.engine, k):
                    cur.execute(statement)
            cur.execute(
                self.sql("UPDATE history_meta SET value = ? WHERE key = 'schema_version'"),
                (str(SCHEMA_VERSION),),
            )

    def _lock(self, cur: Any) -> None:
        """Serialise schema changes (SQLite's BEGIN IMMEDIATE already holds the write lock)."""


class Sqlite(Db):
    engine = "sqlite"

    def __init__(self, path: Path) -> None:
        self.where = str(path)
        if path.is_dir():
            raise HistoryError(f"{path}: is a folder, not a history file")
        existing = path.is_file()
        if not existing:
            path.parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{quote(str(path.resolve()))}?mode={'rw' if existing else 'rwc'}"
        try:
            self.conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as e:
            raise HistoryError(f"{path}: cannot open ({_one_line(e)})") from None
        try:
            self._open()
        except BaseException:
            self.conn.close()
            raise

    def _open(self) -> None:
        # Only reads until the file is known to be a history: a foreign file stays byte for byte.
        # SQLite itself tells a file that is no database (under its locks: a file another process
        # is creating is never seen half-written, as a check of its header bytes here could be).
        try:
            tables = self._tables()
        except HistoryError as e:
            detail = str(e).split(": ", 1)[-1]
            raise HistoryError(f"{self.where}: not a swarmbench history ({detail})") from None
        if "history_meta" not in tables:
            if tables:
                raise HistoryError(
                    f"{self.where}: not a swarmbench history (other tables: {', '.join(tables[:3])})"
                )
            with self.write() as cur:  # re-checked under the write lock: another process may have won
                if "history_meta" not in self._tables():
                    for statement in statements(self.engine):
                        cur.execute(statement)
        self._upgrade(self._check(dict(self.rows("SELECT key, value FROM history_meta"))))
        with self._errors():
            # WAL: readers never wait for a writer, writers queue on the lock (busy timeout);
            # NORMAL: a power cut may lose the last commit, never corrupt the file.
            self._wal()
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")

    def _wal(self) -> None:
        """Switch the file to WAL once (the mode is kept in the file). The switch needs the file to
        itself, and SQLite answers "database is locked" at once, without its busy timeout, while
        another process reads it: several processes opening a new store at the same moment retry
        until the first one's switch is done."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(WAL_RETRY_S)

    def _tables(self) -> list[str]:
        return [r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]

    @contextmanager
    def write(self) -> Iterator[sqlite3.Cursor]:
        with self._errors():
            self.conn.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first INSERT
            try:
                yield self.conn.cursor()
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")


class Postgres(Db):
    engine = "postgresql"

    def __init__(self, url: str) -> None:
        # never print a password, in the user part or as a query parameter
        self.where = re.sub(
            r"(password=)[^&]*", r"\1***", re.sub(r"://([^:/@]*):[^@/]*@", r"://\1:***@", url)
        )
        try:
            import psycopg
        except ImportError:
            raise HistoryError(
                f"{self.where}: a PostgreSQL history needs psycopg: pip install 'swarmbench[history]'"
            ) from None
        self.errors = (psycopg.Error,)
        try:
            self.conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as e:
            raise HistoryError(f"{self.where}: cannot connect ({_one_line(e)})") from None
        try:
            if not self._exists():
                with self.write() as cur:
                    self._lock(cur)
                    if not self._exists():
                        for statement in statements(self.engine):
                            cur.execute(statement)
            self._upgrade(self._check(dict(self.rows("SELECT key, value FROM history_meta"))))
        except BaseException:
            self.conn.close()
            raise

    def _exists(self) -> bool:
        # pg_tables, read with this statement's snapshot: to_regclass() answers from the session's
        # catalog cache, which need not see tables another session created since (found by the
        # concurrent-add test: the second creator still saw none after the first had committed).
        return self.rows(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables "
            "WHERE schemaname = current_schema() AND tablename = 'history_meta')"
        )[0][0]

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _lock(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))

    @contextmanager
    def write(self) -> Iterator[Any]:
        with self._errors(), self.conn.transaction(), self.conn.cursor() as cur:
            yield cur


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or type(e).__name__


# --- the store: open, add, read -------------------------------------------------------------------

Load = dict[str, Any] | None
"""The load given for run folders without run.json (record.given_load); None: not given."""

DEFAULT_PATH = Path("results/history.sqlite")
"""The embedded store, beside the run folders it remembers."""


@dataclass(frozen=True)
class RunRecord:
    """One stored run (history_runs): identity, testbed and load."""

    id: int
    run_key: str
    run_id: str
    started_at: str
    git_commit: str
    branch: str
    host: str
    testbed: str
    locust_version: str
    fingerprint: str
    load: dict[str, Any]
    precision: str
    status: str
    duration_s: float | None


@dataclass(frozen=True)
class Configuration:
    """Runs that may be compared: one load fingerprint on one host, testbed and branch."""

    fingerprint: str
    host: str
    testbed: str
    branch: str
    runs: int
    load: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """A person's decision on a run (history_triage): `accepted` (it starts a new level), why, when,
    by whom."""

    run: RunRecord
    decision: str
    reason: str
    decided_at: str
    decided_by: str


@dataclass
class Series:
    """One configuration's runs, oldest first, and per (type, name) and metric the values, one per
    run (NaN where a run lacks the name or the figure)."""

    runs: list[RunRecord] = field(default_factory=list)
    values: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)
    packed: dict[tuple[str, str], dict[str, array.array]] = field(default_factory=dict)
    """The same values as array('d'), where the read had them packed already (a name in every run,
    a REAL column without NULL): numpy reads them in place (np.frombuffer), where converting the
    lists again costs ~0.6 ms a series of 10,000 runs, once for each of a trend's 77 series."""


_RUN_COLUMNS = ("id", "run_key", "run_id", "started_at", "git_commit", "branch", "host", "testbed",
                "locust_version", "fingerprint", "load", "precision", "status", "duration_s")  # fmt: skip
_STAT_COLUMNS = ("run", "type", "name", *METRICS, "exact")
_REAL = frozenset(METRICS) - {"requests", "failures"}
"""The metrics stored as DOUBLE PRECISION (the rest are NOT NULL counts)."""


def _reals(values: list[Any]) -> tuple[list[float], array.array | None]:
    """A REAL column's VALUES with NULL (None) as NaN, and packed as array('d') when it has no NULL
    (else None). array('d') takes floats at C speed and refuses None: the cell-by-cell pass only
    where there is a NULL (10x faster than `None in values`), and the array built to find out is
    kept (Series.packed)."""
    try:
        packed = array.array("d", values)
    except TypeError:
        return [math.nan if v is None else v for v in values], None
    return values, packed


def open_store(spec: str | Path = DEFAULT_PATH) -> Store:
    """The store at SPEC: a file path (SQLite; created with its folder when missing) or a
    postgresql:// URL (psycopg 3 needed; the tables are created on first use)."""
    text = str(spec)
    if is_url(text):
        if not re.match(r"^postgres(ql)?://", text):
            scheme = text.split(":", 1)[0]
            raise HistoryError(
                f"{scheme}://...: not a history store (a SQLite file path or a postgresql:// URL)"
            )
        return Store(Postgres(text))
    return Store(Sqlite(Path(text)))


def is_url(spec: str) -> bool:
    """Is SPEC a URL (`scheme://...`) rather than a file path? Only postgresql:// opens; any other
    scheme is refused, never taken for a relative path (mysql://h/db would create ./mysql:/h/db)."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", spec) is not None


HOST_RULE = ("host_identity", "1")
"""history_meta's row saying the stored hosts are record.host_identity's (the bundled target on a
loopback address without its port). A store without it was written before that rule: on open its
hosts are rewritten once, in one transaction, as record.legacy_host reads them (it cannot know
which target an old row measured: a loopback port the system chose is taken for LOCAL=1's)."""


class Store:
    """A history store (open_store makes one). Use as a context manager, or close()."""

    def __init__(self, db: Db) -> None:
        self._db = db
        self.where = db.where
        """The file or the URL (its password hidden), as every error names it."""
        try:
            self._upgrade_hosts()
        except BaseException:
            db.conn.close()
            raise

    def _upgrade_hosts(self) -> None:
        """HOST_RULE: a store from before it gets its hosts rewritten and the row, once."""
        marked = "SELECT 1 FROM history_meta WHERE key = ?"  # any value: a later rule is its own
        if self._db.rows(marked, HOST_RULE[:1]):
            return
        with self._db.write() as cur:
            if self._db.engine == "postgresql":  # two first openers: one rewrites, the other waits
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_ID,))
            cur.execute(self._db.sql(marked), HOST_RULE[:1])
            if cur.fetchone():
                return
            cur.execute("SELECT DISTINCT host FROM history_runs")
            for (host,) in cur.fetchall():
                if legacy_host(host) != host:
                    cur.execute(
                        self._db.sql("UPDATE history_runs SET host = ? WHERE host = ?"),
                        (legacy_host(host), host),
                    )
            cur.execute(self._db.sql("INSERT INTO history_meta (key, value) VALUES (?, ?)"), HOST_RULE)

    def close(self) -> None:
        self._db.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- adding ---

    def add(
        self, folder: Path, *, branch: str | None = None, testbed: str | None = None, load: Load = None
    ) -> bool:
        """Add the run in FOLDER; False when the store already holds it (record.read_run says
        what BRANCH and TESTBED default to, and when LOAD is needed)."""
        return self.add_runs([_read(folder, branch, testbed, load)])[0]

    def add_many(
        self,
        folders: Iterable[Path],
        *,
        branch: str | None = None,
        testbed: str | None = None,
        load: Load = None,
    ) -> list[bool]:
        """Add every folder's run in one transaction (all or none; each read before any write)."""
        return self.add_runs([_read(f, branch, testbed, load) for f in folders])

    def add_runs(self, runs: Sequence[RunData]) -> list[bool]:
        """Add RUNS (already read) in one transaction; per run, True if added, False if there."""
        added_at = col.utc_iso(datetime.now(UTC))
        out = []
        with self._db.write() as cur:
            for run in runs:
                cur.execute(
                    self._db.sql(
                        f"INSERT INTO history_runs ({', '.join(_RUN_COLUMNS[1:])}, added_at) "
                        f"VALUES ({', '.join('?' * len(_RUN_COLUMNS))}) "
                        "ON CONFLICT (run_key) DO NOTHING RETURNING id"
                    ),
                    (run.run_key, run.run_id, run.started_at, run.git_commit, run.branch, run.host,
                     run.testbed, run.locust_version, run.fingerprint, json.dumps(run.load, sort_keys=True),
                     run.precision, run.status, run.duration_s, added_at),
                )  # fmt: skip
                row = cur.fetchone()
                out.append(row is not None)
                if row is not None:
                    self._add_stats(cur, int(row[0]), run)
        return out

    def _add_stats(self, cur: Any, run_id: int, run: RunData) -> None:
        stats = [(run_id, s.type, s.name, *(getattr(s, m) for m in METRICS), int(s.exact)) for s in run.stats]
        placeholders = ", ".join("?" * len(_STAT_COLUMNS))
        cur.executemany(
            self._db.sql(f"INSERT INTO history_stats ({', '.join(_STAT_COLUMNS)}) VALUES ({placeholders})"),
            stats,
        )
        hdrs = [(run_id, s.type, s.name, s.hdr) for s in run.stats if s.hdr]
        if hdrs:
            cur.executemany(
                self._db.sql("INSERT INTO history_hdr (run, type, name, hdr) VALUES (?, ?, ?, ?)"), hdrs
            )

    # --- reading ---

    def runs(self, *, limit: int | None = None, **equal: str) -> list[RunRecord]:
        """Stored runs, oldest first; EQUAL filters on fingerprint, host, testbed, branch, run_id
        or precision; LIMIT keeps the newest."""
        where, params = _filters(equal)
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM history_runs{where} ORDER BY started_at DESC, id DESC"
        if limit is not None:
            sql, params = sql + " LIMIT ?", [*params, int(limit)]
        return [_record(row) for row in reversed(self._db.rows(sql, params))]

    def configurations(self) -> list[Configuration]:
        """Every (fingerprint, host, testbed, branch) with its run count, most runs first."""
        rows = self._db.rows(
            "SELECT fingerprint, host, testbed, branch, COUNT(*), MAX(load) FROM history_runs "
            "GROUP BY fingerprint, host, testbed, branch ORDER BY COUNT(*) DESC, fingerprint, branch"
        )
        return [Configuration(r[0], r[1], r[2], r[3], int(r[4]), json.loads(r[5])) for r in rows]

    def series(
        self,
        fingerprint: str,
        host: str,
        testbed: str,
        branch: str = "main",
        *,
        metrics: Sequence[str] = METRICS,
        last: int | None = None,
        complete_only: bool = True,
    ) -> Series:
        """The configuration's runs (the LAST ones only, if given) and their METRICS per name.
        COMPLETE_ONLY leaves out runs whose status says they did not run their whole length."""
        unknown = [m for m in metrics if m not in METRICS]
        if unknown:
            raise HistoryError(f"{self.where}: no metric {unknown[0]!r} (known: {', '.join(METRICS)})")
        where = " WHERE fingerprint = ? AND host = ? AND testbed = ? AND branch = ?"
        if complete_only:
            where += " AND status IN ('complete', '')"
        params: list[Any] = [fingerprint, host, testbed, branch]
        picked = f"SELECT id FROM history_runs{where}"
        if last is not None:
            picked += " ORDER BY started_at DESC, id DESC LIMIT ?"
            params.append(int(last))
        runs = self._db.rows(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM history_runs WHERE id IN ({picked}) "
            "ORDER BY started_at, id",
            params,
        )
        out = Series(runs=[_record(r) for r in runs])
        if not self._columns_dense(out, picked, params, metrics):
            # Some run lacks a name: name by name, as the engine orders the names.
            rows = self._db.rows(
                f"SELECT type, name, run, {', '.join(metrics)} FROM history_stats WHERE run IN ({picked}) "
                "ORDER BY type, name",
                params,
            )
            self._columns_sparse(out, rows, metrics)
        return out

    def _columns_dense(self, out: Series, picked: str, params: list[Any], metrics: Sequence[str]) -> bool:
        """OUT's values when every run of OUT (the ids PICKED selects) has the same names, one row
        each; False (OUT untouched) when not. The names are those of one run; the rest is counted
        by the engine: with (run, type, name) unique, all rows among those names and n x K rows in
        all means every run has each of the K names. The values then come in the primary key's
        order (run, type, name), no sort for the engine and no type, name or run per row (a third
        less to read): a table of n runs x K names, each name's column one slice of it, K apart."""
        n = len(out.runs)
        if not n:
            return False
        by_id = sorted(r.id for r in out.runs)
        names = self._db.rows(
            "SELECT type, name FROM history_stats WHERE run = ? ORDER BY type, name", [by_id[0]]
        )
        if not names:
            return False
        pairs = ", ".join(["(?, ?)"] * len(names))
        counts = self._db.rows(
            f"SELECT COUNT(*), COUNT(CASE WHEN (type, name) IN (VALUES {pairs}) THEN 1 END) "
            f"FROM history_stats WHERE run IN ({picked})",
            [*itertools.chain.from_iterable(names), *params],
        )[0]
        if int(counts[0]) != n * len(names) or int(counts[1]) != n * len(names):
            return False
        rows = self._db.rows(
            f"SELECT {', '.join(metrics)} FROM history_stats WHERE run IN ({picked}) "
            "ORDER BY run, type, name",
            params,
        )
        if len(rows) != n * len(names):  # a writer between the queries: read it name by name
            return False
        # positions are by started_at then id: ids out of that order (an older run added later)
        rank = {run_id: i for i, run_id in enumerate(by_id)}
        order = [rank[r.id] for r in out.runs]
        shuffled = order != list(range(n))
        for k, key in enumerate(names):
            block = rows[k :: len(names)]  # row k of every run, runs in id order
            if shuffled:
                block = [block[i] for i in order]
            per = out.values[(key[0], key[1])] = {}
            packed = out.packed[(key[0], key[1])] = {}
            for j, m in enumerate(metrics):
                values = list(map(operator.itemgetter(j), block))
                # The drivers give REAL columns as float already (None: NULL); counts (BIGINT) need float().
                if m not in _REAL:
                    per[m] = [float(v) for v in values]
                    continue
                per[m], column = _reals(values)
                if column is not None:
                    packed[m] = column
        return True

    @staticmethod
    def _columns_sparse(out: Series, rows: list[tuple[Any, ...]], metrics: Sequence[str]) -> None:
        """OUT's values from ROWS ordered by type and name, NaN where a run lacks the name."""
        position = {r.id: i for i, r in enumerate(out.runs)}
        nan, n = math.nan, len(out.runs)
        # Column by column per name (10,000 runs x 11 names: 3x faster than cell by cell).
        for key, group in itertools.groupby(rows, key=lambda r: (r[0], r[1])):
            columns = list(zip(*group, strict=True))
            where = [position[r] for r in columns[2]]
            dense = len(where) == n and where == sorted(where)  # the name is in every run, in order
            per = out.values[key] = {}
            for m, column in zip(metrics, columns[3:], strict=True):
                # The drivers give REAL columns as float already; counts (BIGINT) need float().
                values = (
                    [nan if v is None else v for v in column] if m in _REAL else [float(v) for v in column]
                )
                if dense:
                    per[m] = values
                else:  # the name is missing from some runs: NaN there
                    per[m] = [nan] * n
                    for i, v in zip(where, values, strict=True):
                        per[m][i] = v

    def histograms(self, run_ids: Iterable[int], type_: str, name: str) -> dict[int, str]:
        """{run id: encoded whole-run histogram} of NAME (request TYPE_) in those runs that have one."""
        ids = [int(i) for i in run_ids]
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        rows = self._db.rows(
            f"SELECT run, hdr FROM history_hdr WHERE type = ? AND name = ? AND run IN ({marks})",
            [type_, name, *ids],
        )
        return {int(r[0]): r[1] for r in rows}

    def count(self) -> int:
        return int(self._db.rows("SELECT COUNT(*) FROM history_runs")[0][0])

    # --- triage: a person's decisions ---

    def accept(self, run: RunRecord, reason: str, by: str) -> Decision | None:
        """Record that RUN starts an accepted new level (REASON: why, BY: who); None when it was
        accepted already (the first decision stays), else the decision recorded."""
        decided_at = col.utc_iso(datetime.now(UTC))
        with self._db.write() as cur:
            cur.execute(
                self._db.sql(
                    "INSERT INTO history_triage (run, decision, reason, decided_at, decided_by) "
                    "VALUES (?, 'accepted', ?, ?, ?) ON CONFLICT (run) DO NOTHING RETURNING run"
                ),
                (run.id, reason, decided_at, by),
            )
            added = cur.fetchone() is not None
        return Decision(run, "accepted", reason, decided_at, by) if added else None

    def decisions(self, **equal: str) -> list[Decision]:
        """Every recorded decision, oldest run first; EQUAL filters the runs as runs() does."""
        where, params = _filters(equal)
        rows = self._db.rows(
            f"SELECT {', '.join('r.' + c for c in _RUN_COLUMNS)}, t.decision, t.reason, t.decided_at, "
            f"t.decided_by FROM history_triage t JOIN history_runs r ON r.id = t.run"
            f"{where.replace(' WHERE ', ' WHERE r.').replace(' AND ', ' AND r.')} "
            "ORDER BY r.started_at, r.id",
            params,
        )
        n = len(_RUN_COLUMNS)
        return [Decision(_record(row[:n]), *row[n:]) for row in rows]

    def accepted(self, fingerprint: str, host: str, testbed: str, branch: str) -> list[str]:
        """The run_keys of the configuration's runs that start an accepted new level, oldest first
        (`swarmbench history accept`): the trend's check and the gate start their baseline there."""
        found = self.decisions(fingerprint=fingerprint, host=host, testbed=testbed, branch=branch)
        return [d.run.run_key for d in found if d.decision == "accepted"]


def _read(folder: Path, branch: str | None, testbed: str | None, load: Load) -> RunData:
    try:
        return read_run(Path(folder), branch=branch, testbed=testbed, load=load)
    except FolderError as e:
        raise HistoryError(str(e)) from None


@functools.lru_cache(maxsize=256)
def _parsed_load(text: str) -> Any:
    """The load JSON of many runs is one text per configuration: parsed once (10,000 runs of one
    configuration read back in 0.1 s less)."""
    return json.loads(text)


def _load(text: str) -> dict[str, Any]:
    return dict(_parsed_load(text))  # a copy: callers may change theirs


def _filters(equal: dict[str, str]) -> tuple[str, list[Any]]:
    allowed = {"fingerprint", "host", "testbed", "branch", "run_id", "precision", "run_key"}
    bad = sorted(set(equal) - allowed)
    if bad:
        raise HistoryError(f"runs(): no filter {bad[0]!r} (known: {', '.join(sorted(allowed))})")
    if not equal:
        return "", []
    return " WHERE " + " AND ".join(f"{k} = ?" for k in equal), list(equal.values())


def _record(row: Sequence[Any]) -> RunRecord:
    # positionally: _RUN_COLUMNS are RunRecord's fields in order (10,000 runs: 2x faster than by name)
    return RunRecord(int(row[0]), *row[1:10], _load(row[10]), *row[11:])


# --- backfill: a tree of run folders --------------------------------------------------------------

CHUNK = 200
"""Runs per transaction: a crash loses at most one chunk's work (it is redone by running the import
again: runs already stored are skipped), and a concurrent writer waits at most one chunk."""


@dataclass
class ImportReport:
    """What an import did: folders added, folders the store already held, folders it could not
    read (`PATH: problem`, one line each)."""

    added: list[Path] = field(default_factory=list)
    already: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.already)} already stored, {len(self.failed)} unreadable"


def run_folders(directory: Path) -> list[Path]:
    """Every run folder under DIRECTORY (itself included), sorted, hidden folders skipped."""
    directory = Path(directory)
    if not directory.is_dir():
        raise HistoryError(f"{directory}: not a folder")
    found = []
    for here, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if col.STATS_CSV in files:
            found.append(Path(here))
    return sorted(found)


def import_tree(
    store: Store,
    directory: Path,
    *,
    branch: str | None = None,
    testbed: str | None = None,
    load: Load = None,
) -> ImportReport:
    """Add every run folder under DIRECTORY to STORE (see the module docstring); LOAD: the load of
    those without run.json (without it they are reported and skipped: record.read_run)."""
    report = ImportReport()
    pending: list[tuple[Path, RunData]] = []
    for folder in run_folders(directory):
        try:
            pending.append((folder, read_run(folder, branch=branch, testbed=testbed, load=load)))
        except FolderError as e:
            report.failed.append(str(e))
    for start in range(0, len(pending), CHUNK):
        chunk = pending[start : start + CHUNK]
        for (folder, _), added in zip(chunk, store.add_runs([run for _, run in chunk]), strict=True):
            (report.added if added else report.already).append(folder)
    return report


# --- export: what Apache Otava reads --------------------------------------------------------------

OTAVA_METRICS = ("rps", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "failures")
"""What the export writes per request name (counts of requests follow the run length, not the
system: left out)."""

HIGHER_IS_BETTER = {"rps"}
"""Otava's `direction`: 1 where higher is better, -1 where lower is (latency, failures)."""

TIME_COLUMN = "time"
"""Otava's default time_column name."""
ATTRIBUTES = ("commit", "branch", "run_id")
"""Text columns after the time: what Otava shows beside a change point (`branch` also selects)."""


def export_otava(store: Store, out: Path) -> list[Path]:
    """Write one CSV per configuration and OUT/otava.yaml into OUT (created); the CSVs, in order."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tests: dict[str, tuple[Path, list[str]]] = {}
    grouped: dict[tuple[str, str, str], list[Configuration]] = {}
    for config in store.configurations():
        grouped.setdefault((config.fingerprint, config.host, config.testbed), []).append(config)
    for (fingerprint, host, testbed), configs in sorted(grouped.items()):
        name = test_name(fingerprint, host, testbed)
        path = out / f"{name}.csv"
        tests[name] = (path, _write_csv(store, path, configs))
    write_atomic(out / "otava.yaml", _yaml(tests))
    return [path for path, _ in tests.values()]


def test_name(fingerprint: str, host: str, testbed: str) -> str:
    """A file-safe, readable test name: the host, the testbed, the fingerprint."""
    words = re.sub(r"[^A-Za-z0-9]+", "-", f"{host}_{testbed}").strip("-").lower()[:60]
    return f"{words}-{fingerprint}"


def column(name: str, metric: str) -> str:
    """The CSV column of one request name's metric, e.g. `GET /albums.p99_ms`."""
    return f"{name}.{metric}"


def _write_csv(store: Store, path: Path, configs: list[Configuration]) -> list[str]:
    rows: list[tuple[str, dict[str, str], dict[str, float]]] = []
    for config in configs:
        series = store.series(config.fingerprint, config.host, config.testbed, config.branch,
                              metrics=OTAVA_METRICS, complete_only=True)  # fmt: skip
        for i, run in enumerate(series.runs):
            values = {
                column(name, metric): per[metric][i]
                for (_type, name), per in series.values.items()
                for metric in OTAVA_METRICS
            }
            attributes = {"commit": run.git_commit, "branch": run.branch, "run_id": run.run_id}
            rows.append((run.started_at, attributes, values))
    rows.sort(key=lambda r: r[0])
    complete: set[str] | None = None  # the columns with a number in every row
    for _, _, values in rows:
        have = {c for c, v in values.items() if not math.isnan(v)}
        complete = have if complete is None else complete & have
    metric_columns = sorted(complete or ())
    with atomic_file(path, newline="") as f:
        writer = csv.writer(f)
        writer.writerow([TIME_COLUMN, *ATTRIBUTES, *metric_columns])
        for started, attributes, values in rows:
            writer.writerow(
                [
                    _otava_time(started),
                    *(attributes[a] for a in ATTRIBUTES),
                    *(repr(values[c]) for c in metric_columns),
                ]
            )
    return metric_columns


def _otava_time(started: str) -> str:
    """The store's time as Otava prints it (`2026-11-24 21:43:23 +0000`; dateparser reads it)."""
    return datetime.fromisoformat(started.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S %z")


def _yaml(tests: dict[str, tuple[Path, list[str]]]) -> str:
    """otava.yaml, every string JSON-quoted (JSON strings are YAML double-quoted scalars)."""
    lines = ["# Written by swarmbench (history export): one test per configuration.", "tests:"]
    for name, (path, metrics) in tests.items():
        lines += [
            f"  {json.dumps(name)}:",
            "    type: csv",
            f"    file: {json.dumps(str(path.resolve()))}",
            f"    time_column: {TIME_COLUMN}",
            f"    attributes: {json.dumps(['commit', 'run_id'])}",
            "    metrics:" if metrics else "    metrics: {}",
        ]
        for metric in metrics:
            direction = 1 if metric.rsplit(".", 1)[1] in HIGHER_IS_BETTER else -1
            lines.append(
                f"      {json.dumps(metric)}: {{column: {json.dumps(metric)}, direction: {direction}}}"
            )
    return "\n".join(lines) + "\n"
