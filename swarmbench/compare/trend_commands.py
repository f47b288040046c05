"""The trend's commands: `swarmbench trend` (change points, `--check`: the open regressions) and
`swarmbench history triage`. Apart from the comparison's commands (compare/commands.py) so that a
trend imports what it runs and nothing more: the comparison's modules (run folders, bootstrap,
report pages) cost ~0.1 s of a trend's start."""

from __future__ import annotations

import argparse
import json
import sys

from swarmbench.core import exits
from swarmbench.core.atomic import write_atomic
from swarmbench.core.exits import UsageError


def trend_command(args: argparse.Namespace) -> int:
    """`swarmbench trend`: the change points of every configuration of --branch in the history, as a
    table (or --json), and with -o OUT the trend page (trend.html, trend.json) written there. With
    --check also the open regressions (compare/triage.py), and exit 3 while there is one."""
    from swarmbench.compare import trend, triage
    from swarmbench.history.commands import opened, store_spec
    from swarmbench.history.store import HistoryError

    options = _trend_options(args)
    if args.anchor and not args.check:
        raise UsageError("trend --anchor RUN: only with --check (the anchor is the check's reference)")
    with opened(store_spec(args.history)) as store:
        try:
            series = trend.trend_series(store, args.branch, args.last)
            if args.check:
                found = triage.check_json(
                    store, args.branch, args.last, anchor=args.anchor, found=series, **options
                )
            else:
                found = trend.trend_json(store, args.branch, args.last, series, **options)
        except HistoryError as e:
            raise UsageError(str(e)) from None
    page = trend.trend_page(args.branch, found, series) if args.out else None
    if args.json:
        keys = ("change_points", "runs", "open", "accepted") if args.check else ("change_points", "runs")
        print(json.dumps({k: found[k] for k in keys}, indent=2))
    else:
        print(trend.trend_table(found))
        if args.check:
            print()
            print(triage.open_table(found))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out / "trend.json", json.dumps(found, indent=2) + "\n")
        write_atomic(args.out / "trend.html", page or "")
        print(f"-> {args.out}/ (trend.html, trend.json)", file=sys.stderr if args.json else sys.stdout)
    return exits.THRESHOLDS_BROKEN if args.check and found["open"] else exits.OK


def _trend_options(args: argparse.Namespace) -> dict:
    """--window, --pvalue, --magnitude checked (one line naming the bad one) as trend's keywords."""
    from swarmbench.compare import trend

    window = trend.WINDOW if args.window is None else args.window
    pvalue = trend.MAX_PVALUE if args.pvalue is None else args.pvalue
    if window < 3:
        raise UsageError(f"--window {window}: a window needs at least 3 runs")
    if not 0 < pvalue < 1:
        raise UsageError(f"--pvalue {pvalue}: a p-value between 0 and 1, e.g. 0.001")
    if args.magnitude is not None and not 0 <= args.magnitude < 10:
        raise UsageError(f"--magnitude {args.magnitude}: a fraction of the level, e.g. 0.05 for 5 %")
    return {"window": window, "max_pvalue": pvalue, "magnitude": args.magnitude}


def triage_command(args: argparse.Namespace) -> int:
    """`swarmbench history triage`: the open regressions of --branch (trend --check's) and the
    decisions recorded; exit 0 (listing is no verdict: `trend --check` gives one)."""
    from swarmbench.compare import triage
    from swarmbench.history.commands import opened, store_spec

    with opened(store_spec(args.history)) as store:
        found = triage.check_json(store, args.branch)
    if args.json:
        print(json.dumps({k: found[k] for k in ("open", "accepted")}, indent=2))
        return exits.OK
    print(triage.open_table(found).replace(" (exit 3)", "").replace(" (exit 0)", ""))
    print(f"{len(found['accepted'])} decision(s) recorded on branch {found['branch']}")
    for d in found["accepted"]:
        print(f"  {d['decided_at']}  {d['decision']} {d['run_id']} by {d['decided_by']}: {d['reason']}")
    return exits.OK
