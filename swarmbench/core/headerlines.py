"""`Name: value` header lines (a staging host's tokens): parsed and checked, never quoted.

Standard library only: the Locust plugin reads them in every process (plugin/headers.py), and the
runner checks the same lines before Docker starts (`make staging` with SWARMBENCH_HEADERS_FILE or
LOCUST_HEADERS), so a bad value costs a second, not an image build. Every error names the source
and the line, and the header's name; never its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

HEADERS_ENV = "LOCUST_HEADERS"
"""Environment variable with `Name: value` lines (newline-separated; values may contain ';')."""

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name


class HeaderSyntaxError(ValueError):
    """A malformed header line. The message names the source and line, never the value."""


def parse_headers(text: str, source: str) -> dict[str, str]:
    """`Name: value` lines; blank lines and lines starting with '#' are skipped.

    Lines end at LF only (CRLF line ends are fine): str.splitlines() would also split at
    characters such as U+2028 pasted INTO a value, and report half a value as a bad line."""
    out: dict[str, str] = {}
    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r").strip(" \t")
        if not line or line.startswith("#"):
            continue
        name, colon, value = line.partition(":")
        name = name.strip(" \t")
        if not colon or not _TOKEN.match(name):
            # No part of the line is quoted: it may be a bare token pasted without its name.
            raise HeaderSyntaxError(f"{source} line {n}: expected 'Name: value'")
        value = value.strip(" \t")
        problem = value_problem(value)
        if problem:
            raise HeaderSyntaxError(f"{source} line {n}: the value of {name} {problem}")
        out[name] = value
    return out


def value_problem(value: str) -> str | None:
    """Why VALUE cannot be sent as a header value, in words that never quote it; None if it can.

    RFC 9110 5.5: a field value is visible ASCII, spaces and tabs (plus obs-text, bytes 0x80-0xFF,
    which new fields "SHOULD" not use and both Locust clients would send as Latin-1, a charset the
    server rarely means). A character outside that is almost always a paste accident -- a curly
    quote, a non-breaking space, a Euro sign -- and FastHttpUser would put the whole value into
    its error message, and so into the run's CSVs and report. Refusing it here keeps it out."""
    if not value:
        return "is empty"
    for i, ch in enumerate(value, start=1):
        if ch == "\t" or " " <= ch <= "~":
            continue
        if ord(ch) < 0x20 or ord(ch) == 0x7F:
            return f"has a control character at position {i} (header values are visible ASCII)"
        return (
            f"has a non-ASCII character at position {i} (header values are visible ASCII; "
            "a curly quote or non-breaking space pasted from a document?)"
        )
    return None


def load_headers(headers_file: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """Headers from the file (if any), then LOCUST_HEADERS on top."""
    headers: dict[str, str] = {}
    if headers_file:
        headers.update(parse_headers(read_text(headers_file), f"headers file {headers_file}"))
    if environ.get(HEADERS_ENV):
        headers.update(parse_headers(environ[HEADERS_ENV], HEADERS_ENV))
    return headers


def read_text(path: str) -> str:
    """The headers file as text (UTF-8, a byte-order mark ignored); errors name the line, not bytes."""
    where = f"--headers-file/LOCUST_HEADERS_FILE {path}"
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise HeaderSyntaxError(f"{where}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise HeaderSyntaxError(f"headers file {path} line {line}: not UTF-8 text") from None
