"""Portable SQL expressions used by the corpus models' CHECK constraints.

Django has no lookup for "this JSON value is an array"; these two functions compile to
`jsonb_typeof`/`jsonb_array_length` on PostgreSQL and `json_type`/`json_array_length` on SQLite.
Migrations refer to them by import path: keep the names.
"""

from django.db.models import CharField, Func, IntegerField


class JSONType(Func):
    """'object', 'array', 'string', 'number', 'boolean' or 'null' (lower case on both)."""

    function = "JSON_TYPE"
    arity = 1
    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="JSONB_TYPEOF", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # json_type() says 'integer'/'real'/'true'/'false'; only 'array'/'object' are compared here.
        return self.as_sql(compiler, connection, function="JSON_TYPE", **extra)


class JSONArrayLength(Func):
    """Length of a JSON array; 0 for any other JSON value (never an error, unlike jsonb_array_length)."""

    arity = 1
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        template = (
            "(CASE WHEN JSONB_TYPEOF(%(expressions)s) = 'array' THEN JSONB_ARRAY_LENGTH(%(expressions)s) ELSE 0 END)"
        )
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="JSON_ARRAY_LENGTH", **extra)
