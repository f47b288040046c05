"""Thresholds: the grammar, the config chain (flag, LOCUST_CHECKS, conf file), the host-side check,
and evaluation on the stats of short real Locust runs against the real Go target.

Nothing here imports Locust into the pytest process: Locust monkey-patches the standard library
with gevent on import, which breaks other tests (subprocesses, Jupyter kernels). The grammar is
standard library only (loaded by path, as the host runner does); everything needing Locust runs in
a Locust process of its own.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from harness import ROOT, Target, run_locust
from runs import only_run

from swarmbench.core import folder
from swarmbench.core.checks import (
    AGGREGATED,
    METRICS,
    OPERATORS,
    CheckSyntaxError,
    parse_check,
    parse_checks,
)
from swarmbench.core.exits import UsageError
from swarmbench.latency.histogram import LatencyBook, new_histogram, percentile_ms
from swarmbench.runner import settings

FIXTURES = ROOT / "tests" / "fixtures" / "checks"


# --- grammar ------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", list(METRICS))
@pytest.mark.parametrize("op", list(OPERATORS))
def test_every_metric_and_operator(metric, op):
    c = parse_check(f"{metric}{op}0.5")
    assert (c.name, c.metric, c.op, c.limit) == (AGGREGATED, metric, op, 0.5)
    assert c.expr == f"{metric}{op}0.5"


@pytest.mark.parametrize(
    ("op", "measured", "limit", "passes"),
    [
        ("<", 299, 300, True), ("<", 300, 300, False),
        ("<=", 300, 300, True), ("<=", 301, 300, False),
        (">", 201, 200, True), (">", 200, 200, False),
        (">=", 200, 200, True), (">=", 199, 200, False),
    ],
)  # fmt: skip
def test_comparisons_are_strict_where_written(op, measured, limit, passes):
    assert parse_check(f"p95{op}{limit}").passes(measured) is passes


@pytest.mark.parametrize(
    ("expr", "name", "metric", "op", "limit"),
    [
        ("GET /albums/{id}:p99<500", "GET /albums/{id}", "p99", "<", 500),
        ("  GET /albums/{id} : p99 <= 500 ", "GET /albums/{id}", "p99", "<=", 500),
        # ':' inside a name: the split is on the LAST ':'
        ("GET /a:b/{x}:v2:rps>=12.5", "GET /a:b/{x}:v2", "rps", ">=", 12.5),
        ("POST /albums:fail_ratio<0.001", "POST /albums", "fail_ratio", "<", 0.001),
        ("Aggregated:p50>0", AGGREGATED, "p50", ">", 0),
        ("my request name with spaces:p95<1e3", "my request name with spaces", "p95", "<", 1000),
    ],
)
def test_endpoint_names(expr, name, metric, op, limit):
    c = parse_check(expr)
    assert (c.name, c.metric, c.op, c.limit) == (name, metric, op, limit)
    assert c.expr == expr.strip()


def test_several_per_value_and_repeated_values():
    got = parse_checks(["p95<300;GET /albums/{id}:p99<500;", " fail_ratio<0.01 ; rps>=200", ""])
    assert [c.expr for c in got] == ["p95<300", "GET /albums/{id}:p99<500", "fail_ratio<0.01", "rps>=200"]
    assert parse_checks(None) == [] and parse_checks("") == [] and parse_checks(" ; ") == []


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("p80<300", "unknown metric 'p80' (one of p50, p90, p95, p99, p99.9, max, fail_ratio, rps)"),
        ("avg<300", "unknown metric 'avg'"),
        ("<300", "unknown metric '<300'"),
        ("p95 300", "no comparison operator (use one of < <= > >=)"),
        ("p95", "no comparison operator"),
        ("p95=300", "operator '=' is not supported"),
        ("p95==300", "operator '==' is not supported"),
        ("p95!=300", "operator '!=' is not supported"),
        ("p95<300ms", "'300ms' is not a number (latencies are in ms, written without a unit)"),
        ("p95<", "'' is not a number"),
        ("rps>lots", "'lots' is not a number"),
        ("p95<-1", "the limit must be a finite number >= 0"),
        ("p95<inf", "the limit must be a finite number >= 0"),
        ("p95<nan", "the limit must be a finite number >= 0"),
        ("fail_ratio<5", "fail_ratio is a fraction from 0 to 1 (1 % is 0.01)"),
        (":p95<300", "empty endpoint name before ':'"),
        ("GET /x:", "unknown metric"),
    ],
)
def test_malformed_expressions_say_what_is_wrong(expr, message):
    with pytest.raises(CheckSyntaxError) as e:
        parse_check(expr)
    assert message in str(e.value)
    assert repr(expr.strip()) in str(e.value), "the message quotes the expression"


def test_first_malformed_expression_of_a_list_is_reported():
    with pytest.raises(CheckSyntaxError, match="'p9<1'"):
        parse_checks("p95<300;p9<1;nonsense")


# --- the config chain: flag, LOCUST_CHECKS, locust.conf (Locust's own parser + our option) -------


def resolved(*cases: dict) -> list[list[str]]:
    """The thresholds Locust's parser resolves for each {"args", "env", "conf"} case."""
    out = subprocess.run(
        [sys.executable, str(FIXTURES / "parse_checks.py")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_config_chain():
    flags = ["--check", "p95<300", "--check=GET /albums/{id}:p99<500;rps>=1"]
    env = {"LOCUST_CHECKS": "p95<300;GET /albums/{id}:p99<500;fail_ratio<0.01;rps>=200"}
    conf = "checks = p99<900; GET /albums:p50<100\n"
    assert resolved(
        {"args": flags},
        {"env": env},
        {"conf": conf},
        {"conf": "check = p50<7\n"},
        # precedence, as for Locust's own settings: flags > environment > conf file
        {"env": {"LOCUST_CHECKS": "p95<2"}, "conf": "checks = p50<1\n"},
        {"args": ["--check", "p99<3"], "env": {"LOCUST_CHECKS": "p95<2"}, "conf": "checks = p50<1\n"},
        {},
    ) == [
        ["p95<300", "GET /albums/{id}:p99<500", "rps>=1"],
        ["p95<300", "GET /albums/{id}:p99<500", "fail_ratio<0.01", "rps>=200"],
        ["p99<900", "GET /albums:p50<100"],
        ["p50<7"],
        ["p95<2"],
        ["p99<3"],
        [],
    ]


# --- the host runner validates LOCUST_CHECKS with the same grammar, without Locust ---------------


def test_host_runner_rejects_a_malformed_threshold_before_anything_starts():
    with pytest.raises(UsageError, match=r"^LOCUST_CHECKS: 'p95<fast': 'fast' is not a number"):
        settings.headless_from_env({"LOCUST_CHECKS": "p50<10;p95<fast"})
    ok = settings.headless_from_env({"LOCUST_CHECKS": "p95<300;GET /albums/{id}:p99<500"})
    assert ok.environ["LOCUST_CHECKS"] == "p95<300;GET /albums/{id}:p99<500"


def test_host_runner_grammar_needs_no_locust():
    """The runner and core are stdlib only: the threshold check must work where Locust is not installed."""
    code = (
        "import sys; sys.modules['locust'] = None; sys.modules['gevent'] = None\n"
        "from swarmbench.runner import settings\n"
        "print(settings.checks('LOCUST_CHECKS', 'GET /a:b:p99<5;rps>1'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['GET /a:b:p99<5', 'rps>1']"


# --- evaluation on the stats of a real run, compared with Locust's own locust_stats.csv -----------

EXPRS = [
    "p50<100000",
    "p95<100000",
    "p99<100000",
    "p99<0",
    "rps>=1",
    "fail_ratio<1",
    "GET /albums/{id}:v2:p95<100000",
    "GET /albums:fail_ratio<=0",
    "missing:fail_ratio<0.5",
    "shared:p95<100000",
    "shared:rps>0",
    "GET /nope:p95<300",
]


@pytest.fixture(scope="module")
def probe_run(albums_binary, tmp_path_factory):
    """One 3-second run of the probe users against the real Go target, with EXPRS as thresholds."""
    results = tmp_path_factory.mktemp("probe")
    target = Target(albums_binary)
    try:
        res = run_locust(
            "-f", f"locustfiles/swarmbench_plugin.py,{FIXTURES / 'probe_locustfile.py'}",
            "--headless", "-H", target.url, "-u", "4", "-r", "4", "-t", "3s",
            "--results-dir", str(results), "ProbeUser", env={"LOCUST_CHECKS": ";".join(EXPRS)},
        )  # fmt: skip
    finally:
        target.stop()
    assert res.returncode == 3, res.stderr[-3000:]  # p99<0, missing:fail_ratio, GET /nope are broken
    run_dir = only_run(results)
    with open(run_dir / "locust_stats.csv", newline="") as f:
        rows = {(r["Type"], r["Name"]): r for r in csv.DictReader(f)}
    man = json.loads((run_dir / "run.json").read_text())
    return {c["expr"]: c for c in man["checks"]}, rows, res.stdout, run_dir


def exact_rows(run_dir):
    """locust_latency_hdr.csv's service-time rows keyed by (Type, Name), as locust_stats.csv's."""
    with open(run_dir / "locust_latency_hdr.csv", newline="") as f:
        return {(r["type"], r["name"]): r for r in csv.DictReader(f) if r["kind"] == "service"}


def test_every_threshold_is_recorded_in_order(probe_run):
    checks, _, _, _ = probe_run
    assert list(checks) == EXPRS
    broken = [e for e, c in checks.items() if not c["passed"]]
    assert broken == ["p99<0", "missing:fail_ratio<0.5", "GET /nope:p95<300"]


def test_percentiles_are_the_exact_ones_of_the_latency_files(probe_run):
    checks, rows, _, run_dir = probe_run
    exact = exact_rows(run_dir)
    total = exact[("", "Aggregated")]
    assert int(total["count"]) == int(rows[("", "Aggregated")]["Request Count"]) > 100
    for metric in ("p50", "p95", "p99"):
        assert checks[f"{metric}<100000"]["measured"] == float(total[f"{metric}_ms"])
        assert checks[f"{metric}<100000"]["exact"] is True
    assert checks["GET /albums/{id}:v2:p95<100000"]["measured"] == float(
        exact[("GET", "GET /albums/{id}:v2")]["p95_ms"]
    )


def test_rps_and_fail_ratio_are_those_of_locust_stats_csv(probe_run):
    checks, rows, _, _ = probe_run
    total = rows[("", "Aggregated")]
    assert checks["rps>=1"]["measured"] == pytest.approx(float(total["Requests/s"]), abs=1e-3)
    ratio = int(total["Failure Count"]) / int(total["Request Count"])
    assert checks["fail_ratio<1"]["measured"] == pytest.approx(ratio, abs=1e-6)
    assert 0.15 < ratio < 0.25, "one request in five fails"
    assert checks["missing:fail_ratio<0.5"]["measured"] == 1.0
    assert checks["GET /albums:fail_ratio<=0"]["measured"] == 0.0


def test_same_name_under_two_methods_is_combined(probe_run):
    checks, rows, _, _ = probe_run
    get, post = rows[("GET", "shared")], rows[("POST", "shared")]
    both_rps = float(get["Requests/s"]) + float(post["Requests/s"])
    assert checks["shared:rps>0"]["measured"] == pytest.approx(both_rps, abs=2e-3)
    # The combined p95 is the p95 of the two methods' histograms merged, read back from the run's
    # own file. (It need not lie between the two methods' p95s: each rounds its target count on
    # its own, so with ~150 requests a method the merged one can be the next sample above both,
    # which is what an earlier bound here tripped on under load.)
    book = LatencyBook.read(probe_run[3] / folder.LATENCY_HDR_JSON)
    merged = new_histogram()
    for method in ("GET", "POST"):
        merged.add(book.hists[(method, "shared", "service")])
    timed = sum(int(exact_rows(probe_run[3])[(m, "shared")]["count"]) for m in ("GET", "POST"))
    assert merged.get_total_count() == timed > 0
    assert checks["shared:p95<100000"]["measured"] == percentile_ms(merged, 95)
    assert checks["shared:p95<100000"]["exact"] is True


def test_unknown_endpoint_fails_with_a_reason_not_a_crash(probe_run):
    checks, _, stdout, _ = probe_run
    assert checks["GET /nope:p95<300"] == {
        "expr": "GET /nope:p95<300",
        "name": "GET /nope",
        "metric": "p95",
        "op": "<",
        "limit": 300.0,
        "measured": None,
        "passed": False,
    }
    assert "swarmbench: check FAIL p95<300 (GET /nope): no request named 'GET /nope' in this run" in stdout


def test_console_lines(probe_run):
    checks, _, stdout, _ = probe_run
    lines = [ln for ln in stdout.splitlines() if ln.startswith("swarmbench: check ")]
    assert len(lines) == len(EXPRS)
    p95 = checks["p95<100000"]["measured"]
    assert f"swarmbench: check PASS p95<100000 (Aggregated): measured {p95:g} ms (exact)" in lines
    assert "swarmbench: check FAIL fail_ratio<0.5 (missing): measured 1 (100.00 %)" in lines
    assert any(ln.startswith("swarmbench: check PASS rps>=1 (Aggregated): measured ") for ln in lines)
    assert "swarmbench: 3 of 12 thresholds broken (exit code 3)" in stdout


def test_junit_xml(probe_run):
    checks, _, _, run_dir = probe_run
    root = ET.parse(run_dir / "junit.xml").getroot()
    [suite] = root.findall("testsuite")
    assert (root.get("tests"), root.get("failures")) == ("12", "3")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("12", "3", "0")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == EXPRS
    assert cases["p95<100000"].find("failure") is None
    failure = cases["p99<0"].find("failure")
    assert failure.get("message") == f"measured {checks['p99<0']['measured']:g} ms (exact), limit < 0 ms"
    assert failure.get("type") == "ThresholdBroken"
    assert "no request named" in cases["GET /nope:p95<300"].find("failure").get("message")


def test_a_run_without_requests_fails_every_threshold(albums_target, tmp_path):
    """No data is a failure, never a pass: a p95 of nothing proves nothing."""
    res = run_locust(
        "-f", f"locustfiles/swarmbench_plugin.py,{FIXTURES / 'probe_locustfile.py'}",
        "--headless", "-H", albums_target.url, "-u", "2", "-r", "2", "-t", "2s",
        "--results-dir", str(tmp_path), "--check", "p95<300;fail_ratio<0.01", "IdleUser",
    )  # fmt: skip
    # A run that served nothing is a failed run (exit 5), which outranks broken thresholds (3).
    assert res.returncode == 5, res.stderr[-2000:]
    assert "swarmbench: check FAIL p95<300 (Aggregated): no requests recorded for 'Aggregated'" in res.stdout
    man = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert [(c["measured"], c["passed"]) for c in man["checks"]] == [(None, False), (None, False)]
