"""What the review loop keeps between requests (issue 41, item 5), and that a change shows at
once: a user's roles kept in the cache (webapp.projects.roles) are read afresh after a
membership is removed or added, and the note page's boundary choices (rendered in Python,
webapp.review.noteview.options_html) are those the template wrote, the reviewer's own selected."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.accounts.membership import add_member, remove_member
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role, roles_of
from webapp.review import decisions
from webapp.review.decisions import PeakContext

from .fabricate import TEXT, query, word_span


def _membership_reads(queries) -> int:
    return sum('FROM "projects_membership"' in q["sql"] for q in queries)


def test_the_roles_are_read_once_then_kept_across_requests(client, clinician, note, maps, tasks, base, sharp):
    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    assert client.get(url, query(tasks["heart"], base, sharp)).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, query(tasks["heart"], base, sharp)).status_code == 200
    assert _membership_reads(queries.captured_queries) == 0


def test_a_removed_membership_takes_effect_on_the_next_request(
    client, clinician, note, maps, corpus, tasks, base, sharp
):
    client.force_login(clinician)
    url = reverse("review:queue", args=[corpus.pk])
    assert client.get(url, {"model": base.pk, "profile": sharp.pk}).status_code in (200, 302)  # roles now kept
    remove_member(corpus.project, clinician, Role.CLINICIAN)
    assert client.get(url, {"model": base.pk, "profile": sharp.pk}).status_code == 404
    page = reverse("review:note", args=[note.corpus_id, note.pk])
    assert client.get(page, query(tasks["heart"], base, sharp)).status_code == 404


def test_a_deleted_project_and_an_added_membership_take_effect_at_once(clinician, django_user_model):
    other = Project.objects.create(name="other", slug="other")
    assert roles_of(clinician, other) == frozenset()
    add_member(other, clinician, Role.CURATOR)
    fresh = django_user_model.objects.get(pk=clinician.pk)  # a new request's user
    assert roles_of(fresh, other) == {Role.CURATOR}
    other_id = other.pk
    other.delete()  # the cascade deletes the membership (its signal renews the kept roles)
    fresh = django_user_model.objects.get(pk=clinician.pk)
    assert roles_of(fresh, other_id) == frozenset()
    assert Role.CURATOR not in roles_of(fresh)


def test_a_membership_deleted_by_primary_key_alone_takes_effect_at_once(clinician, django_user_model):
    """An erasure deletes rows by primary key alone (.only("pk")): the signal has no user to name,
    so everyone's kept roles are read afresh, and the delete itself does not fail looking for the
    row it removed."""
    other = Project.objects.create(name="other", slug="other")
    add_member(other, clinician, Role.CURATOR)
    assert roles_of(django_user_model.objects.get(pk=clinician.pk), other) == {Role.CURATOR}  # now kept
    Membership.objects.filter(project=other, user=clinician).only("pk").delete()
    assert roles_of(django_user_model.objects.get(pk=clinician.pk), other) == frozenset()


def _option(offset, label, selected) -> str:
    escaped = label.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = escaped.replace('"', "&quot;").replace("'", "&#x27;")
    return f'<option value="{offset}"{" selected" if selected else ""}>{escaped}</option>'


def test_the_boundary_choices_are_escaped_and_the_reviewers_own_selected(
    client, clinician, note, maps, tasks, base, sharp
):
    client.force_login(clinician)
    url = reverse("review:note", args=[note.corpus_id, note.pk])
    page = client.get(url, query(tasks["heart"], base, sharp))
    a, b = word_span(TEXT, "130")
    row = next(p for p in page.context["panel"].peaks if (p.start, p.end) == (a, b))
    for choice in (*row.start_options, *row.end_options):
        assert _option(*choice) in page.content.decode()
    wider = max(o for o, _, _ in row.end_options)
    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en", maps["heart"].config_key)
    decisions.decide(
        ctx, clinician, start=a, end=b, decision="adjust", expected_version=0, adjusted_start=a, adjusted_end=wider
    )
    page = client.get(url, query(tasks["heart"], base, sharp))  # the decision shows at once
    row = next(p for p in page.context["panel"].peaks if (p.start, p.end) == (a, b))
    assert [o for o, _, selected in row.end_options if selected] == [wider]
    assert _option(wider, next(label for o, label, _ in row.end_options if o == wider), True) in page.content.decode()
