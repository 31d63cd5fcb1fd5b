"""The 85/15 note-item split: deterministic, stored, reused, frozen."""

import pytest
from django.db.models import ProtectedError

from tests.webapp.training.factories import HELD_OUT, TASKS, make_unlabeled_notes
from webapp.corpus.models import Annotation, Note
from webapp.training import splits
from webapp.training.models import LabeledSplit, SplitItem


def parts(split):
    return {
        part: set(SplitItem.objects.filter(split=split, part=part).values_list("annotation_id", flat=True))
        for part in ("train", "test")
    }


def test_a_split_holds_one_item_per_annotated_note_and_task(corpus):
    split, created = splits.get_or_create_split(corpus)
    assert created
    n_items = corpus.notes.count() * len(TASKS)
    assert split.train_count + split.test_count == n_items == SplitItem.objects.filter(split=split).count()
    assert split.test_count == round(0.15 * n_items)
    assert split.tasks == sorted(TASKS)


def test_the_same_request_reuses_the_stored_split(corpus):
    first, _ = splits.get_or_create_split(corpus, seed=3)
    again, created = splits.get_or_create_split(corpus, seed=3)
    assert (again.pk, created) == (first.pk, False)
    assert LabeledSplit.objects.count() == 1


def test_the_split_is_deterministic_for_a_seed_and_changes_with_it(corpus):
    first, _ = splits.get_or_create_split(corpus, seed=1)
    remembered = parts(first)
    SplitItem.objects.filter(split=first).delete()
    first.delete()
    again, created = splits.get_or_create_split(corpus, seed=1)
    assert created and parts(again) == remembered
    other, _ = splits.get_or_create_split(corpus, seed=2)
    assert parts(other)["test"] != remembered["test"]


def test_annotations_added_later_do_not_change_a_stored_split(corpus):
    split, _ = splits.get_or_create_split(corpus)
    before = parts(split)
    note = Note.objects.create(corpus=corpus, external_id="late", text="Heart rate 140 bpm.")
    Annotation.objects.create(
        note=note, task_id=Annotation.objects.first().task_id, label="tachycardic", annotator_name="import:late.jsonl"
    )
    again, created = splits.get_or_create_split(corpus)
    assert not created and parts(again) == before


def test_a_task_subset_makes_its_own_split(corpus):
    split, _ = splits.get_or_create_split(corpus, tasks=[TASKS[0]])
    assert split.tasks == [TASKS[0]] and split.train_count + split.test_count == corpus.notes.count()


def test_a_note_used_by_a_split_cannot_be_deleted(corpus):
    splits.get_or_create_split(corpus)
    with pytest.raises(ProtectedError):
        corpus.notes.first().delete()


def test_items_carry_text_label_options_and_stable_ids(corpus):
    split, _ = splits.get_or_create_split(corpus)
    test = splits.labeled_items(split, "test")
    assert len(test) == split.test_count
    assert [item.item_id for item in test] == sorted(item.item_id for item in test)
    item = test[0]
    annotation = Annotation.objects.select_related("note", "task").get(
        note__external_id=item.note_id, task__slug=item.task
    )
    assert item.item_id == f"{item.note_id}|{item.task}"
    assert (item.text, item.label, item.options, item.description) == (
        annotation.note.text,
        annotation.label,
        annotation.task.options,
        annotation.task.description,
    )


def test_held_out_tasks_are_in_the_split_and_named(corpus):
    split, _ = splits.get_or_create_split(corpus)
    assert splits.held_out_tasks(split) == {HELD_OUT}


def test_errors_are_plain(db, corpus):
    with pytest.raises(splits.SplitError, match="between 0 and 1"):
        splits.get_or_create_split(corpus, test_ratio=1.5)
    with pytest.raises(splits.SplitError, match="Unknown task"):
        splits.get_or_create_split(corpus, tasks=["no-such-task"])
    Annotation.objects.all().delete()
    with pytest.raises(splits.SplitError, match="no gold annotations"):
        splits.get_or_create_split(corpus, seed=9)


def test_unlabeled_items_never_use_a_note_of_the_split(corpus):
    split, _ = splits.get_or_create_split(corpus)
    fresh = make_unlabeled_notes(corpus, 3)
    items = splits.unlabeled_items(split, corpus=corpus, notes=10, tasks_per_note=2, seed=0)
    assert {item.note_id for item in items} == {note.external_id for note in fresh}
    assert len(items) == 3 * 2 and all(item.label is None for item in items)
    every = splits.unlabeled_items(split, corpus=corpus, notes=1, tasks_per_note=0, seed=0)
    assert sorted(item.task for item in every) == sorted(TASKS)
