"""The task form's limits: label options (TASK_MAX_OPTIONS) and the evidence guideline
(TASK_MAX_GUIDELINE_CHARS), each refused with a message that names it; a list at the limit saves."""

import time

import pytest
from django.urls import reverse

from webapp.corpus.models import Task

pytestmark = pytest.mark.django_db


def _post(client, **changes):
    data = {"description": "heart rate", "slug": "", "options": "low\nhigh", "group": "", "guideline": ""}
    return client.post(reverse("corpus:task_new"), {**data, **changes})


def test_more_options_than_the_limit_are_refused_in_words(client_for, researcher, settings):
    settings.TASK_MAX_OPTIONS = 50
    response = _post(client_for(researcher), options="\n".join(f"label {i}" for i in range(51)))
    assert response.status_code == 200 and not Task.objects.filter(slug="heart-rate").exists()
    assert "at most 50 label options (TASK_MAX_OPTIONS); this list has 51" in response.content.decode()
    _post(client_for(researcher), options="\n".join(f"label {i}" for i in range(50)))
    assert len(Task.objects.get(slug="heart-rate").options) == 50


def test_a_guideline_longer_than_the_limit_is_refused_in_words(client_for, researcher, settings):
    settings.TASK_MAX_GUIDELINE_CHARS = 1000
    response = _post(client_for(researcher), guideline="x" * 1001)
    assert not Task.objects.filter(slug="heart-rate").exists()
    assert "at most 1,000 characters (TASK_MAX_GUIDELINE_CHARS); this one has 1,001" in response.content.decode()
    _post(client_for(researcher), guideline="x" * 1000)
    assert Task.objects.get(slug="heart-rate").guideline == "x" * 1000


def test_the_default_limits_refuse_a_2_mb_guideline_and_20000_options_at_once(client_for, researcher):
    started = time.monotonic()
    response = _post(
        client_for(researcher),
        options="\n".join(f"label {i}" for i in range(20_000)),
        guideline="evidence " * 250_000,
    )
    assert time.monotonic() - started < 10  # it took 40 s to save before the limit (and a quadratic check)
    form = response.context["form"]
    assert "options" in form.errors and "guideline" in form.errors
    assert not Task.objects.filter(slug="heart-rate").exists()
