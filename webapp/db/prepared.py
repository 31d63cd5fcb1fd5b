"""The review loop's hottest queries, built by the ORM once per process and shape, then run with
each request's values.

Building and compiling a queryset with subqueries costs the web server far more CPU than
PostgreSQL spends running it: the queue's window query took about 5 ms of Python to make and
0.25 ms to run, a note's neighbours 2 ms and 0.1 ms. A `Prepared` query is built once per shape
(what changes its SQL text: which filters apply, the LIMIT) with a probe in place of each value
(a number or text no real value takes), compiled, and the position of each probe among the SQL's
parameters noted; later requests of that shape run the same SQL with their values in those
positions. The SQL is the ORM's own, so it stays what the queryset says (joins, subqueries,
the database's dialect); a shape whose probes do not all come back as parameters unchanged (a
value the ORM converts) is not kept and runs through the ORM every time. `rows` gives the rows
as the database returns them: use it for plain columns (ids, numbers, text), not for values a
field converts. `objects` gives model instances as the queryset would (its fields' conversions,
its select_related objects), for a queryset of instances.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections, router
from django.db.models.query import get_related_populators

# Probes an integer field of any kind accepts (a value out of a field's range makes Django
# compile no SQL at all), far above any offset, count or id of a 32-bit key here.
_INT_PROBE = 2_147_000_000
_TEXT_PROBE = "\x01dsm-probe-{}\x01"


class _Probe:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def _probe_value(i: int, value):
    if isinstance(value, bool):
        raise TypeError("a flag changes the SQL: make it part of the shape")
    if isinstance(value, int):
        return _INT_PROBE + i
    if isinstance(value, str):
        return _TEXT_PROBE.format(i)
    raise TypeError(f"no probe for a {type(value).__name__}")


class Prepared:
    """`build(shape, **values)` -> a queryset of values_list rows; `rows(shape, **values)` runs
    its SQL, built once per process, database and shape (module doc)."""

    def __init__(self, build: Callable):
        self._build = build
        self._kept: dict[tuple, tuple[str, str, list] | None] = {}
        self._lock = threading.Lock()

    def queryset(self, shape, **values):
        return self._build(shape, **values)

    def rows(self, shape, **values) -> list[tuple]:
        kept = self._kept_for(shape, values)
        if kept is None:  # a shape the probes cannot describe: the ORM every time
            return list(self._build(shape, **values))
        return self._run(kept, values)

    def objects(self, shape, **values) -> list:
        """The model instances the queryset of `shape` gives for `values`, from the kept SQL:
        each field's value converted as the ORM converts it, select_related objects attached."""
        kept = self._kept_for(shape, values)
        if kept is None:
            return list(self._build(shape, **values))
        alias, compiler = kept[0], kept[3]
        select, klass_info = compiler.select, compiler.klass_info
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        names = [column[0].target.attname for column in select[start:end]]
        populators = get_related_populators(klass_info, select, alias)
        found = []
        for row in compiler.results_iter([self._run(kept, values)]):
            obj = klass_info["model"].from_db(alias, names, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            found.append(obj)
        return found

    def _kept_for(self, shape, values):
        names = tuple(sorted(values))
        key = (shape, names)
        with self._lock:
            kept = self._kept.get(key, False)
        if kept is False:
            kept = self._compile(shape, names, values)
            with self._lock:
                self._kept[key] = kept
        return kept

    @staticmethod
    def _run(kept, values) -> list[tuple]:
        alias, sql, slots, _compiler = kept
        params = [values[s.name] if isinstance(s, _Probe) else s for s in slots]
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    def _compile(self, shape, names, values):
        probes = {name: _probe_value(i, values[name]) for i, name in enumerate(names)}
        queryset = self._build(shape, **probes)
        alias = queryset.db if hasattr(queryset, "db") else router.db_for_read(queryset.model)
        compiler = queryset.query.get_compiler(using=alias)
        try:
            sql, params = compiler.as_sql()
        except (EmptyResultSet, FullResultSet):  # the probes made a condition always false or true
            return None
        by_value = {value: name for name, value in probes.items()}
        slots, seen = [], set()
        for param in params:
            name = by_value.get(param) if isinstance(param, (int, str)) and not isinstance(param, bool) else None
            if name is not None:
                slots.append(_Probe(name))
                seen.add(name)
            else:
                slots.append(param)
        if seen != set(names):
            return None
        if any(isinstance(p, str) and "\x01dsm-probe-" in p for p in slots):  # a probe inside a converted value
            return None
        if any(str(probe) in sql for probe in probes.values()):  # a value written into the SQL itself
            return None
        return alias, sql, slots, compiler  # as_sql set the columns `objects` reads (select, klass_info)
