"""The training launch form in Chromium: several bad fields in one submit are all reported at
once, each message once, beside its own field; nothing is launched."""

import pytest

from webapp.pipeline.models import ModelVersion
from webapp.training.models import TrainingRun

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED = {
    "dataset": "Choose the dataset version to train on.",
    "train__lr": "The learning rate must be greater than 0.",
    "train__micro_batch_size": "The micro batch size must be at least 1.",
    "train__max_steps": "The maximum steps must be at least 1.",
}


@pytest.fixture
def default_model(db):
    """The default model version the migrations create (gone after an earlier transactional
    test flushed the tables): the model field is valid, so only the four bad fields are reported."""
    return ModelVersion.objects.filter(is_default=True).first() or ModelVersion.objects.create(
        name="smollm2-135m-instruct", family="llama", path="smollm2-135m-instruct", is_default=True
    )


def test_every_bad_field_is_reported_at_once_beside_its_field(login, researcher, default_model):
    page = login(researcher)
    page.goto("/training/new/")
    page.fill("#id_train__lr", "-1")
    page.fill("#id_train__micro_batch_size", "0")
    page.fill("#id_train__max_steps", "-5")
    page.click("form.launch button[type=submit]")
    page.wait_for_selector("p.error")
    for name, message in EXPECTED.items():
        beside = page.locator(f"div.field:has(#id_{name}) p.error")
        assert beside.all_inner_texts() == [message], name
        assert page.get_by_text(message, exact=True).count() == 1, name
    assert page.locator("p.error").count() == len(EXPECTED)
    assert not TrainingRun.objects.exists()
