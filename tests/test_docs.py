"""The docs cannot drift from the repository: every relative link and `#anchor` in a tracked .md file
resolves, every `make TARGET` they name is a Makefile rule, and the exit codes are ONE table
(docs/ci.md "Exit codes") equal to the constants of swarmbench/core/exits.py.

The checkers are plain functions over text, so the tests at the bottom also run them on small broken
examples: a checker that finds nothing wrong with a broken link would let every real test pass.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import docmap
import pytest
from harness import ROOT

from swarmbench.core import exits

CI_PAGE = ROOT / "docs" / "ci.md"
EXIT_HEADING = "Exit codes"

FENCE = re.compile(r"^\s{0,3}(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold one level of [...] (an image in a link).
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s<>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto: are not checked here
MAKE = re.compile(r"(?<![\w./-])make\s+([^#;&|)]*)")
MAKE_RULE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)", re.M)
HELP_TEXT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:[^=#\n]*## (.*)$", re.M)


def md_files(root: Path = ROOT) -> list[Path]:
    """Tracked .md files, plus new ones not yet committed (a new page is checked before its commit)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "*.md"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = [root / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):  # not a checkout (an sdist, a copied tree)
        skip = {".git", ".venv", "node_modules"}
        files = [p for p in root.rglob("*.md") if not skip & set(p.relative_to(root).parts)]
    return sorted(p for p in files if p.is_file())


def numbered_lines(text: str) -> list[tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block) for every line but the fences themselves."""
    out, fenced = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and (fenced is None or m[1] == fenced):
            fenced = m[1] if fenced is None else None
            continue
        out.append((n, line, fenced is not None))
    return out


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks: a `#` comment in a shell block is no heading,
    a `[x](y)` in a code sample no link."""
    return [(n, line) for n, line, code in numbered_lines(text) if not code]


def code_snippets(text: str) -> list[tuple[int, str]]:
    """(line number, code): every line of a fenced block, and every inline code span of the prose."""
    out = []
    for n, line, code in numbered_lines(text):
        out.extend([(n, line)] if code else ((n, span[2]) for span in INLINE_CODE.finditer(line)))
    return out


