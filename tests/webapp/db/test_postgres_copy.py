"""COPY into a table (webapp.db.postgres_copy) on real PostgreSQL: rows land, and the database's
errors come out as Django's classes, the ones the retry policy of long work tells apart."""

import psycopg
import pytest
from django.db import DataError, OperationalError, connection, transaction
from django.utils import timezone

from webapp.db.postgres_copy import copy_rows
from webapp.lifecycle.ended import TRANSIENT
from webapp.projects.models import Project

COLUMNS = ["name", "slug", "description", "created"]


def rows(*names):
    return [(name, name.lower(), "", timezone.now()) for name in names]


class Undone(Exception):
    pass


@pytest.mark.django_db
def test_rows_are_written_in_the_callers_transaction_and_undone_with_it():
    with transaction.atomic():
        copy_rows(Project, COLUMNS, rows("Cardiology", "Oncology"))
    with pytest.raises(Undone), transaction.atomic():
        copy_rows(Project, COLUMNS, rows("Geriatrics"))
        assert Project.objects.filter(slug="geriatrics").exists()  # visible inside the transaction
        raise Undone
    slugs = set(Project.objects.values_list("slug", flat=True))
    assert {"cardiology", "oncology"} <= slugs and "geriatrics" not in slugs


@pytest.mark.django_db
def test_a_value_the_column_refuses_is_djangos_data_error():
    with pytest.raises(DataError), transaction.atomic():
        copy_rows(Project, COLUMNS, [("Ward", "ward", "", "not a date")])
    assert not Project.objects.filter(slug="ward").exists()


@pytest.mark.django_db(transaction=True)
def test_a_session_the_server_ended_is_a_temporary_problem_for_copy():
    """A worker's session ended by the server (pg_terminate_backend: an admin, a failover, a
    restart) between its queries: its next COPY must fail as django.db.OperationalError, the class
    the retry policy knows, not as psycopg's own error."""
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
