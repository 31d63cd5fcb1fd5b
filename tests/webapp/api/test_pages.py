"""The token page (a user's own tokens: made, shown once, revoked) and a project's webhooks page
(its admins: add, send a test, remove; another project's page is a 404)."""

import pytest

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.audit.models import AuditEvent
from webapp.integrations.models import Webhook, WebhookDelivery


def test_a_token_is_made_shown_once_and_revoked(client_for, researcher, own):
    client = client_for(researcher)
    response = client.post(
        "/api/tokens/", {"name": "nightly", "projects": [own["project"].pk], "ceiling": "read", "days": 30}
    )
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]  # the secret is in this page
    secret = response.context["secret"]
    token = ApiToken.objects.get()
    assert secret.encode() in response.content and token.digest == tokens.digest_of(secret)
    assert secret.encode() not in client.get("/api/tokens/").content  # shown once
    client.post("/api/tokens/", {"revoke": token.pk})
    token.refresh_from_db()
    assert token.revoked is not None


def test_a_token_for_a_project_not_ones_own_is_refused(client_for, researcher, own, other):
    response = client_for(researcher).post(
        "/api/tokens/", {"name": "x", "projects": [other["project"].pk], "ceiling": "roles", "days": 30}
    )
    assert response.status_code == 400 and not ApiToken.objects.exists()


def test_someone_elses_token_cannot_be_revoked(client_for, researcher, clinician, own, make_token):
    token, _ = make_token(clinician, [own["project"]])
    assert client_for(researcher).post("/api/tokens/", {"revoke": token.pk}).status_code == 404
    token.refresh_from_db()
    assert token.revoked is None


def test_a_project_admin_adds_tests_and_removes_a_webhook(
    client_for, admin_user, own, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    url = f"/api/projects/{own['project'].slug}/webhooks/"
    client.post(url, {"url": "https://93.184.216.34/hook", "secret": "s" * 20, "events": ["training_run"]})
    webhook = Webhook.objects.get()
    assert webhook.events == ["training_run"]
    assert AuditEvent.objects.filter(action="add_webhook", project=own["project"]).exists()
    with django_capture_on_commit_callbacks():
        client.post(url, {"test": webhook.pk})
    assert WebhookDelivery.objects.get().event == "test"
    page = client.get(url).content.decode()
    assert "<td>Test delivery <small><code>test</code></small></td>" in page  # the delivery log
    assert "Training run ended <small><code>training_run</code></small>" in page  # the webhook's events
    client.post(url, {"delete": webhook.pk})
    assert not Webhook.objects.exists()


def test_only_admins_see_the_webhooks_page_and_other_projects_are_404(client_for, researcher, admin_user, own, other):
    assert client_for(researcher).get(f"/api/projects/{own['project'].slug}/webhooks/").status_code == 403
    assert client_for(admin_user).get("/api/projects/zebra/webhooks/").status_code == 404
    assert client_for(admin_user).post("/api/projects/zebra/webhooks/", {"test": 1}).status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "http://10.255.255.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:10.0.0.1]/",
        "http://127.0.0.1:5432/",
        "http://localhost/",
        "ftp://example.org/x",
    ],
)
def test_a_webhook_to_an_internal_address_or_another_scheme_is_refused_with_a_form_error(
    client_for, admin_user, own, url
):
    response = client_for(admin_user).post(
        f"/api/projects/{own['project'].slug}/webhooks/", {"url": url, "secret": "s" * 20}
    )
    assert response.status_code == 400 and not Webhook.objects.exists()
    errors = response.context["form"].errors["url"]
    assert any("public addresses" in e or "http and https" in e or "valid URL" in e for e in errors), errors


def test_an_allowed_network_may_be_registered(client_for, admin_user, own, settings):
    from webapp.lib import outbound

    settings.OUTBOUND_ALLOWED_NETWORKS = outbound.parse_networks(["10.20.0.0/24"])
    response = client_for(admin_user).post(
        f"/api/projects/{own['project'].slug}/webhooks/", {"url": "http://10.20.0.5/hook", "secret": "s" * 20}
    )
    assert response.status_code == 302 and Webhook.objects.get().url == "http://10.20.0.5/hook"


def test_switching_a_webhook_off_stops_its_pending_deliveries_and_is_audited(client_for, admin_user, own):
    from django.utils import timezone

    webhook = Webhook.objects.create(project=own["project"], url="https://93.184.216.34/h", secret="s" * 20)
    WebhookDelivery.objects.create(webhook=webhook, event="test", key="t", payload={}, due=timezone.now())
    client = client_for(admin_user)
    url = f"/api/projects/{own['project'].slug}/webhooks/"
    assert client.post(url, {"switch": webhook.pk, "active": "0"}).status_code == 302
    webhook.refresh_from_db()
    assert not webhook.active and WebhookDelivery.objects.get().status == "failed"
    event = AuditEvent.objects.get(action="switch_webhook")
    assert event.details["active"] is False and event.details["stopped"] == 1
    client.post(url, {"test": webhook.pk})  # a test of a switched-off webhook is refused
    assert WebhookDelivery.objects.count() == 1
    client.post(url, {"switch": webhook.pk, "active": "1"})
    webhook.refresh_from_db()
    assert webhook.active
