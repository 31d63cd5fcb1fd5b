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


# What the workers write while they train and when a run fails, and the line its launch stores
WORKER_LINES = {
    "it": (
        "Avviato: Addestramento a segmenti mascherati (DSM, maschera casuale, un picco), modello {model}.",
        "Fase: addestramento delle teste di classificazione.",
        "Suddivisione 7: 10 elementi di addestramento e 4 di test, 1 quesito.",
        "addestramento: avviato; max_length 512 (automatico)",
        "teste: testa fever",
        "Il worker w0 è stato perso alle 12:00:01 (nessun segnale di vita per 60 s); rimesso in coda automaticamente.",
    ),
    "es": (
        "Lanzado: Entrenamiento con segmentos enmascarados (DSM, máscara aleatoria, un pico), modelo {model}.",
        "Fase: entrenando los cabezales de clasificación.",
        "División 7: 10 elementos de entrenamiento y 4 de prueba, 1 tarea.",
        "entrenamiento: iniciado; max_length 512 (automático)",
        "cabezales: cabezal fever",
        "El worker w0 se perdió a las 12:00:01 (sin señal de vida durante 60 s); se volvió a poner en cola "
        "automáticamente.",
    ),
}
ERRORS = {
    "it": "L'addestramento si è fermato per un errore imprevisto (RuntimeError). Il log del worker ha i dettagli "
    "sotto l'addestramento {run}; Riprendi continua dall'ultimo salvataggio.",
    "es": "El entrenamiento se detuvo por un error inesperado (RuntimeError). El registro del worker tiene los "
    "detalles del entrenamiento {run}; Reanudar continúa desde el último punto de control.",
    "en": "The run stopped because of an unexpected error (RuntimeError). The worker log has the details under "
    "run {run}; Resume continues from the last checkpoint.",
}


@pytest.mark.parametrize("lang", ["it", "es", "en"])
def test_the_worker_s_lines_and_the_run_s_error_are_shown_in_the_reader_s_language(
    researcher, make_run, model_version, lang
):
    """Each line through the code that writes it (the launch, the claim after a lost worker, the
    reporter's phase, split and trainer's messages, the failure): stored in English, shown in the
    reader's language with its ids, counts and names as stored."""
    import html

    from ml.training.progress import ProgressEvent
    from webapp.training import log_text, runs
    from webapp.training.models import RunLog, TrainingRun
    from webapp.training.reporting import Reporter

    run = make_run()
    lost = "Worker w0 was lost at 12:00:01 (no heartbeat for 60 s); queued again automatically."
    TrainingRun.objects.filter(pk=run.pk).update(error=lost)  # as webapp.lifecycle.recovery writes it
    run = runs.claim(run.pk, worker="w1")
    reporter = Reporter(run)
    reporter.set_phase("heads", label="training the classification heads")
    reporter.log(log_text.SPLIT.format(split=7, train=10, test=4, tasks=1))
    reporter.phase = "train"
    reporter.on_progress(ProgressEvent(0, 4, 0.0, None, None, None, None, "started; max_length 512 (auto)"))
    reporter.phase = "heads"
    reporter.on_progress(ProgressEvent(1, 4, 1.0, 0.5, 1e-3, None, None, "head fever"))
    runs.fail(run, log_text.UNEXPECTED % {"type": "RuntimeError", "run": run.pk})

    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    page = html.unescape(client.get(reverse("training:run_detail", args=[run.pk])).content.decode())
    error = ERRORS[lang].format(run=run.pk)
    assert f'<p class="error">{error}</p>' in page
    log = page[page.index('<ol class="log">') :]
    assert f"</time> {error}</li>" in log  # the failure is the log's last line too
    stored = list(RunLog.objects.filter(run=run).values_list("message", flat=True))
    assert ERRORS["en"].format(run=run.pk) in stored and lost in stored  # stored English
    assert "heads: head fever" in stored and "train: started; max_length 512 (auto)" in stored
    if lang != "en":
        for words in WORKER_LINES[lang]:
            words = words.format(model=model_version.name)
            assert f"</time> {words}</li>" in log, words
    else:
        for words in stored:
            assert f"</time> {words}</li>" in log, words
