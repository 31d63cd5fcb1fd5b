"""Plain builders for pipeline tests (also used by tests/workers): a corpus of short English
notes, a few tasks, a model version, a launched job. Note texts are ASCII, so the relevance
token offsets of a byte-level tokenizer tile each note exactly."""

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note, Task
from webapp.pipeline import jobs
from webapp.pipeline.models import ModelVersion

SENTENCES = [
    "Patient is a 67-year-old man admitted for community acquired pneumonia.",
    "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg.",
    "He has a pacemaker since 2019 and takes amlodipine for hypertension.",
    "Chest X-ray shows right lower lobe consolidation; started on ceftriaxone.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
]
TASKS = [
    ("heart-rate", "heart rate", ["bradycardic", "normocardic", "tachycardic", "unknown"]),
    ("presence-of-pacemaker", "presence of pacemaker", ["y", "n", "unknown"]),
    ("body-temperature", "body temperature", ["hypothermic", "normothermic", "febrile", "unknown"]),
    ("pneumonia", "pneumonia", ["y", "n"]),
]


def note_text(i: int, sentences: int = 3) -> str:
    return " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(sentences)) + f" Bed {i}."


def make_corpus(n_notes: int = 6, name: str = "ward", sentences: int = 3) -> Corpus:
    corpus = Corpus.objects.create(project=default_project(), name=name, language="en")
    for i in range(n_notes):
        Note.objects.create(corpus=corpus, external_id=f"n{i:03d}", text=note_text(i, sentences))
    return corpus


def make_tasks(n: int = len(TASKS)) -> list[Task]:
    return [
        Task.objects.create(slug=slug, description=description, options=options)
        for slug, description, options in TASKS[:n]
    ]


def make_model_version(path: str = "smollm2-135m-instruct", name: str = "tiny-llama") -> ModelVersion:
    return ModelVersion.objects.create(name=name, family="llama", path=path)


def spec(corpus, model_version, tasks=(), **changes) -> jobs.JobSpec:
    values = dict(
        corpus=corpus,
        model_version=model_version,
        task_selection="list",
        tasks=tasks,
        chunk_size=4,
        method="attnlrp",
        template="en",
    )
    values.update(changes)
    values["tasks"] = list(values["tasks"])
    return jobs.JobSpec(**values)
