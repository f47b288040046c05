"""Bench only: the albums scenario's requests with nothing checked (bench/bench_latency.py albums).

The same cycle as locustfiles/albums.py (list, get, create, get; each user entering at a random
step), the same request names and bodies, but no body is parsed or validated: what a FastHttpUser
costs with no scenario logic at all. GET /albums/{id} asks for an id this process created (the
target numbers albums 1, 2, ...), so it needs no parsing either. The plugin is installed (run.json,
the CPU figures); the benchmark runs it with --no-exact-latency.
"""

from __future__ import annotations

import itertools
import random

from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser

from swarmbench.plugin import install

install()

LIST_LIMIT = 20
_serial = itertools.count(1)
_created = [0]  # albums this process created: ids 1..N exist (a fresh target per run)


class BareAlbumsUser(FastHttpUser):
    wait_time = constant(0)  # closed loop, no think time (the benchmark's load)

    def on_start(self) -> None:
        self.step = random.randrange(4)

    @task
    def cycle(self) -> None:
        step, self.step = self.step % 4, self.step + 1
        if step == 0 or (step != 2 and not _created[0]):  # nothing to get yet: list, like albums.py
            self.client.get(f"/albums?limit={LIST_LIMIT}", name="GET /albums")
        elif step == 2:
            n = next(_serial)
            body = {
                "title": f"Load Test Vol. {n}",
                "artist": "BareAlbumsUser",
                "price": round(random.uniform(1, 60), 2),
            }
            self.client.post("/albums", json=body, name="POST /albums")
            _created[0] += 1
        else:
            self.client.get(f"/albums/{random.randint(1, _created[0])}", name="GET /albums/{id}")
