"""The erasure pages: only project admins; the form counts first (a dry run, nothing erased),
erases only once the corpus's name is typed, and the request's page follows it."""

import pytest
from django.urls import reverse

from tests.projects import make_member
from tests.webapp.erasure.world import every_table
from webapp.corpus.models import Note
from webapp.erasure import erasing
from webapp.erasure.models import ErasureRequest

pytestmark = pytest.mark.django_db


def patient_form(world, **extra):
    return {
        "project": world.project.pk,
        "scope": "patient",
        "corpus": world.ward.pk,
        "patient_key": "patient_id",
        "patients": "P1",
        "datasets": "withdraw",
        **extra,
    }


def test_the_form_counts_first_and_erases_nothing(world, admin_user, client_for):
    client = client_for(admin_user)
    assert client.get(reverse("erasure:new")).status_code == 200
    before = every_table()
    response = client.post(reverse("erasure:new"), patient_form(world, preview=""))
    page = response.content.decode()
    assert response.status_code == 200 and "What would be erased" in page and "corpus.Note" in page
    assert "tiny-dsm" in page and "e-ds v1" in page and "P1" not in page.split("What would be erased")[1]
    assert every_table() == before


def test_it_erases_only_once_the_corpus_name_is_typed(world, admin_user, client_for):
    client = client_for(admin_user)
    response = client.post(reverse("erasure:new"), patient_form(world, erase="", confirm="wrong"))
    assert response.status_code == 200 and "exactly to confirm" in response.content.decode()
    assert not ErasureRequest.objects.exists()
    response = client.post(reverse("erasure:new"), patient_form(world, erase="", confirm="ward"))
    erasure = ErasureRequest.objects.get()
    assert response.status_code == 302 and response.url == reverse("erasure:detail", args=[erasure.pk])
    assert erasure.status == "queued" and erasure.requested_by == admin_user and erasure.patient_hashes
    assert Note.objects.filter(corpus=world.ward).count() == 3  # a worker erases it, not the page


def test_the_request_page_follows_it_and_its_poll_ends(world, admin_user, client_for):
    erasure = erasing.request(world.project, "notes", corpus=world.ward, notes=["n3"], actor=admin_user, send=False)
    client = client_for(admin_user)
    page = client.get(reverse("erasure:detail", args=[erasure.pk])).content.decode()
    assert "1 note of corpus ward" in page and "Cancel erasure" in page
    erasing.run(erasing.claim(erasure.pk))
    poll = client.get(reverse("erasure:detail", args=[erasure.pk]), HTTP_HX_REQUEST="true")
    assert poll.status_code == 286 and "corpus.Note" in poll.content.decode()
    assert str(erasure.pk) in client.get(reverse("erasure:list")).content.decode()


def test_only_the_projects_admins_may_erase(world, admin_user, researcher, client_for):
    erasure = erasing.request(world.project, "corpus", corpus=world.ward, actor=admin_user, send=False)
    client = client_for(researcher)
    assert client.get(reverse("erasure:new")).status_code == 403
    assert client.get(reverse("erasure:detail", args=[erasure.pk])).status_code == 404  # another project's
    make_member(researcher, "researcher", world.project)
    assert client.get(reverse("erasure:detail", args=[erasure.pk])).status_code == 403
    assert client.post(reverse("erasure:cancel", args=[erasure.pk])).status_code == 403


def test_cancel_and_resume_from_the_page(world, admin_user, client_for):
    erasure = erasing.request(world.project, "corpus", corpus=world.ward, actor=admin_user, send=False)
    client = client_for(admin_user)
    client.post(reverse("erasure:cancel", args=[erasure.pk]))
    assert ErasureRequest.objects.get(pk=erasure.pk).status == "cancelled"
    client.post(reverse("erasure:resume", args=[erasure.pk]))
    assert ErasureRequest.objects.get(pk=erasure.pk).status == "queued"


def test_runs_and_datasets_say_what_an_erasure_left(world, admin_user, client_for):
    erasure = erasing.request(world.project, "notes", corpus=world.ward, notes=["n1"], actor=admin_user, send=False)
    erasing.run(erasing.claim(erasure.pk))
    client = client_for(admin_user)
    assert "trained on erased data" in client.get(reverse("training:run_list")).content.decode()
    assert "Trained on erased data" in client.get(reverse("training:run_detail", args=[world.run.pk])).content.decode()
    page = client.get(reverse("datasets:detail", args=[world.dataset.pk])).content.decode()
    assert f"by erasure {erasure.pk}" in page and "Withdrawn" in page


def test_the_admin_who_erased_a_whole_project_still_sees_the_request(world, admin_user, researcher, client_for):
    erasure = erasing.request(world.project, "project", actor=admin_user, send=False)
    erasing.run(erasing.claim(erasure.pk))
    client = client_for(admin_user)
    poll = client.get(reverse("erasure:detail", args=[erasure.pk]), HTTP_HX_REQUEST="true")
    assert poll.status_code == 286 and "projects.Project" in poll.content.decode()
    assert "the whole project erasure-study" in client.get(reverse("erasure:list")).content.decode()
    make_member(researcher, "admin")  # an admin of another project: nothing of it
    other = client_for(researcher)
    assert other.get(reverse("erasure:detail", args=[erasure.pk])).status_code == 404
    assert "erasure-study" not in other.get(reverse("erasure:list")).content.decode()
