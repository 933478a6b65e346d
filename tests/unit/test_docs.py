"""The code's citations of the documentation resolve: every `docs/<file>.md "Section"` is a heading."""

import re
import subprocess
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
        for document, section in CITATION.findall(path.read_text(errors="ignore"))
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
