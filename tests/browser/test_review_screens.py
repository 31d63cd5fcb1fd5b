"""Screenshots of the note view and the comparison view on a realistic synthetic note.

Off by default; run with a folder to write PNGs into (never the repository):
    DSM_SCREENSHOTS=/tmp/dsm-screens .venv/bin/python -m pytest tests/browser/test_review_screens.py
"""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.projects import default_project

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not os.environ.get("DSM_SCREENSHOTS"), reason="set DSM_SCREENSHOTS=<folder>"),
]

TOKEN = re.compile(r"\w+|[^\w\s]")


def peaky(offsets, spans, rng, *, height, extra):
    """Background noise, bursts on the given character spans, and `extra` random bursts."""
    scores = rng.exponential(0.05, len(offsets)).astype(np.float32)
    for a, b in spans:
        inside = (offsets[:, 0] < b) & (offsets[:, 1] > a)
        scores[inside] = height * rng.uniform(0.85, 1.0, inside.sum())
    for k in rng.integers(0, len(offsets), extra):
        scores[k : k + 2] = np.maximum(scores[k : k + 2], rng.uniform(0.4, 0.7))
    return np.clip(scores / scores.max(), 0, 1)


def page_box(page, selector, height):
    """The element's top `height` pixels in page coordinates (what a full-page clip wants)."""
    box = page.eval_on_selector(
        selector,
        "el => { const r = el.getBoundingClientRect();"
        " return {x: r.left + window.scrollX, y: r.top + window.scrollY,"
        " width: r.width}; }",
    )
    return {**box, "height": height}


def test_screenshots_of_the_note_and_comparison_views(login, clinician):
    from ml.synthetic import make_note
    from webapp.corpus.models import Annotation, Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceMap

    out = Path(os.environ["DSM_SCREENSHOTS"])
    out.mkdir(parents=True, exist_ok=True)
    synthetic = make_note(3)
    corpus = Corpus.objects.create(project=default_project(), name="ed-synthetic", language="en")
    note = Note.objects.create(corpus=corpus, external_id=synthetic.id, text=synthetic.text)
    base = ModelVersion.objects.create(name="smollm2-base", family="llama", path="base")
    dsm = ModelVersion.objects.create(name="smollm2-dsm", family="llama", path="dsm", parent=base)
    profile = PeakProfile.objects.create(name="paper", kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)
    offsets = np.array([m.span() for m in TOKEN.finditer(note.text)], np.int32)
    rng = np.random.default_rng(0)
    task = None
    for ann in synthetic.annotations:
        t = Task.objects.create(slug=ann.task, description=ann.description, options=[ann.label, "other"])
        if ann.evidence:
            Annotation.objects.create(
                note=note, task=t, label=ann.label, annotator_name="synthetic", evidence=[list(e) for e in ann.evidence]
            )
        if ann.task == "heart-rate":
            task = t
            spans = ann.evidence + [(m.start(), m.end()) for m in re.finditer(r"BP \d+/\d+", note.text)]
            for model, height, extra in ((base, 0.7, 6), (dsm, 1.0, 2)):
                RelevanceMap.objects.store_one(
                    note, t, model, offsets, peaky(offsets, spans, rng, height=height, extra=extra)
                )
    page = login(clinician)
    page.set_viewport_size({"width": 1400, "height": 1100})
    url = f"/review/{corpus.pk}/notes/{note.pk}/?task={task.pk}&model={base.pk}&profile={profile.pk}"
    page.goto(url)
    page.wait_for_selector("#preview-share")
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    page.screenshot(path=str(out / "note-view.png"), full_page=True)
    page.screenshot(path=str(out / "note-panel-top.png"), full_page=True, clip=page_box(page, "#note-panel", 640))
    page.keyboard.press("?")
    page.screenshot(path=str(out / "note-help.png"))
    page.keyboard.press("Escape")
    page.goto(f"/review/{corpus.pk}/notes/{note.pk}/compare/?task={task.pk}&a={base.pk}&b={dsm.pk}")
    page.wait_for_selector("#mean-change")
    page.screenshot(path=str(out / "compare-view.png"), full_page=True)
    page.screenshot(
        path=str(out / "compare-difference-top.png"), full_page=True, clip=page_box(page, "#difference", 520)
    )
    page.screenshot(path=str(out / "compare-maps-top.png"), full_page=True, clip=page_box(page, ".compare-grid", 520))
    page.goto(f"/review/{corpus.pk}/?model={base.pk}&profile={profile.pk}")
    page.screenshot(path=str(out / "note-list.png"), full_page=True)
    from webapp.review.models import ValidationSet

    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="paper-grid",
        items=[[note.pk, task.pk]],
        grid=[
            {"kernel_size": k, "sigma": 1.0, "lower": lo, "upper": up}
            for k in (1, 3)
            for lo, up in ((0.2, 0.4), (0.2, 0.6))
        ],
    )
    page.goto(f"/review/validation/{vset.pk}/")
    page.screenshot(path=str(out / "validation-round.png"), full_page=True)
    for _ in range(4):
        if "/results/" in page.url:
            break
        page.keyboard.press("y")
        page.wait_for_load_state()
    page.goto(f"/review/validation/{vset.pk}/results/")
    page.screenshot(path=str(out / "validation-results.png"), full_page=True)
    page.goto(f"/review/reports/?corpus={corpus.pk}")
    page.screenshot(path=str(out / "report.png"), full_page=True)
    assert (out / "note-view.png").stat().st_size > 10_000
