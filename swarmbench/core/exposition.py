"""Prometheus's text exposition format (version 0.0.4), written with the standard library: metric
families with their HELP and TYPE lines, label values escaped, numbers as Prometheus parses them.

Why not prometheus-client: the master computes every figure when it is scraped (the exact merged
percentiles so far, the last sealed window), which that library only offers through a custom
collector that writes the same families by hand; the Locust image would carry one more package
for ~60 lines of formatting. The format is small and stable:
https://prometheus.io/docs/instrumenting/exposition_formats/ (tests/test_metrics.py parses our
output with the real Prometheus server)."""

from __future__ import annotations

import math
from collections.abc import Iterable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""What a scraper is told it gets (Prometheus picks its parser by it)."""

Labels = tuple[tuple[str, str], ...]

BUCKETS_PER_DECADE = 10
"""Classic histogram buckets: 10 a decade (each ~26 % wider than the last), so histogram_quantile()
reads within ~13 % of the exact figure; coarser loses the tail, finer multiplies the series."""

BUCKET_BOUNDS_S = tuple(10 ** (k / BUCKETS_PER_DECADE) / 1000 for k in range(-10, 51))
"""The buckets' upper bounds: 0.1 ms .. 100 s (61 bounds, then +Inf)."""

BUCKET_LABELS = tuple(f"{bound:.6g}" for bound in BUCKET_BOUNDS_S)
"""Their `le` label values (6 significant digits: 0.000125893 for 10^-3.9 ms)."""


def parse_port(text: str) -> int | None:
    """--metrics-port's value: None when empty (no endpoint), else a port 1..65535; ValueError
    naming what is wrong."""
    text = (text or "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"{text!r} is not a TCP port (1-65535)")
    return int(text)


def escape(value: str) -> str:
    """A label value as the format quotes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    """VALUE as Prometheus reads it: integers without a point, NaN and the infinities by name,
    other floats in Python's shortest round-trip form."""
    if type(value) is float and value - value == 0.0:  # finite (NaN and the infinities fail this)
        return repr(value)  # the common case first: a scrape writes thousands of these
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def sample(name: str, labels: Labels, value: float) -> str:
    """One line: `name{a="x",b="y"} value`."""
    inner = ",".join(f'{k}="{escape(v)}"' for k, v in labels)
    return f"{name}{{{inner}}} {number(value)}" if inner else f"{name} {number(value)}"


class Family:
    """One metric family: its HELP and TYPE, then its samples (a summary's or histogram's series
    under suffixed names: NAME_count, NAME_sum, NAME_bucket)."""

    def __init__(self, name: str, kind: str, help_text: str) -> None:
        self.name, self.kind, self.help = name, kind, help_text
        self.lines: list[str] = []

    def add(self, labels: Labels, value: float, suffix: str = "") -> None:
        self.lines.append(sample(self.name + suffix, labels, value))

    def add_each(self, label: str, pairs: Iterable[tuple[str, float]]) -> None:
        """Many samples with one label each (LABEL: a worker), each (its value, the number), a line
        each written at once: at 1,000 workers a scrape writes 2,000 such lines, 6.3 ms of the
        master's loop one sample() at a time, 3.5 ms this way."""
        head = self.name + "{" + label + '="'
        self.lines.extend(f'{head}{escape(value)}"}} {number(x)}' for value, x in pairs)

    def add_series(self, suffix: str, labels: Labels, last: str, pairs: Iterable[tuple[str, int]]) -> None:
        """Many samples differing in one label LAST only (a histogram's `le`), each (its value, the
        count): the other labels escaped once, not once a sample."""
        head = self.name + suffix + "{" + "".join(f'{k}="{escape(v)}",' for k, v in labels) + last + '="'
        self.lines.extend(f'{head}{value}"}} {count}' for value, count in pairs)

    def text(self) -> str:
        head = f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.kind}\n"
        return head + "".join(line + "\n" for line in self.lines)


def document(families: Iterable[Family]) -> str:
    """The whole scrape: every family, in order (an empty family keeps its HELP and TYPE, so a
    scraper knows the name before the first request)."""
    return "".join(f.text() for f in families)
