"""Rows streamed into a table with PostgreSQL's COPY (psycopg 3): the bulk write of imports and
dataset builds, several times faster than INSERTs. Triggers and constraints apply.

COPY is psycopg's own API, under Django's cursor, so its errors would reach the caller as
psycopg's classes, not Django's: the server ending the session mid-COPY raised
psycopg.errors.AdminShutdown, which is no django.db.OperationalError, so the retry policy of
long work (webapp.lifecycle.ended.TRANSIENT) took a temporary problem for a failed build. Django's
error wrapper translates them, as for every query Django runs itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection


def copy_rows(model, columns: Sequence[str], rows: Iterable[tuple]) -> None:
    """COPY `rows` (tuples in the order of `columns`) into the model's table, inside the caller's
    transaction. A database error is raised as Django's class (OperationalError, DataError, ...)."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
