"""core/runfolder.py, the one door to a run folder, and core/figures.py, its one number parser and
display rule: real folders (the showcase runs, Locust's own CSVs of two versions, run.json schema 1
and 2, a stats-only folder), every refusal naming the file and line."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmbench import RunFolder, RunFolderError
from swarmbench.core.exits import InputError
from swarmbench.core.figures import MS_DECIMALS, number, numbers, show_ms

pytestmark = pytest.mark.background  # no clock in it: tests/suite gives it idle CPU priority

ROOT = Path(__file__).resolve().parents[1]
SHOWCASE = sorted((ROOT / "results" / "examples").glob("r1-*"))
LEGACY = ROOT / "tests" / "fixtures" / "analysis" / "legacy"
SCHEMA_1 = ROOT / "tests" / "fixtures" / "examples-2026-11-21" / "r1-w4-AlbumsFastHttpUser"


def _aggregated_requests(folder: Path) -> int:
    with open(folder / "locust_stats.csv", newline="", encoding="utf-8") as f:
        (row,) = [r for r in csv.DictReader(f) if r["Name"] == "Aggregated"]
    return int(row["Request Count"])


@pytest.mark.parametrize("folder", SHOWCASE, ids=lambda p: p.name)
def test_a_showcase_run_opens_with_its_aggregated_requests_and_exact_latency(folder: Path) -> None:
    run = RunFolder.open(folder)
    assert len(SHOWCASE) == 4
    assert run.aggregated is not None and run.aggregated.requests == _aggregated_requests(folder)
    assert run.manifest is not None and run.manifest.schema_version == 2 and run.run_id
    exact = run.exact
    assert ("", "Aggregated") in exact and exact[("", "Aggregated")].count == run.aggregated.requests
    assert all(0 < r.p50_ms <= r.p99_ms <= r.max_ms for r in exact.values() if r.count)
    assert run.windows_path == folder / "locust_latency_windows.csv"
    assert sum(r.requests for k, r in run.stats.items() if k != ("", "Aggregated")) == run.aggregated.requests


def test_a_folder_with_only_run_json_and_stats_opens(tmp_path: Path) -> None:
    for name in ("run.json", "locust_stats.csv"):
        shutil.copy(SHOWCASE[0] / name, tmp_path / name)
    run = RunFolder.open(tmp_path)
    assert run.aggregated.requests == _aggregated_requests(SHOWCASE[0])
    assert (run.failures, run.exact, run.windows_path) == ((), {}, None)


@pytest.mark.parametrize("version", ["locust-2.8.6", "locust-2.15.1"])
def test_plain_locust_csvs_open_without_run_json(version: str) -> None:
    run = RunFolder.open(LEGACY / version)
    assert run.manifest is None and run.run_id == version
    assert run.aggregated.requests == _aggregated_requests(LEGACY / version)
    get = run.stats[("GET", "GET /albums/{id}")]
    assert get.failures > 0 and get.p99_ms is not None and get.max_ms > get.p99_ms - 1
    assert run.failures and all(f.occurrences > 0 and f.method == "GET" for f in run.failures)


def test_older_header_spellings_read_as_todays(tmp_path: Path) -> None:
    shutil.copy(LEGACY / "locust-2.8.6" / "locust_stats.csv", tmp_path / "locust_stats.csv")
    path = tmp_path / "locust_stats.csv"
    text = (
        path.read_text()
        .replace("Request Count", "# requests")
        .replace("Median Response Time", "Median response time")
    )
    path.write_text(text.replace("Type,", "Method,", 1))
    run = RunFolder.open(tmp_path)
    assert run.aggregated.requests == _aggregated_requests(LEGACY / "locust-2.8.6")
    assert run.stats[("GET", "GET /albums")].median_ms == 5


def test_run_json_schema_1_reads_as_2() -> None:
    run = RunFolder.open(SCHEMA_1)
    assert run.manifest is not None and run.manifest.schema_version == 2
    assert run.manifest_json["schema_version"] == 1
    assert run.aggregated.requests == _aggregated_requests(SCHEMA_1)


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(SHOWCASE[0], folder)
    return folder


@pytest.mark.parametrize(
    ("file", "damage", "line", "says"),
    [
        ("locust_stats.csv", lambda t: t.rstrip("\n")[:-30], -1, "fields, the header has"),
        (
            "locust_stats.csv",
            lambda t: t.replace("GET,GET /albums,", "GET,GET /albums,x", 1),
            2,
            "not a number",
        ),
        ("locust_stats.csv", lambda t: t + t.splitlines()[1] + "\n", -1, "a second time"),
        ("locust_stats.csv", lambda t: "Foo,Bar\n1,2\n", 1, "not a Locust stats file"),
        ("locust_stats.csv", lambda t: t.splitlines()[0] + "\n", 2, "no rows"),
        ("run.json", lambda t: "{\n  not json", 2, "invalid JSON at line 2"),
        ("locust_latency_hdr.csv", lambda t: t + "GET,x,service\n", -1, "3 fields, the header has 11"),
        ("locust_failures.csv", lambda t: t + '"GET,x\n', 2, "fields"),
    ],
)
def test_a_refusal_names_the_file_and_the_line(
    tmp_path: Path, file: str, damage, line: int, says: str
) -> None:
    folder = _copy(tmp_path)
    path = folder / file
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    line = line if line > 0 else len(path.read_text(encoding="utf-8").splitlines())  # -1: the last
    with pytest.raises(RunFolderError) as e:
        run = RunFolder.open(folder)
        _ = run.exact, run.failures  # read when first asked for
    assert isinstance(e.value, InputError) and isinstance(e.value, ValueError)
    assert e.value.path == path and "\n" not in str(e.value) and says in str(e.value)
    if file != "run.json":
        assert (e.value.line, str(e.value).startswith(f"{path}: line {line}: ")) == (line, True)


def test_a_run_json_of_the_wrong_shape_is_refused_naming_its_key(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    (folder / "run.json").write_text('{"schema_version": 2, "users": "many"}')
    run = RunFolder.open(folder)
    with pytest.raises(RunFolderError, match="users") as e:
        _ = run.manifest
    assert e.value.path == folder / "run.json"


def test_a_folder_that_is_not_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunFolderError, match="not a run folder"):
        RunFolder.open(tmp_path)
    (tmp_path / "locust_stats.csv").write_bytes(b"\xff\xfe")
    with pytest.raises(RunFolderError, match="cannot read"):
        RunFolder.open(tmp_path)


def test_number_reads_what_locust_writes() -> None:
    assert [number(v) for v in ("5", " 25.05 ", "1e3", "N/A", "", None, "inf", "nan", "x", True)] == [
        5.0, 25.05, 1000.0, None, None, None, None, None, None, None]  # fmt: skip
    assert number("N/A", 0.0) == 0.0


@pytest.mark.parametrize(
    ("value", "shown"),
    [(26.959, "26.959"), (25.05221299998084, "25.052"), (1234567.0, "1234567"), (5.0, "5"), (-0.0, "0"),
     (0.0004, "0"), (float("nan"), "-"), (None, "-")],
)  # fmt: skip
def test_show_ms_examples(value: float | None, shown: str) -> None:
    assert show_ms(value) == shown


@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))
def test_a_shown_latency_never_contradicts_the_number(value: float) -> None:
    """Read back, the text is within half a unit of the last decimal kept (10**-MS_DECIMALS)."""
    shown = show_ms(value)
    assert abs(float(shown) - value) <= 0.5 * 10**-MS_DECIMALS * (1 + 1e-9) + abs(value) * 1e-15
    assert (
        "e" not in shown
        and not shown.endswith(".")
        and (shown == "0" or not shown.endswith("0") or "." not in shown)
    )


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_written_reads_back_as_itself(value: float) -> None:
    assert number(repr(value)) == value and number(f" {value!r}\n") == value


CELLS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.floats().map(repr),
    st.text(max_size=6),
    st.sampled_from(["N/A", "", "1e400", "inf", "nan", "1_000", " 2.5 ", "-0", ".5", "12."]),
)
"""Cells a row of figures may hold: numbers as text, Locust's N/A, blanks, and what is not one."""


