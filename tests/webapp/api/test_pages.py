"""The token page (a user's own tokens: made, shown once, revoked) and a project's webhooks page
(its admins: add, send a test, remove; another project's page is a 404)."""

from webapp.api import tokens
from webapp.api.models import ApiToken, Webhook, WebhookDelivery
from webapp.audit.models import AuditEvent


def test_a_token_is_made_shown_once_and_revoked(client_for, researcher, own):
    client = client_for(researcher)
    response = client.post(
        "/api/tokens/", {"name": "nightly", "projects": [own["project"].pk], "ceiling": "read", "days": 30}
    )
    assert response.status_code == 200
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
    client.post(url, {"url": "http://127.0.0.1:9/hook", "secret": "s" * 20, "events": ["training_run"]})
    webhook = Webhook.objects.get()
    assert webhook.events == ["training_run"]
    assert AuditEvent.objects.filter(action="add_webhook", project=own["project"]).exists()
    with django_capture_on_commit_callbacks():
        client.post(url, {"test": webhook.pk})
    assert WebhookDelivery.objects.get().event == "test"
    assert b"<td>test</td>" in client.get(url).content  # the delivery log
    client.post(url, {"delete": webhook.pk})
    assert not Webhook.objects.exists()


def test_only_admins_see_the_webhooks_page_and_other_projects_are_404(client_for, researcher, admin_user, own, other):
    assert client_for(researcher).get(f"/api/projects/{own['project'].slug}/webhooks/").status_code == 403
    assert client_for(admin_user).get("/api/projects/zebra/webhooks/").status_code == 404
    assert client_for(admin_user).post("/api/projects/zebra/webhooks/", {"test": 1}).status_code == 404
