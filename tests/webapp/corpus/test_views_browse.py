from django.urls import reverse

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note, text_hash


def make_notes(n, name="c"):
    corpus = Corpus.objects.create(project=default_project(), name=name, language="en")
    Note.objects.bulk_create(
        [
            Note(corpus=corpus, external_id=f"n{i:04d}", text="x" * (i + 1), content_hash=text_hash("x" * (i + 1)))
            for i in range(n)
        ]
    )
    return corpus


def test_corpus_pages_walk_all_notes_by_keyset_without_repeats(client, clinician):
    corpus = make_notes(120)
    client.force_login(clinician)
    seen, url = [], reverse("corpus:detail", args=[corpus.pk])
    while url:
        response = client.get(url)
        page = response.context["page"]
        seen += [row["external_id"] for row in page.notes]
        url = f"{reverse('corpus:detail', args=[corpus.pk])}?after={page.next_after}" if page.next_after else None
    assert seen == [f"n{i:04d}" for i in range(120)]


def test_the_htmx_request_gets_only_the_rows(client, clinician):
    corpus = make_notes(60)
    client.force_login(clinician)
    response = client.get(reverse("corpus:detail", args=[corpus.pk]) + "?after=0", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<h1>" not in html and "n0000" in html and "Next 50 notes" in html


def test_search_by_id_prefix(client, clinician):
    corpus = make_notes(30)
    client.force_login(clinician)
    response = client.get(reverse("corpus:detail", args=[corpus.pk]) + "?q=n001")
    assert [r["external_id"] for r in response.context["page"].notes] == [f"n001{i}" for i in range(10)]


def test_the_note_page_shows_the_text_exactly_as_written(client, clinician):
    corpus = Corpus.objects.create(project=default_project(), name="c", language="it")
    note = Note.objects.create(corpus=corpus, external_id="n1", text="PA 90/60 <b>  FC 130\nSat 92%")
    client.force_login(clinician)
    html = client.get(reverse("corpus:note", args=[corpus.pk, note.pk])).content.decode()
    assert "PA 90/60 &lt;b&gt;  FC 130\nSat 92%" in html


def test_the_note_browser_finds_notes_by_a_word_in_any_of_its_forms(client, researcher):
    corpus = Corpus.objects.create(project=default_project(), name="words", language="en")
    Note.objects.create(corpus=corpus, external_id="w-1", text="Fractured wrist after a fall.")
    Note.objects.create(corpus=corpus, external_id="w-2", text="Headache since morning.")
    client.force_login(researcher)
    response = client.get(reverse("corpus:detail", args=[corpus.pk]), {"q": "fractures"})
    assert [r["external_id"] for r in response.context["page"].notes] == ["w-1"]
