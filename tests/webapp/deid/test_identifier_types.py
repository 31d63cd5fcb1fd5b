"""The identifier types by their labels (webapp.deid.identifier_types): one label for every type
ml.deid finds, in the reader's language on the de-identification pages, the code kept beside it for
a curator; a type the table does not know is shown as stored."""

import html
from types import SimpleNamespace

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import translation

from ml.deid.types import TYPES
from tests.webapp.deid.test_deidentifying import quiet_queue, ward  # noqa: F401 - fixtures
from webapp.deid import identifier_types
from webapp.deid.models import DeidJob
from webapp.deid_ops import jobs

FAKE = SimpleNamespace(pgettext=lambda context, text: f"<{context}|{text}>")

# what the job page says of {"NAME": 2, "NHS_NUMBER": 1, "OLD_TYPE": 1} (needs the merged catalogs)
LABELS = {
    "it": ("Nome", "Numero NHS"),
    "es": ("Nombre", "Número del NHS"),
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


def test_every_type_ml_deid_finds_has_a_label():
    assert set(identifier_types.LABELS) == set(TYPES)


def test_a_label_is_the_translation_of_its_template_in_the_identifier_type_context():
    assert identifier_types.label("NHS_NUMBER", FAKE) == "<identifier type|NHS number>"
    assert {identifier_types.LABELS[code].context for code in TYPES} == {"identifier type"}


def test_a_type_the_table_does_not_know_is_shown_as_stored():
    assert identifier_types.label("OLD_TYPE", FAKE) == "OLD_TYPE"
    assert identifier_types.label(None, FAKE) is None


def test_in_english_a_type_reads_as_its_label_with_its_code_beside_it():
    with translation.override("en"):
        cell = Template("{% load deid %}{% identifier_type 'NHS_NUMBER' %}").render(Context())
        line = Template("{% load deid %}{% identifier_type 'DATE' 'title' %}").render(Context())
        unknown = Template("{% load deid %}{% identifier_type 'OLD_TYPE' %}").render(Context())
    assert cell == 'NHS number <small><code class="identifier-type">NHS_NUMBER</code></small>'
    assert line == '<span class="identifier-type" title="DATE">Date</span>'
    assert unknown == "<code>OLD_TYPE</code>"


def test_the_missed_identifier_chooser_offers_labels_and_posts_codes():
    with translation.override("en"):
        out = Template("{% load deid %}{% for kind in types %}{{ kind }}={{ kind|identifier_label }};{% endfor %}")
        said = out.render(Context({"types": ["RECORD_NUMBER", "OLD_TYPE"]}))
    assert said == "RECORD_NUMBER=Record or accession number;OLD_TYPE=OLD_TYPE;"


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_job_page_names_each_type_in_the_reader_s_language(ward, researcher, client_for, lang):  # noqa: F811
    """Passes once the helpers' translations are merged into the catalogs (issue 42)."""
    job = jobs.launch_deidentify(ward, actor=researcher)
    DeidJob.objects.filter(pk=job.pk).update(counts={"NAME": 2, "NHS_NUMBER": 1, "OLD_TYPE": 1})
    page = client_for(researcher).get(reverse("deid:job", args=[job.pk]), HTTP_ACCEPT_LANGUAGE=lang)
    text = html.unescape(page.content.decode())
    for label in LABELS[lang]:
        assert f">{label} <small>" in text.replace("<td>", ">")
    assert "NHS number" not in text and "<code>OLD_TYPE</code>" in text
    assert '<code class="identifier-type">NHS_NUMBER</code>' in text  # the code, for a curator
