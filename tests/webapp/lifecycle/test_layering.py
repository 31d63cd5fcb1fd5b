"""The lifecycle of long work is a lower layer: the apps build on it, so no module of
webapp/lifecycle imports an app (anywhere in the module, lazy imports included). An app's own
use of the lifecycle (its estimate, its task names) lives in the app."""

import ast
from pathlib import Path

from django.conf import settings

import webapp.lifecycle

LIFECYCLE = Path(webapp.lifecycle.__file__).parent
APPS = [app for app in settings.INSTALLED_APPS if app.startswith("webapp.")]


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved from webapp.lifecycle."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = "webapp.lifecycle".rsplit(".", node.level - 1)[0]
                base = f"{package}.{base}" if base else package
            modules.add(base)
            modules.update(f"{base}.{alias.name}" for alias in node.names)  # `from webapp import corpus`
    return modules


def imports_of_apps(path: Path) -> list[str]:
    return sorted(m for m in imported_modules(path) if any(m == app or m.startswith(app + ".") for app in APPS))


def test_the_apps_above_the_lifecycle_are_known():
    assert {"webapp.corpus", "webapp.pipeline", "webapp.datasets", "webapp.training", "webapp.evaluation"} <= set(APPS)
    assert "webapp.lifecycle" not in APPS


def test_no_lifecycle_module_imports_an_app():
    modules = sorted(LIFECYCLE.glob("*.py"))
    assert LIFECYCLE / "estimates.py" in modules
    found = {path.name: imports_of_apps(path) for path in modules}
    assert {name: apps for name, apps in found.items() if apps} == {}


def test_the_check_sees_an_import_of_an_app(tmp_path):
    module = tmp_path / "upward.py"
    module.write_text(
        "from webapp.pipeline import jobs\n"
        "def late():\n"
        "    import webapp.training.runs\n"
        "    from webapp import corpus\n"
        "    from ..datasets.launch import BUILD_TASK\n"
        "from webapp.lifecycle import queue\n"
    )
    assert {name.split(".")[1] for name in imports_of_apps(module)} == {"pipeline", "training", "corpus", "datasets"}
