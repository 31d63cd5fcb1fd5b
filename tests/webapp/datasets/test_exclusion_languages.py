"""The reasons a build stores for the pairs it excluded (English, as the API's stats and the export
manifest keep them) are shown on the dataset page in the reader's language
(webapp.datasets.stats.exclusion_words)."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from ml.masking import BuildStats, MaskingMode
from webapp.datasets import building
from webapp.datasets.stats import exclusion_words

from .test_pair_accounting import build, several_reasons  # noqa: F401 (a fixture)

WORDS = {
    "it": (
        "Nota trattenuta da un set di convalida",
        "Meno di due picchi dopo aver tolto i rifiuti della revisione",
    ),
    "es": (
        "Nota reservada por un conjunto de validación",
        "Menos de dos picos una vez quitados los rechazos de la revisión",
    ),
    "en": (
        "Note held back by a validation set",
        "Fewer than two peaks once review rejections are removed",
    ),
}


@pytest.fixture(autouse=True)
def _no_language_left_behind():
    """A request's language stays active in the test's thread after it: later tests read English."""
    yield
    translation.deactivate()


@pytest.mark.usefixtures("several_reasons")
@pytest.mark.parametrize("lang", ["it", "es", "en"])
def test_the_statistics_page_shows_the_reasons_in_the_reader_s_language(researcher, make_dataset, lang):
    dataset = build(make_dataset())
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    content = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    table = content.split('id="pair-accounting"')[1].split("</section>")[0]
    validation, rejected = WORDS[lang]
    assert f'{validation}</td><td class="num">2<' in table
    assert f'{rejected}</td><td class="num">1<' in table
    # stored English, as the API and the manifest give it
    labels = {reason: label for reason, label, _ in dataset.stats["pairs_accounting"]["excluded"]}
    assert labels["validation_set"] == WORDS["en"][0] and labels["rejected_by_review"] == WORDS["en"][1]


@pytest.mark.parametrize("mode", list(MaskingMode))
def test_every_reason_a_build_writes_is_recognised(mode):
    stored = building._Tally("k").accounting(BuildStats(), mode)["excluded"]
    for lang in ("it", "es"):
        with translation.override(lang):
            for _, label, _ in stored:
                assert exclusion_words(label) != label, (mode, label)
    with translation.override("en"):
        assert all(exclusion_words(label) == label for _, label, _ in stored)


def test_a_reason_not_recognised_is_shown_as_stored():
    with translation.override("es"):
        assert exclusion_words("Some later reason") == "Some later reason"
