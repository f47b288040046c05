"""Swarmbench: a Dockerized Locust load-testing harness with scaling analysis.

Packages are layers, each importing only those below it (pyproject.toml [tool.importlinter];
`make lint` fails on a wrong import, naming the contract it broke):

    cli       `swarmbench <command>`: one parser for every command (swarmbench/cli.py)
    analysis  run folders -> summaries, Amdahl/USL fits, charts, report (pandas, matplotlib)
    runner    the host side: compose, swarm, local processes, sweeps, make ab (standard library)
    plugin    inside Locust: options, the run's folder and run.json, thresholds, a clean end
    compare   did it get slower? the comparison's statistics, the history's gate and trend (numpy)
    page      the run page: every run folder's report.html and its SVG charts (standard library)
    latency   exact latency: HDR histograms, per window, merged, encoded (hdrhistogram)
    history   every run remembered: add, list, import, export (SQLite; psycopg for PostgreSQL)
    core      the facts every part shares: run.json, folders, grammars, rules (standard library)

One line per package, in the order of the `layers` contract (tests/test_docs.py holds them equal;
docs/development.md draws the layers from these lines). Importing `swarmbench` imports none of
them. docs/development.md maps every module.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers read it so)
if TYPE_CHECKING:
    from swarmbench.core.runfolder import RunFolder, RunFolderError

__version__ = "0.2.0"

# `from swarmbench import RunFolder`: the typed reader of a run folder (core/runfolder.py), imported
# when first used, so that `import swarmbench` stays cheap.
__all__ = ["RunFolder", "RunFolderError", "__version__"]

_LAZY = {"RunFolder": "swarmbench.core.runfolder", "RunFolderError": "swarmbench.core.runfolder"}
"""Public name -> its module, imported on first use so that `import swarmbench` stays cheap."""


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'swarmbench' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
