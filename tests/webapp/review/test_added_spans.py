"""Spans the model missed (webapp.review.spans): snapped to words, stored with reviewer, guideline
version and active time, edited, removed, audited; the note page's forms; access through the
project (URL and form ids)."""

import pytest
from django.urls import reverse

from ml.peaks.words import snap_to_words
from tests.projects import make_member
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.corpus.tasks import current_guideline
from webapp.projects.models import Project
from webapp.review import spans
from webapp.review.models import AddedSpan

from .fabricate import TEXT, query, word_span

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}


def add_url(note):
    return reverse("review:add_span", args=[note.corpus_id, note.pk])


@pytest.fixture
def form(tasks, base, sharp):
    return query(tasks["heart"], base, sharp, k=1, sigma=1.0, lower=0.2, upper=0.4)


@pytest.mark.parametrize(
    ("picked", "words"),
    [
        (("ebrile 3",), "febrile 38"),  # widened to the words it touches
        ((" febrile ",), "febrile"),  # spaces trimmed
        (("38.5 C.",), "38.5 C"),  # punctuation trimmed at the ends, kept inside
        (("<male>",), "male"),
    ],
)
def test_it_snaps_a_selection_to_whole_words(picked, words):
    a = TEXT.index(picked[0])
    start, end = snap_to_words(TEXT, a, a + len(picked[0]))
    assert TEXT[start:end] == words


def test_a_caret_gives_the_word_at_it():
    a = TEXT.index("tachycardic") + 3
    start, end = snap_to_words(TEXT, a, a)
    assert TEXT[start:end] == "tachycardic"


def test_it_stores_the_snapped_span_with_its_reviewer_guideline_and_time(note, tasks, clinician):
    a = TEXT.index("ebrile")
    row, created = spans.add(note, tasks["heart"], clinician, start=a, end=a + 3, guideline_version=2, active_ms=900)
    assert created
    assert (row.start, row.end) == word_span(TEXT, "febrile")
    assert (row.reviewer, row.guideline_version, row.active_ms, row.round) == (clinician, 2, 900, None)
    again, created = spans.add(note, tasks["heart"], clinician, start=row.start, end=row.end)
    assert not created and again.pk == row.pk


def test_it_refuses_a_span_past_the_end_or_without_a_word(note, tasks, clinician):
    with pytest.raises(spans.SpanError, match="not inside"):
        spans.add(note, tasks["heart"], clinician, start=5, end=len(TEXT) + 1)
    with pytest.raises(spans.SpanError, match="no word"):
        spans.add(note, tasks["heart"], clinician, start=TEXT.index("&"), end=TEXT.index("&") + 1)
    assert not AddedSpan.objects.exists()


def test_edit_and_remove_are_audited_without_the_words(note, tasks, clinician):
    row, _ = spans.add(note, tasks["heart"], clinician, start=TEXT.index("febrile"), end=TEXT.index("38"))
    spans.edit(row, clinician, start=TEXT.index("febrile"), end=TEXT.index(" C."))
    row.refresh_from_db()
    assert TEXT[row.start : row.end] == "febrile 38.5" and row.version == 2
    spans.remove(row, clinician)
    assert not AddedSpan.objects.exists()
    events = AuditEvent.objects.filter(action=AuditEvent.Action.REVIEW_DECISION, details__kind="added_span")
    assert [e.details["op"] for e in events.order_by("id")] == ["create", "update", "delete"]
    assert all("febrile" not in str(e.details) for e in events)
    assert events.order_by("id").last().details["span"] == [row.start, row.end]


def test_the_page_adds_a_span_and_shows_it_in_the_panel(client, clinician, note, tasks, maps, form):
    client.force_login(clinician)
    a = TEXT.index("febrile") + 2
    response = client.post(add_url(note), {**form, "start": a, "end": a + 1, "guideline": 0, "active_ms": "1500"}, **HX)
    assert response.status_code == 200
    content = response.content.decode()
    assert 'id="note-panel"' in content and "You added «febrile»" in content
    row = AddedSpan.objects.get()
    assert (row.start, row.end, row.active_ms, row.guideline_version) == (*word_span(TEXT, "febrile"), 1500, None)
    assert f'id="added-span-{row.pk}"' in content
    page = client.get(reverse("review:note", args=[note.corpus_id, note.pk]), form).content.decode()
    assert f'data-start="{row.start}" data-end="{row.end}"' in page
    assert "<kbd>m</kbd>" in page and "Accept the rest: 2 undecided peaks" in page


