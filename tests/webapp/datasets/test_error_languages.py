"""A dataset build's error, stored in English by the worker (the API reads it so), is shown on the
dataset's page in the reader's language, the dataset's id and the error's type as stored."""

import html

import pytest
from django.urls import reverse
from django.utils import translation

from webapp.datasets import building, error_text

SAID = {
    "it": "La costruzione si è fermata per un errore imprevisto (RuntimeError). Nessun esempio è stato conservato. "
    "Il log del worker ha i dettagli sotto il dataset {pk}; costruire di nuovo può funzionare se la causa era "
    "temporanea.",
    "es": "La construcción se detuvo por un error inesperado (RuntimeError). No se conservó ningún ejemplo. El "
    "registro del worker tiene los detalles del conjunto de datos {pk}; volver a construir puede funcionar si la "
    "causa era temporal.",
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.mark.parametrize("lang", ["it", "es"])
def test_a_failed_build_says_why_in_the_reader_s_language(make_dataset, maps, researcher, client, lang):
    dataset = make_dataset()
    stored = building.fail(building.claim(dataset.pk, worker="a"), RuntimeError("its own words"))
    assert stored.startswith("The build stopped because of an unexpected error (RuntimeError).")
    client.force_login(researcher)
    page = client.get(reverse("datasets:detail", args=[dataset.pk]), HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    assert SAID[lang].format(pk=dataset.pk) in html.unescape(page)


def test_a_full_disk_is_said_in_the_reader_s_language_and_an_unknown_text_as_stored():
    full = "The export stopped: no space left on device (OSError). Free some space under the data folder, then "
    full += "prepare it again."
    with translation.override("it"):
        assert error_text.shown(full) == (
            "L'esportazione si è fermata: spazio esaurito sul dispositivo (OSError). Liberate spazio nella cartella "
            "dei dati, poi preparatela di nuovo."
        )
        assert error_text.shown("an old row's words") == "an old row's words"
