"""The training launch form in Chromium: several bad fields in one submit are all reported at
once, each message once, beside its own field; nothing is launched."""

import re

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


def test_launch_right_after_typing_into_a_number_field_launches(page, login, researcher, settings):
    """The estimate request the typing starts (on change, after a delay) never races the click on
    Launch: once the form is submitted no estimate is sent, and the click ends on the new run's page."""
    from tests.webapp.training.factories import make_dataset, make_labeled_corpus, make_model_version

    settings.LAUNCH_CONFIRM_AMOUNT = 10**9  # small enough to launch without a confirmation
    page.set_default_timeout(30_000)  # the first page of a test server imports every view
    model = make_model_version("smollm2-135m-instruct", name="race-model")
    dataset = make_dataset(make_labeled_corpus(4), model)
    page = login(researcher)
    page.goto("/training/new/")
    page.select_option("#id_model_version", label=str(model))
    page.select_option("#id_dataset", label=str(dataset))
    page.fill("#id_train__warmup_ratio", "0")  # else 4 examples are one step, all warmup: refused
    page.locator("#id_train__warmup_ratio").dispatch_event("change")
    page.locator("#launch-estimate", has_text="1 steps").wait_for()  # the estimate of the full form
    # a slow network: the launch is still on its way when the estimate's delay runs out
    page.context.new_cdp_session(page).send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    requests = []  # (is an htmx estimate, is the form's own POST) in the order they leave the browser
    page.on(
        "request",
        lambda r: requests.append(
            (r.headers.get("hx-request") == "true", r.method == "POST" and r.is_navigation_request())
        ),
    )
    page.click("#id_train__max_steps")
    page.keyboard.press("Control+A")
    page.keyboard.type("3")
    page.click("form.launch button[type=submit]")  # at once: the typing's change fires with this click
    page.wait_for_url(re.compile(r"/training/\d+/$"))
    run = TrainingRun.objects.get()
    assert run.config["train"]["max_steps"] == 3
    assert "queued for the training workers" in page.locator(".messages").inner_text()
    launch = requests.index((False, True))
    assert not any(estimate for estimate, _ in requests[launch:]), requests  # no estimate raced the launch
