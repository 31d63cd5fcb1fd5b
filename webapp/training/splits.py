"""Labeled splits: the paper's 85/15 train/test split at note-item level, computed once and stored.

An item is a gold (note, task): one Annotation per annotated (note, task) of the corpus (the
earliest one when several annotators labelled it). Its id is "<note external id>|<task slug>",
so the same corpus imported again into another database splits the same way.
`ml.training.split_items` decides the parts (deterministic for the seed and the item ids,
whatever their order); `get_or_create_split` stores the answer as SplitItem rows and later
calls with the same corpus, seed, ratio and tasks reuse it, so every run of a comparison is
evaluated on the same test items, even if annotations are added meanwhile.

Held-out tasks (Task.held_out) are part of the split like any task: they are kept out of
DSM dataset building (the dataset builder's default), not out of downstream adaptation, and
evaluation reports them separately.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db import transaction
from django.db.models import Min
from django.utils.translation import gettext, ngettext

from webapp.corpus.models import Annotation, Corpus, Task
from webapp.training.models import LabeledSplit, SplitItem

WRITE_BATCH = 5_000
READ_BATCH = 2_000


class SplitError(Exception):
    """Said to the user as written, in the active language."""


def item_id(note_external_id: str, task_slug: str) -> str:
    return f"{note_external_id}|{task_slug}"


def gold_annotation_ids(corpus: Corpus, task_slugs: Iterable[str] = ()) -> list[int]:
    """One annotation per annotated (note, task) of the corpus: the earliest."""
    annotations = Annotation.objects.filter(note__corpus=corpus)
    if task_slugs:
        annotations = annotations.filter(task__slug__in=list(task_slugs))
    first = annotations.values("note_id", "task_id").annotate(first=Min("pk")).values_list("first", flat=True)
    return sorted(first)


@transaction.atomic
def get_or_create_split(
    corpus: Corpus, *, seed: int = 0, test_ratio: float = 0.15, tasks: Iterable[str] = (), actor=None
) -> tuple[LabeledSplit, bool]:
    """The stored split for (corpus, seed, ratio, tasks), made now if there is none yet.
    `tasks` (slugs) limits the items to those tasks; empty: every annotated task."""
    if not 0 < test_ratio < 1:
        raise SplitError(gettext("The test share must be between 0 and 1 (the paper: 0.15)."))
    slugs = sorted(set(tasks))
    unknown = sorted(set(slugs) - set(Task.objects.filter(slug__in=slugs).values_list("slug", flat=True)))
    if unknown:
        raise SplitError(gettext("Unknown task(s): %(tasks)s.") % {"tasks": ", ".join(unknown)})
    slugs = slugs or _annotated_tasks(corpus)
    existing = (
        LabeledSplit.objects.select_for_update()
        .filter(corpus=corpus, seed=seed, test_ratio=test_ratio, tasks=slugs)
        .first()
    )
    if existing is not None:
        return existing, False
    return _create(corpus, seed, test_ratio, slugs, actor), True


def _create(corpus, seed, test_ratio, slugs, actor) -> LabeledSplit:
    from ml.training import LabeledItem, split_items

    ids = gold_annotation_ids(corpus, slugs)
    if not ids:
        said = (
            gettext("Corpus %(corpus)s has no gold annotations for these tasks: import annotations first.")
            if slugs
            else gettext("Corpus %(corpus)s has no gold annotations: import annotations first.")
        )
        raise SplitError(said % {"corpus": corpus.name})
    keys, items = {}, []  # item id -> annotation id; items without their note text (not needed here)
    rows = Annotation.objects.filter(pk__in=ids).values_list(
        "pk", "note__external_id", "task__slug", "task__description", "task__options", "label"
    )
    for annotation_id, external_id, slug, description, options, gold in rows.iterator(chunk_size=READ_BATCH):
        key = item_id(external_id, slug)
        keys[key] = annotation_id
        items.append(
            LabeledItem(
                item_id=key, note_id=external_id, task=slug, description=description, options=list(options), label=gold
            )
        )
    train, test = split_items(items, test_ratio=test_ratio, seed=seed)
    if not train or not test:
        raise SplitError(
            ngettext(
                "%(count)s gold item is too few for a train/test split with test share %(share)s.",
                "%(count)s gold items are too few for a train/test split with test share %(share)s.",
                len(keys),
            )
            % {"count": len(keys), "share": f"{test_ratio:g}"}
        )
    split = LabeledSplit.objects.create(
        corpus=corpus,
        seed=seed,
        test_ratio=test_ratio,
        tasks=slugs,
        train_count=len(train),
        test_count=len(test),
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    rows = [
        SplitItem(split=split, annotation_id=keys[item.item_id], part=part)
        for part, items in ((SplitItem.Part.TRAIN, train), (SplitItem.Part.TEST, test))
        for item in items
    ]
    SplitItem.objects.bulk_create(rows, batch_size=WRITE_BATCH)
    return split


def labeled_items(split: LabeledSplit, part: str) -> list:
    """The split's items of one part as ml.training.LabeledItem, in a stable order (item id)."""
    from ml.training import LabeledItem

    items = []
    rows = (
        SplitItem.objects.filter(split=split, part=part)
        .values_list(
            "annotation__note__external_id",
            "annotation__note__text",
            "annotation__task__slug",
            "annotation__task__description",
            "annotation__task__options",
            "annotation__label",
        )
        .order_by("annotation_id")
    )
    for external_id, text, slug, description, options, gold in rows.iterator(chunk_size=READ_BATCH):
        items.append(
            LabeledItem(
                item_id=item_id(external_id, slug),
                note_id=external_id,
                task=slug,
                description=description,
                options=list(options),
                text=text,
                label=gold,
            )
        )
    items.sort(key=lambda item: item.item_id)
    return items


