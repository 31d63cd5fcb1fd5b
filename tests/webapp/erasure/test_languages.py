"""An erasure's target, the files it removes and its error are stored in English (the receipt in
the audit log, the API, `manage.py erase`) and shown on the erasure pages in the reader's language,
the corpus's name, the counts and the patients' keyed hashes as stored."""

import html

import pytest
from django.urls import reverse
from django.utils import translation

from webapp.erasure import erasing
from webapp.erasure.models import ErasureRequest

pytestmark = pytest.mark.django_db

WORDS = {
    "it": {
        "notes": "1 nota del corpus ward",
        "error": "La cancellazione si è fermata per un errore imprevisto (RuntimeError); il log del worker ha i "
        "dettagli sotto la cancellazione {pk}. Riprendi continua da dove si è fermata.",
        "files": "cartelle di esportazione: 1, file caricati: 0, run di MLflow: 0",
        "patient": "di 1 paziente ({hash}) nel corpus ward",
        "whole": "l'intero progetto erasure-study",
    },
    "es": {
        "notes": "1 nota del corpus ward",
        "error": "La supresión se detuvo por un error inesperado (RuntimeError); el registro del worker tiene los "
        "detalles de la supresión {pk}. Reanudar continúa donde se detuvo.",
        "files": "carpetas de exportación: 1, archivos subidos: 0, ejecuciones de MLflow: 0",
        "patient": "de 1 paciente ({hash}) en el corpus ward",
        "whole": "todo el proyecto erasure-study",
    },
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.mark.parametrize("lang", ["it", "es"])
def test_an_erasure_s_target_files_and_error_in_the_reader_s_language(world, admin_user, client_for, lang):
    erasure = erasing.request(world.project, "notes", corpus=world.ward, notes=["n3"], actor=admin_user, send=False)
    erasing.fail(erasing.claim(erasure.pk), RuntimeError("no words of this reach the page"))
    erasure = ErasureRequest.objects.get(pk=erasure.pk)
    assert erasure.described == "1 note of corpus ward"  # stored English
    assert erasure.error.startswith("The erasure stopped because of an unexpected error (RuntimeError)")
    client = client_for(admin_user)
    words = WORDS[lang]
    page = html.unescape(
        client.get(reverse("erasure:detail", args=[erasure.pk]), HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    )
    assert f": {words['notes']}</h1>" in page
    assert words["error"].format(pk=erasure.pk) in page
    listed = client.get(reverse("erasure:list"), HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    assert f"<td>{words['notes']}</td>" in listed

    from tests.webapp.erasure.test_views import patient_form

    dry = html.unescape(
        client.post(reverse("erasure:new"), patient_form(world, preview=""), HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    )
    assert words["files"] in dry
    before, after = words["patient"].split("{hash}")
    target = dry[dry.index(before) :]
    assert after in target[:200] and "P1" not in target[:200]  # the patient's keyed hash, never the value

    with translation.override(lang):
        from webapp.erasure import described_text

        assert described_text.shown("the whole project erasure-study") == words["whole"]
        assert described_text.shown("something older") == "something older"
