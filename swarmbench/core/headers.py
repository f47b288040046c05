"""Request headers for a staging host (tokens, API keys): `Name: value` lines parsed and checked, never
quoted, and their values kept out of every log line and saved file.

`Name: value` header lines (a staging host's tokens): parsed and checked, never quoted.

Standard library only: the Locust plugin reads them in every process (plugin/options.py), and the
runner checks the same lines before Docker starts (`make staging` with SWARMBENCH_HEADERS_FILE or
LOCUST_HEADERS), so a bad value costs a second, not an image build. Every error names the source
and the line, and the header's name; never its value.

The last line of defence for secret header values: they never reach a log line or a saved file.

headers.py refuses a value that cannot be sent, so no HTTP client should ever echo one. But a
server can echo a token in an error page that a locustfile turns into a failure, a locustfile can
log or raise with it, a client library can quote it: every such text ends up in the run folder
(failures/exceptions CSVs, Locust's locust_report.html, the run page report.html, run.json,
junit.xml) or the console. So, in every Locust
process that loaded headers:

- `install_redaction()` (at init) puts a logging filter on every handler Locust configured (the console,
  the web UI's log reader, --logfile): each record is formatted once and every secret replaced;
- `scrub_folder()` (after the run folder is complete, on the master or standalone runner) rewrites
  any file of the run folder that contains a secret, each replaced atomically.

A secret is searched for as written and as Python's repr, JSON, CSV and HTML would escape it (and
those escapes of each other: a repr inside a CSV cell inside the HTML report's JSON)."""

from __future__ import annotations

import functools
import html
import importlib.util
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from swarmbench.core.atomic import Unchanged, atomic_file
from swarmbench.core.folder import LOCUST_REPORT_HTML

# --- `Name: value` lines --------------------------------------------------------------------------

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


# --- the last line of defence: redaction ----------------------------------------------------------

REDACTED = "[REDACTED]"
"""What replaces a secret value. Plain ASCII: safe inside CSV, JSON and HTML without escaping."""

MIN_SECRET_LEN = 8
"""Values (and words of a value) shorter than this are not searched for: replacing "1" or "yes"
everywhere would corrupt the CSVs' numbers and names, and a credential that short is no secret."""

ESCAPE_DEPTH = 3
"""How many escapings deep a secret is still found: a value inside an exception's repr, inside a
CSV cell, inside the report's HTML/JSON is three."""


def _htmlsafe_json(s: str) -> str:
    out = json.dumps(s)[1:-1]
    for ch, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        out = out.replace(ch, code)
    return out


_ESCAPES: tuple[Callable[[str], str], ...] = (
    lambda s: repr(s)[1:-1],  # Python repr, as quoted by an exception message
    lambda s: repr(s + '"')[1:-2],  # repr when the text also holds a quote of the other kind
    lambda s: json.dumps(s)[1:-1],
    lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    _htmlsafe_json,  # Jinja's |tojson: how report.html embeds Locust's data
    lambda s: s.replace('"', '""'),  # a CSV cell
    lambda s: html.escape(s, quote=True),
    lambda s: html.escape(s, quote=False),
)


def secrets_of(headers: dict[str, str]) -> list[str]:
    """Each value, and each word of it long enough to be a credential on its own ("Bearer TOKEN":
    a server may echo only TOKEN); longest first so a value is replaced before its words."""
    found: set[str] = set()
    for value in headers.values():
        for candidate in (value, *value.split()):
            if len(candidate) >= MIN_SECRET_LEN:
                found.add(candidate)
    return sorted(found, key=len, reverse=True)


def spellings(secret: str) -> set[str]:
    """SECRET as written and under every combination of up to ESCAPE_DEPTH escapings."""
    out = {secret}
    frontier = {secret}
    for _ in range(ESCAPE_DEPTH):
        frontier = {escape(s) for s in frontier for escape in _ESCAPES} - out
        out |= frontier
    return out


