"""Swarmbench's Locust plugin: options, run folders, run.json, thresholds, headers, a clean end to
distributed runs, exact latency, the open model. Needs Locust; shares everything else through core
and latency (no numpy or pandas: the Locust image has neither).

    from swarmbench.plugin import install
    install()        # what locustfiles/swarmbench_plugin.py does; idempotent

Importing this package registers nothing and imports no Locust; `install()` does, explicitly, in the
order wiring.py states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmbench.plugin.lifecycle import Run
    from swarmbench.plugin.wiring import Swarmbench


def install() -> Swarmbench:
    from swarmbench.plugin.wiring import install as _install

    return _install()


def current_run() -> Run | None:
    from swarmbench.plugin.wiring import current_run as _current_run

    return _current_run()
