"""The review report's agreement diagnostics, written in English by ml.agreement and
ml.span_agreement (stored with the figures, in the CSV as written), shown on the report page in the
reader's language (webapp.review.agreement_text): every template ml writes is listed, the labels,
names and counts stay as stored, a sentence no template matches is shown as stored."""

import html
from types import SimpleNamespace

import pytest
from django.urls import reverse
from django.utils import translation

import ml.agreement
import ml.span_agreement
from ml.agreement import AgreementSettings, agreement
from ml.span_agreement import Span, SpanSettings, span_agreement
from webapp.lifecycle import units
from webapp.review import agreement_text, decisions, report_store
from webapp.review.decisions import PeakContext
from webapp.review.models import ReportSnapshot

from .fabricate import TEXT, word_span

# a fake translation: each template in brackets, so what was recognised shows (the quotes around a
# decision's label too: "'%(label)s'")
FAKE = SimpleNamespace(
    gettext=lambda text: f"[{text}]",
    ngettext=lambda singular, plural, n: f"[{singular if n == 1 else plural}]",
    pgettext=lambda context, text: f"[{text}]",
)
NO_PAIRABLE = {
    "it": "Nessun elemento è stato giudicato da due o più revisori: la concordanza non è definita.",
    "es": "Ningún elemento fue juzgado por dos o más revisores: la concordancia no está definida.",
}
ONE_LABEL = {"it": "Ogni giudizio è 'rifiutato': non c'è variazione", "es": "Todos los juicios son 'rechazado': no hay"}


def _shown(text):
    return agreement_text.texts().render(text, FAKE)


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


def test_every_template_ml_writes_is_listed_for_the_catalogs():
    assert set(ml.agreement.TEMPLATES) <= agreement_text.listed()
    assert set(ml.span_agreement.TEMPLATES) <= agreement_text.listed()


def test_every_diagnostic_of_a_peak_study_is_recognised_with_its_values_as_stored():
    table = [["kept", "kept"], ["kept", None], ["kept", "kept"]]  # one label, few items, few judgements
    said = agreement(table, ["ann", "bob"], settings=AgreementSettings(n_resamples=10)).diagnostics
    assert len(said) == 4
    assert [_shown(line).startswith("[") for line in said] == [True] * 4
    assert _shown(said[1]) == (
        "[Every judgement is ['[kept]']: there is no variation to agree on, so [alpha, kappa and AC1] are undefined "
        "and only observed agreement means anything.]"
    )
    assert _shown(said[2]) == (
        "[Reviewer 'ann' made 3 judgements (fewer than 10): the kappas of their pairs rest on few items.]"
    )


def test_every_diagnostic_of_a_span_study_is_recognised():
    spans = [Span("d1", "ann", "fever", 0, 5), Span("d1", "bob", "fever", 0, 5)]
    who = {"d1": {"ann", "bob"}, "d2": {"cat"}}
    result = span_agreement(spans, who, settings=SpanSettings(n_resamples=10))
    said = ml.span_agreement.diagnostics(result, SpanSettings(), untexted=1, who=who)
    assert any("'cat' marked no span" in line for line in said)
    assert [line for line in said if not agreement_text.texts().recognises(line)] == []
    assert _shown(
        "Label 'fever' has 1 span (fewer than 10): too rare to measure; its F1 and alpha are hints, not "
        "figures to quote."
    ).startswith("[Label 'fever' has 1 span")


def test_a_decision_s_label_is_translated_a_task_s_slug_and_a_reviewer_s_name_are_not():
    skewed = ml.agreement.SKEWED % {"label": "'rejected'", "share": "85%", "skew": "80%"}
    assert _shown(skewed).startswith("[['[rejected]'] is 85% of the judgements (above 80%)")
    assert _shown(ml.agreement.SKEWED % {"label": "'other'", "share": "85%", "skew": "80%"}).startswith("[['other'] is")
    rare = ml.span_agreement.RARE_LABEL_MANY % {"label": "'kept'", "spans": 2, "least": 10}
    assert _shown(rare).startswith("[Label 'kept' has 2 spans")  # a task's slug, whatever it spells
    few = ml.agreement.FEW_JUDGEMENTS % {"reviewer": "'kept'", "judgements": 3, "least": 10}
    assert _shown(few).startswith("[Reviewer 'kept' made 3")


def test_a_word_is_translated_inside_a_sentence_only():
    assert _shown("alpha and kappa") == "alpha and kappa"  # not a diagnostic: as stored
    assert _shown("A sentence of another version of ml.") == "A sentence of another version of ml."


def test_in_english_a_diagnostic_reads_as_ml_wrote_it():
    with translation.override("en"):
        assert agreement_text.shown(ml.agreement.NO_PAIRABLE) == ml.agreement.NO_PAIRABLE


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_report_page_gives_the_diagnostics_in_the_reader_s_language(
    client, researcher, clinician, note, tasks, base, maps, lang
):
    """Passes once the helpers' translations are merged into the catalogs (issue 42)."""
    a, b = word_span(TEXT, "130")
    decisions.decide(
        PeakContext(note, tasks["heart"], base, "attnlrp", "en"),
        clinician,
        start=a,
        end=b,
        decision="reject",
        expected_version=0,
    )
    client.force_login(researcher)
    client.get(reverse("review:report"), {"corpus": note.corpus_id})
    report_store.run(units.claim(ReportSnapshot, ReportSnapshot.objects.get().pk))  # workers.reports' work
    page = client.get(reverse("review:report"), {"corpus": note.corpus_id}, HTTP_ACCEPT_LANGUAGE=lang)
    text = html.unescape(page.content.decode())
    assert NO_PAIRABLE[lang] in text and ml.agreement.NO_PAIRABLE not in text
    assert ONE_LABEL[lang] in text and "Every judgement" not in text
    csv = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"}, HTTP_ACCEPT_LANGUAGE=lang)
    assert ml.agreement.NO_PAIRABLE in b"".join(csv.streaming_content).decode()  # the CSV keeps ml's English
