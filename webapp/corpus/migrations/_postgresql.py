"""Migration operations that only make sense on PostgreSQL (SQLite, the embedded default, skips them)."""

from django.db import migrations


class PostgreSQLOnly(migrations.RunSQL):
    """RunSQL that runs on PostgreSQL and is a no-op on every other database."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
