"""A note as long as an import allows, with a relevance map over all of it: the review note page
and the corpus note page show it one window at a time, in bounded size and memory; peaks keep
their numbers across windows; a map cut by the model's context says where it stops."""

import html
import re
import tracemalloc

import numpy as np
import pytest
from django.conf import settings
from django.urls import reverse

from webapp.corpus.models import Note
from webapp.lib import windows
from webapp.review.models import PeakDecision
from webapp.review.noteview import boundary_options

from .fabricate import add_map, every_nth_token, long_text, query, tokens

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}
MAX_CHARS = getattr(settings, "IMPORT_MAX_NOTE_CHARS", 200_000)
PEAK_EVERY = 40  # tokens: a peak about every 200 characters, about 100 a window


def url(note):
    return reverse("review:note", args=[note.corpus_id, note.pk])


def shown_text(content: str) -> str:
    block = re.search(r'<div class="notetext" id="note-text">(.*?)</div>', content, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", block))


def mark_numbers(content: str) -> list[int]:
    return [int(n) for n in re.findall(r'<mark class="peak [^"]*" id="peak-(\d+)"', content)]


def panel_data(content: str, name: str) -> str | None:
    found = re.search(rf'<section id="note-panel"[^>]*?\s{name}="([^"]*)"', content, re.S)
    return found.group(1) if found else None


@pytest.fixture
def longest(corpus, tasks, base):
    """The largest note an import accepts, with a map of the heart-rate task over every token."""
    text = long_text(MAX_CHARS)
    note = Note.objects.create(corpus=corpus, external_id="longest", text=text)
    offsets = tokens(text)
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=every_nth_token(offsets, PEAK_EVERY))
    return note


@pytest.fixture
def get(client, clinician, tasks, base, sharp):
    client.force_login(clinician)

    def fetch(note, **params):
        headers = params.pop("headers", {})
        return client.get(url(note), {**query(tasks["heart"], base, sharp), **params}, **headers)

    return fetch


def test_the_review_page_of_the_longest_note_shows_one_window_in_bounded_size_and_memory(get, longest, note, maps):
    assert get(note).status_code == 200  # a short note first: templates and lazy imports loaded, as in a worker
    tracemalloc.start()
    try:
        response = get(longest)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    content = response.content.decode()
    first = windows.windows(longest.text)[0]
    assert response.status_code == 200
    assert len(longest.text) == MAX_CHARS and first.count >= MAX_CHARS // windows.WINDOW_CHARS
    assert shown_text(content) == longest.text[first.start : first.end]
    # a tenth of the note's text and its ~100 peaks with their forms (the whole note at once: ~4 MB)
    assert len(response.content) < 800_000
    # Python allocations while building and rendering the page (the whole note at once: ~35 MB)
    assert peak_bytes < 20_000_000
    total = int(panel_data(content, "data-peaks"))
    numbers = mark_numbers(content)
    assert total > 900 and numbers == list(range(numbers[0], numbers[-1] + 1)) and numbers[0] == 0
    assert numbers[-1] < total // 5  # the window's peaks only
    assert f"Part <strong>1</strong> of {first.count}" in content and "Next part" in content


def test_the_last_window_and_a_window_past_the_end(get, longest):
    parts = windows.windows(longest.text)
    last = get(longest, window=len(parts) - 1).content.decode()
    assert shown_text(last) == longest.text[parts[-1].start :]
    assert "Previous part" in last and "Next part" not in last
    beyond = get(longest, window="10000", headers=HX)
    assert beyond.status_code == 200 and shown_text(beyond.content.decode()) == longest.text[parts[-1].start :]
    assert get(longest, window="-3").status_code == 200 and get(longest, window="abc").status_code == 200


def test_peaks_keep_their_number_in_the_note_on_every_window(get, longest):
    parts = windows.windows(longest.text)
    seen = []
    for w in parts[:3]:
        content = get(longest, window=w.index, headers=HX).content.decode()
        numbers = mark_numbers(content)
        first, end = int(panel_data(content, "data-first-peak")), int(panel_data(content, "data-end-peak"))
        assert numbers == list(range(first, end))
        assert re.findall(r'id="peak-item-(\d+)"', content) == [str(n) for n in numbers]
        seen += numbers
    assert seen == sorted(seen)  # in order (a peak across a boundary shows on both windows)


def test_asking_for_peak_n_opens_the_window_holding_it_and_selects_it(get, longest):
    parts = windows.windows(longest.text)
    content = get(longest, window=6).content.decode()
    wanted = int(panel_data(content, "data-first-peak")) + 3  # the fourth peak of window 7, as 0-based index
    landed = get(longest, peak=wanted + 1, headers=HX).content.decode()
    assert panel_data(landed, "data-select") == str(wanted)
    assert f'id="peak-{wanted}"' in landed and f'id="peak-item-{wanted}"' in landed
    assert 'name="window" value="6" form="view-form"' in landed
    assert shown_text(landed) == longest.text[parts[6].start : parts[6].end]
    ignored = get(longest, peak=10**9, window=2, headers=HX).content.decode()  # no such peak: the window asked
    assert panel_data(ignored, "data-select") is None and 'name="window" value="2"' in ignored