@given(st.lists(CELLS, max_size=8))
def test_a_row_of_numbers_reads_as_each_cell_does(values: list) -> None:
    """numbers (the one-pass reading of a row) is number cell by cell, -0.0 and None included."""
    assert repr(numbers(values)) == repr([number(v) for v in values])


def test_the_terminal_the_page_and_the_junit_text_show_a_latency_alike() -> None:
    from swarmbench.core.checks import _show
    from swarmbench.page.run import ms

    for value in (25.05221299998084, 26.959, 1071.103, 1234567.0, 0.0):
        assert ms(value) == show_ms(value) == _show(value, "ms").removesuffix(" ms")


def test_the_terminal_prints_locusts_maximum_to_the_microsecond_as_the_page_does() -> None:
    from swarmbench.core.answer import read_answer, summary_text
    from swarmbench.page.run import render

    folder = LEGACY / "locust-2.8.6"
    assert RunFolder.open(folder).stats[("GET", "GET /albums/{id}")].max_ms == 25.05221299998084
    text = summary_text(read_answer(folder))
    assert " 25.052" in text and "25.0522" not in text
    assert "25.052" in render(folder) and "25.0522" not in render(folder)


def test_the_terminal_and_the_page_print_every_figure_of_a_row_alike() -> None:
    """One display rule (core/figures.py): requests, failures, req/s and latencies, cell for cell."""
    import re

    from swarmbench.core.answer import read_answer, summary_text
    from swarmbench.page.run import names_table

    answer = read_answer(SHOWCASE[0])
    text = summary_text(answer)
    page = names_table(answer.names, "t")
    for n in answer.names:
        line = next(x for x in text.splitlines() if x.startswith(n.name + " "))
        terminal = re.split(r"\s{2,}", line.strip())[1:]
        row = re.search(rf"<td>{re.escape(n.name)}</td><td>[^<]*</td>(.*?)</tr>", page)
        assert row is not None
        assert terminal == re.findall(r'<td class="n">([^<]*)</td>', row.group(1)), n.name
    assert any("," in cell for cell in terminal), "the showcase's Aggregated count has thousands"


