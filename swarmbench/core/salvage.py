"""A run whose master was lost (SIGKILL, an OOM kill, a node gone): its record, written by the
runner from what survives, because the master that writes run.json and the run page is gone.

What survives the master: Locust's CSVs as they were last flushed (every few seconds), the last live
status (core/live.py: exact p50/p95/p99 and counts so far, at most LIVE_INTERVAL_S old), and the
sealed windows (folder.LATENCY_WINDOWS_SEALED_CSV: the plugin appends each window's rows as it seals
it, so a kill loses at most the windows still open). From them `salvage` writes

    run.json          status `interrupted`, exit code MASTER_LOST, one `master_lost` event whose
                      detail is the reason ("the master exited with 137 at 18 s"; "OOM-killed"),
                      and `master_lost`: the last live status (marked "exact, so far") and what the
                      sealed windows hold next to Locust's CSV counts (the difference, said)
    locust_latency_windows.csv   the sealed windows, each window's last sealing (a window a late
                      report re-opened is appended again), in the file's own layout
    report.html       a plain page (standard library: the full run page needs the histograms'
                      library, which the host runner does not have) saying what happened, what is
                      true, and what is missing; `python -m swarmbench report DIR` draws the rest

Nothing saved is changed: a folder that has run.json already (the master wrote it before it died)
is left alone. Standard library only (the runner's rule).
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from swarmbench.core import exits, folder, skeleton
from swarmbench.core.answer import read_answer, summary_text
from swarmbench.core.atomic import write_atomic
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.figures import count, number, show_ms
from swarmbench.core.live import LiveStatus, read_live
from swarmbench.core.manifest import (
    INTERRUPTED,
    MASTER_LOST,
    Event,
    LastLive,
    MasterLost,
    RunManifest,
    Totals,
)
from swarmbench.core.runfolder import read_table

SERVICE_KIND = "service"
"""The windows' kind of a request's service time (latency/histogram.py KINDS[0])."""

WINDOW_KEY_COLUMNS = ("window_s", "type", "name", "kind", "count", "failures")
"""The first columns of locust_latency_windows.csv (latency/windows.py WINDOW_COLUMNS; a test keeps
the two equal): what the salvage reads of the sealed windows."""


def reason(code: int, elapsed_s: float | None, oom_killed: bool = False) -> str:
    """`the master exited with 137 at 18 s (OOM-killed)`: CODE as a shell reports it (128 + the
    signal for a process a signal ended), ELAPSED_S since the test started (None: not known)."""
    when = "" if elapsed_s is None else f" at {elapsed_s:.0f} s"
    why = " (OOM-killed: the kernel killed it for memory)" if oom_killed else ""
    if code == exits.MASTER_LOST and not oom_killed:  # the master's own word: it could not write
        why = " (it could not write the run folder: its log says why)"
    return f"the master exited with {code}{when}{why}"


def shell_code(returncode: int) -> int:
    """A subprocess return code as a shell prints it: -9 (killed by SIGKILL) is 137."""
    return 128 - returncode if returncode < 0 else returncode


def lost(run_dir: Path) -> bool:
    """RUN_DIR is the folder of a run whose master never wrote its record: a live status and no
    run.json."""
    return (run_dir / folder.LIVE_JSON).is_file() and not (run_dir / folder.MANIFEST).is_file()


@dataclass
class SealedWindows:
    """What the sealed windows hold: Aggregated service-time counts up to the last sealed window."""

    windows: int = 0  # sealed windows (0 .. last)
    last_window_s: int | None = None
    requests: int = 0
    failures: int = 0
    lines: list[str] = field(default_factory=list)  # each window's last sealing, in window order


def read_sealed(path: Path) -> SealedWindows:
    """PATH's sealed windows (an empty answer when there is none, or no header); a window sealed
    twice (a late report re-opened it) counts once, as last sealed; a cut-off last line is left out."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return SealedWindows()
    lines = text.splitlines(keepends=True)
    if not lines or tuple(next(csv.reader(lines[:1]), ()))[: len(WINDOW_KEY_COLUMNS)] != WINDOW_KEY_COLUMNS:
        return SealedWindows()
    if lines and not lines[-1].endswith("\n"):
        lines.pop()  # the master died while appending it
    blocks: dict[int, list[str]] = {}
    previous = None
    for line in lines[1:]:
        row = next(csv.reader([line]), [])
        if len(row) < len(WINDOW_KEY_COLUMNS) or not row[0].isdigit():
            continue
        window = int(row[0])
        if window != previous:
            blocks[window] = []  # a new sealing of this window replaces an earlier one
            previous = window
        blocks[window].append(line)
    out = SealedWindows(windows=len(blocks), last_window_s=max(blocks) if blocks else None)
    for window in sorted(blocks):
        out.lines += blocks[window]
        for row in csv.reader(blocks[window]):
            if row[2] == AGGREGATED and not row[1] and row[3] == SERVICE_KIND:
                out.requests += int(row[4]) if row[4].isdigit() else 0
                out.failures += int(row[5]) if row[5].isdigit() else 0
    out.lines.insert(0, lines[0])
    return out


