"""Numbers that code reads back (a form's hidden or range value, an SVG coordinate, a data-
attribute) stay machine numbers in every language: Italian and Spanish write 0,85 in text
(Django's formats), and a value of "1,0" would come back as a form error or an unparsed
coordinate. Templates write such numbers with |unlocalize or inside {% localize off %}."""

import re

import pytest
from django.urls import reverse

from tests.webapp.machine_numbers import machine_numbers, unparsable

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


TUNED = {"k": "3", "sigma": "1.25", "lower": "0.15", "upper": "0.45"}


def slider(content: str, name: str) -> str:
    return re.search(rf'<input type="range" id="id_{name}" name="{name}"[^>]* value="([^"]*)"', content).group(1)


@pytest.mark.parametrize("code", ["en", "it", "es"])
def test_the_sliders_and_hidden_fields_carry_the_setting_as_machine_numbers(
    client, clinician, note, maps, tasks, base, sharp, code
):
    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    content = client.get(url, query(tasks["heart"], base, sharp, **TUNED), HTTP_ACCEPT_LANGUAGE=code).content.decode()
    assert (slider(content, "sigma"), slider(content, "lower"), slider(content, "upper")) == ("1.25", "0.15", "0.45")
    assert '<input type="hidden" name="sigma" value="1.25">' in content
    assert unparsable(content) == []
    if code != "en":  # what a person reads stays in their language
        assert '<output data-for="id_sigma">1,25</output>' in content


@pytest.mark.parametrize("code", ["it", "es"])
def test_the_sentence_map_and_the_review_fragments_write_machine_numbers(
    client, clinician, researcher, corpus, note, maps, tasks, base, dsm, sharp, gold, code
):
    client.force_login(clinician)
    selection = query(tasks["heart"], base, sharp, **TUNED)
    sentences = client.get(
        reverse("review:note", args=[note.corpus_id, note.pk]),
        {**selection, "view": "sentences", "by": "sentence"},
        HTTP_ACCEPT_LANGUAGE=code,
    ).content.decode()
    assert any(tag == "rect" and name == "width" for tag, name, _ in machine_numbers(sentences))
    assert unparsable(sentences) == []
    compare = client.get(
        reverse("review:compare", args=[note.corpus_id, note.pk]), selection, HTTP_ACCEPT_LANGUAGE=code
    ).content.decode()
    assert unparsable(compare) == []
    preview = client.get(
        reverse("review:preview", args=[corpus.pk]), selection, HTTP_HX_REQUEST="true", HTTP_ACCEPT_LANGUAGE=code
    ).content.decode()
    assert any(tag == "rect" and value.endswith("%") for tag, _, value in machine_numbers(preview))
    assert unparsable(preview) == []
    client.force_login(researcher)
    summary = client.get(
        reverse("review:compare_summary", args=[note.corpus_id]),
        {**selection, "a": base.pk, "b": dsm.pk},
        HTTP_HX_REQUEST="true",
        HTTP_ACCEPT_LANGUAGE=code,
    ).content.decode()
    assert unparsable(summary) == []
