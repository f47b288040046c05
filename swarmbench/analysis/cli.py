"""`python -m analysis`: report and summary subcommands. The only code here that writes files.

Errors are one line on stderr, `analysis: error: WHERE: PROBLEM`, exit code 2, no traceback;
warnings are `analysis: warning: ...` lines and the command goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from swarmbench.core import errors

from .errors import AnalysisError, AnalysisWarning

PROG = "analysis"


def die(message: str) -> NoReturn:
    """The one way the CLI fails: one line, exit code 2 (core's die, under this CLI's name)."""
    errors.die(message, prog=PROG)


class _WarningPrinter:
    """Prints each AnalysisWarning as one line (and keeps it for the report page)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._previous = warnings.showwarning

    def __call__(self, message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, AnalysisWarning):
            self.seen.append(str(message))
            print(f"{PROG}: warning: {message}", file=sys.stderr)
        else:
            self._previous(message, category, filename, lineno, file, line)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Summaries, scaling fits and an HTML report from Swarmbench/Locust run folders.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser(
        "report",
        help="write summary.csv, scaling.json, charts (PNG) and report.html into OUT",
        description="Every run folder (a folder with a *_stats.csv) under each PATH goes into one report.",
    )
    rep.add_argument(
        "paths", nargs="+", metavar="PATH", help="run folder(s) or folder(s) holding run folders"
    )
    rep.add_argument("-o", "--out", required=True, metavar="OUT", help="output folder (created if needed)")
    rep.add_argument("--title", default="Swarmbench report", help="page title")
    rep.set_defaults(func=cmd_report)
    summ = sub.add_parser("summary", help="print the per-run, per-endpoint table")
    summ.add_argument("paths", nargs="+", metavar="PATH")
    summ.add_argument("--format", choices=("table", "csv"), default="table")
    summ.add_argument("--aggregated", action="store_true", help="only the Aggregated row of each run")
    summ.set_defaults(func=cmd_summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    printer = _WarningPrinter()
    with warnings.catch_warnings():
        warnings.simplefilter("always", AnalysisWarning)  # every file's warning, not the first only
        warnings.showwarning = printer
        try:
            return args.func(args, printer.seen)
        except AnalysisError as e:
            die(str(e))
        except OSError as e:  # e.g. OUT not writable: name the path, no traceback
            die(f"{e.filename or '?'}: {e.strerror or e}")


def cmd_summary(args: argparse.Namespace, _seen: list[str]) -> int:
    import pandas as pd

    from . import columns as C
    from .load import load_runs
    from .summary import aggregated, summarize

    table = summarize(load_runs(args.paths, history=False))
    if args.aggregated:
        table = aggregated(table)
    if args.format == "csv":
        table.to_csv(sys.stdout, index=False, lineterminator="\n")
        return 0
    shown = table.drop(columns=[C.METHOD, C.ENDPOINT_NAME])
    with pd.option_context("display.width", 250, "display.max_rows", None, "display.max_columns", None):
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}" if abs(v) < 1 else f"{v:.1f}"))
    return 0


def cmd_report(args: argparse.Namespace, seen: list[str]) -> int:
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        die(f"{out}: exists and is not a folder")
    from .load import load_runs
    from .scaling import analyze_scaling, scaling_json
    from .summary import summarize

    runs = load_runs(args.paths)
    summary = summarize(runs)
    groups, notes = analyze_scaling(runs)
    # matplotlib only now: a bad input fails fast, before the slowest import.
    from swarmbench.core.sweepstate import find_sweeps

    from .errors import warn
    from .report import build_report, render_charts

    charts = render_charts(runs, summary, groups)
    page = build_report(
        runs,
        summary,
        groups,
        charts,
        warnings=list(seen),
        inputs=[str(p) for p in args.paths],
        title=args.title,
        sweeps=find_sweeps(args.paths, warn),
    )
    files: dict[str, bytes] = {
        "summary.csv": summary.to_csv(index=False).encode("utf-8"),
        "scaling.json": (json.dumps(scaling_json(groups, notes), indent=2, allow_nan=False) + "\n").encode(),
        **{c.filename: c.png for c in charts},
        "report.html": page.encode("utf-8"),  # last: its presence means the rest is there
    }
    write_atomically(out, files)
    print(
        f"{out / 'report.html'}: {len(runs)} run(s), {len(groups)} scaling group(s), {len(charts)} chart(s)"
    )
    return 0


def write_atomically(out: Path, files: dict[str, bytes]) -> None:
    """Write every file into a temp folder next to OUT, then move them in. A failure before the
    moves leaves OUT exactly as it was (a previous report intact); each move is an atomic rename."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        out.mkdir(exist_ok=True)
        for name in files:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
