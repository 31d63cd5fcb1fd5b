"""Numbers that code reads back (a form's hidden or range value, an SVG coordinate, a data-
attribute) stay machine numbers in every language: Italian and Spanish write 0,85 in text
(Django's formats), and a value of "1,0" would come back as a form error or an unparsed
coordinate. Templates write such numbers with |unlocalize or inside {% localize off %}."""

import re

import pytest
from django.urls import reverse

from .fabricate import query

ATTRIBUTE_WITH_A_DECIMAL_COMMA = re.compile(
    r"\s((?:value|x|y|x1|x2|y1|y2|cx|cy|r|width|height|points|d|viewBox|min|max|step|data-[\w-]+)=\"[^\"]*\d,\d[^\"]*\")"
)


@pytest.mark.parametrize("code", ["it", "es"])
def test_the_review_pages_numbers_in_attributes_are_not_localized(
    client, clinician, note, maps, tasks, base, sharp, code
):
    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    page = client.get(url, query(tasks["heart"], base, sharp), HTTP_ACCEPT_LANGUAGE=code)
    assert page.status_code == 200 and page["Content-Language"] == code
    assert ATTRIBUTE_WITH_A_DECIMAL_COMMA.findall(page.content.decode()) == []
