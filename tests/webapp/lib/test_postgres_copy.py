"""COPY into a table (webapp.lib.postgres_copy) on real PostgreSQL: rows land, and the database's
errors come out as Django's classes, the ones the retry policy of long work tells apart."""

import psycopg
import pytest
from django.db import DataError, OperationalError, connection, transaction
from django.utils import timezone

from webapp.lib.postgres_copy import copy_rows
from webapp.lifecycle.ended import TRANSIENT
from webapp.projects.models import Project

COLUMNS = ["name", "slug", "description", "created"]


def rows(*names):
    return [(name, name.lower(), "", timezone.now()) for name in names]


@pytest.mark.django_db
def test_rows_are_written_in_the_callers_transaction():
    with transaction.atomic():
        copy_rows(Project, COLUMNS, rows("Cardiology", "Oncology"))
    assert set(Project.objects.values_list("slug", flat=True)) >= {"cardiology", "oncology"}


@pytest.mark.django_db
def test_a_value_the_column_refuses_is_djangos_data_error():
    with pytest.raises(DataError), transaction.atomic():
        copy_rows(Project, COLUMNS, [("Ward", "ward", "", "not a date")])
    assert not Project.objects.filter(slug="ward").exists()


@pytest.mark.django_db(transaction=True)
def test_the_server_ending_the_session_mid_copy_is_a_temporary_problem():
    """What pg_terminate_backend (an admin, a failover, a restart) does to a worker mid-build:
    psycopg raises AdminShutdown, which must reach the task as django.db.OperationalError."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    db = connection.settings_dict
    server = dict(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname="postgres")
    with psycopg.connect(**server, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()[0]
    try:
        with pytest.raises(OperationalError) as raised:
            copy_rows(Project, COLUMNS, rows("Nephrology"))
        assert isinstance(raised.value, TRANSIENT)
        assert isinstance(raised.value.__cause__, psycopg.OperationalError)  # the driver's, kept as the cause
    finally:
        connection.close()  # the next test gets a new session
    assert not Project.objects.filter(slug="nephrology").exists()
