"""A de-identification job's error, stored in English by the worker (the API reads it so), is shown
on the job's page in the reader's language, the job's id and the error's type as stored."""

import html
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from tests.webapp.deid.test_deidentifying import quiet_queue, ward  # noqa: F401 - fixtures
from webapp.deid_ops import error_text, jobs, scanning

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


NOT_SCANNED = {
    "it": "non analizzato: non è stato possibile creare il rilevatore (RuntimeError)",
    "es": "no analizado: no se pudo crear el detector (RuntimeError)",
}


def test_why_an_export_was_not_scanned_is_recognised_its_error_type_as_stored():
    fake = SimpleNamespace(gettext=lambda text: f"<{text}>")
    for template in (scanning.NOT_MADE, scanning.STOPPED):
        said = error_text.texts().render(template % {"type": "RuntimeError"}, fake)
        assert said == f"<{template}>" % {"type": "RuntimeError"}


@pytest.mark.parametrize("lang", ["it", "es"])
def test_an_export_s_residual_scan_says_why_it_did_not_run_in_the_reader_s_language(lang):
    """Passes once the helpers' translations are merged into the catalogs (issue 42)."""
    residual = {"skipped": scanning.NOT_MADE % {"type": "RuntimeError"}}
    with translation.override(lang):
        said = render_to_string("deid/residual.html", {"residual": residual})
    assert NOT_SCANNED[lang] in html.unescape(said)
