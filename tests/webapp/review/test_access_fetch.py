"""webapp.review.access: the review loop's note and corpus fetched by a query built once
(webapp.db.prepared `objects`), the access decided on the row (scoping.check_or_404) as
get_or_404 decides it; a removed membership, a changed role or a deactivated account takes effect
on the next request."""

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.projects import make_member
from webapp.corpus.models import Corpus, Note
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Capability
from webapp.projects.scoping import check_or_404
from webapp.review import access

from .fabricate import query


def test_a_note_comes_back_as_the_orm_gives_it_with_its_corpus(note):
    note.metadata = {"ward": "cardiology", "age": [70, 79]}
    note.save()
    got = access.note_for(_site_admin(), note.corpus_id, note.pk)
    orm = Note.objects.select_related("corpus").get(pk=note.pk)
    assert [getattr(got, f.attname) for f in Note._meta.concrete_fields] == [
        getattr(orm, f.attname) for f in Note._meta.concrete_fields
    ]
    assert got.metadata == {"ward": "cardiology", "age": [70, 79]}  # the JSON field converted
    with CaptureQueriesContext(connection) as queries:
        assert got.corpus.name == orm.corpus.name and got.corpus.created == orm.corpus.created
    assert len(queries) == 0  # the corpus came with the note
    assert got._state.db == "default" and not got._state.adding
    assert access._NOTE._kept and all(kept is not None for kept in access._NOTE._kept.values())


def _site_admin():
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("root-fetch", password="x-very-long-secret-1")


def test_another_projects_or_corpus_s_or_a_missing_note_is_not_found(note, clinician):
    other = Project.objects.create(slug="elsewhere", name="Elsewhere")
    theirs = Corpus.objects.create(project=other, name="theirs", language="en")
    their_note = Note.objects.create(corpus=theirs, external_id="t1", text="Other ward text.")
    missing = ((theirs.pk, their_note.pk), (theirs.pk, note.pk), (note.corpus_id, 10**9), (note.corpus_id, 10**20))
    for corpus_id, note_id in missing:  # the last past any key's range, as a URL may give it
        with pytest.raises(Http404):
            access.note_for(clinician, corpus_id, note_id)
    with pytest.raises(Http404):
        access.corpus_for(clinician, theirs.pk)
    assert access.note_for(_site_admin(), theirs.pk, their_note.pk) == their_note  # a site admin: every project


def test_a_role_without_the_capability_is_refused_in_its_own_project(note, researcher, clinician):
    assert access.note_for(researcher, note.corpus_id, note.pk) == note
    with pytest.raises(PermissionDenied):
        access.note_for(researcher, note.corpus_id, note.pk, Capability.REVIEW)
    assert access.note_for(clinician, note.corpus_id, note.pk, Capability.REVIEW) == note
    with pytest.raises(PermissionDenied):
        access.corpus_for(researcher, note.corpus_id, Capability.REVIEW)


def test_check_or_404_takes_only_models_whose_project_one_path_names(note, clinician):
    from webapp.corpus.models import Task

    task = Task.objects.create(slug="shared", description="shared", options=["y"])  # catalog rows: shared_when
    with pytest.raises(TypeError):
        check_or_404(clinician, task)


def test_a_removed_membership_a_changed_role_and_a_deactivated_account_take_effect_at_once(
    client, clinician, note, tasks, base, sharp, maps
):
    page = reverse("review:note", args=[note.corpus_id, note.pk])
    q = query(tasks["heart"], base, sharp)
    client.force_login(clinician)
    assert client.get(page, q).status_code == 200
    assert client.get(reverse("review:queue", args=[note.corpus_id]), q).status_code in (200, 302)

    Membership.objects.filter(user=clinician).update(role="researcher")  # no signal: as a bulk change
    Membership.objects.filter(user=clinician).first().save()  # a save: the signal renews the kept roles
    assert client.get(reverse("review:queue", args=[note.corpus_id]), q).status_code == 403
    decide = reverse("review:decide", args=[note.corpus_id, note.pk])
    assert client.post(decide, {**q, "start": 0, "end": 3, "decision": "accept"}).status_code == 403

    Membership.objects.filter(user=clinician).delete()
    assert client.get(page, q).status_code == 404
    assert client.get(reverse("review:queue", args=[note.corpus_id]), q).status_code == 404

    make_member(clinician, "clinician")
    assert client.get(page, q).status_code == 200
    clinician.is_active = False
    clinician.save()
    assert client.get(page, q).status_code == 302  # no session user any more: the login page
