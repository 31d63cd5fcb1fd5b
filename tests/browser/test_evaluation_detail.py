"""The evaluation result page in Chromium: its results table stays inside its card (the card
scrolls it sideways) on a laptop-width window."""

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_results_table_never_overflows_its_card(page, login, researcher):
    from tests.webapp.evaluation.factories import finished, group, make_annotated_corpus
    from tests.webapp.pipeline.factories import make_model_version
    from webapp.pipeline.models import PeakProfile

    # Its own profile: an earlier transactional test flushes the one the migrations create.
    PeakProfile.objects.get_or_create(
        name="paper-default", version=1, defaults=dict(kernel_size=3, sigma=1.0, lower=0.2, upper=0.4, is_default=True)
    )
    corpus, _ = make_annotated_corpus()
    groups = [group("attention", "next", 0.58, 0.54, 0.62), group("attnlrp", "contrastive", 0.712, 0.664, 0.758)]
    evaluation = finished(corpus, make_model_version(name="layout-model"), groups)
    page.set_default_timeout(30_000)  # the first page of a test server imports every view
    page.set_viewport_size({"width": 1024, "height": 800})
    login(researcher).goto(f"/evaluations/{evaluation.pk}/")
    card = page.locator("section.card", has=page.locator("table.results"))
    card.wait_for()
    widths = card.evaluate(
        "card => ({card: card.clientWidth, content: card.scrollWidth,"
        " table: card.querySelector('table.results').scrollWidth})"
    )
    assert widths["table"] > widths["card"]  # wider than its card at this width: the case in point
    assert widths["content"] <= widths["card"], widths  # ... yet it scrolls inside, spilling nothing
