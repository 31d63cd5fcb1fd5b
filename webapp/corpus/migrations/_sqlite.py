"""Migration operations that only make sense on SQLite, the embedded default (PostgreSQL skips them)."""

from django.db import migrations


class SQLiteOnly(migrations.RunSQL):
    """RunSQL that runs on SQLite and is a no-op on every other database."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "sqlite":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
