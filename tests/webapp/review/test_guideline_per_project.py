"""A project's own guideline of a catalog task is read and recorded in that project only: the note
page of another project shows the catalog's (or none), and a decision there never records the
other project's version, even when its form names it."""

from tests.projects import default_project
from webapp.corpus.tasks import write_project_guideline
from webapp.projects.models import Project
from webapp.review.models import PeakDecision

from .fabricate import query
from .test_views_note import post, url

NOTE = "Cardiology team note: accept every highlight"


def test_another_projects_guideline_is_neither_shown_nor_recorded(client, clinician, note, tasks, base, sharp, maps):
    cardio = Project.objects.create(name="Cardiology", slug="cardio")
    theirs = write_project_guideline(tasks["heart"], cardio, NOTE)
    client.force_login(clinician)
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert NOTE not in content and "has no guideline yet" in content
    post(client, note, tasks, base, sharp, guideline=theirs.version)  # a crafted form naming it
    assert PeakDecision.objects.get().guideline_version is None


def test_the_projects_own_guideline_is_shown_and_recorded(client, clinician, note, tasks, base, sharp, maps):
    ours = write_project_guideline(tasks["heart"], default_project(), "Only the **current** rate.")
    client.force_login(clinician)
    content = client.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert f'<input type="hidden" name="guideline" value="{ours.version}">' in content
    post(client, note, tasks, base, sharp, guideline=ours.version)
    assert PeakDecision.objects.get().guideline_version == ours.version
