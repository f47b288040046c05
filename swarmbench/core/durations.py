"""The one duration grammar of the whole package: `500ms`, `30s`, `1.5m`, `2h`, `1m30s`, `90`.

A duration is one or more NUMBER UNIT parts (units ms, s, m, h; Locust's --run-time forms like
`1h30m` are the same grammar) or a plain number in the caller's default unit. Every setting that
takes a time goes through `parse_duration`: --run-time, --arrival-rate's stages, --arrival-max-wait,
the step grammars' SECONDS, KNEE_P99_MS. Standard library only.
"""

from __future__ import annotations

import re

UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
"""Seconds per unit."""

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PLAIN = re.compile(rf"^{_NUMBER}$")
_PART = re.compile(rf"({_NUMBER})\s*(ms|s|m|h)\s*")
_WHOLE = re.compile(rf"^(?:{_NUMBER}\s*(?:ms|s|m|h)\s*)+$")


def parse_duration(text: str, unit: str = "s") -> float:
    """Seconds of TEXT ('500ms', '30s', '1m30s', or a plain number of UNITs); ValueError otherwise."""
    word = text.strip()
    if word.lower().lstrip("+-") in ("inf", "infinity", "nan"):
        raise ValueError(f"{word!r} is not a finite duration")
    if _PLAIN.match(word):
        seconds = float(word) * UNIT_S[unit]
    elif _WHOLE.match(word):
        seconds = sum(float(n) * UNIT_S[u] for n, u in _PART.findall(word))
    else:
        raise ValueError(f"{word!r} is not a duration like 30s, 500ms, 2m or 1h")
    return seconds
