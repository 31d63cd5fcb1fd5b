"""A relevance job's and its chunks' errors, written by workers in English (and served so by the
API), are shown on the job page in the reader's language, their values as stored
(webapp.pipeline.error_text)."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from webapp.api import tokens
from webapp.pipeline import chunks
from webapp.pipeline.error_text import error_words

CHUNK_ERROR = "Could not compute relevance (ModelNotFoundError): model 'x' is not converted yet"
JOB_ERROR = "1 of 6 chunks failed (their errors are listed below). Press Resume to run them again."
WORDS = {
    "it": (
        "Impossibile calcolare la rilevanza (ModelNotFoundError): model 'x' is not converted yet",
        "1 di 6 blocchi non riusciti (i loro errori sono elencati sotto). Premete Riprendi per eseguirli di nuovo.",
    ),
    "es": (
        "No se pudo calcular la relevancia (ModelNotFoundError): model 'x' is not converted yet",
        "Fallaron 1 de 6 bloques (sus errores se indican abajo). Pulse Reanudar para ejecutarlos de nuevo.",
    ),
    "en": (CHUNK_ERROR, JOB_ERROR),
}


@pytest.fixture(autouse=True)
def _no_language_left_behind():
    """A request's language stays active in the test's thread after it: later tests read English."""
    yield
    translation.deactivate()


@pytest.fixture
def failed(launched):
    job = launched()
    chunks.fail(chunks.claim(job.chunks.get(index=1).pk, "w"), CHUNK_ERROR)
    for index in (0, 2, 3, 4, 5):
        chunks.finish(chunks.claim(job.chunks.get(index=index).pk, "w"), 1.0, chunks.Outcome())
    job.refresh_from_db()
    assert job.error == JOB_ERROR and job.chunks.get(index=1).error == CHUNK_ERROR  # stored English
    return job


@pytest.mark.parametrize("lang", ["it", "es", "en"])
def test_the_job_page_shows_the_errors_in_the_reader_s_language(clinician, failed, test_project, lang):
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(clinician)
    html = client.get(reverse("pipeline:job_detail", args=[failed.pk])).content.decode()
    chunk_words, job_words = WORDS[lang]
    assert job_words.replace("'", "&#x27;") in html
    assert chunk_words.replace("'", "&#x27;") in html
    _, secret = tokens.create(clinician, name="t", projects=[test_project], ceiling="read", days=30)
    answer = client.get(f"/api/jobs/{failed.pk}", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200 and answer.json()["error"] == JOB_ERROR


@pytest.mark.parametrize(
    "stored",
    [
        "Planning failed (KeyError); the worker log has the details. Press Resume to plan again.",
        "The planner was lost; planning again automatically.",
        "Gave up after 5 attempts: the worker stopped during each one (out of memory, or killed). "
        "Try smaller chunks, then Resume.",
        "The chunk took longer than the task time limit; launch with smaller chunks.",
        "Stopped by a temporary problem (OperationalError) that did not go away after 3 retries. "
        "Press Resume to try again.",
        "Unexpected error (RuntimeError) while computing relevance; the worker log has the details.",
        "No worker could load model m (v2): released 2 times by each of gpu-1, gpu-2 (no such file (x)). "
        "Make the model reachable by the relevance workers (docs/operations.md: What must be shared), then Resume.",
        "Worker gpu-1 cannot load model m (v2) (no such file); released for another worker "
        "(1 of 2 releases by this worker).",
        "The task queue could not be reached (ConnectionError); 0 of 3 messages were sent. Work that was not "
        "sent is sent again automatically once the queue is back (or press Resume).",
    ],
)
def test_every_message_the_workers_write_is_recognised_and_english_reads_as_stored(stored):
    with translation.override("en"):
        assert error_words(stored) == stored
    for lang in ("it", "es"):
        with translation.override(lang):
            assert error_words(stored) != stored


def test_an_error_not_recognised_is_shown_as_stored():
    with translation.override("it"):
        assert error_words("something odd happened") == "something odd happened"


def test_the_workers_own_messages_are_recognised():
    """The forms in error_text follow the workers' own f-strings."""
    from webapp.lifecycle.kinds import RETRY

    written = [
        chunks.failure_message(KeyError("x")),
        chunks.failure_message(OSError("disk full")),
        RETRY.gave_up(ConnectionError()),
    ]
    with translation.override("it"):
        for text in written:
            assert error_words(text) != text, text
