"""`manage.py load_task_catalog`: idempotent, reports counts, audited, refuses harmful changes."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ml.catalog import load_catalog
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Note, Task


def load(*args):
    out = StringIO()
    call_command("load_task_catalog", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def catalog_file(tmp_path, tasks):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    return path


SMALL = [
    {
        "slug": "heart-rate",
        "description": "heart rate",
        "options": ["bradycardic", "normocardic", "tachycardic", "unknown"],
        "group": "vital signs",
        "aliases": ["pulse"],
    },
    {"slug": "troponin", "description": "troponin", "options": ["measured", "unknown"], "held_out": True},
]


def test_it_loads_the_shipped_catalog_once(db):
    specs = load_catalog()
    out = load()
    assert f"{len(specs)} created, 0 updated, 0 unchanged" in out
    assert Task.objects.count() == len(specs)
    first = Task.objects.get(slug=specs[0].slug)
    assert first.options == list(specs[0].options)
    assert f"0 created, 0 updated, {len(specs)} unchanged" in load()
    assert Task.objects.count() == len(specs)


def test_it_updates_changed_tasks_by_slug(db, tmp_path):
    load("--file", catalog_file(tmp_path, SMALL))
    changed = [dict(SMALL[0], group="vitals"), SMALL[1], {"description": "tongue bite", "options": ["y", "n"]}]
    out = load("--file", catalog_file(tmp_path, changed))
    assert "1 created, 1 updated, 1 unchanged" in out
    assert Task.objects.get(slug="heart-rate").group == "vitals"
    assert Task.objects.get(slug="tongue-bite").options == ["y", "n"]
    troponin = Task.objects.get(slug="troponin")
    assert troponin.held_out is True


def test_loading_is_audited(db, tmp_path):
    load("--file", catalog_file(tmp_path, SMALL))
    event = AuditEvent.objects.get(action=AuditEvent.Action.LOAD_CATALOG)
    assert event.details == {"file": "catalog.json", "created": 2, "updated": 0, "unchanged": 0, "kept": 0}


def test_a_bad_catalog_file_is_refused(db, tmp_path):
    with pytest.raises(CommandError, match="options"):
        load("--file", catalog_file(tmp_path, [{"description": "x", "options": []}]))
    assert not Task.objects.exists()


def test_it_refuses_options_that_drop_a_label_in_use(db, tmp_path, corpus):
    load("--file", catalog_file(tmp_path, SMALL))
    note = Note.objects.create(corpus=corpus, external_id="n1", text="FC 40.")
    Annotation.objects.create(
        note=note, task=Task.objects.get(slug="heart-rate"), label="bradycardic", annotator_name="a"
    )
    changed = [dict(SMALL[0], options=["normocardic", "tachycardic", "unknown"]), dict(SMALL[1], group="labs")]
    with pytest.raises(CommandError, match="task 'heart-rate': the new options drop label\\(s\\) 'bradycardic'"):
        load("--file", catalog_file(tmp_path, changed))
    assert Task.objects.get(slug="troponin").group == ""  # all or nothing
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LOAD_CATALOG).count() == 1


def test_a_reload_never_overwrites_a_task_made_in_the_app(db, tmp_path):
    mine = Task.objects.create(
        slug="heart-rate", description="frequenza cardiaca", options=["alta", "bassa"], origin=Task.Origin.APP
    )
    twin = Task.objects.create(slug="my-troponin", description="troponin", options=["yes", "no"], origin="app")
    out = load("--file", catalog_file(tmp_path, SMALL))
    assert "0 created, 0 updated, 0 unchanged, 2 kept (made in the app: heart-rate, troponin)" in out
    mine.refresh_from_db()
    twin.refresh_from_db()
    assert (mine.description, mine.options, mine.origin) == ("frequenza cardiaca", ["alta", "bassa"], "app")
    assert twin.slug == "my-troponin" and Task.objects.count() == 2


def test_a_reload_keeps_a_catalog_tasks_guideline_and_retirement(db, tmp_path):
    load("--file", catalog_file(tmp_path, SMALL))
    Task.objects.filter(slug="troponin").update(guideline="any value", retired=True)
    changed = [dict(SMALL[0]), {**SMALL[1], "options": ["measured", "not measured", "unknown"]}]
    load("--file", catalog_file(tmp_path, changed))
    task = Task.objects.get(slug="troponin")
    assert (task.guideline, task.retired, task.origin) == ("any value", True, "catalog")
    assert task.options == ["measured", "not measured", "unknown"]
