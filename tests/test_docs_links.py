"""README and docs/ link only to files inside the repository (a clone has nothing beside it),
and the method description they point to lives in docs/METHOD.md."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# [text](target) links and [`path`] bracketed paths (the form the old README used).
LINK = re.compile(r"\]\(([^)\s]+)[^)]*\)|\[`([^`\]]+)`\]")


def _targets(path: Path):
    for match in LINK.finditer(path.read_text()):
        target = (match.group(1) or match.group(2)).split("#", 1)[0]
        if target and not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # skip http:, mailto:, ...
            yield target


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository_and_exist(doc):
    for target in _targets(doc):
        assert "../shared" not in target, f"{doc.name} links {target}, outside the repository"
        resolved = (doc.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{doc.name} links {target}, outside the repository"
        assert resolved.exists(), f"{doc.name} links {target}, which does not exist"


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
            if path != Path(__file__):
                pytest.fail(
                    f"{path.relative_to(ROOT)} cites METHOD.md without docs/: {text[match.start() - 40 : match.end()]}"
                )
