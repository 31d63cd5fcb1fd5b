"""A dataset's pages write their machine numbers (histogram bars' widths, progress values) so that
they parse in Italian and Spanish too."""

import pytest
from django.urls import reverse

from tests.webapp.machine_numbers import machine_numbers, unparsable


@pytest.mark.parametrize("code", ["en", "it", "es"])
def test_the_statistics_histograms_and_progress_parse_in_every_language(client, researcher, built, code):
    client.force_login(researcher)
    response = client.get(reverse("datasets:detail", args=[built.pk]), HTTP_ACCEPT_LANGUAGE=code)
    assert response["Content-Language"] == code
    page = response.content.decode()
    bars = [value for tag, name, value in machine_numbers(page) if tag == "rect" and value.endswith("%")]
    assert bars and unparsable(page) == []
    assert unparsable(client.get(reverse("datasets:list"), HTTP_ACCEPT_LANGUAGE=code).content.decode()) == []