def held_out_tasks(split: LabeledSplit) -> set[str]:
    return set(Task.objects.filter(slug__in=split.tasks, held_out=True).values_list("slug", flat=True))


def unlabeled_items(split: LabeledSplit, *, corpus: Corpus, notes: int, tasks_per_note: int, seed: int) -> list:
    """Items with no label for self-learning: up to `notes` notes of `corpus` that have no item
    in the split (so no test note is ever labelled by the teacher), each with `tasks_per_note`
    tasks of the split sampled as the relevance jobs do (seeded per note; 0: every task)."""
    from ml.masking import sample_tasks
    from ml.training import LabeledItem

    used = set(SplitItem.objects.filter(split=split).values_list("annotation__note_id", flat=True))
    tasks = {t.slug: t for t in Task.objects.filter(slug__in=split.tasks)}
    slugs = sorted(tasks)
    items = []
    for _note_id, external_id, text in _notes_in_order(corpus, used, notes):
        chosen = sample_tasks(external_id, slugs, k=tasks_per_note, seed=seed) if tasks_per_note else slugs
        for slug in chosen:
            task = tasks[slug]
            items.append(
                LabeledItem(
                    item_id=item_id(external_id, slug),
                    note_id=external_id,
                    task=slug,
                    description=task.description,
                    options=list(task.options),
                    text=text,
                    label=None,
                )
            )
    return items


def _notes_in_order(corpus, excluded: set[int], limit: int) -> Iterator[tuple[int, str, str]]:
    seen, last = 0, 0
    while seen < limit:
        batch = list(
            corpus.notes.filter(pk__gt=last).order_by("pk").values_list("pk", "external_id", "text")[:READ_BATCH]
        )
        if not batch:
            return
        last = batch[-1][0]
        for row in batch:
            if row[0] in excluded:
                continue
            yield row
            seen += 1
            if seen >= limit:
                return


def _annotated_tasks(corpus: Corpus) -> list[str]:
    return sorted(set(Annotation.objects.filter(note__corpus=corpus).values_list("task__slug", flat=True)))
