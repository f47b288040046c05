"""Extra request headers (tokens, API keys) for a staging host, kept out of images and results.

Two sources, both read at run time in each Locust process:

- LOCUST_HEADERS_FILE (--headers-file): a file of `Name: value` lines; `make staging` mounts the
  host's SWARMBENCH_HEADERS_FILE read-only into the containers and points this at it;
- LOCUST_HEADERS: the same lines in an environment variable (e.g. a CI secret); wins on a name
  that both give.

LOCUST_HEADERS is deliberately NOT a Locust option: an option can be set as a flag (visible in
`ps`) or in locust.conf (committed), and Locust ships every option from master to workers and
into its web UI. Values are never logged, never in error messages, never in run.json: only the
header NAMES are recorded ("request_headers"). A value that cannot be sent (a curly quote, a
control character: core/headerlines.py) stops the run with its source, line and name; and should a
server or locustfile echo a value anyway, redact.py removes it from the logs and the run folder.

Every HttpUser and FastHttpUser class of the run sends them with every request (a header a task
passes explicitly still wins for that request).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from locust import HttpUser
from locust.contrib.fasthttp import FastHttpUser
from locust.env import Environment

from swarmbench.core.headerlines import HeaderSyntaxError, load_headers
from swarmbench.plugin.errors import die

logger = logging.getLogger("swarmbench")

_PATCHED = "_swarmbench_headers"


def install_headers(user_class: type, headers: dict[str, str]) -> bool:
    """Make USER_CLASS's client send HEADERS; False for a class with no HTTP client we know."""
    if issubclass(user_class, FastHttpUser):
        # FastHttpUser passes default_headers to its session: exactly this hook.
        user_class.default_headers = {**(user_class.default_headers or {}), **headers}
        return True
    if issubclass(user_class, HttpUser):
        # HttpUser has no such attribute; its requests.Session is made in __init__, so extend that.
        if not vars(user_class).get(_PATCHED):
            original = user_class.__init__

            def __init__(self, *args, **kwargs) -> None:
                original(self, *args, **kwargs)
                self.client.headers.update(headers)

            user_class.__init__ = __init__
            setattr(user_class, _PATCHED, True)
        return True
    return False


def load(opts: Any) -> dict[str, str]:
    """This process's headers (--headers-file, then LOCUST_HEADERS); a malformed source stops the
    run with one line naming the source and line, never a value."""
    try:
        return load_headers(opts.headers_file, os.environ)
    except HeaderSyntaxError as e:
        die(str(e))


def install_all(environment: Environment, headers: dict[str, str]) -> None:
    """Every user class of the run sends HEADERS (load generators only: a master sends nothing)."""
    classes = {*environment.user_classes, *(environment.available_user_classes or {}).values()}
    for cls in sorted(classes, key=lambda c: c.__name__):
        if not install_headers(cls, headers):
            logger.warning("%s has no HTTP client we know: its requests get no extra headers", cls.__name__)
    logger.info("Sending extra request headers: %s (values hidden)", ", ".join(sorted(headers)))
