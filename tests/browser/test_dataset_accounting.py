"""A researcher opens a built dataset's page in real headless Chromium and reads why note-task
pairs were left out: each reason with its count, adding up to the pairs read."""

import pytest

from tests.projects import default_project

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dataset(db):
    from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.datasets import building
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review.models import ValidationSet

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    model = ModelVersion.objects.create(name="tiny-test", family="llama", path="tiny-test")
    sharp = PeakProfile.objects.create(name="sharp", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    tasks = {
        slug: Task.objects.create(slug=slug, description=slug, options=["y", "n"], held_out=slug == "heldout")
        for slug in PEAKS
    }
    for i in range(3):  # n0 is drawn for validation; n2 repeats n1's text
        note = Note.objects.create(corpus=corpus, external_id=f"n{i}", text=TEXT if i else f"{TEXT} first")
        for slug in PEAKS:
            add_map(note, tasks[slug], model, PEAKS[slug])
    first = Note.objects.get(external_id="n0")
    ValidationSet.objects.create(
        corpus=corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name="val",
        items=[[first.pk, tasks["heart"].pk]],
        grid=[],
    )
    built = DatasetVersion.objects.create(name="ds", corpus=corpus, model_version=model, profile=sharp)
    building.build(building.claim(built.pk))
    return built


def reasons(page) -> dict:
    rows = page.locator("#pair-accounting tr").all()
    return {row.locator("td").nth(0).inner_text(): int(row.locator("td").nth(1).inner_text()) for row in rows}


def test_the_statistics_page_lists_the_excluded_pairs_by_reason(login, researcher, dataset):
    page = login(researcher)
    page.goto(f"/datasets/{dataset.pk}/")
    page.locator("#pair-accounting").scroll_into_view_if_needed()
    assert page.locator("#pair-accounting h2").inner_text() == "Note-task pairs kept and excluded"
    counts = reasons(page)
    assert counts["Pairs read"] == 12  # 3 notes x 4 tasks
    assert counts["Excluded: Held-out task"] == 3
    assert counts["Excluded: Note held back by a validation set"] == 3
    assert counts["Excluded: Fewer than two peaks"] == 2  # pressure of n1 and n2
    assert counts["Excluded: Every example a duplicate of an earlier note's"] == 2  # heart and pacemaker of n2
    assert counts["Pairs kept (in at least one example)"] == 2  # heart and pacemaker of n1
    assert counts["Pairs read"] == sum(n for label, n in counts.items() if label != "Pairs read")
    assert "Read = kept + 10 excluded" in page.locator("#pair-accounting").inner_text()
