"""PostgreSQL's planner statistics for tables the app writes in bulk or keeps tiny.

Autovacuum analyzes a table once it has seen 50 changes plus 10% of its rows, checked once a
minute. Two kinds of table miss that: a table filled in bulk moments ago (its statistics still
say it is empty: the planner scans instead of walking an index), and a table that never reaches
50 rows, such as pipeline_mapconfiguration (one row per relevance configuration). A table never
analyzed is planned as if it held pages of rows; joined into every map query, that one row
turned the review queue's indexed queries into scans and made the database the review server's
bottleneck (review-load benchmark: 22 ms of PostgreSQL CPU a request under 20 reviewers, 7 ms
once analyzed). Both are cheap to analyze here, where the app knows it just wrote them.
"""

from __future__ import annotations

from django.db import connection


def analyze(model) -> None:
    """ANALYZE the model's table (PostgreSQL; nothing elsewhere). Inside a transaction it counts
    the rows this transaction wrote."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def refresh_planner_stats(model, at_least: int) -> None:
    """ANALYZE the model's table when PostgreSQL's statistics say it holds fewer than `at_least`
    rows (rows bulk-written moments ago, before autovacuum's analyze). With such statistics the
    planner scans every map of the model version for each batch, or sorts every remaining example
    for each export batch, instead of walking the selective index: the run becomes quadratic."""
    if connection.vendor != "postgresql" or not at_least:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
        row = cursor.fetchone()
    if row is None or row[0] < at_least:
        analyze(model)