def salvage(
    run_dir: Path, code: int, ended_at: float | None = None, oom_killed: bool = False
) -> RunManifest | None:
    """Write RUN_DIR's record from what survived a master that exited with CODE (shell_code's);
    None, nothing written, when it has run.json already. ENDED_AT: when the master was seen ended
    (epoch seconds; None: now): the test's clock then is the live status's, moved on by the time
    between its writing and ENDED_AT."""
    run_dir = Path(run_dir)
    if (run_dir / folder.MANIFEST).is_file():
        return None
    live = read_live(run_dir / folder.LIVE_JSON)
    elapsed_s = None
    if live is not None:
        end = time.time() if ended_at is None else ended_at
        elapsed_s = live.elapsed_s + (max(0.0, end - live.written_at) if live.written_at else 0.0)
    why = reason(code, elapsed_s, oom_killed)
    sealed = read_sealed(run_dir / folder.LATENCY_WINDOWS_SEALED_CSV)
    answer = read_answer(run_dir, RunManifest())  # Locust's CSVs as they are
    total = answer.aggregated
    csv_requests = total.requests if total else None
    missing = keep_windows(run_dir, sealed)
    history = None
    if live is not None and live.written_at and sealed.last_window_s is not None:
        start = live.written_at - live.elapsed_s  # the test's start, the windows' zero
        history = history_count(run_dir / folder.HISTORY_CSV, start + sealed.last_window_s + 1)
    now = datetime.now(UTC)
    m = RunManifest(
        run_id=(live.run_id if live and live.run_id else run_dir.name),
        status=INTERRUPTED,
        users=live.users if live else None,
        run_time=live.run_time_s if live else None,
        workers_expected=live.workers_expected if live else None,
        workers_connected=live.workers if live else None,
        exit_code=exits.MASTER_LOST,
        duration_s=None if elapsed_s is None else round(elapsed_s, 1),
        totals=Totals(requests=csv_requests, failures=total.failures if total else None) if total else None,
        events=[Event(at=folder.utc_iso(now), t_s=elapsed_s, kind=MASTER_LOST, detail=why)],
        master_lost=MasterLost(
            reason=why,
            master_exit=code,
            oom_killed=oom_killed,
            live=LastLive(**{f.name: getattr(live, f.name) for f in fields(LastLive) if f.name != "extra"})
            if live
            else None,
            live_note="the last live status the master wrote: exact figures so far, not the run's end",
            sealed_windows=sealed.windows,
            sealed_requests=sealed.requests if sealed.windows else None,
            sealed_failures=sealed.failures if sealed.windows else None,
            csv_requests=csv_requests,
            history_requests=history,
            difference=difference(sealed, csv_requests, history),
            missing=missing,
        ),
    )
    folder.write_json_atomic(run_dir / folder.MANIFEST, m.to_json())
    write_atomic(run_dir / folder.REPORT_HTML, page(run_dir, m, live))
    return m


