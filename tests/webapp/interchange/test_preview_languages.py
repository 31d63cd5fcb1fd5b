"""A gold import's preview lines and a mapping's refusal in the reader's language: the labels, the
tasks, the counts and the file's name as they are; the command line and the API keep the English."""

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import translation

from tests.webapp.interchange.test_upload_page import _brat_zip, _upload

PREVIEW = {
    "it": (
        "gold.zip: SYMPTOM: 1 segmenti in 1 documenti -> fever:present",
        "gold.zip: WHO: 1 segmenti in 1 documenti -> saltato",
        "gold.zip: annotazioni: 1 da creare, 0 invariate, 0 da aggiornare",
        "gold.zip: annotatore: ward-team (indicato per questa importazione)",
    ),
    "es": (
        "gold.zip: SYMPTOM: 1 segmentos en 1 documentos -> fever:present",
        "gold.zip: WHO: 1 segmentos en 1 documentos -> omitido",
        "gold.zip: anotaciones: 1 por crear, 0 sin cambios, 0 por actualizar",
        "gold.zip: anotador: ward-team (indicado para esta importación)",
    ),
}
REFUSED = {
    "it": "la voce di mappatura 1 ('SYMPTOM fever') deve essere ETICHETTA=QUESITO:VALORE",
    "es": "la entrada 1 de la correspondencia ('SYMPTOM fever') debe ser ETIQUETA=TAREA:VALOR",
}


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


@pytest.mark.parametrize("lang", ["it", "es"])
def test_a_preview_says_what_each_label_maps_to_in_the_reader_s_language(
    ward, tasks, researcher, client_for, django_capture_on_commit_callbacks, lang
):
    client = client_for(researcher)
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = lang
    job, page = _upload(client, django_capture_on_commit_callbacks, preview="on")
    page = html.unescape(page)
    for line in PREVIEW[lang]:
        assert line in page, line
    assert "gold.zip: SYMPTOM: 1 span(s) in 1 document(s) -> fever:present" in job.problem_lines  # the English


@pytest.mark.parametrize("lang", ["it", "es"])
def test_a_bad_mapping_is_refused_in_the_reader_s_language(ward, tasks, researcher, client_for, lang):
    data = {
        "kind": "annotations",
        "corpus": "ward",
        "file": SimpleUploadedFile("gold.zip", _brat_zip()),
        "format": "brat",
        "mapping": "SYMPTOM fever",
    }
    response = client_for(researcher).post(reverse("corpus:upload"), data, HTTP_ACCEPT_LANGUAGE=lang)
    assert response.status_code == 200
    assert REFUSED[lang] in html.unescape(response.content.decode())