class Redactor:
    """Replaces every spelling of every secret with REDACTED, in text and in bytes."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms = sorted({f for s in secrets for f in spellings(s)}, key=len, reverse=True)
        self.active = bool(forms)
        alternatives = "|".join(map(re.escape, forms)) or r"(?!)"
        self._text = re.compile(alternatives)
        # Values are visible ASCII (core/headers.py refuses anything else), so every spelling is too.
        by_length = sorted({f.encode("utf-8", "surrogateescape") for f in forms}, key=len, reverse=True)
        self._bytes = re.compile(b"|".join(map(re.escape, by_length)) or rb"(?!)")

    def text(self, s: str) -> str:
        return self._text.sub(REDACTED, s) if self.active else s

    def data(self, b: bytes) -> bytes:
        return self._bytes.sub(REDACTED.encode(), b) if self.active else b


class RedactingFilter(logging.Filter):
    """Formats a record's message (and traceback) once, redacted, so no handler prints the value."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__("swarmbench.redact")
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        r = self.redactor
        try:
            message = record.getMessage()
        except Exception:  # a locustfile's bad %-format: leave it to logging's own error report
            return True
        record.msg, record.args = r.text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = r.text(record.exc_text)  # Formatter.format uses exc_text when set
        if record.stack_info:
            record.stack_info = r.text(record.stack_info)
        return True


def _handlers() -> set[logging.Handler]:
    """Every handler of the root logger and of every named logger (Locust's "locust" and
    "locust.stats_logger" do not propagate and have handlers of their own)."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return {h for lg in loggers if isinstance(lg, logging.Logger) for h in lg.handlers}


def install_redaction(headers: dict[str, str]) -> Redactor:
    """Redact HEADERS' values from every log handler of this process (called once Locust has set up
    its logging, at init). Returns the redactor for the run folder."""
    redactor = Redactor(secrets_of(headers))
    if redactor.active:
        filt = RedactingFilter(redactor)
        for handler in _handlers():
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(filt)
    return redactor


def scrub_folder(folder: Path, headers: dict[str, str]) -> list[Path]:
    """Rewrite every file under FOLDER that holds a secret value, each by an atomic rename (a
    reader sees the old file or the redacted one). Returns the files that changed."""
    redactor = Redactor(secrets_of(headers))
    if not redactor.active:
        return []
    changed = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        if _scrub_file(path, redactor, locust_code=path.name == LOCUST_REPORT_HTML):
            changed.append(path)
    if changed:
        logging.getLogger("swarmbench").warning(
            "A secret header value was in %d saved file(s); replaced by %s: %s",
            len(changed),
            REDACTED,
            ", ".join(p.name for p in changed),
        )
    return changed


@functools.cache
def _locust_static_lines() -> frozenset[bytes]:
    """The lines of Locust's report template, which locust_report.html repeats verbatim around its data:
    public code, so never a secret. A header value that happens to occur in them (a word such as
    "production" is in the bundled JavaScript) must not be cut out of the report's code."""
    spec = importlib.util.find_spec("locust")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    template = Path(next(iter(spec.submodule_search_locations))) / "webui" / "dist" / "report.html"
    try:
        return frozenset(template.read_bytes().splitlines())
    except OSError:
        return frozenset()


def _scrub_file(path: Path, redactor: Redactor, locust_code: bool = False) -> bool:
    """Line by line into a temp file beside PATH (a long history CSV never sits in memory); no
    secret spans a line (header values have no line breaks, and neither do their escapes).
    LOCUST_CODE: PATH is Locust's report, whose template lines are kept as they are; every other file
    (the run page included: all of it is data) is scrubbed throughout."""
    changed = False
    with atomic_file(path, "wb") as dst, open(path, "rb") as src:
        for line in src:
            clean = redactor.data(line)
            if clean != line and locust_code and line.rstrip(b"\r\n") in _locust_static_lines():
                clean = line
            changed = changed or clean != line
            dst.write(clean)
        if not changed:
            raise Unchanged  # nothing secret in it: the file stays as it was, untouched
    return changed
