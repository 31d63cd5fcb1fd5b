"""An evaluation's page in the reader's language: its configurations by their labels, the
recommendation's reason that ml.choosing wrote (kept as templates and values beside the English the
API serves) and the skipped pairs' lines, their ids, figures and a model's own words as stored."""

import html

import pytest
from django.utils import translation

import ml.choosing
from ml.choosing import choose
from tests.webapp.evaluation.factories import finished, group
from webapp.evaluation import reason_text
from webapp.evaluation.models import RelevanceEvaluation

RANDOM = {"auc": 0.5, "auc_ci": [0.47, 0.53]}
PROBLEMS = [
    "Note 3 x task 2 skipped (the note or the task was deleted).",
    "Note 4 x task 1 skipped for attnlrp / span / en (invalid input).",
    "Note 5 x task 1: no faithfulness (a model's own words).",
]
PAGE = {
    "it": (
        "AttnLRP / Ogni token di s_T, sommato / en: configurazioni che superano il caso per localizzazione: 2 su 2; "
        "questa è la migliore in localizzazione (localizzazione: AUC 0.710 (0.660-0.760)). Non considerate: "
        "fedeltà (non misurata (avviate la valutazione con la fedeltà)); specificità (nessuna nota ha mappe per "
        "due o più dei suoi quesiti).",
        "Considerati: localizzazione.",
        "Nota 3 x quesito 2 saltata (la nota o il quesito è stato eliminato).",
        "Nota 4 x quesito 1 saltata per AttnLRP / Ogni token di s_T, sommato / en (input non valido).",
        "Nota 5 x quesito 1: nessuna fedeltà (a model's own words).",
        "<strong>Usate AttnLRP con la variante “Ogni token di s_T, sommato”</strong>",
    ),
    "es": (
        "AttnLRP / Cada token de s_T, sumado / en: configuraciones que superan el azar en localización: 2 de 2; "
        "esta es la mejor en localización (localización: AUC 0.710 (0.660-0.760)). No consideradas: fidelidad "
        "(no medida (lance la evaluación con fidelidad)); especificidad (ninguna nota tiene mapas para dos o más "
        "de sus tareas).",
        "Considerados: localización.",
        "Nota 3 x tarea 2 omitida (la nota o la tarea se eliminó).",
        "Nota 4 x tarea 1 omitida para AttnLRP / Cada token de s_T, sumado / en (entrada no válida).",
        "Nota 5 x tarea 1: sin fidelidad (a model's own words).",
        "<strong>Use AttnLRP con la variante “Cada token de s_T, sumado”</strong>",
    ),
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.fixture
def evaluation(annotated, model_version):
    corpus, _ = annotated
    other, winner = group("attention", "next", 0.58, 0.54, 0.62), group("attnlrp", "span", 0.71, 0.66, 0.76)
    configs = [{k: g[k] for k in ("method", "explain", "template", "config_key")} for g in (other, winner)]
    chosen = choose(configs, [other, winner], RANDOM).as_dict()
    evaluation = finished(corpus, model_version, [other, winner], choice=chosen["choice"])
    result = {**evaluation.result, "recommended": chosen, "problems": PROBLEMS}
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(result=result)
    return evaluation


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_result_page_names_configurations_and_says_why_in_the_reader_s_language(
    client, researcher, evaluation, lang
):
    client.force_login(researcher)
    page = html.unescape(client.get(f"/evaluations/{evaluation.pk}/", HTTP_ACCEPT_LANGUAGE=lang).content.decode())
    for words in PAGE[lang]:
        assert words in page, words
    assert "attnlrp / span" not in page and "Mean attention" not in page  # no code, no English label
    stored = RelevanceEvaluation.objects.get(pk=evaluation.pk).result["recommended"]["reason"]
    assert stored.startswith("attnlrp / span / en: 2 of 2 configurations beat chance on localisation;")


def test_in_english_the_reason_reads_as_ml_wrote_it(client, researcher, evaluation):
    client.force_login(researcher)
    page = html.unescape(client.get(f"/evaluations/{evaluation.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode())
    reason = RelevanceEvaluation.objects.get(pk=evaluation.pk).result["recommended"]["reason"]
    assert reason.replace("attnlrp / span / en", "AttnLRP / Every token of s_T, summed / en") in page
    for line in PROBLEMS[:1]:
        assert line in page


def test_every_template_ml_choosing_writes_is_marked_for_the_catalogs():
    assert set(ml.choosing.TEMPLATES) <= set(reason_text.CHOOSING)


@pytest.mark.parametrize(
    "configs, groups, faithfulness, specificity",
    [
        ([{"config_key": "a", "method": "attnlrp", "explain": "span"}], [], {}, {}),  # nothing to go on
        (  # specificity alone
            [{"config_key": "a", "method": "attnlrp", "explain": "span"}],
            [],
            {},
            {"a": {"spearman_mean": 0.4}},
        ),
    ],
)
def test_a_reason_without_a_choice_is_translated_whole(configs, groups, faithfulness, specificity):
    said = choose(configs, groups, RANDOM, faithfulness, specificity).as_dict()
    with translation.override("it"):
        shown = reason_text.reason(said)
    assert shown.startswith("Nulla qui può mostrare che una configurazione supera il caso: localizzazione: ")
    assert "no gold" not in shown and "not measured" not in shown


ERRORS = {
    "it": (
        "Errore imprevisto (RuntimeError); il log del worker ha i dettagli. Le mappe già salvate sono conservate: "
        "Riprendi continua da lì."
    ),
    "es": (
        "Error inesperado (RuntimeError); el registro del worker tiene los detalles. Los mapas ya guardados se "
        "conservan: Reanudar continúa desde ahí."
    ),
}


@pytest.mark.parametrize("lang", ["it", "es"])
def test_an_evaluation_s_error_is_shown_in_the_reader_s_language(client, researcher, annotated, model_version, lang):
    from tests.webapp.evaluation.factories import spec
    from webapp.evaluation import evaluations

    corpus, _ = annotated
    evaluation = evaluations.launch(spec(corpus, model_version), enqueue=False)
    evaluations.fail_unexpectedly(evaluations.claim(evaluation.pk, "w1"), RuntimeError("its own words"))
    evaluation.refresh_from_db()
    assert evaluation.error.startswith("Unexpected error (RuntimeError); the worker log")  # stored English
    client.force_login(researcher)
    page = html.unescape(client.get(f"/evaluations/{evaluation.pk}/", HTTP_ACCEPT_LANGUAGE=lang).content.decode())
    assert f'<p class="error">{ERRORS[lang]}</p>' in page
    with translation.override(lang):
        lost = "Worker w1 was lost (no heartbeat for 60 s); queued again automatically."
        assert reason_text.error(lost) != lost and "w1" in reason_text.error(lost)
        assert reason_text.error("something else") == "something else"