def history_count(path: Path, until: float) -> int | None:
    """Locust's Aggregated Total Request Count in its history CSV at the last row stamped no later
    than UNTIL (epoch seconds); None when there is none."""
    found = None
    for row in read_table(path, notes=[]).rows:
        stamp = number(row.get(folder.TIMESTAMP))
        if row.get(folder.NAME) == AGGREGATED and stamp is not None and stamp <= until:
            found = count(row.get(folder.TOTAL_REQUEST_COUNT))
    return found


def keep_windows(run_dir: Path, sealed: SealedWindows) -> list[str]:
    """The sealed windows written as RUN_DIR's locust_latency_windows.csv; what the folder lacks
    that a complete run has, and why, one line each."""
    missing = [
        f"{folder.LATENCY_HDR_CSV}, {folder.LATENCY_HDR_JSON}: the whole run's exact latency "
        "(the master held it in memory)",
        f"{folder.JUNIT_XML}: the thresholds were not judged",
    ]
    if not (run_dir / folder.STATS_CSV).is_file():
        missing.append(f"{folder.STATS_CSV}: Locust had not written it yet")
    if sealed.windows:
        write_atomic(run_dir / folder.LATENCY_WINDOWS_CSV, "".join(sealed.lines))
    else:
        missing.append(f"{folder.LATENCY_WINDOWS_CSV}: no window was sealed before the master was lost")
    return missing


def difference(sealed: SealedWindows, csv_requests: int | None, history: int | None = None) -> str:
    """What the sealed windows' exact count is next to Locust's CSV counts, in words: its total (the
    windows still open are not in the sealed count) and its history's by the last sealed window's
    end (requests count in the window they ended in, Locust's when their report reached the master)."""
    if not sealed.windows:
        return "no window was sealed: no exact count survives"
    end = (sealed.last_window_s or 0) + 1
    text = f"{sealed.requests} requests in the {sealed.windows} sealed windows (0 to {end} s)"
    if history is not None:
        text += f"; {folder.HISTORY_CSV} by then: {history} ({history - sealed.requests:+d})"
    if csv_requests is not None:
        text += (
            f"; {folder.STATS_CSV} in all: {csv_requests} ({csv_requests - sealed.requests:+d}: the "
            "windows still open when the master was lost)"
        )
    return text


def live_lines(live: LiveStatus | None) -> list[str]:
    """The last live status as lines for the page and the terminal: marked as figures so far."""
    if live is None:
        return ["no live status survived"]
    return [
        f"at {live.elapsed_s:.0f} s: {count(live.requests)} requests, {count(live.failures)} failures, "
        f"p50 {show_ms(live.p50_ms)} ms, p95 {show_ms(live.p95_ms)} ms, p99 {show_ms(live.p99_ms)} ms "
        f"({live.latency}, so far: the last status the master wrote, not the run's end)"
    ]


def page(run_dir: Path, m: RunManifest, live: LiveStatus | None) -> str:
    """The plain run page of a run whose master was lost."""
    lost_ = m.master_lost or MasterLost()
    answer = read_answer(run_dir, m)
    items = "".join(f"<li>{escape(x)}</li>" for x in lost_.missing or [])
    return skeleton.document(
        f"Run {m.run_id or ''}: master lost",
        f"<h1>Run {escape(m.run_id or '')}</h1>"
        f'<p class="status"><strong>Interrupted: {escape(lost_.reason or "")}.</strong> '
        "The master, which merges the workers' figures and writes the run's record, was lost; "
        "this record was written by the runner from what survived.</p>"
        f"<h2>What is true</h2><ul><li>Last live status: {escape(live_lines(live)[0])}</li>"
        f"<li>Sealed windows: {escape(lost_.difference or '')}</li>"
        f"<li>Locust's CSVs as last flushed: {escape(folder.STATS_CSV)} and its history</li></ul>"
        f"<h2>What is missing</h2><ul>{items}</ul>"
        f"<h2>Summary</h2><pre>{escape(summary_text(answer))}</pre>",
    )
