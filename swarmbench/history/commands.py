"""`swarmbench history add|list|import|export|accept`: runs into the history store and out of it
again, and a person's decision on a run (their options are parsed in swarmbench/cli.py; `history
triage` needs the trend's statistics: compare/trend_commands.py). Standard library only: a runner
records its runs with these, and a CI job without numpy can keep main's history.

Every command opens the store named by `--history` (else SWARMBENCH_HISTORY, else
results/history.sqlite): a refused store or run folder is one line (`swarmbench: error: ...`),
exit 2, and nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from swarmbench.core.exits import InputError, UsageError
from swarmbench.core.folder import MANIFEST, create_run_dir
from swarmbench.history import record
from swarmbench.history.store import (
    DEFAULT_PATH,
    HistoryError,
    Store,
    export_otava,
    import_tree,
    is_url,
    open_store,
)

STORE_ENV = "SWARMBENCH_HISTORY"
"""Where the store is when --history is not given: a file path or a postgresql:// URL."""

RECORD_ENV = "SWARMBENCH_RECORD"
"""`headless`, `sweep` and `ab` add their runs to the store as they finish when this is 1 (or with
--record)."""


RESULTS_ENV = "SWARMBENCH_RESULTS"
"""Where the runner puts run folders (runner/settings.py): the default store lies beside them."""


def store_spec(given: str | None, env: Mapping[str, str] = os.environ) -> str:
    """--history, else SWARMBENCH_HISTORY, else history.sqlite in SWARMBENCH_RESULTS (beside the
    run folders), else results/history.sqlite. A file path is made absolute (the runner hands it to
    commands it starts in the checkout); a URL is kept as it is."""
    spec = given or env.get(STORE_ENV, "").strip()
    if not spec:
        results = env.get(RESULTS_ENV, "").strip()
        spec = str(Path(results) / DEFAULT_PATH.name) if results else str(DEFAULT_PATH)
    return spec if is_url(spec) else str(Path(spec).resolve())


def opened(spec: str) -> Store:
    """The store at SPEC; UsageError naming it when it is refused (the command line's one line)."""
    try:
        return open_store(spec)
    except HistoryError as e:
        raise UsageError(str(e)) from None


def check_store(spec: str) -> None:
    """Open SPEC now and close it: a --record that could not write must fail before the runs."""
    opened(spec).close()


def run(args: argparse.Namespace) -> int:
    """`swarmbench history ACTION` (ARGS from swarmbench/cli.py)."""
    try:
        with opened(store_spec(args.history)) as store:
            return ACTIONS[args.action](store, args)
    except HistoryError as e:
        raise UsageError(str(e)) from None


def given_load(items: list[str] | None) -> dict[str, Any] | None:
    """--load KEY=VALUE ... as the load of folders without run.json (record.given_load): VALUE is
    read as JSON where it is JSON (50, 1.5, ["A", "B"]), else kept as text; None when not given.
    UsageError naming a malformed item or an unknown key."""
    if not items:
        return None
    given: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--load {item!r}: expected KEY=VALUE")
        if key in given:
            raise UsageError(f"--load: {key} given twice")
        try:
            given[key] = json.loads(text)
        except json.JSONDecodeError:
            given[key] = text
    try:
        return record.given_load(given)
    except ValueError as e:
        raise UsageError(f"--load: {e}") from None


def add(store: Store, args: argparse.Namespace) -> int:
    """Add run folders (all or none: one transaction); each is said added or already stored. A run
    whose master was lost (its record the runner's, core/salvage.py) is refused unless --partial."""
    if not getattr(args, "partial", False):
        for run in args.runs:
            lost = master_lost(run)
            if lost:
                raise UsageError(
                    f"history add {run}: a partial run ({lost}); its record was written from what "
                    "survived, not by its master: add it with --partial if you mean to"
                )
    added = store.add_many(args.runs, branch=args.branch, testbed=args.testbed, load=given_load(args.load))
    for folder, new in zip(args.runs, added, strict=True):
        print(f"{'added' if new else 'already stored'}: {folder} -> {store.where}")
    return 0


def master_lost(run: Path) -> str | None:
    """The reason RUN's master was lost (run.json `master_lost`), or None (a run that ended on its
    own, or a folder whose run.json cannot say: the store's reader names what is wrong with it)."""
    # here, not at the top: the manifest's 30 dataclasses cost ~0.03 s of every history command's
    # start (`swarmbench trend` opens its store through this module)
    from swarmbench.core.manifest import RunManifest

    try:
        manifest = RunManifest.read(Path(run) / MANIFEST)
    except InputError:
        return None
    return (manifest.master_lost.reason or "the master was lost") if manifest.master_lost else None


def list_runs(store: Store, args: argparse.Namespace) -> int:
    """The stored runs, oldest first: a table, or JSON lines with --json."""
    runs = store.runs()
    if args.json:
        for r in runs:
            keys = ("run_id", "started_at", "git_commit", "branch", "host", "testbed", "fingerprint")
            more = {"precision": r.precision, "status": r.status}
            print(json.dumps({k: getattr(r, k) for k in keys} | more))
        return 0
    print(f"{len(runs)} run(s) in {store.where}")
    for r in runs:
        commit = (r.git_commit or "-")[:10]
        print(f"{r.started_at}  {r.run_id}  {r.branch or '-'}  {commit}  {r.precision}  {r.fingerprint}")
    return 0


def import_folders(store: Store, args: argparse.Namespace) -> int:
    """Backfill every run folder under DIR (old formats too: `rounded` where they lack HDR files)."""
    load = given_load(args.load)
    report = import_tree(store, args.folder, branch=args.branch, testbed=args.testbed, load=load)
    for line in report.failed:
        print(f"swarmbench: warning: skipped {line}", file=sys.stderr)
    print(report.summary())
    return 0


def export(store: Store, args: argparse.Namespace) -> int:
    """One CSV per configuration in Apache Otava's layout, and the otava.yaml that reads them. The
    default folder is a new one each time (results/history-export-<UTC time>, -2, -3, ... within one
    second): an earlier export, perhaps with an edited otava.yaml, is never written over."""
    out = args.out or create_run_dir(
        Path("results"), f"history-export-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}", explicit=False
    )
    files = export_otava(store, out)
    print(f"{len(files)} configuration(s) -> {out}/ (otava.yaml and one CSV each)")
    return 0


def accept(store: Store, args: argparse.Namespace) -> int:
    """Record that RUN starts an accepted new level (--reason required): the trend's check stops
    calling its change open, and the gate's baseline may start there."""
    reason = (args.reason or "").strip()
    if not reason:
        raise UsageError(
            f"history accept {args.run}: --reason TEXT is required (why the new level is accepted)"
        )
    found = store.runs(run_key=args.run) or store.runs(run_id=args.run)
    if not found:
        raise UsageError(f"history accept {args.run}: no such run in {store.where} (history list shows them)")
    if len(found) > 1:
        keys = ", ".join(r.run_key for r in found[:3])
        raise UsageError(
            f"history accept {args.run}: {len(found)} runs have that id; name one by its run_key ({keys})"
        )
    run = found[0]
    by = os.environ.get("GITHUB_ACTOR") or os.environ.get("USER") or "-"
    decision = store.accept(run, reason, by)
    if decision is None:
        print(f"already accepted: {run.run_id} ({run.run_key}) in {store.where}")
    else:
        print(f"accepted: {run.run_id} ({run.run_key}, branch {run.branch}) starts a new level: {reason}")
    return 0


ACTIONS = {"add": add, "list": list_runs, "import": import_folders, "export": export, "accept": accept}
