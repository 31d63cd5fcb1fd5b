"""A migration operation for the words people read about a model: its verbose names and its
fields' verbose names and help texts.

Django writes such a change as one AlterField per field, and each AlterField re-renders the field's
model and, for a relation, every model related to it, in the migration state and again around its
(empty) database step. Three hundred of them, for the admin's translated names, made every
migration test that moves the schema back and forth about six times slower. This operation changes
one model's names in the state at once, re-renders that model only (no column, constraint or
relation changes, so no other model's rendering depends on them) and does nothing in the database.
The autodetector compares the resulting state with the models as usual, so `makemigrations --check`
still sees any name that a migration lacks.
"""

from __future__ import annotations

from django.db.migrations.operations.base import Operation

FIELD_TEXTS = frozenset({"verbose_name", "help_text"})
MODEL_TEXTS = frozenset({"verbose_name", "verbose_name_plural"})


class SetNames(Operation):
    reduces_to_sql = False
    reversible = True

    def __init__(self, model_name: str, options: dict | None = None, fields: dict | None = None):
        self.model_name = model_name
        self.options = dict(options or {})
        self.fields = {name: dict(texts) for name, texts in (fields or {}).items()}
        unknown = set(self.options) - MODEL_TEXTS
        unknown |= {key for texts in self.fields.values() for key in texts} - FIELD_TEXTS
        if unknown:
            raise ValueError(f"SetNames changes names and help texts only, not {sorted(unknown)}")

    def deconstruct(self):
        kwargs = {"model_name": self.model_name}
        if self.options:
            kwargs["options"] = self.options
        if self.fields:
            kwargs["fields"] = self.fields
        return self.__class__.__qualname__, [], kwargs

    def state_forwards(self, app_label, state):
        model_state = state.models[app_label, self.model_name.lower()]
        model_state.options.update(self.options)
        for name, texts in self.fields.items():
            field_name, path, args, kwargs = model_state.fields[name].deconstruct()
            kwargs.update(texts)
            model_state.fields[name] = model_state.fields[name].__class__(*args, **kwargs)
        # The names are not part of any other model's rendering (reverse relations keep the same
        # columns), so only this model is rendered again.
        state.reload_model(app_label, self.model_name.lower(), delay=True)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        pass  # names and help texts are not in the database

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        pass

    def describe(self):
        return f"Set the names and help texts people read for {self.model_name}"

    @property
    def migration_name_fragment(self):
        return f"names_{self.model_name.lower()}"
