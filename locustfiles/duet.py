"""A duet run (`DUET=1 make ab`): every simulated user drives A and B with the same steps, back to back.

One Locust run, one master and its workers, two targets: A is Locust's --host, B is --duet-host-b
(LOCUST_DUET_HOST_B; swarmbench/runner/duet.py sets both). Each step of the albums scenario's cycle
(locustfiles/albums.py: the module-level task functions and the mix's cycle, the same ones a single
run uses) runs once against A and once against B, in a random order per step, so that neither side
is always first (a side that always went second would always find the connection pool warm, or the
machine busy with the other's response).

Request names are tagged with their side: `[A] GET /albums/{id}`, `[B] GET /albums/{id}` (SIDE_TAG).
They stay plain request names, so Locust's (Type, Name) keying, the exact-latency recorder's
windows and every reader of a run folder see two series per route; a prefix in brackets keeps them
ASCII (a CSV in any locale), holds no ':' (a threshold's name ends at its last ':') and no ';'
(the thresholds' separator), and sorts each side's names together.

What each side remembers (the album ids it has seen, for GET /albums/{id}) is its own: the two
targets number their albums independently.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from albums import MIXES, _start, _wait  # the scenario's own steps, pacing and per-user state
from locust import events, task
from locust.contrib.fasthttp import FastHttpSession, FastHttpUser

from swarmbench.core.loadspec import DEFAULT_MIX

SIDES = ("A", "B")
HOST_B_OPTION = "--duet-host-b"
"""B's base URL (A's is Locust's --host); its environment variable is LOCUST_DUET_HOST_B."""


def side_tag(side: str, name: str) -> str:
    """The request name of NAME on SIDE: `[A] GET /albums` (the module docstring says why this form)."""
    return f"[{side}] {name}"


@events.init_command_line_parser.add_listener
def _options(parser) -> None:
    parser.add_argument(
        HOST_B_OPTION,
        env_var="LOCUST_DUET_HOST_B",
        default="",
        help="a duet run's B host (A is --host): each step runs against both",
    )


class Tagged:
    """A client whose requests are named with their side's tag (the task functions pass name=)."""

    def __init__(self, client: Any, side: str) -> None:
        self._client, self._side = client, side

    def _named(self, kwargs: dict[str, Any], path: str) -> dict[str, Any]:
        kwargs["name"] = side_tag(self._side, kwargs.get("name") or path)
        return kwargs

    def get(self, path: str, **kwargs: Any):
        return self._client.get(path, **self._named(kwargs, path))

    def post(self, path: str, **kwargs: Any):
        return self._client.post(path, **self._named(kwargs, path))

    def put(self, path: str, **kwargs: Any):
        return self._client.put(path, **self._named(kwargs, path))

    def delete(self, path: str, **kwargs: Any):
        return self._client.delete(path, **self._named(kwargs, path))


class Side:
    """What a task function sees (its `ts` argument): `client` (tagged) and `user` (this side's state:
    seen_ids, artist, environment)."""

    def __init__(self, user: FastHttpUser, side: str, client: Any) -> None:
        self.client = Tagged(client, side)
        self.user = SimpleNamespace(environment=user.environment)
        _start(self.user)  # seen_ids, artist, the pacing function: each side keeps its own
        self.user.artist = f"{type(user).__name__} {side}"


class AlbumsDuetUser(FastHttpUser):
    """The albums cycle against A and B at once (FastHttpUser, as make ab's single runs use)."""

    wait_time = _wait

    def on_start(self) -> None:
        b_host = getattr(self.environment.parsed_options, "duet_host_b", "") or ""
        if not b_host:
            raise RuntimeError(f"a duet run needs B's host: {HOST_B_OPTION} or LOCUST_DUET_HOST_B")
        b_client = FastHttpSession(  # as FastHttpUser makes A's (self.client), for B's host
            base_url=b_host.rstrip("/"),
            request_event=self.environment.events.request,
            user=self,
            insecure=self.insecure,
            client_pool=self.client_pool,
            ssl_context_factory=self.ssl_context_factory,
            network_timeout=self.network_timeout,
            connection_timeout=self.connection_timeout,
            max_redirects=self.max_redirects,
            max_retries=self.max_retries,
            concurrency=self.concurrency,
            headers=self.default_headers,
        )
        self.sides = {"A": Side(self, "A", self.client), "B": Side(self, "B", b_client)}
        self.wait_for = self.sides["A"].user.wait_for  # _wait reads it
        mix = getattr(self.environment.parsed_options, "albums_mix", DEFAULT_MIX)
        self.cycle = MIXES.get(mix, MIXES[DEFAULT_MIX])
        self.step = random.randrange(len(self.cycle))

    @task
    def both(self) -> None:
        """The cycle's next step against A and against B, in a random order."""
        step = self.cycle[self.step % len(self.cycle)]
        self.step += 1
        order = list(SIDES) if random.random() < 0.5 else list(reversed(SIDES))
        for side in order:
            step(self.sides[side])
