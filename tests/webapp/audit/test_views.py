"""The audit page: admins only, filters, keyset pages, and the CSV export of the filtered rows.
The log below has sign-ins and commands (rows of no project), so most tests read it as a site
admin, who sees every row; a project's admin sees the rows of their projects only."""

import csv
import datetime
import io

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.projects import default_project
from webapp.audit import views
from webapp.audit.log import record, record_anonymous
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.projects.models import Project

A = AuditEvent.Action


@pytest.fixture
def admin_client(client, site_admin):
    """A site admin's client: every row of the log, whatever its project."""
    client.force_login(site_admin)
    return client


@pytest.fixture
def log(db, researcher, clinician):
    """A few events of several kinds and days (created set explicitly: auto_now_add fills it on insert)."""
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    AuditEvent.objects.all().delete()  # the fixtures' own logins are not part of this log
    rows = [
        (record(researcher, A.IMPORT_NOTES, corpus, created=3), datetime.datetime(2026, 3, 1, 9, 0)),
        (record(clinician, A.REVIEW_DECISION, corpus, op="accept"), datetime.datetime(2026, 3, 2, 23, 59)),
        (record_anonymous("mallory", A.LOGIN_FAILED, ip="203.0.113.5"), datetime.datetime(2026, 3, 3, 0, 0)),
        (
            record_anonymous('=HYPERLINK("http://x")', A.LOGIN_FAILED, ip="203.0.113.5"),
            datetime.datetime(2026, 3, 3, 0, 1),
        ),
        (record(None, A.LOAD_CATALOG, created=2), datetime.datetime(2026, 3, 4, 12, 0)),
    ]
    for event, when in rows:
        AuditEvent.objects.filter(pk=event.pk).update(created=timezone.make_aware(when))
    return [event for event, _ in rows]


def listed(response):
    return [event.pk for event in response.context["events"]]


def exported(response):
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def test_the_page_lists_the_newest_first(admin_client, log):
    response = admin_client.get(reverse("audit:list"))
    assert response.status_code == 200
    assert listed(response) == [e.pk for e in reversed(log)]
    page = response.content.decode()
    assert "Failed login" in page and "mallory" in page and "203.0.113.5" in page
    assert 'href="/audit/"' in page and "aria-current" in page  # the nav link, current


@pytest.mark.parametrize(
    "query,expected",
    [
        ({"action": "login_failed"}, [3, 2]),
        ({"actor": "RI"}, [0]),  # case-insensitive prefix
        ({"actor": "cli:"}, [4]),
        ({"object_type": "corpus.Corpus"}, [1, 0]),
        ({"since": "2026-03-02", "until": "2026-03-02"}, [1]),  # "until" takes the whole day
        ({"since": "2026-03-03"}, [4, 3, 2]),
        ({"until": "2026-03-01"}, [0]),
        ({"action": "login_failed", "since": "2026-03-04"}, []),
    ],
)
def test_the_filters_narrow_the_list(admin_client, log, query, expected):
    response = admin_client.get(reverse("audit:list"), query)
    assert listed(response) == [log[i].pk for i in expected]


def test_bad_filters_are_answered_with_the_reason(admin_client, log):
    response = admin_client.get(reverse("audit:list"), {"since": "2026-03-05", "until": "2026-03-01"})
    assert response.status_code == 400 and "The end date is before the start date." in response.content.decode()
    response = admin_client.get(reverse("audit:list"), {"action": "no-such", "since": "yesterday"})
    assert response.status_code == 400
    assert {"action", "since"} <= set(response.context["form"].errors)


def test_pages_go_back_by_id_with_the_filters_kept(admin_client, log, monkeypatch):
    monkeypatch.setattr(views, "EVENTS_PER_PAGE", 2)
    first = admin_client.get(reverse("audit:list"), {"actor": "", "action": ""})
    assert listed(first) == [log[4].pk, log[3].pk]
    assert first.context["older"] == f"actor=&action=&before={log[3].pk}"
    second = admin_client.get(reverse("audit:list") + "?" + first.context["older"])
    assert listed(second) == [log[2].pk, log[1].pk] and second.context["newest"] == "actor=&action="
    third = admin_client.get(reverse("audit:list") + "?" + second.context["older"])
    assert listed(third) == [log[0].pk] and third.context["older"] is None


