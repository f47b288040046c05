"""The albums scenario validates every body (locustfiles/albums.py): a real Locust run, both clients,
against a real HTTP service that answers with the wrong things. Every kind of wrong answer is a
failure whose message says which check broke; nothing wrong passes.

The bundled target never answers wrongly, so this service stands in for a broken deploy.
"""

from __future__ import annotations

import csv
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from harness import run_locust
from runs import only_run

from swarmbench.analysis import columns as C
from swarmbench.core import exits

ALBUM = {"title": "Blue Train", "artist": "John Coltrane", "price": 56.99}

BROKEN = {
    # list: a valid page (so users remember ids 1 and 2), but every single album is wrong
    "GET /albums": (200, {"albums": [{"id": 1, **ALBUM}, {"id": 2, **ALBUM}], "total": 2}),
    "GET /albums/1": (200, {"id": 2, **ALBUM}),  # another album than asked for
    "GET /albums/2": (200, {"id": 2, **ALBUM, "title": 5}),  # a number where a string belongs
    "POST /albums": (201, {"id": 3, **ALBUM}),  # not the album that was sent
}
"""Each route's (status, body): every GET /albums/{id} and POST /albums must fail."""

BROKEN_LIST = {
    "GET /albums": (200, {"albums": [{"id": 0, **ALBUM}], "total": 1}),  # an id below 1
    "POST /albums": (201, b"<html>oops</html>"),  # not JSON
}
"""Every list and create must fail (no id is ever seen, so no GET /albums/{id} is sent)."""

EXPECTED = {
    "broken": {
        ("GET", "GET /albums/{id}"): [
            "get: asked for album 1, got 2",
            "get: Expected `str`, got `int` - at `$.title`",
        ],
        ("POST", "POST /albums"): ["create: the stored album differs from the one sent"],
    },
    "broken_list": {
        ("GET", "GET /albums"): ["list: Expected `int` >= 1 - at `$.albums[0].id`"],
        ("POST", "POST /albums"): ["create: body is not JSON"],
    },
}


class WrongService:
    """An albums API that answers ROUTES' (status, body) to every request, whatever was sent."""

    def __init__(self, routes: dict) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def answer(self, method: str) -> None:
                path = self.path.split("?")[0]
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, body = routes.get(f"{method} {path}", (404, {"error": "not found"}))
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self.answer("GET")

            def do_POST(self) -> None:
                self.answer("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> WrongService:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("user_class", ["AlbumsFastHttpUser", "AlbumsHttpUser"])
@pytest.mark.parametrize("case", ["broken", "broken_list"])
def test_every_wrong_answer_is_a_failure_that_says_why(tmp_path, case, user_class):
    routes = BROKEN if case == "broken" else BROKEN_LIST
    with WrongService(routes) as service:
        res = run_locust(
            "--headless", "-H", service.url, "-t", "3s", "-u", "4", "-r", "4", "--wait-time", "constant 0.05",
            "--results-dir", str(tmp_path), user_class,
        )  # fmt: skip
    run_dir = only_run(tmp_path)
    # Some requests failed: exit 1; every request failed: the run itself failed (run.json status).
    want = exits.REQUESTS_FAILED if case == "broken" else exits.RUN_FAILED
    assert res.returncode == want, res.stderr[-2000:]
    stats = {(r[C.TYPE], r[C.NAME]): r for r in rows(run_dir / C.STATS_CSV)}
    for key in EXPECTED[case]:
        requests, failures = int(stats[key][C.REQUEST_COUNT]), int(stats[key][C.FAILURE_COUNT])
        assert requests > 0 and failures == requests, (key, stats[key])  # nothing wrong passed
    if case == "broken":  # the list itself is valid: it never fails
        assert int(stats[("GET", "GET /albums")][C.FAILURE_COUNT]) == 0, stats
    errors: dict[tuple[str, str], set[str]] = {}
    for r in rows(run_dir / C.FAILURES_CSV):
        errors.setdefault((r[C.FAIL_METHOD], r[C.FAIL_NAME]), set()).add(r[C.FAIL_ERROR])
    assert set(errors) == set(EXPECTED[case]), errors
    for key, messages in EXPECTED[case].items():
        for message in messages:
            assert any(message in e for e in errors[key]), (key, message, errors[key])
