"""Host-side runner: starts the compose stack for headless runs (and sweeps).

Standard library only, so `make headless` works on a fresh clone with nothing but Docker, make and
python3. The Locust side (options, run folders, run.json) is the plugin in locustfiles/_swarmbench.
"""
