"""In Italian and Spanish a slider keeps the setting the server wrote (a value of "1,25" would be
refused by the browser and replaced by the range's midpoint, which the panel's next request would
send back), while its <output> reads as the language writes numbers, after a move too."""

import pytest

from tests.browser import language
from tests.projects import default_project

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED = {"en": ("1.25", "0.15", "0.85"), "it": ("1,25", "0,15", "0,85"), "es": ("1,25", "0,15", "0,85")}


@pytest.fixture
def note_url(db):
    from tests.webapp.review.fabricate import TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.6, "Pacemaker": 0.45})
    return (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={heart.pk}&model={base.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}&k=1&sigma=1.25&lower=0.15&upper=0.4"
    )


def test_the_sliders_keep_the_setting_and_show_it_in_the_language(lang, lang_page, clinician, note_url):
    page = language.log_in(lang_page, clinician)
    page.goto(note_url)
    page.wait_for_selector("#note-text")
    assert language.html_lang(page) == lang
    # the browser took the written values (an unparsable one becomes the midpoint: 1.625, 0.5)
    assert page.eval_on_selector("#id_sigma", "el => el.value") == "1.25"
    assert page.eval_on_selector("#id_lower", "el => el.value") == "0.15"
    sigma, lower, upper = EXPECTED[lang]
    assert page.inner_text("output[data-for=id_sigma]") == sigma
    assert page.inner_text("output[data-for=id_lower]") == lower
    page.eval_on_selector(
        "#id_upper", "el => { el.value = '0.85'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    assert page.inner_text("output[data-for=id_upper]") == upper
    page.wait_for_url(lambda url: "upper=0.85" in url)
    assert "sigma=1.25" in page.url and "lower=0.15" in page.url
