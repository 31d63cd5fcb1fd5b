"""The added-spans section of the note panel, written from a stencil when the pair has no span
(webapp.review.templatetags.review_spans): the same markup the template writes with the request's
own values, for each key (a clinician with peaks to accept, none left, another role, Italian),
and a second note's values never show the first's."""

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation

from webapp.review.templatetags import review_spans

from .fabricate import TEXT, query, word_span


@pytest.fixture
def form(tasks, base, sharp):
    return query(tasks["heart"], base, sharp, k=1, sigma=1.0, lower=0.2, upper=0.4)


def page_context(client, note, form, language="en"):
    response = client.get(reverse("review:note", args=[note.corpus_id, note.pk]), form, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    context = next(c for c in response.context if "panel" in c).flatten()  # the note page's own
    context["request"] = response.wsgi_request
    return context


def from_the_template(context) -> str:
    """What the template writes for this context, rendered as it is (no stencil)."""
    return render_to_string(
        review_spans.TEMPLATE, review_spans.listing(context, [], review_spans.section_values(context))
    )


def both(context, language="en"):
    with translation.override(language):
        return str(review_spans.added_spans(context)), from_the_template(context).strip()


@pytest.mark.parametrize("language", ["en", "it"])
def test_the_stencil_writes_what_the_template_writes(client, clinician, maps, form, note, tasks, language):
    client.force_login(clinician)
    context = page_context(client, note, form, language)
    stencil, template = both(context, language)
    assert stencil == template
    assert "\x00" not in stencil
    assert f'max="{len(TEXT)}"' in stencil
    assert 'id="accept-rest-button">' in stencil  # two undecided peaks: the button is enabled
    decided = reverse("review:decide", args=[note.corpus_id, note.pk])
    for word in ("130", "tachycardic"):
        a, b = word_span(TEXT, word)
        assert client.post(decided, {**form, "start": a, "end": b, "decision": "accept", "version": 0}).status_code in (
            200,
            302,
        )
    context = page_context(client, note, form, language)
    stencil, template = both(context, language)
    assert stencil == template and 'id="accept-rest-button" disabled>' in stencil  # none left


def test_a_role_that_does_not_review_gets_no_forms(client, researcher, maps, form, note):
    client.force_login(researcher)
    context = page_context(client, note, form)
    stencil, template = both(context)
    assert stencil == template
    assert "add-span-form" not in stencil and "accept-rest-form" not in stencil
