"""The note page says when a task's peaks are the same as the note's other tasks' (ml.specificity),
and shows a long note by sentence or line with the word heat of the chosen one (sentenceview)."""

import re

import pytest
from django.urls import reverse

from webapp.corpus.models import Note, Task

from .fabricate import add_map, every_nth_token, long_text, query, tokens


def url(note):
    return reverse("review:note", args=[note.corpus_id, note.pk])


@pytest.fixture
def login(client, clinician):
    client.force_login(clinician)
    return client


def test_peaks_shared_by_every_task_are_called_out_beside_the_heat(login, note, tasks, base, sharp):
    add_map(note, tasks["heart"], base, {"Pacemaker": 0.9})
    add_map(note, tasks["pacemaker"], base, {"Pacemaker": 1.0})
    content = login.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert (
        "These peaks are the same for every task of this note (2 tasks with maps); they say little about heart rate."
        in content
    )


def test_one_shared_peak_among_task_specific_ones_is_named_by_number(login, note, tasks, base, sharp):
    third = Task.objects.create(slug="body-temperature", description="body temperature", options=["y", "n"])
    add_map(note, tasks["heart"], base, {"130": 0.9, "Pacemaker": 0.9})
    add_map(note, tasks["pacemaker"], base, {"Pacemaker": 1.0})
    add_map(note, third, base, {"Pacemaker": 0.8, "febrile": 0.9})
    content = login.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert "Peak 2 is also a peak for every other task of this note (2 other tasks); it says little" in content
    assert "same for every task" not in content


def test_task_specific_peaks_get_a_quiet_line_and_a_lone_task_none(login, note, tasks, base, sharp, maps):
    content = login.get(url(note), query(tasks["heart"], base, sharp)).content.decode()
    assert "These peaks differ from those of this note's 1 other task with maps" in content
    other = Note.objects.create(corpus=note.corpus, external_id="n2", text=note.text)
    add_map(other, tasks["heart"], base, {"130": 0.9})
    content = login.get(url(other), query(tasks["heart"], base, sharp)).content.decode()
    assert 'id="specificity-note"' not in content


@pytest.fixture
def long_note(corpus, tasks, base):
    note = Note.objects.create(corpus=corpus, external_id="long", text=long_text(20_000))
    offsets = tokens(note.text)
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=every_nth_token(offsets, 97))
    return note


def test_a_20000_character_note_is_one_mark_per_line_and_the_chosen_line_in_words(login, long_note, tasks, base, sharp):
    lines = long_note.text.count("\n") + 1
    response = login.get(url(long_note), query(tasks["heart"], base, sharp, view="sentences", by="line", sentence=5))
    content = response.content.decode()
    assert response.status_code == 200 and f'data-count="{lines}"' in content
    marks = set(re.findall(r'<a href="[^"]*sentence=(\d+)" hx-get="[^"]*" data-sentence', content))
    assert marks == {str(i) for i in range(lines)}  # every line is a mark (a wrapped one counts once)
    rows = [float(y) for y in re.findall(r'<rect [^>]* y="([\d.]+)"', content)]
    assert max(rows) / 13 + 1 <= 45  # about TARGET_ROWS rows of the map: one screen
    chosen = re.search(
        r'<li value="6" id="sentence-5" class="chosen" aria-current="true"><div class="notetext">(.*?)</div>',
        content,
        re.S,
    )
    assert chosen and "Day 5: HR 105 bpm" in re.sub(r"<[^>]+>", "", chosen.group(1))
    assert 'id="note-text"' not in content and 'data-peaks="0"' in content  # peak keys off in this view
    assert " style=" not in content.split('id="sentence-view"')[1]  # the CSP refuses style attributes


def test_without_a_chosen_sentence_the_most_relevant_one_is_shown_and_htmx_gets_the_panel(
    login, note, tasks, base, sharp
):
    add_map(note, tasks["heart"], base, {"febrile": 0.3, "Pacemaker": 0.9})
    response = login.get(
        url(note),
        query(tasks["heart"], base, sharp, view="sentences"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="note-panel",
    )
    content = response.content.decode()
    assert content.lstrip().startswith('<section id="note-panel"')
    chosen = re.search(r'class="chosen" aria-current="true"><div class="notetext">(.*?)</div>', content, re.S)
    assert re.sub(r"<[^>]+>", "", chosen.group(1)) == "Pacemaker in situ since 2019."
    assert "<h3>Most relevant sentences</h3>" in content
