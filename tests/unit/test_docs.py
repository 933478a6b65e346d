"""The code's citations of the documentation resolve: every `docs/<file>.md "Section"` is a heading."""

import ast
import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r'docs/([a-z_]+\.md) "([^"]+)"')


def tracked_files() -> list[Path]:
    listing = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in listing.stdout.splitlines() if (ROOT / name).is_file()]


def headings(document: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in document.read_text().splitlines() if line.startswith("#")}


def test_every_cited_section_exists():
    cited = {
        (document, section)
        for path in tracked_files()
        if path.suffix in {".py", ".md", ".toml"}
        # A citation wrapped across lines in a docstring names the heading with one space.
        for document, section in (
            (document, " ".join(section.split()))
            for document, section in CITATION.findall(path.read_text(errors="ignore"))
        )
    }
    assert cited, "the code cites the docs"
    missing = sorted(
        (document, section)
        for document, section in cited
        if section not in headings(ROOT / "docs" / document)
    )
    assert missing == []


def test_nothing_cites_a_design_file_outside_the_repository():
    outside = "DESIGN" + " §"  # spelled in two parts, so this file does not cite it either
    assert [path for path in tracked_files() if outside in path.read_text(errors="ignore")] == []


PACKAGE = ROOT / "layers/core/src/hippocampus"
CODE_NAME = re.compile(r"`([A-Za-z0-9_/]+\.py)`")


def section(document: Path, heading: str) -> str:
    """The text under `## heading`, up to the next heading of the same level."""
    text = document.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def defines_something(init: Path) -> bool:
    """An `__init__.py` with a function or a class: a module a reader needs to find."""
    tree = ast.parse(init.read_text())
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in tree.body)


def modules_of_the_package() -> set[str]:
    """Every module a reader needs named, by its path inside the package (`domain/ingest/service.py`)."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or (path.parent != PACKAGE and defines_something(path))
    }


def modules_of_the_layers_table() -> set[str]:
    """The modules the "Layers" table names: a row's own module, or each name in the row's cells by
    its path inside the row's folder (`ingest/service.py` in the `domain/` row)."""
    named: set[str] = set()
    for line in section(ROOT / "docs/architecture.md", "Layers").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or not cells[0].startswith("`"):
            continue  # not a row of the table (the header, its rule, the prose)
        row = cells[0].strip("`")
        folder = row if row.endswith("/") else ""
        if not folder:
            named.add(row)
        named |= {folder + name for cell in cells[1:] for name in CODE_NAME.findall(cell)}
    return named


def test_the_layers_table_names_every_module_of_the_package_and_no_other():
    table, package = modules_of_the_layers_table(), modules_of_the_package()
    assert table, 'docs/architecture.md "Layers" has a table of the modules'
    assert sorted(package - table) == [], 'modules missing from docs/architecture.md "Layers"'
    assert sorted(table - package) == [], 'names in docs/architecture.md "Layers" that are not modules'


def modules_of_the_readme_layout() -> Counter[str]:
    """The module names (`service.py`) in README "Code layout", in the lines of the core package."""
    lines = section(ROOT / "README.md", "Code layout").splitlines()
    first = next(index for index, line in enumerate(lines) if line.startswith("layers/core/"))
    last = next(index for index in range(first + 1, len(lines)) if not lines[index].startswith(" "))
    return Counter(name for line in lines[first + 1 : last] for name in re.findall(r"\b\w+\.py\b", line))


def test_the_readme_layout_names_every_module_of_the_package_and_no_other():
    package = Counter(Path(module).name for module in modules_of_the_package())
    readme = modules_of_the_readme_layout()
    assert sorted((package - readme).elements()) == [], 'modules missing from README "Code layout"'
    assert sorted((readme - package).elements()) == [], 'names in README "Code layout" that are not modules'
