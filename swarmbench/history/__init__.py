"""Every run remembered: the history store (one SQLite file, or a team's PostgreSQL), the record it
keeps of each run, backfill and the export Apache Otava reads. Standard library (SQLite); psycopg
only for a postgresql:// store (the `history` extra). The statistics over it, the gate and the
trend, are the comparison's (swarmbench/compare/trend.py: numpy)."""

from swarmbench.history.record import EXACT, METRICS, ROUNDED, NameStats, RunData, read_run
from swarmbench.history.store import (
    DEFAULT_PATH,
    Configuration,
    HistoryError,
    ImportReport,
    RunRecord,
    Series,
    Store,
    export_otava,
    import_tree,
    open_store,
)

__all__ = [
    "DEFAULT_PATH",
    "EXACT",
    "METRICS",
    "ROUNDED",
    "Configuration",
    "HistoryError",
    "ImportReport",
    "NameStats",
    "RunData",
    "RunRecord",
    "Series",
    "Store",
    "export_otava",
    "import_tree",
    "open_store",
    "read_run",
]