def test_it_keeps_the_guideline_version_the_page_showed(client, clinician, note, tasks, maps, form):
    from webapp.corpus.models import TaskGuideline

    TaskGuideline.objects.create(task=tasks["heart"], version=1, text="Mark the heart rate.")
    client.force_login(clinician)
    a, b = word_span(TEXT, "febrile")
    client.post(add_url(note), {**form, "start": a, "end": b, "guideline": 1})
    assert (
        AddedSpan.objects.get().guideline_version == current_guideline(tasks["heart"], note.corpus.project_id).version
    )


def test_a_plain_form_redirects_back_to_the_note(client, clinician, note, tasks, maps, form):
    client.force_login(clinician)
    a, b = word_span(TEXT, "febrile")
    response = client.post(add_url(note), {**form, "start": a, "end": b})
    assert response.status_code == 302 and f"/notes/{note.pk}/" in response["Location"]


def test_edit_and_remove_through_the_page(client, clinician, note, tasks, maps, form):
    client.force_login(clinician)
    row, _ = spans.add(note, tasks["heart"], clinician, start=TEXT.index("febrile"), end=TEXT.index("febrile") + 7)
    edit = reverse("review:edit_span", args=[note.corpus_id, note.pk, row.pk])
    response = client.post(edit, {**form, "start": TEXT.index("febrile") + 1, "end": TEXT.index("38.5") + 1}, **HX)
    assert response.status_code == 200
    row.refresh_from_db()
    assert TEXT[row.start : row.end] == "febrile 38"
    remove = reverse("review:remove_span", args=[note.corpus_id, note.pk, row.pk])
    assert client.post(remove, form, **HX).status_code == 200
    assert not AddedSpan.objects.exists()


def test_a_refused_span_says_why_with_400(client, clinician, note, tasks, maps, form):
    client.force_login(clinician)
    amp = TEXT.index("&")
    response = client.post(add_url(note), {**form, "start": amp, "end": amp + 1}, **HX)
    assert response.status_code == 400 and "There is no word there" in response.content.decode()


# ---------------------------------------------------------------- access


@pytest.fixture
def other_project_note(db):
    project = Project.objects.create(slug="elsewhere", name="Elsewhere")
    corpus = Corpus.objects.create(project=project, name="other", language="en")
    return Note.objects.create(corpus=corpus, external_id="x1", text=TEXT)


def test_a_user_outside_the_project_gets_404(client, django_user_model, note, tasks, maps, form, clinician):
    outsider = django_user_model.objects.create_user("olga", password="x")
    make_member(outsider, "clinician", Project.objects.create(slug="olga-project", name="Olga's"))
    row, _ = spans.add(note, tasks["heart"], clinician, start=0, end=2)
    client.force_login(outsider)
    a, b = word_span(TEXT, "febrile")
    assert client.post(add_url(note), {**form, "start": a, "end": b}).status_code == 404
    edit = reverse("review:edit_span", args=[note.corpus_id, note.pk, row.pk])
    assert client.post(edit, {**form, "start": a, "end": b}).status_code == 404
    remove = reverse("review:remove_span", args=[note.corpus_id, note.pk, row.pk])
    assert client.post(remove, form).status_code == 404
    accept = reverse("review:accept_rest", args=[note.corpus_id, note.pk])
    assert client.post(accept, {**form, "confirm": "yes"}).status_code == 404
    assert AddedSpan.objects.get().start == 0


def test_another_reviewers_span_is_unknown_and_a_reader_may_not_add(
    client, django_user_model, note, tasks, maps, form, clinician, researcher
):
    colleague = make_member(django_user_model.objects.create_user("carl", password="x"), "clinician")
    row, _ = spans.add(note, tasks["heart"], colleague, start=0, end=2)
    client.force_login(clinician)
    remove = reverse("review:remove_span", args=[note.corpus_id, note.pk, row.pk])
    assert client.post(remove, form).status_code == 404
    assert AddedSpan.objects.filter(pk=row.pk).exists()
    client.force_login(researcher)
    a, b = word_span(TEXT, "febrile")
    assert client.post(add_url(note), {**form, "start": a, "end": b}).status_code == 403


def test_ids_in_the_form_go_through_the_access_layer(client, clinician, note, tasks, maps, form, other_project_note):
    foreign_task = Task.objects.create(
        slug="foreign", description="foreign", options=["y"], project=other_project_note.corpus.project
    )
    client.force_login(clinician)
    a, b = word_span(TEXT, "febrile")
    assert client.post(add_url(note), {**form, "task": foreign_task.pk, "start": a, "end": b}).status_code == 404
    from webapp.review.models import ReviewRound

    foreign_round = ReviewRound.objects.create(
        corpus=other_project_note.corpus, name="r", model_version=maps["heart"].model_version, method="attnlrp",
        template="en", config_key="x",
    )  # fmt: skip
    assert client.post(add_url(note), {**form, "round": foreign_round.pk, "start": a, "end": b}).status_code == 404
    assert not AddedSpan.objects.exists()
