"""Database constraints of the corpus models: refused by the database itself, not only by forms."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction

from tests.projects import default_project
from tests.webapp.corpus.conftest import postgres_only
from webapp.corpus.models import Annotation, Corpus, Note, Task, text_hash


def refused(**kwargs):
    return pytest.raises(IntegrityError, **kwargs)


def make_note(corpus, external_id="n1", text="Patient has a pacemaker.", **extra):
    return Note.objects.create(corpus=corpus, external_id=external_id, text=text, **extra)


def test_note_save_sets_the_content_hash(corpus):
    note = make_note(corpus)
    assert note.content_hash == text_hash("Patient has a pacemaker.")
    assert len(note.content_hash) == 64


def test_note_save_with_update_fields_keeps_the_hash_in_step(corpus):
    note = make_note(corpus)
    note.text = "Another text."
    note.save(update_fields=["text"])
    note.refresh_from_db()
    assert note.content_hash == text_hash("Another text.")


@pytest.mark.parametrize(
    "fields",
    [
        {"name": ""},
        {"language": "e"},
        {"language": ""},
        {"language": "EN"},
    ],
)
def test_corpus_constraints(db, fields):
    values = {"name": "c", "language": "it", **fields}
    with refused(), transaction.atomic():
        Corpus.objects.create(project=default_project(), **values)


def test_corpus_name_is_unique(corpus):
    with refused(), transaction.atomic():
        Corpus.objects.create(project=default_project(), name="ward", language="it")


def test_corpus_language_validator_wants_letters(db):
    with pytest.raises(ValidationError):
        Corpus(name="c", language="e1").full_clean()


def test_note_external_id_is_unique_within_a_corpus(corpus):
    make_note(corpus)
    with refused(), transaction.atomic():
        make_note(corpus)
    other = Corpus.objects.create(project=default_project(), name="other", language="en")
    make_note(other)  # the same id in another corpus is fine


@pytest.mark.parametrize(
    "column, value",
    [
        ("text", ""),
        ("external_id", ""),
        ("content_hash", "abc"),
        ("content_hash", "A" * 64),
        ("metadata", []),
        ("metadata", "x"),
    ],
)
def test_note_check_constraints(corpus, column, value):
    note = make_note(corpus)
    with refused(), transaction.atomic():
        Note.objects.filter(pk=note.pk).update(**{column: value})


def test_note_clean_refuses_whitespace_text(corpus):
    with pytest.raises(ValidationError):
        Note(corpus=corpus, external_id="x", text="  \n").clean()


@pytest.mark.parametrize(
    "fields",
    [
        {"slug": ""},
        {"description": ""},
        {"options": []},
        {"options": {"a": 1}},
        {"options": "y"},
        {"aliases": "x"},
    ],
)
def test_task_check_constraints(db, fields):
    values = {"slug": "t", "description": "t", "options": ["y", "n"], **fields}
    with refused(), transaction.atomic():
        Task.objects.create(**values)


def test_task_slug_and_description_are_unique(tasks):
    with refused(), transaction.atomic():
        Task.objects.create(slug="heart-rate", description="other", options=["y"])
    with refused(), transaction.atomic():
        Task.objects.create(slug="other", description="heart rate", options=["y"])


def test_task_clean_refuses_duplicate_and_empty_options(db):
    with pytest.raises(ValidationError, match="listed twice"):
        Task(slug="t", description="t", options=["y", "y"]).clean()
    with pytest.raises(ValidationError, match="non-empty string"):
        Task(slug="t", description="t", options=["y", ""]).clean()


def test_one_annotation_per_note_task_and_annotator(corpus, tasks):
    note = make_note(corpus)
    Annotation.objects.create(note=note, task=tasks["pacemaker"], label="y", annotator_name="import:a.jsonl")
    with refused(), transaction.atomic():
        Annotation.objects.create(note=note, task=tasks["pacemaker"], label="n", annotator_name="import:a.jsonl")
    Annotation.objects.create(note=note, task=tasks["pacemaker"], label="n", annotator_name="import:b.jsonl")


def test_one_annotation_per_note_task_and_user(corpus, tasks, clinician):
    note = make_note(corpus)
    Annotation.objects.create(note=note, task=tasks["pacemaker"], label="y", annotator=clinician)
    assert Annotation.objects.get().annotator_name == "clara"
    with refused(), transaction.atomic():
        Annotation.objects.create(
            note=note, task=tasks["pacemaker"], label="n", annotator=clinician, annotator_name="renamed"
        )


@pytest.mark.parametrize("fields", [{"label": ""}, {"annotator_name": ""}, {"evidence": {"0": 1}}, {"evidence": 3}])
def test_annotation_check_constraints(corpus, tasks, fields):
    note = make_note(corpus)
    values = {"note": note, "task": tasks["pacemaker"], "label": "y", "annotator_name": "a", **fields}
    with refused(), transaction.atomic():
        Annotation.objects.create(**values)


def test_task_with_annotations_cannot_be_deleted(corpus, tasks):
    from django.db.models import ProtectedError

    Annotation.objects.create(note=make_note(corpus), task=tasks["pacemaker"], label="y", annotator_name="a")
    with pytest.raises(ProtectedError):
        tasks["pacemaker"].delete()


def test_annotation_clean_checks_label_and_spans(corpus, tasks):
    note = make_note(corpus, text="0123456789")
    annotation = Annotation(
        note=note, task=tasks["pacemaker"], label="maybe", evidence=[[0, 11], [5, 5]], annotator_name="a"
    )
    with pytest.raises(ValidationError) as info:
        annotation.clean()
    assert "not one of the task's options ('y', 'n', 'unknown')" in str(info.value)
    assert "[0, 11) ends past the text (length 10)" in str(info.value)
    assert "[5, 5) is empty or reversed" in str(info.value)
    Annotation(note=note, task=tasks["pacemaker"], label="y", evidence=[[0, 10]], annotator_name="a").clean()


# --- PostgreSQL triggers: raw SQL is refused too ----------------------------------------------


def raw(sql, params=()):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def insert_annotation(note, task, label="y", evidence="[]"):
    raw(
        "INSERT INTO corpus_annotation (note_id, task_id, label, evidence, annotator_name, created)"
        " VALUES (%s, %s, %s, %s::jsonb, 'raw', now())",
        [note.pk, task.pk, label, evidence],
    )


@postgres_only
def test_trigger_accepts_a_valid_raw_annotation(corpus, tasks):
    note = make_note(corpus, text="0123456789")
    insert_annotation(note, tasks["pacemaker"], "y", "[[0, 10], [2, 3]]")
    assert Annotation.objects.get().evidence == [[0, 10], [2, 3]]


@postgres_only
@pytest.mark.parametrize(
    "label, evidence, message",
    [
        ("maybe", "[]", "is not one of the options"),
        ("y", "[[0, 11]]", "does not fit the text"),
        ("y", "[[4, 4]]", "does not fit the text"),
        ("y", "[[-1, 2]]", "does not fit the text"),
        ("y", "[[1, 2, 3]]", r"must be \[start, end\]"),
        ("y", "[5]", r"must be \[start, end\]"),
        ("y", '[["1", "2"]]', "must be integers"),
        ("y", "[[1.5, 2]]", "must be integers"),
    ],
)
def test_trigger_refuses_raw_annotations_that_break_the_rules(corpus, tasks, label, evidence, message):
    note = make_note(corpus, text="0123456789")
    with refused(match=message):
        insert_annotation(note, tasks["pacemaker"], label, evidence)
    assert not Annotation.objects.exists()


@postgres_only
def test_trigger_refuses_a_note_whose_hash_is_not_its_text(corpus):
    with refused(match="content_hash is not the SHA-256"):
        raw(
            "INSERT INTO corpus_note (corpus_id, external_id, text, content_hash, metadata, created)"
            " VALUES (%s, 'x', 'some text', %s, '{}', now())",
            [corpus.pk, text_hash("other text")],
        )
    raw(
        "INSERT INTO corpus_note (corpus_id, external_id, text, content_hash, metadata, created)"
        " VALUES (%s, 'x', 'perché', %s, '{}', now())",
        [corpus.pk, text_hash("perché")],
    )
    with refused(match="content_hash"):
        Note.objects.filter(external_id="x").update(text="changed")


@postgres_only
def test_trigger_refuses_shortening_a_note_under_its_spans(corpus, tasks):
    note = make_note(corpus, text="0123456789")
    Annotation.objects.create(note=note, task=tasks["pacemaker"], label="y", evidence=[[5, 10]], annotator_name="a")
    note.text = "01234"
    with refused(match="span would end past the new text"), transaction.atomic():
        note.save()
    note.text = "abcdefghijkl"
    note.save()  # still covers [5, 10)


@postgres_only
def test_trigger_refuses_task_options_that_drop_a_used_label(corpus, tasks):
    Annotation.objects.create(note=make_note(corpus), task=tasks["pacemaker"], label="unknown", annotator_name="a")
    task = tasks["pacemaker"]
    task.options = ["y", "n"]
    with refused(match="drop"), transaction.atomic():
        task.save()
    task.options = ["y", "n", "unknown", "not stated"]
    task.save()


@postgres_only
@pytest.mark.parametrize("options", ['["y", "y"]', '["y", ""]', '["y", 1]'])
def test_trigger_refuses_bad_task_options(db, options):
    with refused():
        raw(
            'INSERT INTO corpus_task (slug, description, options, "group", held_out, aliases, created)'
            " VALUES ('t', 't', %s::jsonb, '', false, '[]', now())",
            [options],
        )
