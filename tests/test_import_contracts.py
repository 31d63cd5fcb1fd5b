"""The layers as contracts (.importlinter, docs/ARCHITECTURE.md "The apps' order, enforced"):
`make lint` runs them, and this test keeps them in `make test`, so a green suite never hides an
import against the layers: ml without Django, the web app or workers; webapp.lib without Django;
the web app without workers; the apps in their order; no two modules importing each other."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout, done.stdout[-6000:]
