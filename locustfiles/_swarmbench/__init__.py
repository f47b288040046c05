"""Swarmbench's Locust plugin: options, run folders, run.json, a clean end to distributed runs.

Importing this package registers everything with Locust's event hooks, once per process (Python
caches the import, so a locustfile and swarmbench_plugin.py may both import it).
"""

from . import checks, experiment, headers
from .lifecycle import current_run, register
from .wait import DEFAULT_WAIT_TIME, parse_wait_time

# Order matters: Locust runs `init` listeners in registration order, and the thresholds' and
# headers' validation must reject bad input before lifecycle's listener creates the run folder.
checks.register()
headers.register()
experiment.register()
register()
experiment.register_recording()  # adds run.json sections to the run lifecycle just created

__all__ = ["DEFAULT_WAIT_TIME", "current_run", "parse_wait_time"]