def test_a_decision_on_a_later_window_comes_back_to_that_window(client, get, longest, tasks, base, sharp, clinician):
    content = get(longest, window=4, headers=HX).content.decode()
    first = int(panel_data(content, "data-first-peak"))
    start, end = (
        int(x)
        for x in re.search(
            rf'id="peak-item-{first}".*?name="start" value="(\d+)"><input type="hidden" name="end" value="(\d+)"',
            content,
            re.S,
        ).groups()
    )
    data = {
        **query(tasks["heart"], base, sharp),
        "k": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "start": start,
        "end": end,
        "decision": "accept",
        "version": 0,
        "window": 4,
    }
    response = client.post(reverse("review:decide", args=[longest.corpus_id, longest.pk]), data, **HX)
    after = response.content.decode()
    assert response.status_code == 200 and PeakDecision.objects.get().start == start
    assert 'name="window" value="4" form="view-form"' in after
    assert re.search(rf'<mark class="peak mine-accept" id="peak-{first}"', after)
    assert "1 decided by you" in after
    plain = client.post(
        reverse("review:decide", args=[longest.corpus_id, longest.pk]), {**data, "decision": "reject", "version": 1}
    )
    assert plain.status_code == 302 and "window=4" in plain["Location"]


def test_the_corpus_note_page_of_the_longest_note_shows_one_window(client, clinician, longest):
    client.force_login(clinician)
    page = reverse("corpus:note", args=[longest.corpus_id, longest.pk])
    parts = windows.windows(longest.text)
    response = client.get(page)
    content = response.content.decode()
    assert response.status_code == 200 and len(response.content) < parts[0].end + 20_000
    block = re.search(r'<div class="notetext" id="note-text">(.*?)</div>', content, re.S).group(1)
    assert html.unescape(block) == longest.text[: parts[0].end]
    assert f"Part <strong>1</strong> of {len(parts)}" in content and "?window=1" in content
    third = client.get(page, {"window": 2}).content.decode()
    block = re.search(r'<div class="notetext" id="note-text">(.*?)</div>', third, re.S).group(1)
    assert html.unescape(block) == longest.text[parts[2].start : parts[2].end]
    assert client.get(page, {"window": "x"}).status_code == 200


def test_a_short_note_has_no_window_navigation(client, clinician, note, maps, get):
    content = get(note).content.decode()
    assert "window-nav" not in content and 'name="window" value="0" form="view-form"' in content
    client.force_login(clinician)
    corpus_page = client.get(reverse("corpus:note", args=[note.corpus_id, note.pk])).content.decode()
    assert "window-nav" not in corpus_page


# ---------------------------------------------------------------- a map cut by the model's context


@pytest.fixture
def cut(corpus, tasks, base):
    """A 50,000-character note whose map covers its first 4,096 tokens only (truncate "right")."""
    text = long_text(50_000)
    note = Note.objects.create(corpus=corpus, external_id="cut", text=text)
    offsets = tokens(text)[:4_096]
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=every_nth_token(offsets, PEAK_EVERY))
    return note, int(offsets[-1, 1])


def test_a_map_cut_by_the_context_shows_where_it_ends_and_leaves_the_rest_plain(get, cut):
    note, map_end = cut
    parts = windows.windows(note.text)
    holding = windows.holding(parts, map_end)
    first = get(note).content.decode()
    assert "covers only the first 4096 tokens" in first and f"characters 1–{map_end} of 50000" in first
    if holding.index:
        assert f"window={holding.index}" in first and "go to where the map ends" in first
    content = get(note, window=holding.index, headers=HX).content.decode()
    assert content.count('id="map-end"') == 1 and "a marker shows where the map ends" in content
    block = re.search(r'<div class="notetext" id="note-text">(.*?)</div>', content, re.S).group(1)
    before, after = block.split('id="map-end"')
    assert 'class="r' in before and 'class="r' not in after and "<mark" not in after
    assert 'data-label="relevance map ends here: the model saw the first 4,096 tokens"' in content
    assert shown_text(content) == note.text[holding.start : holding.end]  # the marker adds no text
    later = get(note, window=len(parts) - 1, headers=HX).content.decode()
    assert 'id="map-end"' not in later and 'class="r' not in later.split('id="note-text"')[1].split("</div>")[0]


def test_a_map_of_the_notes_end_shows_where_it_starts(get, corpus, tasks, base):
    text = long_text(30_000)
    note = Note.objects.create(corpus=corpus, external_id="cut-left", text=text)
    offsets = tokens(text)[-2_000:]  # truncate "left": the model saw the end
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=np.full(len(offsets), 0.5, np.float32))
    parts = windows.windows(text)
    content = get(note, window=len(parts) - 1).content.decode()
    assert "covers only the last 2000 tokens" in content
    assert 'data-label="relevance map starts here: the model saw the last 2,000 tokens"' in content


def test_a_map_of_the_whole_note_has_no_marker(get, longest):
    content = get(longest).content.decode()
    assert "map-reach" not in content and "map-edge" not in content


# ---------------------------------------------------------------- bounded work per peak


def test_a_peak_as_long_as_the_note_offers_a_few_boundaries_around_each_end():
    text = long_text(MAX_CHARS)
    starts, ends = boundary_options(text, 0, len(text) - 1)
    assert 1 <= len(starts) <= 7 and 1 <= len(ends) <= 12
    assert all(o < 1_000 for o, _, _ in starts) and all(o > len(text) - 1_000 for o, _, _ in ends)


def test_the_adjust_choices_of_a_short_peak_reach_five_words_either_way():
    text = "one two three four five six seven eight nine ten eleven twelve"
    a, b = text.index("six"), text.index("six") + 3
    starts, ends = boundary_options(text, a, b)
    assert [text[o : o + 3] for o, _, _ in starts] == ["one", "two", "thr", "fou", "fiv", "six"]
    assert [o for o, _, selected in starts if selected] == [a]
    assert [text[:o].split()[-1] for o, _, _ in ends] == ["six", "seven", "eight", "nine", "ten", "eleven"]
