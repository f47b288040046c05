"""The Locust image holds every module the plugin needs: .dockerignore lets in exactly the files
that locustfiles/, swarmbench/plugin/ and the image's entrypoint (`python -m swarmbench launch`:
swarmbench/__main__.py and the module-level imports of swarmbench/cli.py) import, transitively, and
nothing of the runner or the analysis (the image has neither pandas nor Docker). A module added to
the shared code but not to .dockerignore would only fail inside a container, at the first docker
test."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

from harness import ROOT

ENTRY = [*sorted((ROOT / "locustfiles").glob("*.py")), *sorted((ROOT / "swarmbench" / "plugin").glob("*.py"))]
TOP_LEVEL_ONLY = [ROOT / "swarmbench" / "__main__.py", ROOT / "swarmbench" / "cli.py"]
"""The entrypoint: what these import at their top (every other command imports its code when it
runs, on the host)."""


def allowed() -> list[str]:
    """The `!path` lines of .dockerignore (everything else is ignored: its first rule is `*`)."""
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    assert lines[[line.strip() for line in lines].index("*")] == "*", ".dockerignore must start from *"
    return [line[1:].rstrip("/") for line in lines if line.startswith("!")]


def in_context(path: Path, rules: list[str]) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == r or rel.startswith(r + "/") or fnmatch.fnmatch(rel, r) for r in rules)


def module_file(name: str) -> Path | None:
    base = ROOT / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(path: Path, top_level_only: bool = False) -> set[Path]:
    """The swarmbench modules PATH imports (absolute and relative imports), as files."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = set()
    tree = ast.parse(path.read_text())
    for node in tree.body if top_level_only else ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            if name.startswith("swarmbench") and (found := module_file(name)):
                out.add(found)
    return out


def needed() -> set[Path]:
    todo, seen = list(ENTRY), set(TOP_LEVEL_ONLY)
    for path in TOP_LEVEL_ONLY:
        todo.extend(imported_files(path, top_level_only=True))
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(imported_files(path) - seen)
    return seen


def test_every_module_the_plugin_imports_is_in_the_image():
    rules, files = allowed(), needed()
    assert len(files) > 20, "the import walk found too little to mean anything"
    missing = sorted(f.relative_to(ROOT).as_posix() for f in files if not in_context(f, rules))
    assert not missing, f"add to .dockerignore (the image lacks them): {missing}"


def test_the_image_has_no_runner_or_analysis():
    rules = allowed()
    for module in (
        "swarmbench/runner/compose.py",
        "swarmbench/analysis/report.py",
        "swarmbench/compare/stats.py",
    ):
        assert not in_context(ROOT / module, rules), f"{module} would make the image need pandas/Docker"


def test_the_walk_sees_relative_and_absolute_imports():
    files = imported_files(ROOT / "swarmbench" / "plugin" / "wiring.py")
    names = {f.relative_to(ROOT).as_posix() for f in files}
    assert "swarmbench/plugin/lifecycle.py" in names and "swarmbench/core/exits.py" in names
