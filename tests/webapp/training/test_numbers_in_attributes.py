"""A training run's page writes its progress for code (the <progress> value and max) as machine
numbers in every language; its figures for a person (loss, epoch) follow the language."""

import pytest
from django.urls import reverse

from tests.webapp.machine_numbers import unparsable
from webapp.training.models import RunMetric


@pytest.mark.parametrize("code", ["en", "it", "es"])
def test_the_run_pages_machine_numbers_parse_in_every_language(client, clinician, make_run, code):
    run = make_run(status="running", step=1234, total_steps=12400, epoch=0.3, loss=1.25, lr=2.5e-5, tokens_per_s=812.5)
    RunMetric.objects.create(run=run, step=1234, epoch=0.3, loss=1.25, lr=2.5e-5, tokens_per_s=812.5)
    client.force_login(clinician)
    response = client.get(reverse("training:run_detail", args=[run.pk]), HTTP_ACCEPT_LANGUAGE=code)
    assert response["Content-Language"] == code
    page = response.content.decode()
    assert 'max="12400"' in page and 'value="1234"' in page
    assert unparsable(page) == []
    assert ("2,5e-05" if code != "en" else "2.5e-05") in page  # the learning rate a person reads
    assert unparsable(client.get(reverse("training:run_list"), HTTP_ACCEPT_LANGUAGE=code).content.decode()) == []
