"""The host side: `python -m swarmbench ...` validates settings, drives `docker compose` (or local
processes) and runs sweeps. Standard library only, so `make headless` works on a fresh clone with
nothing but Docker, make and python3."""
