"""Benchmark of reading a run folder: the 4 showcase runs (results/examples/r1-*) read ROUNDS times
through one reader, in one process. Prints figures; asserts nothing.

    python bench/bench_reader.py --what runfolder|answer|record [--rounds 50]

  runfolder  swarmbench.RunFolder.open, then run.json checked, failures, exact latency (core/runfolder.py)
  answer     core/answer.read_answer: the terminal's and the run page's reading
  record     history/record.read_run: what `swarmbench history add/import` reads

`answer` and `record` exist on main too, so the same command with PYTHONPATH pointing at another
checkout times that checkout's readers; pair the two whole processes with any timer that alternates
them (hyperfine, `/usr/bin/time -v` in turns), at --rounds 400 (reading) and --rounds 1 (start-up
and imports), and quote the median ratio:

    (cd /path/to/other && python -m compileall -q swarmbench); python -m compileall -q swarmbench
    PYTHONPATH=$PWD python bench/bench_reader.py --what runfolder --rounds 400
    PYTHONPATH=/path/to/other python bench/bench_reader.py --what answer --rounds 400

Byte-compile both checkouts first: where a module has no current .pyc and none may be written
(PYTHONDONTWRITEBYTECODE, a read-only checkout), every process compiles it again, and the timer
times the compiler and whichever checkout happens to hold more stale files.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = sorted((ROOT / "results" / "examples").glob("r1-*"))
"""The showcase runs: 4 real run folders with exact latency, ~10-50 k requests each."""


def reader(what: str):
    """A function reading one folder with WHAT (imported here, so `answer` runs on a checkout
    without RunFolder)."""
    if what == "runfolder":
        from swarmbench import RunFolder

        def read(folder: Path) -> object:
            run = RunFolder.open(folder)
            return run.manifest, run.aggregated, run.failures, run.exact  # everything, run.json checked

        return read
    if what == "answer":
        from swarmbench.core.answer import read_answer

        return read_answer
    from swarmbench.history.record import read_run

    return lambda folder: read_run(folder, testbed="bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("runfolder", "answer", "record"), default="runfolder")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    read = reader(args.what)
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for folder in RUNS:
            read(folder)
        times.append(time.perf_counter() - start)
    median_ms = statistics.median(times) * 1e3
    print(f"{args.what}: {len(RUNS)} runs, median {median_ms:.3f} ms per round (of {args.rounds} rounds)")


if __name__ == "__main__":
    main()
