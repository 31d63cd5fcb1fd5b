"""webapp.db.planner_stats on PostgreSQL: the tables the app knows it just wrote get statistics
at once, instead of waiting for an autovacuum that never comes for a table this small."""

import pytest
from django.db import connection

from webapp.db.planner_stats import analyze, refresh_planner_stats
from webapp.pipeline.models import MapConfiguration

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's planner statistics")


def reltuples(model) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
        return cursor.fetchone()[0]


def set_statistics(model, rows: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute("UPDATE pg_class SET reltuples = %s WHERE oid = %s::regclass", [rows, model._meta.db_table])


def forget_statistics(model) -> None:
    set_statistics(model, -1)  # as on a new database: "never analyzed", planned as pages of rows


@pytest.mark.django_db
def test_a_new_relevance_configuration_is_analyzed_where_it_is_made():
    forget_statistics(MapConfiguration)
    first = MapConfiguration.id_of("attnlrp", "en", "cfg-planner-a")
    assert reltuples(MapConfiguration) >= 1  # counted, though not committed yet
    forget_statistics(MapConfiguration)
    assert MapConfiguration.id_of("attnlrp", "en", "cfg-planner-a") == first  # known: no ANALYZE again
    assert reltuples(MapConfiguration) == -1


@pytest.mark.django_db
def test_refresh_analyzes_only_a_table_whose_statistics_say_it_is_smaller():
    MapConfiguration.id_of("attnlrp", "en", "cfg-planner-b")
    forget_statistics(MapConfiguration)
    refresh_planner_stats(MapConfiguration, 0)  # nothing asked: nothing done
    assert reltuples(MapConfiguration) == -1
    refresh_planner_stats(MapConfiguration, 1)
    assert reltuples(MapConfiguration) >= 1
    set_statistics(MapConfiguration, 1000)  # a made-up figure an ANALYZE would correct
    refresh_planner_stats(MapConfiguration, 1000)  # already says at least that: left alone
    assert reltuples(MapConfiguration) == 1000
    analyze(MapConfiguration)
    assert reltuples(MapConfiguration) < 1000
