"""A finished dataset version's rows, in batches, as the export hands them to a writer of
`webapp.datasets.formats` (whose SCHEMA they follow), and the count of rows written.

One row per example, in example order:
    example_id, note_id (the note's external id), task_slugs, task_descriptions,
    input (the masked note), label (the masked text), char_start, char_end (null: unmasked),
    prompt, answer (ml.masking.format_dsm_prompt: the DSM training pair)

Memory stays bounded whatever the size: examples are read by keyset, EXPORT_BATCH at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

from ml.masking import MaskedExample as MlExample
from ml.masking import format_dsm_prompt
from webapp.corpus.models import Note, Task
from webapp.datasets.formats import EXPORT_BATCH
from webapp.datasets.models import DatasetVersion, MaskedExample


def iter_batches(dataset: DatasetVersion, batch: int = EXPORT_BATCH) -> Iterator[list[dict]]:
    """The dataset's rows (see module doc), `batch` at a time, by keyset on the example id."""
    tasks = {pk: (slug, desc) for pk, slug, desc in Task.objects.values_list("pk", "slug", "description")}
    mode = dataset.mode
    after = 0
    while True:
        rows = list(
            MaskedExample.objects.filter(dataset=dataset, pk__gt=after)
            .order_by("pk")
            .values_list("pk", "note_id", "tasks", "masked_text", "label", "char_start", "char_end")[:batch]
        )
        if not rows:
            return
        # the notes' ids by a second small query: a join here can make PostgreSQL sort every remaining row
        external = dict(Note.objects.filter(pk__in={row[1] for row in rows}).values_list("pk", "external_id"))
        out = []
        for pk, note_id, task_ids, masked, label, start, end in rows:
            note = external[note_id]
            span = (start, end) if start is not None else None
            prompt, answer = format_dsm_prompt(MlExample(note, tuple(map(str, task_ids)), masked, label, span, mode))
            out.append(
                {
                    "example_id": pk,
                    "note_id": note,
                    "task_slugs": [tasks[t][0] for t in task_ids],
                    "task_descriptions": [tasks[t][1] for t in task_ids],
                    "input": masked,
                    "label": label,
                    "char_start": start,
                    "char_end": end,
                    "prompt": prompt,
                    "answer": answer,
                }
            )
        yield out
        after = rows[-1][0]


class Counter:
    """The rows written so far, and the residual scan of an export folder (None: a download):
    a writer calls `written(rows)` after each batch it wrote."""

    def __init__(self, scan=None, corpus_id: int | None = None):
        self.rows = 0
        self.scan = scan
        self.corpus_id = corpus_id

    def written(self, rows: list[dict]) -> None:
        self.rows += len(rows)
        if self.scan is not None:
            self.scan.rows(rows, corpus_id=self.corpus_id)
