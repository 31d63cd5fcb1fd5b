"""A training run's phase, stored by the worker in English (and served so by the API), is shown on
the run page and the run list in the reader's language (training_tags.run_phase)."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from webapp.api import tokens

PHASES = {
    "training the classification heads": {
        "it": "addestramento delle teste di classificazione",
        "es": "entrenando los cabezales de clasificación",
    },
    "3-shot prompting": {"it": "prompting 3-shot", "es": "prompting 3-shot"},
}


@pytest.fixture(autouse=True)
def _no_language_left_behind():
    """A request's language stays active in the test's thread after it: later tests read English."""
    yield
    translation.deactivate()


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("lang", ["it", "es"])
def test_a_running_phase_is_shown_in_the_reader_s_language(researcher, make_run, test_project, phase, lang):
    run = make_run(status="running", phase=phase)
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    page = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert f'<span class="phase">{PHASES[phase][lang]}</span>' in page
    assert PHASES[phase][lang] in client.get(reverse("training:run_list")).content.decode()

    run.refresh_from_db()
    assert run.phase == phase  # stored English
    _, secret = tokens.create(researcher, name="t", projects=[test_project], ceiling="roles", days=30)
    answer = client.get(f"/api/training-runs/{run.pk}", headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 200 and answer.json()["phase"] == phase


@pytest.mark.parametrize("phase", PHASES)
def test_in_english_the_phase_reads_as_stored(researcher, make_run, phase):
    run = make_run(status="running", phase=phase)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(researcher)
    page = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    assert f'<span class="phase">{phase}</span>' in page


def test_a_phase_not_known_is_shown_as_stored(researcher, make_run):
    run = make_run(status="running", phase="something new")
    client = Client(HTTP_ACCEPT_LANGUAGE="it")
    client.force_login(researcher)
    assert (
        '<span class="phase">something new</span>'
        in client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    )


LOG_LINES = {
    "it": ("Tentativo 1 avviato su w1.", "Annullamento richiesto."),
    "es": ("Intento 1 iniciado en w1.", "Cancelación solicitada."),
    "en": ("Attempt 1 started on w1.", "Cancel requested."),
}


@pytest.mark.parametrize("lang", ["it", "es", "en"])
def test_the_run_s_log_lines_are_shown_in_the_reader_s_language(researcher, make_run, lang):
    from webapp.training import runs
    from webapp.training.models import RunLog

    run = runs.claim(make_run().pk, worker="w1")
    runs.cancel(run)
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    page = client.get(reverse("training:run_detail", args=[run.pk])).content.decode()
    log = page[page.index('<ol class="log">') :]
    for words in LOG_LINES[lang]:
        assert f"</time> {words}</li>" in log, words
    stored = set(RunLog.objects.filter(run=run).values_list("message", flat=True))
    assert set(LOG_LINES["en"]) <= stored  # stored English