def test_the_export_holds_the_filtered_rows_and_is_audited(admin_client, site_admin, log):
    response = admin_client.get(reverse("audit:export"), {"action": "login_failed"}, REMOTE_ADDR="10.0.0.1")
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    rows = exported(response)
    assert [row["id"] for row in rows] == [str(log[3].pk), str(log[2].pk)]
    assert rows[1]["actor"] == "mallory" and rows[1]["ip"] == "203.0.113.5" and rows[1]["details"] == "{}"
    assert rows[0]["actor"] == '\'=HYPERLINK("http://x")'  # never a live formula in a spreadsheet
    [event] = AuditEvent.objects.filter(action=A.EXPORT_AUDIT)
    assert (event.actor, event.ip, event.details) == (
        site_admin,
        "10.0.0.1",
        {"filters": {"action": "login_failed"}, "rows": 2},
    )


def test_the_export_of_every_row_includes_details_as_json(admin_client, log):
    rows = exported(admin_client.get(reverse("audit:export")))
    assert len(rows) == len(log)  # not the export's own entry
    by_id = {row["id"]: row for row in rows}
    assert by_id[str(log[0].pk)]["details"] == '{"created": 3}'
    assert by_id[str(log[0].pk)]["object_type"] == "corpus.Corpus"


def test_a_project_admin_sees_and_exports_only_the_rows_of_their_projects(client, admin_user, log):
    other = Project.objects.create(slug="other-ward", name="Other ward")
    elsewhere = record(None, A.IMPORT_NOTES, Corpus.objects.create(project=other, name="icu", language="en"))
    client.force_login(admin_user)
    assert listed(client.get(reverse("audit:list"))) == [log[1].pk, log[0].pk]  # no sign-ins, commands, other project
    assert [row["id"] for row in exported(client.get(reverse("audit:export")))] == [str(log[1].pk), str(log[0].pk)]
    assert elsewhere.project == other


@pytest.mark.parametrize("role", ["clinician", "researcher", "norole_user"])
@pytest.mark.parametrize("name", ["audit:list", "audit:export"])
def test_only_admins_see_the_audit_log_and_a_refusal_is_audited(client, request, role, name):
    user = request.getfixturevalue(role)
    client.force_login(user)
    response = client.get(reverse(name))
    assert response.status_code == 403
    [event] = AuditEvent.objects.filter(action=A.PERMISSION_DENIED)
    assert event.actor == user and event.details["path"] == reverse(name)
    assert event.details["reason"] == "Your role does not allow: audit"
    assert not AuditEvent.objects.filter(action=A.EXPORT_AUDIT).exists()


def test_the_nav_link_shows_only_for_admins(client, clinician):
    client.force_login(clinician)
    assert 'href="/audit/"' not in client.get(reverse("corpus:list")).content.decode()


def test_the_django_admin_lists_and_searches_the_log_read_only(client, django_user_model, log):
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "x" * 12))
    response = client.get(reverse("admin:audit_auditevent_changelist"), {"q": "203.0.113"})
    assert response.status_code == 200 and "mallory" in response.content.decode()
    assert client.get(reverse("admin:audit_auditevent_add")).status_code == 403


def test_the_audit_page_and_the_lockout_page_send_the_content_security_policy(admin_client, client, log, settings):
    from tests.webapp.test_content_security_policy import assert_policy

    assert_policy(admin_client.get(reverse("audit:list")), "audit page")
    admin_client.post(reverse("logout"))
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), {"username": "mallory", "password": "wrong-password"})
    assert response.status_code == 429
    assert_policy(response, "lockout page")


def test_the_last_day_of_the_calendar_is_a_valid_end_date(admin_client, log):
    for url in (reverse("audit:list"), reverse("audit:export")):
        assert admin_client.get(url, {"until": "9999-12-31"}).status_code == 200


def test_details_named_like_dict_methods_are_listed_as_they_are(admin_client, researcher):
    # "Validation set drawn" stores `items` (a count): the page once read it as dict.items and failed.
    AuditEvent.objects.all().delete()
    record(researcher, A.REVIEW_DECISION, kind="validation_set", items=40, keys=2, values=3, get=4, pop=5)
    response = admin_client.get(reverse("audit:list"))
    assert response.status_code == 200
    (row,) = [row for row in response.content.decode().split("<tr>") if "validation_set" in row]
    for key, value in [("items", 40), ("keys", 2), ("values", 3), ("get", 4), ("pop", 5)]:
        assert f'<span class="muted">{key}</span> {value}' in row
