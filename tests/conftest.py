"""Shared fixtures: users of each role, logged-in clients."""

import os

import pytest

from tests.projects import default_project, make_member

DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}

PASSWORD = "correct-horse-battery-staple"


def _make_user(django_user_model, username, role=None, **extra):
    """A user with `role` in the default test project (tests/projects.py)."""
    user = django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)
    if role:
        make_member(user, role)
    return user


@pytest.fixture(autouse=True)
def test_project(request):
    """Every test with a database has the default test project (tests/projects.py): the only
    project unless the test makes another, so imports and commands that take the only one work."""
    wanted = DATABASE_FIXTURES & set(request.fixturenames)
    if request.node.get_closest_marker("django_db") is None and not wanted:
        return None
    request.getfixturevalue(sorted(wanted)[0] if wanted else "_django_db_helper")
    _seeded_rows()
    return default_project()


def _seeded_rows():
    """The rows migrations seed (the default model and peak profile, the role groups), made again
    if missing: a transactional test's flush removes them, and with make test's TEST_WORKERS a
    process may run such a test before any other (pytest-django orders tests within a process
    only). The migrations' own functions, so the rows are the same."""
    from importlib import import_module

    from django.apps import apps

    for migration, function in (
        ("webapp.pipeline.migrations.0002_defaults", "create_defaults"),
        ("webapp.accounts.migrations.0001_role_groups", "create_groups"),
    ):
        getattr(import_module(migration), function)(apps, None)


@pytest.fixture(autouse=True)
def english_after_each_test():
    """A page request activates its language in the thread and Django leaves it there, so a test
    that read a page in Italian would leave the next test reading Italian: each test ends in the
    default language again, whatever order the tests run in."""
    from django.conf import settings
    from django.utils import translation

    yield
    translation.activate(settings.LANGUAGE_CODE)


@pytest.fixture(autouse=True)
def fresh_review_catalog():
    """Each test starts without the review menus a process keeps (webapp.review.catalog): rows a
    test made and rolled back, or wrote without signals, are never offered to the next."""
    from webapp.review import catalog

    catalog.clear()


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """One plain `mlflow server` for the whole run (tests/webapp/integrations/mlflow_server.py),
    started by the first test that asks for it: the tests that log to it (in-process in
    tests/webapp/integrations/test_mlflow.py, a real worker in tests/workers/test_mlflow_logging.py)
    find what they logged by its run id and their models by the alias of their run, never by
    counting, so one server serves them all. Skipped (failed in CI) without an `mlflow` executable."""
    from tests.webapp.integrations.mlflow_server import running_mlflow_server

    with running_mlflow_server(tmp_path_factory.mktemp("mlflow")) as url:
        yield url


@pytest.fixture(scope="session")
def migrated_template():
    """The name of a migrated PostgreSQL database that benchmark and drill subprocesses copy
    instead of migrating a database of their own (benchmarks.database.TEMPLATE_ENV: pass it in
    their environment). Migrated by the first test of a process that asks (one `migrate` a process
    instead of one a benchmark), dropped at the end; named after the run's database and the xdist
    process, so two processes or runs never share it. Skipped without PostgreSQL."""
    import subprocess
    import sys
    from pathlib import Path
    from urllib.parse import urlparse, urlunparse

    import psycopg

    from benchmarks.database import create_database, database_for

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("needs PostgreSQL (DATABASE_URL)")
    parsed = urlparse(url)
    name = f"{parsed.path.lstrip('/')}_template_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"[-63:]
    template_url = urlunparse(parsed._replace(path=f"/{name}"))
    _, admin = database_for(template_url)

    def drop():  # not benchmarks' drop_database: that closes this process's Django connections too
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    drop()  # one a killed run left may predate a migration
    create_database(template_url)  # empty: DSM_MIGRATED_TEMPLATE is set for the subprocesses only
    env = {**os.environ, "DATABASE_URL": template_url, "DEBUG": "1"}
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    yield name
    drop()


@pytest.fixture
def clinician(db, django_user_model):
    return _make_user(django_user_model, "clara", "clinician")


@pytest.fixture
def researcher(db, django_user_model):
    return _make_user(django_user_model, "rita", "researcher")


@pytest.fixture
def admin_user(db, django_user_model):
    return _make_user(django_user_model, "ada", "admin", is_staff=True)


@pytest.fixture
def site_admin(db, django_user_model):
    """A superuser: manages projects and members, sees every project."""
    return _make_user(django_user_model, "sam", is_staff=True, is_superuser=True)


@pytest.fixture
def norole_user(db, django_user_model):
    return _make_user(django_user_model, "nobody")


@pytest.fixture
def client_for(client):
    """client_for(user) -> a test client logged in as that user."""

    def login(user):
        client.force_login(user)
        return client

    return login


def pytest_report_header(config):
    """Say which database and broker the run uses, so CI output shows the real services."""
    import os

    from django.conf import settings

    db = settings.DATABASES["default"]
    # host/name: the name tells concurrent runs apart (TEST_RUN in the Makefile).
    where = f"{db['ENGINE'].rsplit('.', 1)[-1]} " + (
        f"{db['HOST']}/{db['NAME']}" if db.get("HOST") else str(db["NAME"])
    )
    return [f"database: {where}", f"broker: {os.environ.get('REDIS_URL') or settings.CELERY_BROKER_URL}"]


# Files whose tests take minutes, started first (tests/workers/test_fault_drill.py's drill alone is
# about three): `make test` spreads whole files over two processes in the order collected, and in
# path order these came last, leaving one process on them while the other had nothing left.
LONGEST_FIRST = ("tests/workers/test_fault_drill.py", "tests/webapp/home/test_rundemo.py")


@pytest.hookimpl(trylast=True)  # after tests/browser/conftest.py has marked its tests
def pytest_collection_modifyitems(config, items):
    """The slow files first (the longest of them before the others), then the browser's, then the
    rest: the quick tests fill in at the end whichever process ends its share first. A stable sort
    on a file's rank, so each file's tests keep their order; every process sorts the same way."""

    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        if path in LONGEST_FIRST:
            return LONGEST_FIRST.index(path)
        if item.get_closest_marker("slow"):
            return len(LONGEST_FIRST)
        return len(LONGEST_FIRST) + (1 if item.get_closest_marker("browser") else 2)

    file_rank = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        file_rank[path] = min(file_rank.get(path, 99), rank(item))
    items.sort(key=lambda item: file_rank[item.nodeid.split("::", 1)[0]])