def slug_base(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text (code spans, links and emphasis reduced to
    their text), lowercased, punctuation except '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link (or image) -> its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())  # \w is Unicode: letters, digits, '_'
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor GitHub gives a page: one per heading (a repeated one gets -1, -2, ...) and
    explicit <a name=...>/<a id=...>."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(text):
        out.update(HTML_ANCHOR.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug_base(m[2])
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def link_problems(root: Path, files: list[Path]) -> list[str]:
    """`FILE:LINE: PROBLEM` for every relative link that points at no file, or at no heading."""
    problems = []
    cache: dict[Path, set[str]] = {}
    for md in files:
        text = md.read_text(encoding="utf-8")
        for n, line in prose_lines(text):
            line = INLINE_CODE.sub("`code`", line)  # a link written inside code is an example
            for target in LINK.findall(line):
                if SCHEME.match(target):
                    continue
                path_part, _, anchor = target.partition("#")
                dest = (md.parent / unquote(path_part)).resolve() if path_part else md
                where = f"{md.relative_to(root)}:{n}: {target}"
                if not dest.exists():
                    problems.append(f"{where}: no such file")
                    continue
                if not dest.is_relative_to(root.resolve()):
                    problems.append(f"{where}: outside the repository")
                    continue
                if anchor and dest.suffix == ".md":
                    if dest not in cache:
                        cache[dest] = anchors(dest.read_text(encoding="utf-8"))
                    if unquote(anchor) not in cache[dest]:
                        problems.append(f"{where}: no heading with that anchor")
    return problems


def make_targets(makefile: Path) -> set[str]:
    """The Makefile's rules (`name:` at the start of a line; `VAR := value` is not a rule)."""
    return set(MAKE_RULE.findall(makefile.read_text(encoding="utf-8"))) - {"override"}


def named_make_targets(text: str) -> list[tuple[int, str]]:
    """(line, target) for each `make TARGET` in the page's code: variables (`VAR=value`) and flags
    may come before the target; `make VAR=value` alone names none."""
    found = []
    for n, code in code_snippets(text):
        code = re.sub(r"(^|\s)#.*$", "", code)  # a shell comment is prose: "# 5 make up 20 s"
        for m in MAKE.finditer(code):
            for word in m[1].split():
                if "=" in word or word.startswith(("-", '"', "'")):
                    continue
                if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", word):
                    found.append((n, word))
                break
    return found


def make_problems(root: Path, files: list[Path], targets: set[str]) -> list[str]:
    return [
        f"{md.relative_to(root)}:{n}: `make {word}`: no such Makefile target"
        for md in files
        for n, word in named_make_targets(md.read_text(encoding="utf-8"))
        if word not in targets
    ]


def table_rows(lines: list[str]) -> list[list[str]]:
    """The cells of a markdown table's rows (header first, the --- line dropped); `\\|` is a '|'."""
    rows = []
    for line in lines:
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
            rows.append(cells)
    return rows


def tables(text: str) -> list[list[list[str]]]:
    """Every table of a page: runs of prose lines that start with '|'."""
    out, current = [], []
    for _, line in [*prose_lines(text), (0, "")]:
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            out.append(table_rows(current))
            current = []
    return out


def section(text: str, heading: str) -> str:
    """The prose under HEADING, up to the next heading of the same or a higher level."""
    out: list[str] | None = None
    level = 0
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if out is not None and m and len(m[1]) <= level:
            break
        if out is not None:
            out.append(line)
        elif m and m[2] == heading:
            out, level = [], len(m[1])
    assert out is not None, f"no heading {heading!r}"
    return "\n".join(out)


def exit_table(text: str) -> dict[str, int]:
    """CONSTANT -> code from the one table under "Exit codes": columns code | constant | meaning."""
    found = [t for t in tables(section(text, EXIT_HEADING)) if t and t[0][0].lower() == "code"]
    assert len(found) == 1, f"{len(found)} exit-code tables under {EXIT_HEADING!r}, want one"
    table: dict[str, int] = {}
    for row in found[0][1:]:
        assert re.fullmatch(r"\d+", row[0]) and re.fullmatch(r"`[A-Z_]+`", row[1]), f"bad row {row}"
        assert row[1].strip("`") not in table, f"{row[1]} twice"
        table[row[1].strip("`")] = int(row[0])
    return table


def exit_constants() -> dict[str, int]:
    """Every int constant of core/exits.py (MEASURED is a tuple of them, not a code of its own)."""
    return {
        name: int(value)
        for name, value in vars(exits).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }


# --- the repository's docs ---------------------------------------------------------------------


def test_the_docs_exist_and_are_found():
    files = {p.relative_to(ROOT).as_posix() for p in md_files()}
    # Guards the other tests: an empty file list would make every check below pass.
    assert {"README.md", "docs/ci.md", "docs/headless.md", "docs/results.md"} <= files
    assert len([f for f in files if f.startswith("docs/")]) >= 7


def test_every_relative_link_and_anchor_resolves():
    assert link_problems(ROOT, md_files()) == []


def test_every_make_target_named_in_the_docs_exists():
    targets = make_targets(ROOT / "Makefile")
    assert {"help", "headless", "test", "sweep", "knee"} <= targets
    named = [w for md in md_files() for _, w in named_make_targets(md.read_text(encoding="utf-8"))]
    assert len(named) > 20  # the docs name make targets everywhere; zero means the scan broke
    assert make_problems(ROOT, md_files(), targets) == []


def test_exit_code_table_equals_core_exits():
    constants = exit_constants()
    assert {"OK", "THRESHOLDS_BROKEN", "DEGRADED", "RUN_FAILED", "INTERRUPTED_SIGTERM"} <= set(constants)
    assert exit_table(CI_PAGE.read_text(encoding="utf-8")) == constants


def test_exit_codes_have_one_table():
    """No other page keeps a copy of the table (a copy drifts: the README's once said 3 was Locust's)."""
    codes = set(exit_constants().values())
    copies = []
    for md in md_files():
        for table in tables(md.read_text(encoding="utf-8")):
            firsts = {row[0].strip("`") for row in table[1:]}
            if len({str(c) for c in codes} & firsts) >= 3:
                copies.append(md.relative_to(ROOT).as_posix())
    assert copies == ["docs/ci.md"]


def test_make_help_points_at_every_exit_code():
    """`make help` lists the help texts: one that numbers exit codes must number them all, and a
    page it names must exist. `make headless`'s points at the table."""
    helps = dict(HELP_TEXT.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    assert "docs/ci.md" in helps["headless"]
    codes = {str(c) for c in exit_constants().values()}
    for target, text in helps.items():
        for page in re.findall(r"\bdocs/[\w./-]+\.md", text):
            assert (ROOT / page).is_file(), f"make {target}: {page} does not exist"
        numbers = set(re.findall(r"\b\d+\b", text.split("exit", 1)[1])) if "exit" in text else set()
        assert not numbers or codes <= numbers, f"make {target}: lists exit codes {numbers}, not all {codes}"


# --- the checkers themselves, on broken examples --------------------------------------------------


def test_slugs_follow_githubs_rules():
    assert slug_base("Finding the knee: `make knee`") == "finding-the-knee-make-knee"
    assert slug_base("The example: `results/examples/`") == "the-example-resultsexamples"
    assert slug_base("Secrets: request headers (staging)") == "secrets-request-headers-staging"
    assert slug_base("run_id & status") == "run_id--status"
    assert anchors("# A\n## A\n```sh\n# not a heading\n```\n## A\n") == {"a", "a-1", "a-2"}


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Exit codes\n\ntext\n")
    (tmp_path / "Makefile").write_text("X := 1\n.PHONY: up\nup: ## web UI\n\techo\n$(X)/y: up\n")
    return tmp_path


def problems_of(repo: Path, readme: str) -> list[str]:
    (repo / "README.md").write_text(readme)
    return link_problems(repo, [repo / "README.md", repo / "docs" / "page.md"])


def test_link_checker_finds_broken_links(tiny_repo: Path):
    assert problems_of(tiny_repo, "[ok](docs/page.md#exit-codes) [top](#title)\n# Title\n") == []
    assert problems_of(tiny_repo, "see [gone](docs/gone.md)\n") == ["README.md:1: docs/gone.md: no such file"]
    assert problems_of(tiny_repo, "![img](docs/nope.png)\n") == ["README.md:1: docs/nope.png: no such file"]
    assert problems_of(tiny_repo, "[x](docs/page.md#exit-code)\n") == [
        "README.md:1: docs/page.md#exit-code: no heading with that anchor"
    ]
    assert problems_of(tiny_repo, "[x](#nowhere)\n") == ["README.md:1: #nowhere: no heading with that anchor"]
    assert problems_of(tiny_repo, "[x](../outside.md)\n") != []
    # Links in code and to other sites are not checked.
    assert problems_of(tiny_repo, "`[x](gone.md)`\n```md\n[x](gone.md)\n```\n[w](https://a.b/c)\n") == []


def test_make_checker_finds_unknown_targets(tiny_repo: Path):
    targets = make_targets(tiny_repo / "Makefile")
    assert targets == {"up"}
    doc = tiny_repo / "docs" / "page.md"
    doc.write_text('`make up` and `make VAR=1`\n```sh\nW=2 make up X="a b"  # make upp\nmake down\n```\n')
    assert make_problems(tiny_repo, [doc], targets) == [
        "docs/page.md:4: `make down`: no such Makefile target"  # not line 3's comment: "make upp"
    ]
    doc.write_text("they make it stand in; `WORKERS=1 make -s upp`\n")
    assert make_problems(tiny_repo, [doc], targets) == ["docs/page.md:1: `make upp`: no such Makefile target"]


def test_exit_table_checker_sees_a_missing_or_extra_code():
    good = "\n".join(f"| {c} | `{n}` | m |" for n, c in exit_constants().items())
    page = f"## Exit codes\n\n| code | constant | meaning |\n| --- | --- | --- |\n{good}\n\n## Next\n"
    assert exit_table(page) == exit_constants()
    extra = page.replace("\n\n## Next", "\n| 6 | `SIX` | m |\n\n## Next")
    assert exit_table(extra) != exit_constants()
    missing = page.replace("| 4 | `DEGRADED` | m |\n", "")
    assert exit_table(missing) != exit_constants()
    with pytest.raises(AssertionError, match="2 exit-code tables"):
        exit_table(page.replace("\n\n## Next", "\n\n| code | x |\n| --- | --- |\n| 0 | `OK` |\n"))


def test_the_module_map_equals_the_tree():
    """docs/development.md's module map is what tests/docmap.py makes from the modules' docstrings:
    a module added, moved or renamed, or its first docstring paragraph rewritten, must show there
    (`python tests/docmap.py --write`)."""
    made = docmap.module_map()
    assert made.count("| `") > 40, "the map lists too few modules to mean anything"
    assert docmap.page_map(docmap.PAGE.read_text(encoding="utf-8")) == made, (
        "docs/development.md's module map is stale: run `python tests/docmap.py --write`"
    )


def test_every_module_says_what_it_is():
    """A module of the package without a docstring would leave a blank row in the map."""
    blank = [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "swarmbench").rglob("*.py"))
        if not docmap.first_line(p)
    ]
    assert blank == []


# --- one package list: pyproject.toml's `layers` contract ---------------------------------------------


def package_list_problems(groups: list[list[str]], described: list[str], folders: list[str]) -> list[str]:
    """What differs from the `layers` contract's GROUPS (top first): the package folders of
    swarmbench/ (FOLDERS: each must be a layer) and swarmbench/__init__.py's lines (DESCRIBED:
    one per layer, in the contract's order)."""
    named = [n for group in groups for n in group]
    problems = [f"swarmbench/{f}/ is in no layer of pyproject.toml" for f in folders if f not in named]
    if described != named:
        problems.append(f"swarmbench/__init__.py describes {described}, the layers are {named}")
    return problems


def runner_contract_problems(contracts: list[dict], packages: list[str]) -> list[str]:
    """The runner is the standard library and core only: its forbidden contract must name every
    other package of swarmbench/ and every third-party package any contract names (or psycopg)."""
    (runner,) = [c for c in contracts if c["id"] == "runner"]
    forbidden = set(runner["forbidden_modules"])
    others = {f"swarmbench.{p}" for p in packages if p not in ("core", "runner")}
    external = {
        m for c in contracts for m in c.get("forbidden_modules", ()) if not m.startswith("swarmbench")
    }
    return [
        f"the runner's contract does not forbid {m}"
        for m in sorted((others | external | {"psycopg"}) - forbidden)
    ]


def package_folders() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "swarmbench").glob("*/__init__.py"))


