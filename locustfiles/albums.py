"""The albums scenario: list albums, get one the user has seen, create one; GET:POST = 3:1.

One task definition (AlbumsJourney) runs under both Locust clients, so a comparison of HttpUser
and FastHttpUser measures the client, never a difference in what the users do:

    locust -f locustfiles/albums.py AlbumsHttpUser        # or AlbumsFastHttpUser
    LOCUST_USER_CLASSES=AlbumsFastHttpUser locust -f locustfiles/albums.py

Each response is validated: a wrong album, a malformed body or a missing id is a failure.
"""

from __future__ import annotations

import itertools
import random
from typing import Annotated

import msgspec
from locust import HttpUser, TaskSet
from locust.contrib.fasthttp import FastHttpUser

from swarmbench.core.loadspec import DEFAULT_MIX, POST_HEAVY, READ_HEAVY
from swarmbench.plugin import install
from swarmbench.plugin.pacing import wait_function

install()  # results folder, run.json and options (--wait-time, --albums-mix, ...) for this scenario

LIST_LIMIT = 20
"""Page size of the list request: a fixed page keeps the payload constant as the store grows
(an unpaginated list whose payload grows with every POST ends up dominating latency)."""

SEEN_IDS_MAX = 1000
"""Ids each user remembers for GET /albums/{id}; bounded so memory stays flat in long runs."""

LIST = "GET /albums"
GET = "GET /albums/{id}"
CREATE = "POST /albums"
"""Stable request names (analysis keys on them), the same as the target's route labels."""

_serial = itertools.count(1)


class Album(msgspec.Struct):
    """An album as the target sends it. Decoding checks the types in C (msgspec): a missing field,
    a string id, a bool price or an id <= 0 is a ValidationError naming the field; unknown fields
    are ignored. JSON numbers of either kind are a price."""

    id: Annotated[int, msgspec.Meta(gt=0)]
    title: str
    artist: str
    price: float


class Page(msgspec.Struct):
    """One page of GET /albums: at most LIST_LIMIT albums, and the store's total."""

    albums: Annotated[list[Album], msgspec.Meta(max_length=LIST_LIMIT)]
    total: int


# Typed decoders, built once: parse and validation in one C pass. In a profile of a closed-loop
# FastHttpUser worker, json.loads plus a Python check of every album was the scenario's largest cost;
# a 20-album page now takes 3 us instead of 18 (bench/bench_latency.py albums: +11 % requests per
# worker CPU-second).
_PAGE = msgspec.json.Decoder(Page)
_ALBUM = msgspec.json.Decoder(Album)


def list_albums(ts: TaskSet) -> None:
    with ts.client.get(f"/albums?limit={LIST_LIMIT}", name=LIST, catch_response=True) as resp:
        page = _decode(resp, _PAGE, "list")
        if page is not None:
            _remember_all(ts, [album.id for album in page.albums])
            resp.success()


def get_album(ts: TaskSet) -> None:
    seen: list[int] = ts.user.seen_ids
    if not seen:  # a user's first step: no id seen yet, so list (still a GET) instead of guessing
        list_albums(ts)
        return
    album_id = random.choice(seen)
    with ts.client.get(f"/albums/{album_id}", name=GET, catch_response=True) as resp:
        album = _decode(resp, _ALBUM, "get")
        if album is None:
            return
        if album.id != album_id:
            resp.failure(f"get: asked for album {album_id}, got {album.id}")
        else:
            resp.success()


def create_album(ts: TaskSet) -> None:
    n = next(_serial)
    title, artist, price = f"Load Test Vol. {n}", ts.user.artist, round(random.uniform(1, 60), 2)
    sent = {"title": title, "artist": artist, "price": price}
    with ts.client.post("/albums", json=sent, name=CREATE, catch_response=True) as resp:
        if resp.status_code != 201:
            resp.failure(f"create: status {resp.status_code}, want 201")
            return
        album = _decode(resp, _ALBUM, "create")
        if album is None:
            return
        if (album.title, album.artist, album.price) != (title, artist, price):
            resp.failure("create: the stored album differs from the one sent")
        else:
            _remember(ts, album.id)
            resp.success()


