"""The module map of docs/development.md, made from the modules' own first docstring lines.

    python tests/docmap.py            print the map
    python tests/docmap.py --write    write it into docs/development.md (between the MARKERS)

tests/test_docs.py holds the page equal to what this makes from the tree, so a module added, moved
or renamed, or a first line rewritten, fails CI until the page says so too: the map cannot drift.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
BEGIN = (
    "<!-- module map: made by `python tests/docmap.py --write` from each module's first docstring line -->"
)
END = "<!-- end of the module map -->"

LAYERS = ("core", "latency", "page", "plugin", "compare", "runner", "analysis")
"""The packages, bottom layer first (pyproject.toml [tool.importlinter]); the top-level modules last."""


def first_line(path: Path) -> str:
    """The module docstring's first sentence-line(s): its first paragraph, joined into one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = doc.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).replace("|", "\\|")


def module_map() -> str:
    """Markdown: one table per package (its __init__'s first line above it), then the top level."""
    pkg_root = ROOT / "swarmbench"
    out: list[str] = []
    for layer in LAYERS:
        folder = pkg_root / layer
        out += [f"#### `swarmbench/{layer}/`", "", first_line(folder / "__init__.py"), ""]
        out += ["| module | what |", "| --- | --- |"]
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py":
                out.append(f"| `{path.name}` | {first_line(path)} |")
        out.append("")
    out += ["#### `swarmbench/` (top level) and `analysis/`", ""]
    out += ["| module | what |", "| --- | --- |"]
    top = [*sorted(pkg_root.glob("*.py")), *sorted((ROOT / "analysis").glob("*.py"))]
    for path in top:
        out.append(f"| `{path.relative_to(ROOT).as_posix()}` | {first_line(path)} |")
    return "\n".join(out).rstrip() + "\n"


def page_map(text: str) -> str:
    """The map as the page has it now (between the markers)."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{PAGE}: the markers of the module map are missing")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def write() -> None:
    text = PAGE.read_text(encoding="utf-8")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    PAGE.write_text(f"{before}{BEGIN}\n\n{module_map()}\n{END}{after}", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    elif sys.argv[1:]:
        raise SystemExit("usage: python tests/docmap.py [--write]")
    else:
        print(module_map(), end="")
