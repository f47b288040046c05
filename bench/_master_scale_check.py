"""bench/bench_master_scale.py's check: the Swarmbench run folder against what the simulator sent.

The truth is rebuilt from the templates and how many times each was sent into each window, sample
by sample with hdrh's own record_value (not the plugin's batching), and compared with
locust_stats.csv (counts and failures per name), locust_latency_hdr.json (each name's histogram,
bucket for bucket), locust_latency_hdr.csv (percentiles, computed again by hdrh's own code),
locust_latency_windows.csv (every window's count and histogram) and run.json's latency.exact.
Also: py-spy's raw stacks summed into top functions (--profile).
"""

from __future__ import annotations

import csv
import ctypes
import json
import re
from collections import Counter
from pathlib import Path

from _master_scale_model import Template, request_names
from _master_scale_sim import Group
from hdrh.histogram import HdrHistogram

from swarmbench.core import folder
from swarmbench.core.manifest import RunManifest
from swarmbench.latency.histogram import decode, new_histogram
from swarmbench.latency.windows import WINDOW_S

# --- the truth, checked ------------------------------------------------------------------------------


def truth_histograms(
    group: Group, templates: list[Template], names: int
) -> dict[tuple[int, int], HdrHistogram]:
    """(window, name index) -> the histogram of every sample sent in it, recorded value by value
    with hdrh's own record_value (not the plugin's batching)."""
    counts: dict[tuple[int, int], Counter[int]] = {}
    for (r, j, w), m in group.truth.items():
        for (k, jj), values in templates[r].truth.items():
            if jj != j:
                continue
            into = counts.setdefault((w, k), Counter())
            for us, n in values.items():
                into[us] += n * m
    out = {}
    for key, values in counts.items():
        hist = new_histogram()
        for us, n in values.items():
            hist.record_value(us, n)
        out[key] = hist
    return out


def truth_counts(group: Group, templates: list[Template], names: int) -> tuple[list[int], list[int]]:
    """(requests, failures) per name over every report sent."""
    requests, failures = [0] * names, [0] * names
    for (r, j, _w), m in group.truth.items():
        if j:
            continue  # each report counted once (offset 0)
        for k in range(names):
            requests[k] += templates[r].requests[k] * m
            failures[k] += templates[r].failures[k] * m
    return requests, failures


def same(a: HdrHistogram, b: HdrHistogram) -> bool:
    size = ctypes.sizeof(a.counts)
    return a.total_count == b.total_count and ctypes.string_at(a.counts, size) == ctypes.string_at(
        b.counts, size
    )


def stats_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    with open(path, newline="") as f:
        return {
            (row["Type"], row["Name"]): (int(row["Request Count"]), int(row["Failure Count"]))
            for row in csv.DictReader(f)
        }


def check_counts(path: Path, names: int, requests: list[int], failures: list[int]) -> list[str]:
    if not path.is_file():
        return [f"{path.name} missing"]
    rows, problems = stats_counts(path), []
    for k, (method, name) in enumerate(request_names(names)):
        want = (requests[k], failures[k])
        if requests[k] and rows.get((method, name)) != want:
            problems.append(f"{method} {name}: CSV {rows.get((method, name))} vs sent {want}")
    total = rows.get(("", "Aggregated"))
    if total != (sum(requests), sum(failures)):
        problems.append(f"Aggregated: CSV {total} vs sent {(sum(requests), sum(failures))}")
    return problems


def check_swarmbench(run_dir: Path, group: Group, templates: list[Template], names: int) -> list[str]:
    """Every way the Swarmbench folder could differ from what was sent; [] when it is exact."""
    requests, failures = truth_counts(group, templates, names)
    problems = check_counts(run_dir / folder.STATS_CSV, names, requests, failures)
    windows = truth_histograms(group, templates, names)
    pairs = request_names(names)
    whole: dict[int, HdrHistogram] = {}
    for (_w, k), hist in windows.items():
        whole.setdefault(k, new_histogram()).add(hist)
    try:
        book = json.loads((run_dir / folder.LATENCY_HDR_JSON).read_text())
    except (OSError, ValueError) as e:
        return [*problems, f"{folder.LATENCY_HDR_JSON}: {e}"]
    got = {
        (h["type"], h["name"]): decode(h["hdr"], "json", "h")
        for h in book["histograms"]
        if h["kind"] == "service"
    }
    for k, hist in whole.items():
        if not same(got.get(pairs[k], new_histogram()), hist):
            problems.append(f"{pairs[k]}: the run's histogram differs from the truth")
    if set(got) != {pairs[k] for k in whole}:
        problems.append("the run's histograms are not one per name sent")
    with open(run_dir / folder.LATENCY_HDR_CSV, newline="") as f:
        for row in csv.DictReader(f):
            k = next((i for i, p in enumerate(pairs) if p == (row["type"], row["name"])), None)
            if k is None or row["kind"] != "service":
                continue
            hist = whole[k]
            for column, value in row.items():
                if column.startswith("p") and column.endswith("_ms"):
                    want = round(hist.get_value_at_percentile(float(column[1:-3])) / 1000, 3)
                elif column == "max_ms":
                    want = round(hist.get_max_value() / 1000, 3)
                else:
                    continue
                if float(value) != want:
                    problems.append(f"{pairs[k]} {column}: {value} vs truth {want}")
    seen = set()
    with open(run_dir / folder.LATENCY_WINDOWS_CSV, newline="") as f:
        for row in csv.DictReader(f):
            if not row["hdr"]:
                continue  # an Aggregated row: the sum of the others
            k = next(i for i, p in enumerate(pairs) if p == (row["type"], row["name"]))
            key = (int(row["window_s"]) // WINDOW_S, k)
            seen.add(key)
            want = windows.get(key)
            if (
                want is None
                or int(row["count"]) != want.total_count
                or not same(decode(row["hdr"], "w", "r"), want)
            ):
                problems.append(f"window {key[0]} {pairs[k]}: differs from the truth")
    if seen != set(windows):
        problems.append(f"{len(set(windows) - seen)} windows sent are not in the file")
    manifest = RunManifest.read(run_dir / folder.MANIFEST)
    if not (manifest.latency and manifest.latency.exact):
        problems.append("run.json: latency.exact is not true")
    return problems


def top_functions(path: Path, n: int = 12) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """py-spy's raw (collapsed) stacks: the top N frames by own time and by total time, as shares
    of all samples."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [re.sub(r" \(.*?/site-packages/|/work/\w+/", " (", f) for f in stack.split(";")]
        samples += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            total[frame] += int(count)
    share = 100 / max(1, samples)
    return (
        [(f, c * share) for f, c in own.most_common(n)],
        [(f, c * share) for f, c in total.most_common(n)],
    )