def test_the_package_list_is_the_layers_contract():
    """Every package of swarmbench/ is a layer, and __init__'s docstring lists the layers in order
    (`history` and `page` included); the drawing and the contracts' table on the page are made from
    them (`python tests/docmap.py --write`)."""
    described = [name for name, _ in docmap.described()]
    assert package_list_problems(docmap.layer_groups(), described, package_folders()) == []
    assert {"history", "page"} <= set(docmap.packages())
    (layers,) = [c for c in docmap.contracts() if c["id"] == "layers"]
    said = " > ".join("|".join(g) for g in docmap.layer_groups())
    assert said in layers["name"], f"the layers contract's name should say {said}"
    assert docmap.page_layers(docmap.PAGE.read_text(encoding="utf-8")) == docmap.layers_block(), (
        "docs/development.md's layer drawing is stale: run `python tests/docmap.py --write`"
    )


def test_the_runner_contract_forbids_all_it_must_not_import():
    assert runner_contract_problems(docmap.contracts(), docmap.packages()) == []


def test_the_package_list_checks_catch_drift():
    """The checkers on broken copies: a package left out of the layers or of __init__, a drawing
    without it, a runner contract that lets it in."""
    groups, folders = docmap.layer_groups(), package_folders()
    named = [n for group in groups for n in group]
    without = [[n for n in g if n != "history"] for g in groups]
    assert package_list_problems(without, [n for n in named if n != "history"], folders) == [
        "swarmbench/history/ is in no layer of pyproject.toml"
    ]
    assert package_list_problems(groups, [n for n in named if n != "page"], folders)
    assert package_list_problems(groups, named[::-1], folders)
    contracts = [
        {**c, "forbidden_modules": [m for m in c["forbidden_modules"] if m != "swarmbench.history"]}
        if c["id"] == "runner"
        else c
        for c in docmap.contracts()
    ]
    assert runner_contract_problems(contracts, docmap.packages()) == [
        "the runner's contract does not forbid swarmbench.history"
    ]
    page = docmap.PAGE.read_text(encoding="utf-8")
    assert docmap.page_layers(page.replace("   └─ history", "   └─ histories")) != docmap.layers_block()
