from django.urls import reverse

from tests.projects import default_project
from tests.webapp.review.fabricate import TEXT, add_map, word_span
from webapp.audit.log import record
from webapp.corpus.models import Annotation, Corpus, Note, Task
from webapp.pipeline.models import ModelVersion
from webapp.review.models import PeakDecision


def test_it_lists_corpora_with_note_and_label_counts(client, clinician):
    corpus = Corpus.objects.create(project=default_project(), name="ed-2026", language="it")
    task = Task.objects.create(
        slug="heart-rate", description="heart rate", options=["tachycardic", "unknown"], group="vital signs"
    )
    notes = [Note.objects.create(corpus=corpus, external_id=f"n{i}", text="FC 130 bpm") for i in range(3)]
    Annotation.objects.create(note=notes[0], task=task, label="tachycardic", evidence=[[0, 10]], annotator_name="gold")
    Corpus.objects.create(project=default_project(), name="empty", language="en")
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert f'<a href="/corpora/{corpus.pk}/">ed-2026</a>' in html
    assert '<td class="num">3</td><td class="num">1</td>' in html
    assert '<td class="num">0</td><td class="num">0</td>' in html
    assert "vital signs" in html


def test_recent_activity_shows_ids_not_text_and_researchers_see_everyone(client, researcher, clinician):
    corpus = Corpus.objects.create(project=default_project(), name="c", language="en")
    record(clinician, "import_notes", corpus, file="x.jsonl", created=2)
    client.force_login(researcher)
    html = client.get(reverse("home")).content.decode()
    assert "clara · Imported notes" in html
    assert f"corpus.Corpus #{corpus.pk}" in html


def test_clinicians_see_only_their_own_activity(client, researcher, clinician):
    corpus = Corpus.objects.create(project=default_project(), name="c", language="en")
    record(researcher, "import_notes", corpus, file="x.jsonl", created=2)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert "rita · Imported notes" not in html


def test_navigation_offers_import_only_to_roles_that_may_import(client, clinician, researcher):
    client.force_login(clinician)
    assert reverse("corpus:upload") not in client.get(reverse("home")).content.decode()
    client.force_login(researcher)
    assert reverse("corpus:upload") in client.get(reverse("home")).content.decode()


def ward_with_maps(mapped: int, unmapped: int = 1):
    """A corpus whose first `mapped` notes have a heart-rate map of the default model version."""
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = ModelVersion.objects.get(is_default=True)  # created by the migrations, as in a fresh install
    notes = [Note.objects.create(corpus=corpus, external_id=f"n{i}", text=TEXT) for i in range(mapped + unmapped)]
    for note in notes[:mapped]:
        add_map(note, task, model, {"130": 0.9, "tachycardic": 0.6})
    return corpus, task, model, notes


def decide(reviewer, note, task, model):
    start, end = word_span(note.text, "130")
    PeakDecision.objects.create(
        note=note,
        task=task,
        model_version=model,
        method="attnlrp",
        template="en",
        start=start,
        end=end,
        decision="accept",
        reviewer=reviewer,
    )


def test_a_clinicians_home_leads_with_review_next_note_and_what_waits(client, clinician, researcher):
    corpus, task, model, notes = ward_with_maps(mapped=3)
    decide(clinician, notes[0], task, model)
    decide(researcher, notes[1], task, model)  # another reviewer's decision leaves the note waiting for clara
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    queue_url = reverse("review:queue", args=[corpus.pk])
    assert f'<a class="button primary" href="{queue_url}">Review next note</a>' in html
    assert "<strong>2</strong> notes with maps wait for your review in <strong>ward</strong>" in html
    assert "(you have reviewed 1 of 3)" in html
    assert html.index("Review next note") < html.index("<h2>Corpora</h2>")  # first and foremost


def test_review_next_note_opens_the_first_note_with_maps_on_its_task(client, clinician):
    corpus, task, model, notes = ward_with_maps(mapped=2)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    queue_url = reverse("review:queue", args=[corpus.pk])
    assert f'href="{queue_url}">Review next note' in html
    response = client.get(queue_url)
    assert response.status_code == 302
    assert response.url.startswith(reverse("review:note", args=[corpus.pk, notes[0].pk]) + "?")
    assert f"task={task.pk}" in response.url and f"model={model.pk}" in response.url


def test_a_clinician_is_told_when_no_note_has_maps_yet(client, clinician):
    ward_with_maps(mapped=0, unmapped=2)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert "No note has relevance maps yet" in html
    assert "Review next note" not in html


def test_a_clinician_who_reviewed_every_note_with_maps_is_told_nothing_waits(client, clinician):
    corpus, task, model, notes = ward_with_maps(mapped=1)
    decide(clinician, notes[0], task, model)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert "Nothing waits for you" in html and "Review next note" not in html


def test_researchers_and_admins_keep_their_home_without_the_review_queue(client, researcher, admin_user):
    ward_with_maps(mapped=2)
    for user in (researcher, admin_user):
        client.force_login(user)
        html = client.get(reverse("home")).content.decode()
        assert 'id="review-next"' not in html and "Review next note" not in html
        assert "<h2>Corpora</h2>" in html


def test_the_waiting_count_stops_at_its_cap_and_says_there_are_more(client, clinician, monkeypatch):
    from webapp.review import waiting

    monkeypatch.setattr(waiting, "COUNT_CAP", 2)
    corpus, task, model, notes = ward_with_maps(mapped=4)
    decide(clinician, notes[0], task, model)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert "<strong>1+</strong> note wait" in html or "<strong>1+</strong> note with maps wait" in html
    assert "(you have reviewed 1 of 2+)" in html
