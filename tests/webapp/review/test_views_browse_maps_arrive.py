"""The note browser shows maps as a relevance job stores them (`make demo`'s first job): it reads
the maps from the database on every request, with no cache and no wait for the job's end."""

from django.urls import reverse

from webapp.corpus.models import Note

from .fabricate import TEXT, add_map, query


def test_a_map_stored_between_two_requests_shows_on_the_second(
    client, clinician, corpus, note, maps, tasks, base, sharp
):
    late = Note.objects.create(corpus=corpus, external_id="late-note", text=TEXT)
    client.force_login(clinician)
    url, params = reverse("review:notes", args=[corpus.pk]), query(tasks["heart"], base, sharp)
    assert "late-note" not in client.get(url, params).content.decode()  # with a task: only notes with its maps

    add_map(late, tasks["heart"], base, {"130": 0.9})  # a chunk of the job ends
    assert "late-note" in client.get(url, params).content.decode()
