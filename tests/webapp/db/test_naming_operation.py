"""SetNames (webapp/db/naming_operation.py): a model's and its fields' names change in the migration
state, every other part of the field is kept, and nothing runs in the database."""

import io

import pytest
from django.core.management import call_command
from django.db import models
from django.db.migrations.state import ModelState, ProjectState

from webapp.db.naming_operation import SetNames


def state_with_a_ward():
    state = ProjectState()
    state.add_model(
        ModelState(
            "wards",
            "Ward",
            [
                ("id", models.AutoField(primary_key=True)),
                ("name", models.CharField(max_length=40, unique=True, help_text="as the hospital writes it")),
            ],
            options={"ordering": ["name"]},
        )
    )
    return state


def test_the_names_change_and_the_rest_of_the_field_is_kept():
    state = state_with_a_ward()
    assert state.apps.get_model("wards", "Ward")  # rendered, as in a migration: SetNames renders it again
    SetNames(
        "Ward",
        options={"verbose_name": "ward", "verbose_name_plural": "wards"},
        fields={"name": {"verbose_name": "ward name"}},
    ).state_forwards("wards", state)

    model_state = state.models["wards", "ward"]
    name = model_state.fields["name"]
    assert name.verbose_name == "ward name" and name.help_text == "as the hospital writes it"
    assert name.max_length == 40 and name.unique
    assert model_state.options["ordering"] == ["name"]
    assert (model_state.options["verbose_name"], model_state.options["verbose_name_plural"]) == ("ward", "wards")
    rendered = state.apps.get_model("wards", "Ward")
    assert rendered._meta.verbose_name == "ward" and rendered._meta.get_field("name").verbose_name == "ward name"


def test_anything_but_a_name_or_help_text_is_refused():
    with pytest.raises(ValueError, match="max_length"):
        SetNames("Ward", fields={"name": {"max_length": 80}})
    with pytest.raises(ValueError, match="ordering"):
        SetNames("Ward", options={"ordering": ["-name"]})


def test_it_writes_itself_back_as_it_was_made():
    made = SetNames("Ward", fields={"name": {"help_text": "h"}})
    name, args, kwargs = made.deconstruct()
    assert (
        name == "SetNames" and args == [] and kwargs == {"model_name": "Ward", "fields": {"name": {"help_text": "h"}}}
    )


@pytest.mark.django_db
@pytest.mark.parametrize("backwards", [False, True])
def test_the_admin_names_migration_runs_no_sql(backwards):
    out = io.StringIO()
    call_command("sqlmigrate", "pipeline", "0013_verbose_names", backwards=backwards, stdout=out)
    statements = [line for line in out.getvalue().splitlines() if line.strip() and not line.startswith("--")]
    assert statements in ([], ["BEGIN;", "COMMIT;"]), out.getvalue()
