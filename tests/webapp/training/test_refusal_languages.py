"""ml.training's refusals read in the reader's language: a launch its configs refuse (on the launch
page and in build_config's problems) and a run it refused (the run page's error), with the section,
the setting, the item's id, its label and every number as ml wrote them, in every language. The
stored error stays English (the API reads it as stored). These tests read the compiled catalogs."""

import html

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from webapp.training import configs, execution, log_text, runs
from webapp.training.models import RunKind, TrainingRun

MAX_LENGTH = {
    "en": "Section 'prompting': max_length must be >= 16",
    "it": "Sezione 'prompting': max_length deve essere >= 16",
    "es": "Sección 'prompting': max_length debe ser >= 16",
}
SFT_TURN = {
    "en": "Section 'train': SFT keeps its instruction in the user turn (instruction_turn 'user'): its predictions "
    "are scored with that prompt",
    "it": "Sezione 'train': La SFT tiene l'istruzione nel turno dell'utente (instruction_turn 'user'): le sue "
    "previsioni sono valutate con quel prompt",
    "es": "Sección 'train': El SFT mantiene la instrucción en el turno del usuario (instruction_turn 'user'): sus "
    "predicciones se puntúan con ese prompt",
}
CROSS_CHECKS = {
    "en": (
        "The effective batch size (10) must be a multiple of the micro-batch size (4): each optimizer step "
        "accumulates whole micro-batches.",
        "Unknown section 'heads' for a Masked-span training (DSM, random mask, one peak) run; its sections are train.",
    ),
    "it": (
        "La dimensione effettiva del lotto (10) deve essere un multiplo della dimensione del micro-lotto (4): ogni "
        "passo dell'ottimizzatore accumula micro-lotti interi.",
        "Sezione 'heads' sconosciuta per un addestramento ",
    ),
    "es": (
        "El tamaño efectivo del lote (10) debe ser un múltiplo del tamaño del microlote (4): cada paso del "
        "optimizador acumula microlotes enteros.",
        "Sección 'heads' desconocida para un entrenamiento ",
    ),
}
ITEM_REFUSED = {
    "en": "ml.training refused the run: item 'n3-t1': label 'maybe' is not one of ['yes', 'no']",
    "it": "ml.training ha rifiutato l'addestramento: elemento 'n3-t1': l'etichetta 'maybe' non è tra ['yes', 'no']",
    "es": "ml.training rechazó el entrenamiento: elemento 'n3-t1': la etiqueta 'maybe' no es una de ['yes', 'no']",
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.mark.parametrize("lang", ["en", "it", "es"])
def test_build_config_says_ml_s_refusal_in_the_reader_s_language_with_its_values(lang):
    with translation.override(lang):
        _, problems = configs.build_config(RunKind.PROMPTING, {"prompting": {"max_length": 10}})
        assert problems == {"prompting": MAX_LENGTH[lang]}
        _, problems = configs.build_config(RunKind.SFT, {"train": {"instruction_turn": "system"}})
        assert problems == {"train": SFT_TURN[lang]}
        _, problems = configs.build_config(
            RunKind.DSM, {"train": {"effective_batch_size": 10, "micro_batch_size": 4}, "heads": {}}
        )
    multiple, unknown = CROSS_CHECKS[lang]
    assert problems["train.effective_batch_size"] == multiple
    assert problems["heads"].startswith(unknown) and problems["heads"].endswith(" train.")


def test_a_refusal_names_the_section_the_setting_and_the_number_identically_in_every_language():
    for words in ("'prompting'", "max_length", ">= 16"):
        assert all(words in said for said in MAX_LENGTH.values()), words
    for words in ("'n3-t1'", "'maybe'", "['yes', 'no']"):
        assert all(words in said for said in ITEM_REFUSED.values()), words


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_launch_page_shows_ml_s_refusal_in_the_reader_s_language(researcher, model_version, corpus, lang):
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    answer = client.post(
        reverse("training:run_new"),
        {
            "preset": "0-shot",
            "model_version": model_version.pk,
            "split_corpus": corpus.pk,
            "split_seed": 0,
            "split_test_ratio": 0.15,
            "prompting__shots": 0,
            "prompting__variants": 3,
            "prompting__seed": 0,
            "prompting__max_length": 10,
            "prompting__batch_size": 8,
            "evaluation__n_resamples": 1000,
            "evaluation__seed": 0,
        },
    )
    page = html.unescape(answer.content.decode())
    assert answer.status_code == 200 and not TrainingRun.objects.exists()
    assert f'<p class="error">{MAX_LENGTH[lang]}</p>' in page
    assert MAX_LENGTH["en"] not in page


@pytest.mark.parametrize("lang", ["en", "it", "es"])
def test_a_run_ml_refused_shows_its_error_in_the_reader_s_language(
    monkeypatch, researcher, dataset, model_version, lang
):
    from ml.training.data import LabeledItem

    def runner(run, reporter):
        LabeledItem("n3-t1", "3", "fever", "Fever?", ["yes", "no"], "text", "maybe")

    monkeypatch.setitem(execution.RUNNERS, RunKind.DSM, runner)
    spec = runs.RunSpec(kind=RunKind.DSM, model_version=model_version, dataset=dataset, config={"train": {}})
    spec.config["train"]["warmup_ratio"] = 0.0  # one step on the fixture's dataset: no warmup, or it is refused
    run = runs.claim(runs.launch(spec).pk, worker="w1")
    assert execution.execute(run) == "failed"
    assert TrainingRun.objects.get(pk=run.pk).error == ITEM_REFUSED["en"]  # stored English

    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    page = html.unescape(client.get(reverse("training:run_detail", args=[run.pk])).content.decode())
    assert f'<p class="error">{ITEM_REFUSED[lang]}</p>' in page
    assert f"</time> {ITEM_REFUSED[lang]}</li>" in page[page.index('<ol class="log">') :]


NO_GOLD = {
    "en": "Corpus ward has no gold annotations: import annotations first.",
    "it": "Il corpus ward non ha annotazioni di riferimento: importate prima le annotazioni.",
    "es": "El corpus ward no tiene anotaciones de referencia: importe primero las anotaciones.",
}


@pytest.mark.parametrize("lang", ["en", "it", "es"])
def test_a_split_s_refusal_names_the_corpus_in_the_reader_s_language(corpus, lang):
    from webapp.corpus.models import Annotation
    from webapp.training import splits

    Annotation.objects.filter(note__corpus=corpus).delete()
    with translation.override(lang), pytest.raises(splits.SplitError) as refused:
        splits.get_or_create_split(corpus)
    assert str(refused.value) == NO_GOLD[lang]


def test_a_long_refusal_is_stored_whole_so_the_page_can_translate_it(monkeypatch, dataset, model_version):
    """ml's list of a config's known keys runs past 300 characters; the log line holds 500."""
    from ml.training import CausalLMConfig

    monkeypatch.setitem(execution.RUNNERS, RunKind.DSM, lambda run, reporter: CausalLMConfig.from_dict({"lr_x": 1}))
    spec = runs.RunSpec(kind=RunKind.DSM, model_version=model_version, dataset=dataset, config={"train": {}})
    spec.config["train"]["warmup_ratio"] = 0.0
    run = runs.claim(runs.launch(spec).pk, worker="w1")
    assert execution.execute(run) == "failed"
    error = TrainingRun.objects.get(pk=run.pk).error
    assert len(error) > 300 and error.endswith("warmup_ratio, weight_decay")
    with translation.override("it"):
        shown = log_text.shown(error)
    assert shown.startswith("ml.training ha rifiutato l'addestramento: chiave/i di CausalLMConfig sconosciuta/e: lr_x;")
