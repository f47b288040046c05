"""Stop paths: does every way of ending a run mid-way still save a complete, exact record?

    python tests/stop_paths.py [--tries 10] [--paths ui-ctrlc,ui-down,headless-ctrlc,headless-down]

Each try starts a real `docker compose up --scale worker=2` in a pseudo-terminal (the web UI, with a
test started through POST /swarm, or the headless override), lets 10 users of AlbumsFastHttpUser run
for a few seconds, then ends the stack: Ctrl-C (SIGINT to compose) or `docker compose down` from
outside. It then checks the run folder (tests/drills.py): run.json, report.html and
the CSVs present, status interrupted or complete, CSV total == run.json totals == the target's own
count, the folder's worker count == run.json's. Prints one line per try and k/N per path.

The images must be built (`docker compose build`); load goes only to the stack's own target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from drills import PATHS, Drill, run_drill, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--run-s", type=float, default=8.0, help="seconds of load before the stop")
    parser.add_argument("--keep", type=Path, help="keep every try's folder and compose log here")
    args = parser.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    unknown = set(paths) - set(PATHS)
    if unknown:
        parser.error(f"unknown path(s) {', '.join(sorted(unknown))}; known: {', '.join(PATHS)}")
    root = args.keep or Path(tempfile.mkdtemp(prefix="stop-paths-"))
    scores: dict[str, int] = {}
    for path in paths:
        scores[path] = 0
        for i in range(args.tries):
            d = run_drill(Drill(path, root / f"{path}-{i + 1}", run_s=args.run_s))
            scores[path] += not d.problems
            print(f"[{i + 1}/{args.tries}] {summary(d)}", flush=True)
    print("\nsaved complete and exact:")
    for path, ok in scores.items():
        print(f"  {path:15} {ok}/{args.tries}")
    print(f"(folders and compose logs under {root})")
    return 0 if all(ok == args.tries for ok in scores.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
