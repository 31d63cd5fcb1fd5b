"""The gate on the review team's export (webapp.deid.gate): the file leaves the server with the
notes' ids and the reviewers' comments, so a corpus that is not de-identified is refused with the
reason; a project admin's confirmation lets it go, audited; a researcher's is refused."""

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus

from .test_views_rounds import curator, second, ward_round  # noqa: F401 (fixtures)

REASON = "Corpus ward is not de-identified: de-identify it, or a project admin may confirm"


@pytest.fixture
def identifiable(ward_round, corpus):  # noqa: F811
    Corpus.objects.filter(pk=corpus.pk).update(deidentified=False)
    return ward_round


def releases():
    return AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE_IDENTIFIABLE)


def test_the_round_page_says_why_and_offers_the_checkbox_to_admins_only(client_for, identifiable, researcher):
    html = client_for(researcher).get(reverse("review:round", args=[identifiable.pk])).content.decode()
    assert REASON in html and 'name="confirm_identifiable"' not in html


def test_the_export_is_refused_then_confirmed_by_an_admin(client_for, identifiable, researcher, admin_user):
    url = reverse("review:round_export", args=[identifiable.pk, "jsonl"])
    client = client_for(researcher)
    response = client.get(url, follow=True)
    assert REASON in response.content.decode() and not response.streaming
    refused = client.get(url + "?confirm_identifiable=1", follow=True)
    assert "Only an admin of the project may confirm it" in refused.content.decode()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists() and not releases().exists()
    client = client_for(admin_user)
    assert 'name="confirm_identifiable"' in client.get(reverse("review:round", args=[identifiable.pk])).content.decode()
    response = client.get(url + "?confirm_identifiable=1")
    assert response.streaming
    b"".join(response.streaming_content)
    event = releases().get()
    assert event.details["what"] == "review team export" and event.object_type == "review.ReviewRound"


def test_a_deidentified_corpus_exports_without_asking(client_for, ward_round, researcher):  # noqa: F811
    response = client_for(researcher).get(reverse("review:round_export", args=[ward_round.pk, "csv"]))
    assert response.streaming and not releases().exists()
