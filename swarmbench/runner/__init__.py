"""The host side of `swarmbench`: validates settings, drives `docker compose`, Docker Swarm or local
processes, runs sweeps, knees and A/B runs. Standard library only, so `make headless` works on a
fresh clone with nothing but Docker, make and python3; a comparison or report it needs runs as
`swarmbench compare|report` in a process of its own.
"""
