"""Token authentication: the access matrix of a token (own project, another project, revoked,
expired, unknown, read-only, a role without the capability), each refusal audited; a change to the
token or its owner takes effect on the very next request (the token's row is read every request);
the queries a token-authenticated page costs."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership
from webapp.projects.roles import Role


def test_the_secret_is_stored_only_as_its_hash(researcher, own, make_token):
    token, secret = make_token(researcher, [own["project"]])
    assert secret.startswith("dsm_") and len(secret) > 40
    stored = ApiToken.objects.get(pk=token.pk)
    assert secret not in str(stored.__dict__)
    assert stored.digest == tokens.digest_of(secret)
    assert AuditEvent.objects.filter(action=tokens.CREATE, project=own["project"], actor=researcher).count() == 1


def test_a_token_reads_its_own_projects_corpus(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]], ceiling="read")
    response = client.get(f"/api/corpora/{own['corpus'].pk}", headers=bearer(secret))
    assert response.status_code == 200
    assert response.json()["name"] == "ward A"
    assert ApiToken.objects.get().last_used is not None


@pytest.mark.parametrize(
    "header",
    [None, "Bearer dsm_not-a-token", "Bearer something-else", "Basic cml0YTpwYXNz"],
    ids=["none", "unknown", "not ours", "basic"],
)
def test_a_request_without_a_valid_token_is_401(client, own, header):
    headers = {"Authorization": header} if header else {}
    assert client.get("/api/corpora", headers=headers).status_code == 401


def test_an_unknown_token_is_audited(client, own, bearer):
    client.get("/api/corpora", headers=bearer("dsm_" + "x" * 40))
    row = AuditEvent.objects.get(action=tokens.REFUSED)
    assert row.details["reason"] == "unknown token"
    assert "x" * 40 not in str(row.details)


def test_a_revoked_token_is_refused(client, researcher, own, make_token, bearer):
    token, secret = make_token(researcher, [own["project"]])
    assert tokens.revoke(token, researcher)
    assert not tokens.revoke(token, researcher)  # once
    response = client.get(f"/api/corpora/{own['corpus'].pk}", headers=bearer(secret))
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
    assert AuditEvent.objects.filter(action=tokens.REVOKE).count() == 1
    assert AuditEvent.objects.get(action=tokens.REFUSED).details["reason"] == "revoked token"


def test_an_expired_token_is_refused(client, researcher, own, make_token, bearer):
    token, secret = make_token(researcher, [own["project"]])
    ApiToken.objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/corpora", headers=bearer(secret))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


def test_another_projects_corpus_is_404(client, researcher, own, other, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    assert client.get(f"/api/corpora/{other['corpus_id']}", headers=bearer(secret)).status_code == 404
    listed = client.get("/api/corpora", headers=bearer(secret)).json()
    assert [c["id"] for c in listed["items"]] == [own["corpus"].pk]


def test_a_token_acts_only_in_its_projects_though_its_owner_is_in_more(
    client, researcher, own, other, make_token, bearer
):
    Membership.objects.create(project=other["project"], user=researcher, role=Role.RESEARCHER)
    _, secret = make_token(researcher, [own["project"]])
    assert client.get(f"/api/corpora/{other['corpus_id']}", headers=bearer(secret)).status_code == 404
    _, both = make_token(researcher, [own["project"], other["project"]])
    assert client.get(f"/api/corpora/{other['corpus_id']}", headers=bearer(both)).status_code == 200


def test_a_site_admins_token_is_limited_to_its_projects(client, site_admin, own, other, make_token, bearer):
    _, secret = make_token(site_admin, [own["project"]])
    assert client.get(f"/api/corpora/{other['corpus_id']}", headers=bearer(secret)).status_code == 404
    assert client.get(f"/api/corpora/{own['corpus'].pk}", headers=bearer(secret)).status_code == 200


def test_a_token_cannot_name_a_project_its_owner_is_not_in(researcher, other, make_token):
    with pytest.raises(ValueError, match="your own projects"):
        make_token(researcher, [other["project"]])


def test_a_read_only_token_may_not_write(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]], ceiling="read")
    response = client.post("/api/jobs", {}, content_type="application/json", headers=bearer(secret))
    assert response.status_code == 403
    assert AuditEvent.objects.get(action=tokens.REFUSED).details["reason"] == "read-only token"


def test_a_role_without_the_capability_is_403_and_audited(client, clinician, own, make_token, bearer):
    _, secret = make_token(clinician, [own["project"]])
    body = {"corpus": own["corpus"].pk, "model_version": own["model"].pk, "tasks": ["heart-rate"], "sample_k": 1}
    response = client.post("/api/jobs", body, content_type="application/json", headers=bearer(secret))
    assert response.status_code == 403
    assert AuditEvent.objects.filter(action=AuditEvent.Action.PERMISSION_DENIED, actor=clinician).exists()


def test_a_token_of_an_owner_who_left_the_project_sees_nothing_there(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    Membership.objects.filter(user=researcher).delete()
    assert client.get(f"/api/corpora/{own['corpus'].pk}", headers=bearer(secret)).status_code == 404


@pytest.mark.parametrize("change", ["revoke", "expire", "deactivate owner", "read only"])
def test_a_change_takes_effect_on_the_very_next_request(
    change, cache_kind, client, researcher, own, make_token, bearer
):
    token, secret = make_token(researcher, [own["project"]])
    url = f"/api/corpora/{own['corpus'].pk}/notes"
    body = {"corpus": own["corpus"].pk, "model_version": own["model"].pk, "tasks": ["heart-rate"], "sample_k": 1}
    assert client.get(url, headers=bearer(secret)).status_code == 200
    if change == "revoke":
        tokens.revoke(token, researcher)
    elif change == "expire":
        ApiToken.objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    elif change == "deactivate owner":
        researcher.is_active = False
        researcher.save(update_fields=["is_active"])
    else:
        ApiToken.objects.filter(pk=token.pk).update(ceiling=ApiToken.Ceiling.READ)
    if change == "read only":
        answer = client.post("/api/jobs", body, content_type="application/json", headers=bearer(secret))
        assert answer.status_code == 403
    else:
        assert client.get(url, headers=bearer(secret)).status_code == 401
    reason = {"revoke": "revoked token", "expire": "expired token", "deactivate owner": "owner inactive"}
    assert AuditEvent.objects.get(action=tokens.REFUSED).details["reason"] == reason.get(change, "read-only token")


# A page asked with a token, once the minute's first request has written last_used and the
# owner's roles are in the roles cache: the token's row with its owner and its projects' ids (one
# query, every request, so a revocation, expiry, inactive owner or ceiling counts at once), the
# corpus (the access check), the page of notes. With a per-process cache the token's row also
# counts the request (one UPDATE); the minute's first request writes last_used, and a cold
# roles cache reads the owner's memberships once.
PAGE_QUERIES = {"redis": 3, "locmem": 4}


def test_a_token_authenticated_page_runs_few_queries(cache_kind, client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]], ceiling="read")
    url = f"/api/corpora/{own['corpus'].pk}/notes?limit=200"
    assert client.get(url, headers=bearer(secret)).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, headers=bearer(secret)).status_code == 200
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    assert len(statements) <= PAGE_QUERIES[cache_kind], statements
    assert statements.count("UPDATE") == (0 if cache_kind == "redis" else 1)


def test_a_token_left_without_projects_is_still_checked(client, researcher, own, make_token, bearer):
    """Its projects erased, the token is read on its own: it sees nothing, and is still refused
    once revoked."""
    token, secret = make_token(researcher, [own["project"]])
    token.projects.clear()
    listed = client.get("/api/corpora", headers=bearer(secret))
    assert listed.status_code == 200 and listed.json()["items"] == []
    tokens.revoke(token, researcher)
    assert client.get("/api/corpora", headers=bearer(secret)).status_code == 401
