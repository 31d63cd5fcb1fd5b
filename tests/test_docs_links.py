"""The method description README and docs/ point to lives in docs/METHOD.md, inside the repository
(that every link leads to a file of the repository: tests/test_docs.py)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_readme_points_to_the_method_in_docs():
    assert "](docs/METHOD.md)" in (ROOT / "README.md").read_text()
    method = (ROOT / "docs" / "METHOD.md").read_text()
    for section in (
        "## Relevance",
        "## Peaks",
        "## Masking",
        "## DSM training",
        "## Adaptation to the labeled tasks",
        "## Evaluation",
    ):
        assert section in method


def test_no_code_or_doc_cites_the_method_outside_the_repository():
    for path in [
        *ROOT.glob("ml/**/*.py"),
        *ROOT.glob("webapp/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("ml/**/*.md"),
        *DOCS,
    ]:
        text = path.read_text()
        assert "shared/design/METHOD.md" not in text or path == Path(__file__), path
        for match in re.finditer(r"(?<!docs/)METHOD\.md", text):
            in_docs = path.parent == ROOT / "docs" and text[: match.start()].endswith("](")
            if path != Path(__file__) and not in_docs:  # docs/ links it as a sibling: (METHOD.md)
                pytest.fail(
                    f"{path.relative_to(ROOT)} cites METHOD.md without docs/: {text[match.start() - 40 : match.end()]}"
                )
