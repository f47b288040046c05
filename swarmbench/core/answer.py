"""A run's answer, read back from its folder: per request name its requests, failures, throughput and
exact percentiles, its status, the verdict's sentence and the warnings a person must see first.

One reading for every place a person looks: the run page opens with it (report.html in the run
folder), the terminal ends with it (`swarmbench headless`), the web UI's run ends with it. Standard
library only, so the runner (which prints it) needs nothing installed; the numbers are exactly the
folder's files: locust_latency_hdr.csv's service-time percentiles where the run recorded them,
else Locust's own (rounded) from locust_stats.csv; requests, failures and req/s from
locust_stats.csv; the rest from run.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from swarmbench.core import folder
from swarmbench.core.checks import AGGREGATED, EXACT, ROUNDED, Check, Outcome
from swarmbench.core.exits import InputError
from swarmbench.core.figures import number, show_count, show_ms, show_rate
from swarmbench.core.manifest import (
    ABORTED,
    COMPLETE,
    DEGRADED,
    FAILED,
    INFLATED,
    INTERRUPTED,
    TARGET_UNREACHABLE,
    WORKER_MISSING,
    WORKER_QUIT,
    RunManifest,
)
from swarmbench.core.runfolder import INTENDED, SERVICE, read_table

PERCENTILE_COLUMNS = {"p50_ms": "p50_ms", "p95_ms": "p95_ms", "p99_ms": "p99_ms", "max_ms": "max_ms"}
"""NameAnswer's field -> locust_latency_hdr.csv's column (folder.LATENCY_HDR_COLUMNS)."""

LOCUST_PERCENTILES = {
    "p50_ms": folder.P50,
    "p95_ms": folder.P95,
    "p99_ms": folder.P99,
    "max_ms": folder.MAX_RT,
}
"""NameAnswer's field -> locust_stats.csv's column, for a run without HDR files (rounded)."""

STATUS_WORDS = {
    COMPLETE: "complete",
    INTERRUPTED: "interrupted: stopped before its end (a signal, Ctrl-C or the stack stopped)",
    DEGRADED: "degraded: a load generator went missing or quit early, or the target stopped answering",
    FAILED: "failed: nothing or almost nothing was served",
    ABORTED: "aborted: a threshold checked live (--abort-on-fail) was broken; stopped early",
}
"""The status line of each run.json status (core/manifest.py STATUSES)."""


@dataclass(frozen=True)
class NameAnswer:
    """One request name (or Aggregated) of a run."""

    type: str
    name: str
    requests: int
    failures: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


@dataclass
class Answer:
    """What a person asks of a run first. `latency`: EXACT (the run's HDR histograms) or ROUNDED."""

    folder: Path
    run_id: str
    status: str | None
    verdict: str | None
    reason: str | None
    latency: str
    names: list[NameAnswer] = field(default_factory=list)
    checks: list[Outcome] = field(default_factory=list)  # the thresholds as run.json recorded them
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # files the folder lacks, said on the page
    # open-model runs: per name, the time since the intended start (locust_latency_hdr.csv's
    # `intended` rows), with the same requests, failures and req/s as `names`
    intended: list[NameAnswer] = field(default_factory=list)
    manifest: RunManifest = field(default_factory=RunManifest)  # run.json as read (empty without one)

    @property
    def aggregated(self) -> NameAnswer | None:
        return next((n for n in self.names if n.name == AGGREGATED), None)

    def status_line(self) -> str:
        if self.status:
            return STATUS_WORDS.get(self.status, self.status)
        if not (self.folder / folder.MANIFEST).is_file() and self.manifest.schema_version is None:
            if (self.folder / folder.LIVE_JSON).is_file():  # the master's status, never removed
                return "unknown: no run.json, and a live status left behind (the master died mid-run)"
            return "unknown: no run.json (the run did not end cleanly, or is not a Swarmbench run)"
        return "unknown (a harness older than run status)"


def read_answer(run_dir: Path, manifest: RunManifest | None = None) -> Answer:
    """RUN_DIR's answer; a file that is missing or unreadable is named in `missing`, never raised:
    the page and the terminal say what they could not read and show the rest. MANIFEST: the run's
    record when it is not on disk yet (the plugin writes the run page just before run.json)."""
    run_dir = Path(run_dir)
    missing: list[str] = []
    if manifest is None:
        manifest = _manifest(run_dir, missing)
    stats = csv_rows(run_dir / folder.STATS_CSV, missing)
    hdr = csv_rows(run_dir / folder.LATENCY_HDR_CSV, missing, required=False)
    exact = {(r.get("type", ""), r.get("name", "")): r for r in hdr if r.get("kind", SERVICE) == SERVICE}
    names = sorted((_name(row, exact) for row in stats), key=_order)
    late = {(r.get("type", ""), r.get("name", "")): r for r in hdr if r.get("kind") == INTENDED}
    intended = sorted((_name(row, late) for row in stats if _key(row) in late), key=_order)
    bottleneck = manifest.bottleneck
    return Answer(
        folder=run_dir,
        run_id=manifest.run_id or run_dir.name,
        status=manifest.status,
        verdict=bottleneck.verdict if bottleneck else None,
        reason=bottleneck.reason if bottleneck else None,
        latency=EXACT if exact else ROUNDED,
        names=names,
        checks=outcomes(manifest),
        warnings=warnings(manifest, names),
        missing=missing,
        intended=intended,
        manifest=manifest,
    )


def outcomes(manifest: RunManifest) -> list[Outcome]:
    """run.json's thresholds back as core's outcomes, so they read as the run printed them (a
    threshold with nothing measured says only that: run.json keeps no reason)."""
    out = []
    for c in manifest.checks or []:
        if None in (c.expr, c.name, c.metric, c.op, c.limit, c.passed):
            continue  # not one of ours (run.json's reader checked the types of what is there)
        check = Check(expr=c.expr, name=c.name, metric=c.metric, op=c.op, limit=c.limit)  # type: ignore[arg-type]
        source = "" if c.exact is None else (EXACT if c.exact else ROUNDED)
        reason = f"nothing was measured for {c.name!r}"
        out.append(Outcome(check, c.measured, bool(c.passed), reason=reason, source=source))
    return out


def warnings(manifest: RunManifest, names: list[NameAnswer]) -> list[str]:
    """In plain words, what makes this run's numbers less than a clean measurement: its generators
    inflated its latency, a load generator was lost, the run was partial, requests failed."""
    out = []
    lag = manifest.generator_lag
    if lag is not None and lag.inflated:
        out.append(
            f"{INFLATED}: worker {lag.worst_worker}'s event loop woke {lag.worst_p99_ms:g} ms late (p99), "
            f"over the bound of {lag.bound_ms:g} ms: its latency figures measure the generator as much "
            "as the server (more workers, or fewer users per worker)"
        )
    events = manifest.events or []
    gone = [e for e in events if e.kind in (WORKER_MISSING, WORKER_QUIT)]
    if gone:
        out.append(
            "load generators lost: " + "; ".join(f"{e.detail or e.kind} at {e.t_s or 0:.0f} s" for e in gone)
        )
    if any(e.kind == TARGET_UNREACHABLE for e in events):
        out.append("the target stopped answering for part of the run (see the events)")
    lost = manifest.master_lost
    if lost is not None:
        out.append(
            f"the master was lost ({lost.reason}): this record was written by the runner from what "
            f"survived; sealed windows: {lost.difference}"
        )
        status = lost.live
        if status is not None:
            out.append(
                f"the last live status, at {status.elapsed_s or 0:.0f} s ({status.latency}, so far, not the "
                f"run's end): {status.requests} requests, {status.failures} failures, "
                f"p50 {show_ms(status.p50_ms)} ms, p95 {show_ms(status.p95_ms)} ms, "
                f"p99 {show_ms(status.p99_ms)} ms"
            )
        out += [f"missing: {m}" for m in lost.missing or []]
    if manifest.status in (INTERRUPTED, DEGRADED, FAILED, ABORTED):
        out.append(f"partial run: {STATUS_WORDS[manifest.status]}")
    if manifest.aborted is not None and manifest.aborted.line:
        out.append(f"stopped by a live threshold: {manifest.aborted.line}")
    total = next((n for n in names if n.name == AGGREGATED), None)
    if total is not None and total.failures:
        share = total.failures / total.requests if total.requests else 1.0
        out.append(
            f"{total.failures} of {total.requests} requests failed ({share:.2%}): see {folder.FAILURES_CSV}"
        )
    return out


def summary_text(answer: Answer, page: Path | None = None, exit_code: int | None = None) -> str:
    """The terminal's last words on a run: its status (and EXIT_CODE), one line per name with the
    numbers exactly as the folder's files hold them, the verdict, the thresholds (the lines the run
    printed), warnings, what could not be read, and where the run page is."""
    head = ("name", "requests", "failures", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms")
    rows = [head]
    for n in answer.names:
        rows.append(
            (n.name, show_count(n.requests), show_count(n.failures), show_rate(n.rps),
             show_ms(n.p50_ms), show_ms(n.p95_ms), show_ms(n.p99_ms), show_ms(n.max_ms))
        )  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    table = [
        "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    code = "" if exit_code is None else f" (exit code {exit_code})"
    lines = [f"Run {answer.run_id}: {answer.status_line()}{code}"]
    if answer.latency == EXACT:
        lines.append(f"Latency: exact, the run's HDR histograms ({folder.LATENCY_HDR_CSV})")
    else:
        lines.append(f"Latency: rounded, Locust's own percentiles ({folder.STATS_CSV}: 2 significant digits)")
    lines += table if answer.names else ["No requests recorded."]
    if answer.verdict:
        lines.append(f"Verdict: {answer.verdict}" + (f": {answer.reason}" if answer.reason else ""))
    lines += [f"swarmbench: check {o.line()}" for o in answer.checks]
    broken = sum(not o.passed for o in answer.checks)
    if broken:
        lines.append(f"swarmbench: {broken} of {len(answer.checks)} thresholds broken{code}")
    lines += [f"Warning: {w}" for w in answer.warnings]
    lines += [f"Missing: {m}" for m in answer.missing]
    if page is not None:
        written = (answer.folder / page.name).is_file()  # the run page is in the run folder
        lines.append(f"Run page: {page}" if written else f"Run page: not written ({page.name})")
    return "\n".join(lines)


def _manifest(run_dir: Path, missing: list[str]) -> RunManifest:
    """RUN_DIR's run.json, or an empty record and the reason in MISSING."""
    if not (run_dir / folder.MANIFEST).is_file():
        missing.append(f"{folder.MANIFEST}: not written (the run did not end cleanly, or predates it)")
        return RunManifest()
    try:
        return RunManifest.read(run_dir / folder.MANIFEST)
    except InputError as e:
        missing.append(str(e))
        return RunManifest()


def csv_rows(path: Path, notes: list[str] | None, required: bool = True) -> list[dict[str, str]]:
    """PATH's rows (core/runfolder.read_table's). What is wrong with it goes to NOTES (when given), one
    line naming the file: missing (when REQUIRED), unreadable, or cut off (its last line incomplete:
    that row is left out, as is any row with fewer or more fields than the header); never raised."""
    return list(read_table(path, notes=notes if notes is not None else [], required=required).rows)


def _key(row: dict[str, str]) -> tuple[str, str]:
    return (row.get(folder.TYPE) or "", row.get(folder.NAME) or "")


def _order(n: NameAnswer) -> tuple[bool, str, str]:
    return (n.name == AGGREGATED, n.name, n.type)


def _name(row: dict[str, str], exact: dict[tuple[str, str], dict[str, str]]) -> NameAnswer:
    key = _key(row)
    hdr = exact.get(key)
    source = (
        {f: (hdr or {}).get(col) for f, col in PERCENTILE_COLUMNS.items()}
        if hdr
        else {f: row.get(col) for f, col in LOCUST_PERCENTILES.items()}
    )
    return NameAnswer(
        type=key[0],
        name=key[1],
        requests=_int(row.get(folder.REQUEST_COUNT)),
        failures=_int(row.get(folder.FAILURE_COUNT)),
        rps=_float(row.get(folder.RPS)),
        **{f: _float(v) for f, v in source.items()},
    )


def _float(text: str | None) -> float:
    return number(text, math.nan)


def _int(text: str | None) -> int:
    """A count; 0 where the cell is blank or not a number (a cut-off file)."""
    value = _float(text)
    return int(value) if math.isfinite(value) else 0
