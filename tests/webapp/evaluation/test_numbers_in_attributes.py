"""The evaluation pages' machine numbers (the interval charts' SVG geometry, progress values) stay
machine numbers in Italian and Spanish, while the figures a person reads follow the language."""

import pytest

from tests.webapp.evaluation.factories import finished, group
from tests.webapp.machine_numbers import machine_numbers, unparsable


@pytest.mark.parametrize("code", ["en", "it", "es"])
def test_the_interval_charts_geometry_parses_in_every_language(client, researcher, annotated, model_version, code):
    corpus, _ = annotated
    winner = group("attnlrp", "span", 0.715, 0.6625, 0.7625)
    evaluation = finished(
        corpus,
        model_version,
        [group("attention", "next", 0.585, 0.5425, 0.6275), winner],
        choice={k: winner[k] for k in ("method", "explain", "template", "config_key")},
    )
    client.force_login(researcher)
    response = client.get(f"/evaluations/{evaluation.pk}/", HTTP_ACCEPT_LANGUAGE=code)
    assert response["Content-Language"] == code
    page = response.content.decode()
    geometry = [(tag, name, value) for tag, name, value in machine_numbers(page) if tag in ("rect", "svg", "circle")]
    assert any(name == "cx" and "." in value for _, name, value in geometry)  # fractional percentages drawn
    assert unparsable(page) == []
    assert ("0,715" if code != "en" else "0.715") in page  # the figure a person reads, in the language
    listing = client.get("/evaluations/", HTTP_ACCEPT_LANGUAGE=code).content.decode()
    assert unparsable(listing) == []
