"""A de-identification job's error, stored in English by the worker (the API reads it so), is shown
on the job's page in the reader's language, the job's id and the error's type as stored."""

import html

import pytest
from django.urls import reverse
from django.utils import translation

from tests.webapp.deid.test_deidentifying import quiet_queue, ward  # noqa: F401 - fixtures
from webapp.deid_ops import error_text, jobs

SAID = {
    "it": "L'elaborazione si è fermata per un errore imprevisto (RuntimeError); il log del worker ha i dettagli "
    "sotto l'elaborazione di de-identificazione {pk}. Riprendi continua da dove si è fermata.",
    "es": "El proceso se detuvo por un error inesperado (RuntimeError); el registro del worker tiene los detalles "
    "del proceso de desidentificación {pk}. Reanudar continúa donde se detuvo.",
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.mark.parametrize("lang", ["it", "es"])
def test_a_failed_job_says_why_in_the_reader_s_language(ward, policy, researcher, client_for, lang):  # noqa: F811
    job = jobs.launch_deidentify(ward, actor=researcher)
    assert jobs.fail_unexpectedly(jobs.claim(job.pk, worker="w1"), RuntimeError("its own words"))
    job.refresh_from_db()
    assert job.error.startswith("The job stopped on an unexpected error (RuntimeError)")  # stored English
    page = client_for(researcher).get(reverse("deid:job", args=[job.pk]), HTTP_ACCEPT_LANGUAGE=lang)
    assert SAID[lang].format(pk=job.pk) in html.unescape(page.content.decode())


def test_a_policy_s_own_words_stay_as_written():
    with translation.override("es"):
        said = error_text.shown("The policy names no rule. Resume once it is corrected.")
    assert said == "The policy names no rule. Reanude cuando esté corregido."
