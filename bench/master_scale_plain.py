"""The plain Locust master's locustfile for bench/bench_master_scale.py: one user class, no plugin.

A master runs no users; it only needs a class to hand out. The simulated workers never run it.
"""

from locust import HttpUser, task


class PlainUser(HttpUser):
    @task
    def index(self) -> None:
        self.client.get("/")
