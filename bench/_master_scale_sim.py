"""bench/bench_master_scale.py's simulated workers: the seeded model (report templates with a known
truth) and the loop that plays N Locust workers per master over ZeroMQ, in one process.

A worker is a DEALER socket with its client_id as identity, speaking Locust's own Message (msgpack):
client_ready (again after 5 s without an ack, as Locust's worker does), a heartbeat every
HEARTBEAT_INTERVAL, a stats report every report_every (Locust's WORKER_REPORT_INTERVAL, or
--report-every) from its ack on, "spawning" and "spawning_complete" on "spawn", a final report then
"quit" on "quit", client_stopped then client_ready on "stop". One loop polls every socket every
TICK_S and sends what is due; it records how late it sent (its own lag) and each heartbeat's round
trip.
"""

from __future__ import annotations

import heapq
import random
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import zmq
from _master_scale_model import OFFSETS, Template, empty_total, stamped
from locust import __version__ as LOCUST_VERSION
from locust.rpc.protocol import Message
from locust.runners import HEARTBEAT_INTERVAL, HEARTBEAT_LIVENESS, WORKER_REPORT_INTERVAL

from swarmbench.core import bottleneck as core_lag
from swarmbench.latency.windows import WINDOW_S, Shipment, window_of
from swarmbench.plugin import generator, latency, pacing

TICK_S = 0.01
"""The loop's period: it polls every socket, then sends what is due. 10 ms is fine against 1 s
heartbeats and 3 s reports, and keeps the poll over thousands of sockets cheap."""

CONNECT_TIMEOUT_S = 5.0
"""A worker without an ack says client_ready again after this long (Locust's CONNECT_TIMEOUT)."""

# --- the simulated workers ---------------------------------------------------------------------------


@dataclass
class Group:
    """The N simulated workers of one master, and what they measured."""

    name: str
    port: int
    plugin: bool  # the Swarmbench master: reports carry the plugin's payloads
    workers: list[Worker] = field(default_factory=list)
    test_started: float | None = None  # monotonic, the first "spawn"
    rng: random.Random = field(default_factory=random.Random)
    truth: Counter[tuple[int, int, int]] = field(
        default_factory=Counter
    )  # (template, offset, window) -> reports
    report_bytes: list[int] = field(default_factory=list)  # stats messages in the measured interval
    beat_ms: list[float] = field(default_factory=list)  # heartbeat round trips in the measured interval
    late_beats: int = 0  # heartbeats unanswered for HEARTBEAT_LIVENESS s and more (any time)
    ready_retries: int = 0
    reconnects: int = 0
    unknown: Counter[str] = field(default_factory=Counter)
    send_blocked: int = 0
    ended: int = 0


class Worker:
    """One simulated Locust worker: its socket, its state, its heartbeats in flight."""

    __slots__ = (
        "acked",
        "beats",
        "cid",
        "classes",
        "clock",
        "done",
        "group",
        "last_report",
        "ready_at",
        "sock",
        "spawned",
        "state",
        "t0",
        "users",
        "waits",
    )

    def __init__(self, group: Group, sock: zmq.Socket, cid: str) -> None:
        self.group, self.sock, self.cid = group, sock, cid
        self.state = "ready"
        self.acked = self.done = self.spawned = False
        self.t0: float | None = None
        self.users, self.classes, self.waits = 0, {}, 0
        self.beats: deque[float] = deque()
        self.last_report = self.clock = time.time()
        self.ready_at = 0.0


HEARTBEAT, REPORT, READY = 0, 1, 2


def moved(shipment: Shipment, windows: list[int]) -> Shipment:
    """A template's Shipment (windows numbered 0..3) with this report's WINDOWS in their place."""
    return Shipment(shipment.keys, [[windows[entry[0]], *entry[1:]] for entry in shipment.windows])


