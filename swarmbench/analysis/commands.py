"""The analysis commands, `swarmbench report|summary|checks` (and `python -m analysis ...`): the
only analysis code that writes files. Their options are parsed in swarmbench/cli.py.

Errors are one line on stderr, `PROG: error: WHERE: PROBLEM` (PROG: `analysis` or `swarmbench`),
exit code 2, no traceback; warnings are `PROG: warning: ...` lines and the command goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from swarmbench.analysis.locust_csv import AnalysisError, AnalysisWarning
from swarmbench.core.exits import UsageError


class _WarningPrinter:
    """Prints each AnalysisWarning as one line (and keeps it for the report page)."""

    def __init__(self, prog: str) -> None:
        self.prog = prog
        self.seen: list[str] = []
        self._previous = warnings.showwarning

    def __call__(self, message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, AnalysisWarning):
            self.seen.append(str(message))
            print(f"{self.prog}: warning: {message}", file=sys.stderr)
        else:
            self._previous(message, category, filename, lineno, file, line)


def run(args: argparse.Namespace) -> int:
    """Run ARGS.command (parsed by swarmbench/cli.py; ARGS.root names the program in every line)."""
    printer = _WarningPrinter(args.root)
    command = {"report": cmd_report, "summary": cmd_summary, "checks": cmd_checks}[args.command]
    with warnings.catch_warnings():
        warnings.simplefilter("always", AnalysisWarning)  # every file's warning, not the first only
        warnings.showwarning = printer
        try:
            return command(args, printer.seen)
        except AnalysisError as e:
            raise UsageError(str(e)) from None
        except OSError as e:  # e.g. OUT not writable: name the path, no traceback
            raise UsageError(f"{e.filename or '?'}: {e.strerror or e}") from None


def cmd_summary(args: argparse.Namespace, _seen: list[str]) -> int:
    import pandas as pd

    from swarmbench.analysis import columns as C
    from swarmbench.analysis.runs import load_runs
    from swarmbench.analysis.summary import aggregated, summarize

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


def cmd_checks(args: argparse.Namespace, _seen: list[str]) -> int:
    from swarmbench.analysis.summary import evaluate_folder
    from swarmbench.core.checks import CheckSyntaxError, parse_checks
    from swarmbench.core.exits import THRESHOLDS_BROKEN

    try:
        checks = parse_checks(args.exprs)
    except CheckSyntaxError as e:
        raise UsageError(str(e)) from None
    outcomes = evaluate_folder(Path(args.run), checks)
    for outcome in outcomes:
        print(f"{args.root}: check {outcome.line()}")
    return 0 if all(o.passed for o in outcomes) else THRESHOLDS_BROKEN


def cmd_report(args: argparse.Namespace, seen: list[str]) -> int:
    out = Path(args.out)
    check_out(out)
    from swarmbench.analysis.runs import load_runs
    from swarmbench.analysis.scaling import analyze_scaling, one_configuration, scaling_json
    from swarmbench.analysis.summary import summarize
    from swarmbench.analysis.timeseries import timeseries_table

    runs = load_runs(args.paths)
    summary = summarize(runs)
    data = {
        "summary.csv": summary.to_csv(index=False).encode("utf-8"),
        "timeseries.csv": timeseries_table(runs).to_csv(index=False).encode("utf-8"),
    }
    from swarmbench.analysis.locust_csv import warn
    from swarmbench.core.sweepstate import find_sweeps

    sweeps = find_sweeps(args.paths, warn)
    # A sweep with points missing gets the sweep's report even when one configuration ran: the
    # missing points are the news. Otherwise one configuration gets its run pages.
    if one_configuration(runs) and not any(sw.missing for sw in sweeps):
        files = {**data, **one_configuration_report(runs, out, seen, args)}
        return _write_report(out, files, runs, 0, sum(name.endswith(".png") for name in files))
    groups, notes = analyze_scaling(runs, include_partial=args.include_partial)
    # matplotlib only now: a bad input fails fast, before the slowest import.
    from swarmbench.analysis.comparisons import comparisons_json, sweep_comparisons
    from swarmbench.analysis.report import build_report, render_charts, summary_html

    charts = render_charts(runs, summary, groups, knee_p99_ms=args.knee_p99_ms)
    found = sweep_comparisons(groups)
    page = build_report(
        runs,
        summary,
        groups,
        charts,
        warnings=list(seen),
        inputs=[str(p) for p in args.paths],
        title=args.title,
        sweeps=sweeps,
        answers=summary_html(found, groups, runs, sweeps, args.include_partial),
        pages=run_pages(runs, out),
    )
    files: dict[str, bytes] = {
        **data,
        "scaling.json": (json.dumps(scaling_json(groups, notes), indent=2, allow_nan=False) + "\n").encode(),
        "comparisons.json": (json.dumps(comparisons_json(found), indent=2) + "\n").encode(),
        **{c.filename: c.png for c in charts},
        "report.html": page.encode("utf-8"),  # last: its presence means the rest is there
    }
    return _write_report(out, files, runs, len(groups), len(charts))


def _write_report(out: Path, files: dict[str, bytes], runs: list, groups: int, charts: int) -> int:
    write_atomically(out, files)
    print(f"{out / 'report.html'}: {len(runs)} run(s), {groups} scaling group(s), {charts} chart(s)")
    return 0


def one_configuration_report(
    runs: list, out: Path, seen: list[str], args: argparse.Namespace
) -> dict[str, bytes]:
    """One run, or repeats of one configuration: no sweep to fit or compare, so no sweep sections
    and no sweep warnings; report.html holds each run's page (swarmbench/page/run.py), its links
    pointing at the run's folder from OUT. The same files as a sweep's report, less the PNG charts
    (the page's are inline SVG: no matplotlib), but for a step load or an open-model run: its knee
    and offered-load charts follow the page, as the sweep report draws them."""
    from html import escape

    from swarmbench.analysis.comparisons import comparisons_json
    from swarmbench.analysis.scaling import scaling_json
    from swarmbench.page import run as run_page

    several = len(runs) > 1
    parts = []
    if several or seen:
        what = f"{len(runs)} repeats of one configuration" if several else "one run"
        inputs = escape(", ".join(map(str, args.paths)))
        parts.append(f'<h1>{escape(args.title)}</h1><p class="muted">{what} from {inputs}</p>')
    if seen:
        items = "".join(f"<li>{escape(w)}</li>" for w in seen)
        parts.append(f'<div class="warn"><strong>Reading the folders</strong><ul>{items}</ul></div>')
    for run in runs:
        facts = run_page.read(run.folder)
        parts.append(run_page.body(facts, href=_href(run.folder, out), heading=2 if several or seen else 1))
    charts = []
    if any(r.meta.load_shape or r.meta.open_model for r in runs):  # a knee to find: matplotlib's charts
        from swarmbench.analysis.report import charts_html, step_charts

        charts = step_charts(runs, args.knee_p99_ms)
        parts.append(charts_html(charts, "The knee and the offered load") if charts else "")
    title = args.title if several else f"Run {runs[0].run_id}"
    note = "one configuration: nothing to fit (a scaling fit needs two worker counts of one configuration)"
    return {
        "scaling.json": (json.dumps(scaling_json([], [note]), indent=2) + "\n").encode(),
        "comparisons.json": (json.dumps(comparisons_json([]), indent=2) + "\n").encode(),
        **{c.filename: c.png for c in charts},
        "report.html": run_page.document(title, "\n".join(parts)).encode("utf-8"),
    }


def _href(run_folder: Path, out: Path) -> str:
    """RUN_FOLDER as a link from a page in OUT (relative, so the two can move together)."""
    return Path(os.path.relpath(run_folder.resolve(), out.resolve())).as_posix() + "/"


def run_pages(runs: list, out: Path) -> dict[str, str]:
    """Run id -> the link from OUT to its run page, for each run whose report.html is one (older
    folders hold Locust's own report under that name)."""
    from swarmbench.core.folder import REPORT_HTML
    from swarmbench.page.run import is_run_page

    return {r.run_id: _href(r.folder, out) + REPORT_HTML for r in runs if is_run_page(r.folder / REPORT_HTML)}


REPORT_SIGNATURE = frozenset({"scaling.json", "report.html"})
"""Files only a report folder holds together. OUT may be replaced only when it is empty or a
previous report (these files, no subfolders), so `-o results` can never replace the runs it reports
on, nor `-o ~/Documents` anything else. (A signature, not a list of every file: the report's set of
files grows with the analysis.)"""
IGNORABLE = frozenset({".DS_Store"})
"""Files a desktop puts in any folder it shows; not the user's work."""


def check_out(out: Path) -> None:
    """Refuse an OUT whose replacement would lose something: a file, a run folder (its report.html
    is its run page), or a folder holding anything but a previous report (e.g. `-o results`).
    A new folder INSIDE a run folder is allowed: the swap touches OUT alone, and `make knee` keeps
    its report in results/<run-id>/analysis/ on purpose."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    if _is_run_folder(out):
        raise UsageError(f"{out}: is a run folder; its report.html is its run page: choose another OUT")
    if out.is_dir():
        entries = sorted(p for p in out.iterdir() if p.name not in IGNORABLE)
        if entries and not _is_report(entries):
            names = [p.name for p in entries]
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            raise UsageError(
                f"{out}: is not empty and not a previous report ({shown}); choose a new or empty folder"
            )


def _is_run_folder(folder: Path) -> bool:
    from swarmbench.core.folder import MANIFEST

    return folder.is_dir() and ((folder / MANIFEST).is_file() or any(folder.glob("*_stats.csv")))


def _is_report(entries: list[Path]) -> bool:
    names = {p.name for p in entries}
    return names >= REPORT_SIGNATURE and all(p.is_file() and not p.is_symlink() for p in entries)


def write_atomically(out: Path, files: dict[str, bytes]) -> None:
    """Replace OUT by a folder holding exactly FILES, all or nothing.

    The new folder is built beside OUT (hidden: the analysis skips dot-folders), then swapped in:
    OUT renamed aside, the new folder renamed to OUT, the old one deleted. A failure at any step
    leaves OUT as it was (a previous report intact) and raises an OSError naming OUT, not a temp
    path. (Two renames, not one: POSIX has no portable atomic exchange of two folders; between them
    OUT is briefly absent, never half old, half new.)"""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        new = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
    except OSError as e:
        raise _about(out, e, "cannot create the report folder") from None
    try:
        for name, data in files.items():
            (new / name).write_bytes(data)
        new.chmod(_folder_mode(out))
        _swap(new, out)
    except OSError as e:
        raise _about(out, e, "cannot write the report") from None
    finally:
        shutil.rmtree(new, ignore_errors=True)


def _swap(new: Path, out: Path) -> None:
    if not out.exists():
        os.rename(new, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    old.rmdir()  # a free name for OUT to move to
    os.rename(out, old)
    try:
        os.rename(new, out)
    except OSError:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _folder_mode(out: Path) -> int:
    """OUT's own mode when it exists, else what mkdir would give (mkdtemp makes 0700)."""
    if out.is_dir():
        return out.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def _about(out: Path, e: OSError, what: str) -> OSError:
    """E re-aimed at OUT: the person chose OUT, never saw the temp folder's name."""
    return OSError(e.errno, f"{what} ({e.strerror or e})", str(out))
