"""The module map and the layer drawing of docs/development.md, made from pyproject.toml's import
contracts and the modules' own first docstring lines.

    python tests/docmap.py            print the map
    python tests/docmap.py --write    write the drawing and the map into docs/development.md

The package list is kept in ONE place, `[tool.importlinter]`'s `layers` contract (which `make lint`
enforces); everything else is made from it or checked against it by tests/test_docs.py:
- the module map (between MARKERS): one table per package, in the contract's order;
- the layer drawing and the contracts' table (between LAYER_MARKERS): each layer's packages, each
  described by its line in swarmbench/__init__.py's docstring, and every contract's own name;
- swarmbench/__init__.py's docstring: one line per package, in the contract's order (checked, not
  written: it is the short description the drawing takes).
So a package added to the contract, a module added, moved or renamed, or a first line rewritten,
fails CI until the page says so too: neither can drift.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "development.md"
PYPROJECT = ROOT / "pyproject.toml"
PACKAGE_DOC = ROOT / "swarmbench" / "__init__.py"
BEGIN = (
    "<!-- module map: made by `python tests/docmap.py --write` from each module's first docstring line -->"
)
END = "<!-- end of the module map -->"
LAYERS_BEGIN = (
    "<!-- layers: made by `python tests/docmap.py --write` from pyproject.toml [tool.importlinter] -->"
)
LAYERS_END = "<!-- end of the layers -->"

PACKAGE_LINE = re.compile(r"^    ([a-z_]+) {2,}(\S.*)$")
"""A package's line in swarmbench/__init__.py's docstring: four spaces, its name, its description."""


def contracts() -> list[dict]:
    """pyproject.toml's import contracts, as lint-imports reads them."""
    with PYPROJECT.open("rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def layer_groups() -> list[list[str]]:
    """The `layers` contract: each layer's names (siblings: `a | b`), the top layer first."""
    (layers,) = [c for c in contracts() if c["id"] == "layers"]
    return [[name.strip() for name in layer.split("|")] for layer in layers["layers"]]


def packages() -> list[str]:
    """The packages of swarmbench/ the contract names, the bottom layer first, siblings in the
    contract's order (cli is a module, not a package)."""
    groups = reversed(layer_groups())
    return [n for group in groups for n in group if (ROOT / "swarmbench" / n).is_dir()]


def described() -> list[tuple[str, str]]:
    """(name, description) of each line of swarmbench/__init__.py's docstring that names a layer."""
    doc = ast.get_docstring(ast.parse(PACKAGE_DOC.read_text(encoding="utf-8"))) or ""
    return [(m[1], m[2]) for m in map(PACKAGE_LINE.match, doc.splitlines()) if m]


def layers_block() -> str:
    """Markdown: the drawing (each layer, siblings side by side, described as __init__ describes
    them) and the table of every contract by its own name."""
    text = dict(described())
    width = max(len(n) for group in layer_groups() for n in group) + 2
    lines = ["```"]
    for i, group in enumerate(layer_groups()):
        if i:
            lines.append("   │")
        if len(group) == 1:
            lines.append(f"  {group[0]:<{width + 3}}{text.get(group[0], '?')}")
        else:
            for j, name in enumerate(group):
                branch = "└─" if j == len(group) - 1 else "├─"
                lines.append(f"   {branch} {name:<{width}}{text.get(name, '?')}")
    lines += ["```", "", "| contract | holds |", "| --- | --- |"]
    for c in contracts():
        holds = c["name"].replace("|", "\\|")
        lines.append(f"| `{c['id']}` | {holds} |")
    return "\n".join(lines) + "\n"


def first_line(path: Path) -> str:
    """The module docstring's first sentence-line(s): its first paragraph, joined into one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = doc.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).replace("|", "\\|")


def module_map() -> str:
    """Markdown: one table per package (its __init__'s first line above it), then the top level."""
    pkg_root = ROOT / "swarmbench"
    out: list[str] = []
    for layer in packages():
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


def between(text: str, begin: str, end: str) -> str:
    """What the page has between BEGIN and END now."""
    if begin not in text or end not in text:
        raise SystemExit(f"{PAGE}: the markers {begin!r} ... {end!r} are missing")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def page_map(text: str) -> str:
    """The map as the page has it now (between the markers)."""
    return between(text, BEGIN, END)


def page_layers(text: str) -> str:
    """The drawing and the contracts' table as the page has them now."""
    return between(text, LAYERS_BEGIN, LAYERS_END)


def replace(text: str, begin: str, end: str, made: str) -> str:
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    return f"{before}{begin}\n\n{made}\n{end}{after}"


def write() -> None:
    text = PAGE.read_text(encoding="utf-8")
    text = replace(text, LAYERS_BEGIN, LAYERS_END, layers_block())
    PAGE.write_text(replace(text, BEGIN, END, module_map()), encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    elif sys.argv[1:]:
        raise SystemExit("usage: python tests/docmap.py [--write]")
    else:
        print(layers_block(), module_map(), sep="\n", end="")