class Simulator:
    """Every group's workers in one loop: poll all sockets, answer, send what is due."""

    def __init__(
        self, groups: list[Group], templates: list[Template], rps: float, workers: int,
        report_every: float = WORKER_REPORT_INTERVAL,
    ) -> None:  # fmt: skip
        self.groups, self.templates, self.rps = groups, templates, rps
        self.report_every = report_every  # a worker's stats report interval (Locust's 3 s; slo.LIVE_REPORT_S)
        self.ctx = zmq.Context(io_threads=1)
        self.ctx.set(zmq.MAX_SOCKETS, workers * len(groups) + 64)  # ZeroMQ's default is 1,023
        self.poller = zmq.Poller()
        self.by_socket: dict[zmq.Socket, Worker] = {}
        self.due: list[tuple[float, int, int, Worker]] = []
        self.seq = 0
        self.measuring = False
        self.lag_ms: list[float] = []
        self.cpu_limit = generator.own_limit().to_json()
        lag_hist = core_lag.Histogram()
        ticks = [abs(random.Random(7).gauss(0.4, 0.3)) for _ in range(300)]
        for t in ticks:
            lag_hist.add(t)
        self.lag_report = {"interval": core_lag.percentiles(ticks), "run": lag_hist.summary()}

    # sockets and schedule

    def connect(self, group: Group, n: int) -> None:
        for i in range(n):
            cid = f"sim-{group.name}-{i:05d}_{random.getrandbits(64):016x}"
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.IDENTITY, cid.encode())
            sock.setsockopt(zmq.TCP_KEEPALIVE, 1)
            sock.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 30)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.connect(f"tcp://127.0.0.1:{group.port}")
            worker = Worker(group, sock, cid)
            group.workers.append(worker)
            self.by_socket[sock] = worker
            self.poller.register(sock, zmq.POLLIN)
            self.send(worker, "client_ready", LOCUST_VERSION)
            worker.ready_at = time.monotonic()
            self.schedule(worker.ready_at + 5.0, READY, worker)  # Locust's CONNECT_TIMEOUT

    def schedule(self, at: float, kind: int, worker: Worker) -> None:
        self.seq += 1
        heapq.heappush(self.due, (at, self.seq, kind, worker))

    def send(self, worker: Worker, kind: str, data: Any) -> int:
        payload = Message(kind, data, worker.cid).serialize()
        try:
            worker.sock.send(payload, zmq.NOBLOCK)
        except zmq.Again:
            worker.group.send_blocked += 1
        return len(payload)

    # one turn of the loop

    def turn(self) -> None:
        now = time.monotonic()
        while self.due and self.due[0][0] <= now:
            at, _, kind, worker = heapq.heappop(self.due)
            if worker.done:
                continue
            if self.measuring and kind != READY:
                self.lag_ms.append((now - at) * 1000)
            if kind == HEARTBEAT:
                self.heartbeat(worker, now)
                self.schedule(at + HEARTBEAT_INTERVAL, HEARTBEAT, worker)
            elif kind == REPORT:
                self.report(worker)
                self.schedule(at + self.report_every, REPORT, worker)
            elif not worker.acked:  # READY: no ack in 5 s, as a real worker, say it again
                worker.group.ready_retries += 1
                self.send(worker, "client_ready", LOCUST_VERSION)
                self.schedule(now + 5.0, READY, worker)
        for sock, _ in self.poller.poll(0):
            worker = self.by_socket[sock]
            while not worker.done:
                try:
                    raw = sock.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                self.handle(worker, Message.unserialize(raw))

    def heartbeat(self, worker: Worker, now: float) -> None:
        group = worker.group
        while worker.beats and now - worker.beats[0] >= HEARTBEAT_LIVENESS:
            worker.beats.popleft()  # never answered in time: the master would have counted it missing
            group.late_beats += 1
        data = {"state": worker.state, "current_cpu_usage": 35.0, "current_memory_usage": 80_000_000}
        self.send(worker, "heartbeat", data)
        worker.beats.append(now)

    def report(self, worker: Worker, final: bool = False) -> None:
        group, now = worker.group, time.time()
        since, worker.last_report = worker.last_report, now
        data: dict[str, Any] = {}
        if worker.spawned:
            r = group.rng.randrange(len(self.templates))
            tpl = self.templates[r]
            t0 = worker.t0 if worker.t0 is not None else now
            last = window_of(now - t0)
            windows = [max(0, last - 3 + j) for j in range(OFFSETS)]
            seconds = [int(t0 + w * WINDOW_S) for w in windows]
            for j, w in enumerate(windows):
                group.truth[(r, j, w)] += 1
            if group.plugin:
                self.plugin_payload(worker, data, now, t0, tpl, windows)
            data["stats"] = [stamped(e, req, fail, seconds, since, now) for e, req, fail in tpl.stats]
            data["stats_total"] = stamped(*tpl.total, seconds, since, now)
            data["errors"] = {k: {**e, "first_seen": since, "last_seen": now} for k, e in tpl.errors.items()}
        else:
            if group.plugin:
                self.plugin_payload(worker, data, now, worker.t0 or now, None, [])
            data["stats"] = []
            data["stats_total"] = empty_total(since)
            data["errors"] = {}
        data["user_classes_count"] = worker.classes
        data["user_count"] = worker.users
        size = self.send(worker, "stats", data)
        if self.measuring and not final:
            group.report_bytes.append(size)

    def plugin_payload(
        self,
        worker: Worker,
        data: dict[str, Any],
        now: float,
        t0: float,
        tpl: Template | None,
        windows: list[int],
    ) -> None:
        """What the plugin's report_to_master listeners add, in their order (wiring.py)."""
        wall = now - worker.clock  # a worker's CPU clock runs from its test start (generator.CpuClock)
        data[generator.CPU_REPORT_KEY] = {
            "wall_s": wall,
            "cpu_s": wall * 0.35,
            "users": worker.users,
            "limit": self.cpu_limit,
        }
        data[generator.LAG_REPORT_KEY] = self.lag_report
        shipment = moved(tpl.windows, windows) if tpl else Shipment([], [])
        data[latency.REPORT_KEY] = latency.payload(t0, shipment, {}, upto=now)  # as a worker's
        if worker.spawned:  # cumulative, like pacing.Pacing's
            worker.waits += int(self.rps * self.report_every)
            data[pacing.REPORT_KEY] = {
                name: {
                    "waits": worker.waits,
                    "wait_s": worker.waits * 0.5,
                    "option_waits": worker.waits,
                    "peak_users": n,
                    "open_loop": False,
                }
                for name, n in worker.classes.items()
            }

    def handle(self, worker: Worker, msg: Message) -> None:
        group, now = worker.group, time.monotonic()
        kind = msg.type
        if kind == "heartbeat":
            if worker.beats:
                sent = worker.beats.popleft()
                if self.measuring:
                    group.beat_ms.append((now - sent) * 1000)
        elif kind == "ack":
            if not worker.acked:
                worker.acked = True
                rng = group.rng
                self.schedule(now + rng.random() * HEARTBEAT_INTERVAL, HEARTBEAT, worker)
                self.schedule(now + rng.random() * self.report_every, REPORT, worker)
        elif kind == "spawn":
            self.send(worker, "spawning", None)
            classes = dict(msg.data["user_classes_count"])
            worker.classes, worker.users = classes, sum(classes.values())
            if not worker.spawned:
                worker.spawned = True
                worker.last_report = worker.clock = time.time()  # test_start: stats cleared, CPU clock
                group.test_started = group.test_started or now
            self.send(
                worker, "spawning_complete", {"user_classes_count": classes, "user_count": worker.users}
            )
            worker.state = "running"
        elif kind == latency.MESSAGE:
            worker.t0 = float(msg.data["t0"])
        elif kind == "quit":
            self.report(worker, final=True)  # Locust's worker: stop, a final report, then "quit"
            self.send(worker, "quit", None)
            self.finish(worker)
        elif kind == "stop":
            self.send(worker, "client_stopped", None)
            worker.state, worker.users, worker.classes = "ready", 0, {}
            self.send(worker, "client_ready", LOCUST_VERSION)
        elif kind == "reconnect":
            group.reconnects += 1
        elif kind not in ("spawning_complete", "update_user_class"):
            group.unknown[kind] += 1

    def finish(self, worker: Worker) -> None:
        worker.done = True
        worker.group.ended += 1
        self.poller.unregister(worker.sock)
        worker.sock.close(linger=1000)

    def close(self) -> None:
        for worker in self.by_socket.values():
            if not worker.done:
                worker.sock.close(linger=0)
        self.ctx.term()