def _decode(resp, decoder: msgspec.json.Decoder, what: str):
    """The body decoded and validated by DECODER, or None after marking the request failed with a
    message that says which check broke (e.g. "list: Expected `int`, got `str` - at
    `$.albums[3].id`")."""
    if resp.status_code != 200 and resp.status_code != 201:
        resp.failure(f"{what}: status {resp.status_code}")
        return None
    try:
        # The bytes straight to the decoder (UTF-8, RFC 8259): resp.json() would first decode them
        # to text by the charset its headers name.
        return decoder.decode(resp.content)
    except msgspec.ValidationError as e:  # JSON, but not the shape asked for
        resp.failure(f"{what}: {e}")
    except (msgspec.DecodeError, TypeError):  # not JSON (bad UTF-8 included), or no body
        resp.failure(f"{what}: body is not JSON")
    return None


def _remember(ts: TaskSet, album_id: int) -> None:
    seen: list[int] = ts.user.seen_ids
    if len(seen) < SEEN_IDS_MAX:
        seen.append(album_id)
    else:
        seen[random.randrange(SEEN_IDS_MAX)] = album_id


def _remember_all(ts: TaskSet, album_ids: list[int]) -> None:
    """A page's ids at once: appended while there is room, then over one random run of slots (one
    random draw a page, not one an id: with every user's memory full, per-id draws were the list
    task's largest cost after the parse)."""
    seen: list[int] = ts.user.seen_ids
    room = SEEN_IDS_MAX - len(seen)
    seen.extend(album_ids[:room])
    rest = album_ids[max(room, 0) :]
    if rest:
        at = random.randrange(SEEN_IDS_MAX - len(rest) + 1)
        seen[at : at + len(rest)] = rest


class AlbumsJourney(TaskSet):
    """A fixed cycle -- list, get, create, get: 3 reads per write by construction -- that each user
    enters at a random step.

    Not weighted random picks: those need tens of thousands of requests before the measured ratio
    is within 5 % of 3:1. A cycle holds it within one cycle per user, and a random entry step means
    the partial cycles users are in when the test stops do not tilt the ratio either way.
    """

    tasks = [list_albums, get_album, create_album, get_album]

    def on_start(self) -> None:
        # --albums-mix / LOCUST_ALBUMS_MIX swaps the cycle (the store-strategy sweep); the default
        # is the class attribute above, untouched.
        mix = getattr(self.user.environment.parsed_options, "albums_mix", DEFAULT_MIX)
        self.tasks = MIXES.get(mix, self.tasks)
        self.step = random.randrange(len(self.tasks))

    def get_next_task(self):
        task = self.tasks[self.step % len(self.tasks)]
        self.step += 1
        return task


MIXES = {
    DEFAULT_MIX: AlbumsJourney.tasks,
    # 9 GET : 1 POST: readers dominate, where an RWMutex or sync.Map should beat a plain mutex.
    READ_HEAVY: [list_albums, get_album, get_album, get_album, create_album]
    + [get_album, list_albums, get_album, get_album, get_album],
    # 1 GET : 3 POST: writers dominate, where every strategy serialises and sharding should win.
    POST_HEAVY: [create_album, get_album, create_album, create_album],
}
"""Cycles per --albums-mix (names and ratios: swarmbench.core.loadspec.MIXES). Same cycle-with-random-entry
design as the default, so each ratio holds within one cycle per user."""


def _wait(user) -> float:
    """Pacing from --wait-time / LOCUST_WAIT_TIME (swarmbench.core.loadspec), as the user read it when
    it started (_start): a test started from the web UI with another value spawns new users."""
    return user.wait_for(user)


def _start(user) -> None:
    user.seen_ids = []
    user.artist = type(user).__name__  # lets a person tell the two clients' albums apart
    # Looked up once per user, not per wait: options, then the parsed-spec cache, was a microsecond
    # a request of the scenario's own cost (bench/bench_latency.py albums).
    user.wait_for = wait_function(user.environment.parsed_options.wait_time)


class AlbumsHttpUser(HttpUser):
    """The journey with Locust's requests-based client (HttpUser): the familiar default."""

    tasks = [AlbumsJourney]
    wait_time = _wait
    on_start = _start


class AlbumsFastHttpUser(FastHttpUser):
    """The same journey with geventhttpclient (FastHttpUser): several times less CPU per request,
    so one worker can offer more load."""

    tasks = [AlbumsJourney]
    wait_time = _wait
    on_start = _start
