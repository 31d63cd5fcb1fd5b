"""Every module marked `embedded` is in the Makefile's EMBEDDED_TESTS, the paths the SQLite run
collects (collecting the whole tree to select a few tests costs a minute)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.embedded

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_marked_embedded_is_collected_by_the_sqlite_run():
    listed = re.search(r"^EMBEDDED_TESTS := (.+)$", (ROOT / "Makefile").read_text(), re.M)[1].split()
    assert all((ROOT / path).exists() for path in listed), listed
    marked = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if "pytest.mark.embedded" in path.read_text(encoding="utf-8")
    }
    missed = [m for m in marked if not any(m == p or m.startswith(p.rstrip("/") + "/") for p in listed)]
    assert marked and not missed, f"add to EMBEDDED_TESTS in the Makefile: {missed}"
