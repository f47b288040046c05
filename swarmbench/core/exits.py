"""Exit codes: one table for `python -m swarmbench`, the Locust plugin and CI.

Locust's own codes come first (0 and 1 are Locust's, 2 is argparse's); Swarmbench adds its own
above them so CI can tell "the system under test is too slow" from "the run itself went wrong".
"""

from __future__ import annotations

import signal

OK = 0
"""The run finished and every threshold held."""

REQUESTS_FAILED = 1
"""Some requests failed (Locust's --exit-code-on-error, default 1)."""

CONFIG_ERROR = 2
"""Bad configuration: nothing ran. Same code argparse (and so Locust) uses for a bad command line."""

THRESHOLDS_BROKEN = 3
"""A threshold (--check/LOCUST_CHECKS) was broken. Replaces REQUESTS_FAILED when both apply."""

INTERRUPTED_SIGINT = 128 + signal.SIGINT
"""130: stopped by Ctrl-C (the shell's convention for a process ended by SIGINT)."""

MEASURED = (OK, REQUESTS_FAILED, THRESHOLDS_BROKEN)
"""Codes of a run that still made a measurement (a sweep point with one of these is done)."""

TABLE = {
    OK: "ok",
    REQUESTS_FAILED: "some requests failed",
    CONFIG_ERROR: "bad configuration (nothing ran)",
    THRESHOLDS_BROKEN: "a threshold was broken",
    INTERRUPTED_SIGINT: "interrupted (Ctrl-C)",
}
"""Code -> meaning, as the README's exit-code table lists them."""
