"""Builders for training tests (also used by tests/workers/test_training.py): a labeled corpus of
short synthetic notes (ml.synthetic) with gold annotations for a few catalog tasks, one of them
held out; a model version; a finished dataset version with masked examples made directly."""

import re

from ml.catalog import catalog_index, load_catalog
from ml.synthetic import generate_notes
from ml.synthetic.tasks import HR, PMK, SPO2, TEMP
from tests.projects import default_project
from webapp.corpus.models import Annotation, Corpus, Note, Task
from webapp.datasets.models import DatasetVersion, MaskedExample
from webapp.pipeline.models import JobStatus, ModelVersion, PeakProfile

TASKS = (HR, PMK, TEMP, SPO2)
HELD_OUT = SPO2
_NUMBER = re.compile(r"\d+")


def make_tasks(slugs=TASKS, held_out=(HELD_OUT,)) -> list[Task]:
    catalog = catalog_index(load_catalog())
    tasks = []
    for slug in slugs:
        spec = catalog[slug]
        task, _ = Task.objects.get_or_create(
            slug=slug,
            defaults={"description": spec.description, "options": list(spec.options), "held_out": slug in held_out},
        )
        tasks.append(task)
    return tasks


def make_labeled_corpus(
    n_notes: int = 16, name: str = "ward", *, tasks=TASKS, seed: int = 0, max_words: int = 90
) -> Corpus:
    """Notes with one gold annotation per (note, task) for `tasks`."""
    make_tasks(tasks)
    by_slug = {t.slug: t for t in Task.objects.filter(slug__in=tasks)}
    # de-identified, so runs may launch: the gate has tests of its own (tests/webapp/training/test_gate.py)
    corpus = Corpus.objects.create(project=default_project(), name=name, language="en", deidentified=True)
    for synthetic in generate_notes(n_notes, seed=seed, min_words=40, max_words=max_words, typo_rate=0):
        note = Note.objects.create(corpus=corpus, external_id=synthetic.id, text=synthetic.text)
        for gold in synthetic.annotations:
            if gold.task in by_slug:
                Annotation.objects.create(
                    note=note,
                    task=by_slug[gold.task],
                    label=gold.label,
                    evidence=[list(span) for span in gold.evidence],
                    annotator_name="import:gold.jsonl",
                )
    return corpus


def make_unlabeled_notes(corpus: Corpus, n: int, *, start: int = 1000, seed: int = 0) -> list[Note]:
    return [
        Note.objects.create(corpus=corpus, external_id=s.id, text=s.text)
        for s in generate_notes(n, seed=seed, start=start, min_words=40, max_words=90, typo_rate=0)
    ]


def make_model_version(path: str, name: str = "tiny-llama", family: str = "llama") -> ModelVersion:
    return ModelVersion.objects.create(name=name, family=family, path=str(path))


def make_dataset(
    corpus: Corpus,
    model_version: ModelVersion,
    *,
    mode: str = "dsm",
    name: str = "",
    n_examples: int = 12,
    status: str = JobStatus.DONE,
) -> DatasetVersion:
    """A dataset version with examples made directly: the last number of each note masked (DSM,
    random, one peak: the builder's choice of span does not matter to training; the last one
    survives a short max_length, since prompts are cut from the left), or the whole note
    (unmasked)."""
    profile = PeakProfile.objects.first() or PeakProfile.objects.create(name="paper", is_default=True)
    dataset = DatasetVersion.objects.create(
        name=name or f"{corpus.name}-{mode}",
        corpus=corpus,
        model_version=model_version,
        profile=profile,
        mode=mode,
        status=status,
        stats={"examples": n_examples},
    )
    examples = []
    for note in corpus.notes.order_by("pk")[:n_examples]:
        match = ([None] + list(_NUMBER.finditer(note.text)))[-1]
        if mode == DatasetVersion.Mode.UNMASKED or match is None:
            examples.append(MaskedExample(dataset=dataset, note=note, tasks=[], masked_text=note.text, label=""))
        else:
            start, end = match.span()
            examples.append(
                MaskedExample(
                    dataset=dataset,
                    note=note,
                    tasks=[],
                    masked_text=note.text[:start] + "<mask>" + note.text[end:],
                    label=note.text[start:end],
                    char_start=start,
                    char_end=end,
                )
            )
    MaskedExample.objects.bulk_create(examples)
    return dataset
