"""`python -m swarmbench.compare.floor A B -o OUT`: an A/A run's noise floor (what `make ab` runs
when B equals A).

Every run of both sides is one setting run 2 x REPEATS times, so together they calibrate the
run-to-run noise (noise.calibrate), written to A/compare-noise.json: a later `compare` against A
(or against one run in it) finds it there. Then A is compared with B as any two sides are (the
usual outputs in OUT), and per metric the noise floor is printed: the smallest change these
settings can tell from noise on this machine (FLOOR_METHOD).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from swarmbench.compare import cli, grid, noise, report, stats
from swarmbench.compare.load import read_side
from swarmbench.compare.stats import METRICS
from swarmbench.compare.verdict import MIN_EFFECT, REGRESSED
from swarmbench.core import exits
from swarmbench.core.checks import AGGREGATED
from swarmbench.core.errors import InputError, die

FLOOR_PROG = "swarmbench ab"

FLOOR_METHOD = (
    "smallest detectable change = min-effect band + half the width of the A/A comparison's CI "
    "(relative to the value): a change that large has its CI just clear the band, so it is called "
    "about half the time; one more half-width and it is called almost always"
)
FLOOR_JSON = "noise-floor.json"


def half_widths(found: dict[str, dict[str, stats.Difference]]) -> dict[str, float]:
    """Half the CI width of each metric's Aggregated difference, relative to the baseline value."""
    out = {}
    for metric, by_name in found.items():
        d = by_name[AGGREGATED]
        out[metric] = (d.high - d.low) / 2 / abs(d.baseline) if d.baseline else math.nan
    return out


def floors(a: Path, b: Path, confidence: float, seed: int) -> tuple[dict, dict, dict]:
    """(noise, floors, found): the calibrated noise of all runs; per metric {"value", "noise",
    "repeats", "single"} (floors without the band); the A vs B comparison itself."""
    side_a, side_b = read_side(a), read_side(b)
    runs = side_a + side_b
    if len(runs) < 2:
        raise InputError(a, "a noise floor needs at least two complete runs (A and B together)")
    everyone, all_runs, _ = grid.build(runs, runs[:1], [AGGREGATED])
    level = noise.calibrate(all_runs, everyone, seed)
    noise.write(
        a,
        level,
        [f"{r.path.parent.name}/{r.path.name}" for r in runs],
        [str(r.manifest.started_at) for r in runs],
    )
    names = grid.names(side_a, side_b, None)
    g, sa, sb = grid.build(side_a, side_b, names.common)
    sa.noise = sb.noise = level
    found = stats.compare(sa, sb, g, list(METRICS), confidence, seed)
    g1, one_a, one_b = grid.build(side_a[:1], side_b[:1], [AGGREGATED])
    one_a.noise = one_b.noise = level
    single = half_widths(stats.compare(one_a, one_b, g1, list(METRICS), confidence, seed))
    repeats = half_widths(found)
    table = {
        m: {
            "value": found[m][AGGREGATED].baseline,
            "noise": level[m],
            "repeats": repeats[m],
            "single": single[m],
        }
        for m in METRICS
    }
    return level, table, {"found": found, "names": names, "grid": g, "sides": (side_a, side_b, sa, sb)}


def floor_text(table: dict, min_effect: float, repeats: tuple[int, int]) -> str:
    """The noise-floor table: per metric its value, run-to-run noise and smallest detectable change
    with this A/A's repeats per side and with one run per side."""
    head = (
        "metric",
        "value",
        "run-to-run SD",
        f"floor, {repeats[0]} vs {repeats[1]} runs",
        "floor, 1 vs 1 run",
    )
    lines = [head]
    for m, row in table.items():
        unit = report.UNITS[m]
        value = report.shown(m, row["value"])
        lines.append(
            (
                m,
                f"{value} {unit}",
                f"{row['noise']:.1%}",
                _pct(min_effect + row["repeats"]),
                _pct(min_effect + row["single"]),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    rows = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    return "\n".join(
        [
            "noise floor (A/A): the smallest change these settings can detect on this machine",
            *rows,
            f"method: {FLOOR_METHOD}; band {min_effect:.0%}",
        ]
    )


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1%}"


def floor_parser() -> argparse.ArgumentParser:
    p = cli.Parser(prog="python -m swarmbench.compare.floor", description=__doc__.splitlines()[0])
    p.add_argument("a", type=Path, help="folder of the A runs")
    p.add_argument("b", type=Path, help="folder of the B runs (the same settings as A)")
    p.add_argument("-o", "--out", type=Path, required=True, help="output folder")
    p.add_argument("--min-effect", type=float, default=MIN_EFFECT * 100, help="band in %% (default 5)")
    p.add_argument("--confidence", type=float, default=95.0, help="CI level in %% (default 95)")
    p.add_argument("--seed", type=int, default=0)
    return p


def floor_main(argv: list[str] | None = None) -> int:
    args = floor_parser().parse_args(argv)
    cli.check_levels(args)
    min_effect, confidence = args.min_effect / 100, args.confidence / 100
    try:
        out = cli.out_dir(args.out, [args.a, args.b])
        level, table, c = floors(args.a, args.b, confidence, args.seed)
    except InputError as e:
        die(str(e), prog=FLOOR_PROG)
    side_a, side_b, sa, sb = c["sides"]
    opts = {"metrics": list(METRICS), "names": None, "min_effect": min_effect, "confidence": confidence}
    outcome = report.Outcome(
        [str(r.path) for r in side_a],
        [str(r.path) for r in side_b],
        report.rows(c["found"], min_effect),
        c["names"],
        [],
        {**opts, "seed": args.seed},
        level,
        f"calibrated from these {len(side_a) + len(side_b)} runs, {args.a / noise.NOISE_JSON}",
        not all(r.exact for r in side_a + side_b),
    )
    cli.write(out, outcome, c["grid"], sa, sb, False)
    text = floor_text(table, min_effect, (len(side_a), len(side_b)))
    print("\n" + text)
    (out / "noise-floor.txt").write_text(text + "\n")
    floor_json = {
        "method": FLOOR_METHOD,
        "min_effect": min_effect,
        "noise_file": str(args.a / noise.NOISE_JSON),
    }
    floor_json["metrics"] = {
        m: {
            "value": report._num(r["value"]),
            "run_to_run_sd": r["noise"],
            "floor_repeats": report._num(min_effect + r["repeats"]),
            "floor_single": report._num(min_effect + r["single"]),
        }
        for m, r in table.items()
    }
    (out / FLOOR_JSON).write_text(json.dumps(floor_json, indent=2) + "\n")
    print(f"run-to-run noise -> {args.a / noise.NOISE_JSON} (later compares against {args.a} use it)")
    if outcome.count(REGRESSED):
        print(
            f"{FLOOR_PROG}: warning: identical settings were called regressed on {outcome.count(REGRESSED)} "
            "metric(s): this machine's noise is larger than a CI of these runs shows; use more repeats",
            file=sys.stderr,
        )
    return exits.OK


if __name__ == "__main__":
    raise SystemExit(floor_main())
