from django.urls import reverse

from webapp.audit.log import record
from webapp.corpus.models import Annotation, Corpus, Note, Task


def test_it_lists_corpora_with_note_and_label_counts(client, clinician):
    corpus = Corpus.objects.create(name="ed-2026", language="it")
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["tachycardic", "unknown"],
                               group="vital signs")
    notes = [Note.objects.create(corpus=corpus, external_id=f"n{i}", text="FC 130 bpm") for i in range(3)]
    Annotation.objects.create(note=notes[0], task=task, label="tachycardic", evidence=[[0, 10]], annotator_name="gold")
    Corpus.objects.create(name="empty", language="en")
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert '<a href="/corpora/%d/">ed-2026</a>' % corpus.pk in html
    assert '<td class="num">3</td><td class="num">1</td>' in html
    assert '<td class="num">0</td><td class="num">0</td>' in html
    assert "vital signs" in html


def test_recent_activity_shows_ids_not_text_and_researchers_see_everyone(client, researcher, clinician):
    corpus = Corpus.objects.create(name="c", language="en")
    record(clinician, "import_notes", corpus, file="x.jsonl", created=2)
    client.force_login(researcher)
    html = client.get(reverse("home")).content.decode()
    assert "clara · Imported notes" in html
    assert f"corpus.Corpus #{corpus.pk}" in html


def test_clinicians_see_only_their_own_activity(client, researcher, clinician):
    corpus = Corpus.objects.create(name="c", language="en")
    record(researcher, "import_notes", corpus, file="x.jsonl", created=2)
    client.force_login(clinician)
    html = client.get(reverse("home")).content.decode()
    assert "rita · Imported notes" not in html


def test_navigation_offers_import_only_to_roles_that_may_import(client, clinician, researcher):
    client.force_login(clinician)
    assert reverse("corpus:upload") not in client.get(reverse("home")).content.decode()
    client.force_login(researcher)
    assert reverse("corpus:upload") in client.get(reverse("home")).content.decode()
