"""The code stays navigable: a function over MAX_FUNCTION_LINES says why it is long (a "Long on
purpose: why" comment in it). Checked on every Python file git tracks or would add, bench/ and tests/
included. Files have no line limit: a module is one concept, long when the concept is (Locust's
stats.py); what keeps the package navigable is its layers (`make lint`: lint-imports) and the module
map in docs/development.md (tests/test_docs.py)."""

from __future__ import annotations

import ast
import subprocess

from harness import ROOT

MAX_FUNCTION_LINES = 60
MARK = "Long on purpose"


def python_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return sorted(f for f in set(out.stdout.split()) if (ROOT / f).is_file())


def long_functions(source: str) -> list[tuple[str, int]]:
    """(name, lines) of every function over MAX_FUNCTION_LINES without a MARK comment in it."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = lines[node.lineno - 1 : node.end_lineno]
            if len(body) > MAX_FUNCTION_LINES and not any(MARK in line for line in body):
                out.append((node.name, len(body)))
    return out


def test_a_long_function_says_why():
    files = python_files()
    assert len(files) > 50, "git listed too few files: the check would pass on nothing"
    found = {f: bad for f in files if (bad := long_functions((ROOT / f).read_text()))}
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines without a '{MARK}: why' comment: {found}"


def test_the_checker_sees_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = f"def f():\n{body}\n"
    assert long_functions(source) == [("f", MAX_FUNCTION_LINES + 1)]
    assert long_functions(source.replace("def f():\n", f"def f():\n    # {MARK}: a table\n")) == []
