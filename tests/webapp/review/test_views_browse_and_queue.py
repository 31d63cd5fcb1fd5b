"""The note browser page and the review queue redirect."""

import pytest
from django.urls import reverse

from webapp.corpus.models import Note

from .fabricate import TEXT, add_map, query


@pytest.fixture
def three(corpus, tasks, base, note, maps):
    second = Note.objects.create(corpus=corpus, external_id="n2", text=TEXT)
    add_map(second, tasks["heart"], base, {})
    third = Note.objects.create(corpus=corpus, external_id="n3", text=TEXT + " Syncope.")
    add_map(third, tasks["heart"], base, {"130": 0.9})
    return [note, second, third]


def test_the_browser_lists_notes_with_peaks_and_state(client, clinician, corpus, three, tasks, base, sharp):
    client.force_login(clinician)
    content = client.get(reverse("review:notes", args=[corpus.pk]), query(tasks["heart"], base, sharp)).content.decode()
    assert content.index(">n1<") < content.index(">n2<") < content.index(">n3<")  # not in the random CSRF token
    assert "undecided" in content and "no peaks" in content


def test_the_browser_says_not_computed_yet_for_a_note_without_maps(
    client, researcher, corpus, three, tasks, base, sharp
):
    Note.objects.create(corpus=corpus, external_id="n4", text=TEXT)
    client.force_login(researcher)
    every_task = {**query(tasks["heart"], base, sharp), "task": ""}  # with a task, only notes with its maps are listed
    content = client.get(reverse("review:notes", args=[corpus.pk]), every_task).content.decode()
    row = content[content.index(">n4<") :]
    row = row[: row.index("</tr>")]
    assert "not computed yet" in row and reverse("pipeline:job_launch") in row and "external_ids=n4" in row
    n2 = content[content.index(">n2<") :]
    assert "no peaks" in n2[: n2.index("</tr>")]  # a map without peaks stays "no peaks"


def test_a_filtered_page_says_which_notes_it_searched(client, clinician, corpus, three, tasks, base, sharp):
    client.force_login(clinician)
    response = client.get(
        reverse("review:notes", args=[corpus.pk]), {**query(tasks["heart"], base, sharp), "q": "syncope"}
    )
    content = response.content.decode()
    assert "n3" in content and ">n1<" not in content
    assert "this page searched 3 notes" in content


def test_the_next_rows_come_as_an_htmx_fragment(client, clinician, corpus, three, tasks, base, sharp, monkeypatch):
    from webapp.review import browse

    monkeypatch.setattr(browse, "PER_PAGE", 1)
    client.force_login(clinician)
    first = client.get(reverse("review:notes", args=[corpus.pk]), {"model": base.pk}).content.decode()
    assert 'id="more-notes"' in first
    more = client.get(
        reverse("review:notes", args=[corpus.pk]),
        {"model": base.pk, "after": three[0].pk},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="more-notes",
    ).content.decode()
    assert "<html" not in more and "n2" in more and "n3" not in more


def test_the_queue_sends_the_reviewer_to_the_next_undecided_pair(client, clinician, corpus, three, tasks, base, sharp):
    client.force_login(clinician)
    response = client.get(reverse("review:queue", args=[corpus.pk]), {"model": base.pk, "profile": sharp.pk})
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("review:note", args=[corpus.pk, three[0].pk]))
    nxt = client.get(
        reverse("review:queue", args=[corpus.pk]),
        {"model": base.pk, "profile": sharp.pk, "after": f"{three[0].pk}:{tasks['pacemaker'].pk}"},
    )
    assert nxt["Location"].startswith(reverse("review:note", args=[corpus.pk, three[2].pk]))
    assert f"task={tasks['heart'].pk}" in nxt["Location"]
    done = client.get(
        reverse("review:queue", args=[corpus.pk]),
        {"model": base.pk, "profile": sharp.pk, "after": f"{three[2].pk}:{tasks['heart'].pk}"},
    )
    assert done.status_code == 200 and "Nothing left to review" in done.content.decode()