def test_rows_are_immutable_and_compare_hash_and_print_by_their_fields() -> None:
    run = RunFolder.open(SHOWCASE[0])
    row, again = run.aggregated, RunFolder.open(SHOWCASE[0]).aggregated
    assert row is not None and again is not None
    with pytest.raises(AttributeError):
        row.requests = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        row.extra = 1  # type: ignore[attr-defined]
    assert row == again and hash(row) == hash(again) and row.key == ("", "Aggregated")
    assert (
        repr(row).startswith("StatsRow(type='', name='Aggregated', requests=") and row._replace(line=0) != row
    )
    exact = run.exact[("", "Aggregated")]
    assert (exact.kind, exact.count, type(exact).__name__) == ("service", row.requests, "ExactRow")


def test_a_json_error_names_the_line_a_text_reader_counts(tmp_path: Path) -> None:
    """Lone CR, CRLF and LF each end a line, as open()'s universal newlines count them."""
    for text, line in (
        ('{\n"a": 1,\n}', 3),
        ('{\r"a": 1,\r}', 3),
        ('{\r\n"a": 1,\r\n}', 3),
        ('{\r\n\r"a":\n}', 4),
    ):
        path = tmp_path / "run.json"
        path.write_bytes(text.encode())
        with pytest.raises(RunFolderError) as e:
            RunFolder.open(_stats_only(tmp_path))
        assert f"line {line}:" in str(e.value), (text, str(e.value))


def _stats_only(folder: Path) -> Path:
    shutil.copy(SHOWCASE[0] / "locust_stats.csv", folder / "locust_stats.csv")
    return folder
