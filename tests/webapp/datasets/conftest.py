"""Fabricated relevance maps whose peaks are known by hand (no model needed).

The note "pt alert hr 120 bpm then pacemaker in situ and bp low" has one token per word:
    0 pt  1 alert  2 hr  3 120  4 bpm  5 then  6 pacemaker  7 in  8 situ  9 and  10 bp  11 low
With the `sharp` profile (kernel 1: no smoothing; lower 0.2, upper 0.4) a token scored 0.9 among
zeros is one peak. Maps (peaked tokens):
    heart      {3, 6}      -> groups "120", "pacemaker"         -> masks "pacemaker"
    pacemaker  {3, 6, 10}  -> groups "120", "pacemaker", "bp"   -> masks "pacemaker" (same as heart), "bp"
    pressure   {10}        -> one group "bp"                    -> nothing (two-peaks rule)
    heldout    {1, 3}      -> held-out task: left out by default; included it masks "120"
So a DSM build gives 2 examples: "pacemaker" (tasks heart + pacemaker) and "bp" (pacemaker).
"""
import numpy as np
import pytest

from webapp.corpus.models import Corpus, Note, Task
from webapp.datasets.models import DatasetVersion
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceMap

TEXT = "pt alert hr 120 bpm then pacemaker in situ and bp low"
WORDS = TEXT.split()
PEAKS = {"heart": {3, 6}, "pacemaker": {3, 6, 10}, "pressure": {10}, "heldout": {1, 3}}


def word_offsets(text: str) -> np.ndarray:
    import re

    return np.array([m.span() for m in re.finditer(r"\S+", text)], np.int32)


def char_span(text: str, word: str) -> tuple[int, int]:
    """The span of the first whole word `word` in `text`."""
    import re

    return re.search(rf"(?<!\S){re.escape(word)}(?!\S)", text).span()


def add_map(note, task, model, peaked=(), *, offsets=None, scores=None, method="attnlrp", template="en", job=None):
    offsets = word_offsets(note.text) if offsets is None else np.asarray(offsets, np.int32)
    if scores is None:
        scores = np.zeros(len(offsets), np.float32)
        scores[list(peaked)] = 0.9
    return RelevanceMap.objects.create(
        note=note, task=task, model_version=model, method=method, template=template, job=job,
        n_tokens=len(offsets), data=RelevanceMap.encode(offsets, scores),
    )


@pytest.fixture
def model(db):
    return ModelVersion.objects.create(name="tiny-test", family="llama", path="tiny-test")


@pytest.fixture
def sharp(db):
    return PeakProfile.objects.create(name="sharp", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def paper(db):
    return PeakProfile.objects.create(name="paper-test", version=1, kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def tasks(db):
    def task(slug, held_out=False):
        return Task.objects.create(slug=slug, description=f"{slug} described", options=["y", "n"], held_out=held_out)

    return {"heart": task("heart"), "pacemaker": task("pacemaker"), "pressure": task("pressure"),
            "heldout": task("heldout", held_out=True)}


@pytest.fixture
def corpus(db):
    return Corpus.objects.create(name="ward", language="en")


@pytest.fixture
def note(corpus):
    return Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)


@pytest.fixture
def maps(note, tasks, model):
    return {slug: add_map(note, tasks[slug], model, PEAKS[slug]) for slug in PEAKS}


@pytest.fixture
def make_dataset(corpus, model, sharp):
    def make(name="ds", **fields):
        fields = {"corpus": corpus, "model_version": model, "profile": sharp, **fields}
        return DatasetVersion.objects.create(name=name, version=DatasetVersion.next_version(name), **fields)

    return make


@pytest.fixture
def built(make_dataset, maps):
    """A DONE dsm dataset built from the hand-made maps."""
    from webapp.datasets import building

    dataset = make_dataset()
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset
