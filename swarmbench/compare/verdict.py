"""A difference's verdict: significance AND a minimum effect (as ASV does), never one without the other.

The band is +-min-effect around zero, relative to the baseline's value. With the interval [low,
high] of the difference turned so that positive is worse (more latency or errors, less throughput):
- `regressed`: the whole interval lies beyond +band;
- `improved`: the whole interval lies beyond -band;
- `no change`: the whole interval lies inside the band (a change, if any, smaller than we care for);
- `inconclusive`: the interval straddles an edge of the band (more runs would tell).
"""

from __future__ import annotations

import math

from swarmbench.compare.stats import HIGHER_IS_WORSE, Difference

REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE = "regressed", "improved", "no change", "inconclusive"
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE)

MIN_EFFECT = 0.05
"""Default band: changes under 5 % are not worth a failed build. Identical 15 s runs on a shared
2-core machine differ by up to ~5 % in p50 (issue 19), so a smaller band would mostly report noise."""

ERROR_RATE_FLOOR = 0.001
"""The error-rate band is at least 0.1 percentage point: 5 % of a zero error rate is zero, and a
band of zero would call one failed request in a clean run a regression."""


def band(metric: str, baseline: float, min_effect: float) -> float:
    """Half-width of the no-change band, in the metric's unit."""
    width = abs(baseline) * min_effect
    return max(width, ERROR_RATE_FLOOR) if metric == "error_rate" else width


def verdict(metric: str, d: Difference, min_effect: float) -> str:
    """The verdict of D (see the module docstring); inconclusive when the interval is unknown."""
    if math.isnan(d.low) or math.isnan(d.high) or math.isnan(d.baseline):
        return INCONCLUSIVE
    sign = 1 if HIGHER_IS_WORSE[metric] else -1
    low, high = sorted((sign * d.low, sign * d.high))
    edge = band(metric, d.baseline, min_effect)
    if low > edge:
        return REGRESSED
    if high < -edge:
        return IMPROVED
    if -edge <= low and high <= edge:
        return NO_CHANGE
    return INCONCLUSIVE
