"""A researcher launches a relevance job in Italian and in Spanish, in real headless Chromium whose
locale (its Accept-Language) is the language: the form, its live estimate, the question a large
launch asks, the confirmation, the job's page and the list of jobs. Every page says <html lang>
of the language, shows no English word except its data (tests/browser/language.py) and no text
running out of its box, and leaves a full-page screenshot in test-artifacts/i18n/<language>/.
In English the same walk checks the checker: it finds English words on every page.
"""

import re

import pytest

from tests.browser import language
from tests.projects import default_project
from webapp.pipeline.models import RelevanceJob

pytestmark = pytest.mark.django_db(transaction=True)

WARD = {
    "en": {
        "corpus": "ward",
        "text": "Pt {i}: HR 130 bpm, tachycardic; pacemaker since 2019.",
        "tasks": [("heart-rate", "heart rate"), ("presence-of-pacemaker", "presence of pacemaker")],
    },
    "it": {
        "corpus": "reparto",
        "text": "Pz {i}: FC 130 bpm, tachicardico; portatore di pacemaker dal 2019.",
        "tasks": [("frequenza-cardiaca", "frequenza cardiaca"), ("portatore-di-pacemaker", "portatore di pacemaker")],
    },
    "es": {
        "corpus": "sala",
        "text": "Pac. {i}: FC 130 lpm, taquicárdico; portador de marcapasos desde 2019.",
        "tasks": [("frecuencia-cardiaca", "frecuencia cardíaca"), ("portador-de-marcapasos", "portador de marcapasos")],
    },
}


@pytest.fixture
def ward(db, lang):
    """Six notes of the ward in `lang`, two tasks and a model version."""
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion

    data = WARD[lang]
    corpus = Corpus.objects.create(project=default_project(), name=data["corpus"], language=lang)
    for i in range(6):
        Note.objects.create(corpus=corpus, external_id=f"n{i}", text=data["text"].format(i=i))
    for slug, description in data["tasks"]:
        Task.objects.create(slug=slug, description=description, options=["y", "n"])
    model = ModelVersion.objects.create(name="llama-mini", family="llama", path="llama-mini")
    return {"corpus": corpus, "model": model}


def test_a_researcher_launches_a_relevance_job_in_the_language(lang, lang_page, researcher, ward, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 10  # no measured rate yet: more than 10 prompts asks first
    page, walk = lang_page, language.Walk(lang_page, lang)
    language.log_in(page, researcher)
    page.goto("/jobs/new/")
    page.wait_for_selector("#launch-estimate")
    walk.check("job-form")

    page.select_option("#id_corpus", str(ward["corpus"].pk))
    page.select_option("#id_model_version", str(ward["model"].pk))
    page.fill("#id_sample_k", "2")
    page.locator("#id_sample_k").dispatch_event("change")
    # the live estimate (htmx) as the fields change: 6 notes x 2 tasks
    page.locator("#launch-estimate strong", has_text=re.compile(r"\b12\b")).wait_for()
    walk.check("job-estimate")

    page.locator("form.launch > button[type=submit]").click()  # the form's own button: plan and launch
    page.locator("button[name=confirmed]").wait_for()
    assert page.locator(".estimate-ask[role=alert] .confirm-question").is_visible()
    assert not RelevanceJob.objects.exists()  # the first submit launched nothing
    walk.check("job-confirm")

    page.locator("button[name=confirmed]").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = RelevanceJob.objects.get()
    assert page.url.endswith(f"/jobs/{job.pk}/") and job.corpus == ward["corpus"] and job.sample_k == 2
    page.wait_for_selector(".messages")
    walk.check("job-detail")

    page.goto("/jobs/")
    walk.check("job-list")

    assert not walk.problems(), walk.report()
