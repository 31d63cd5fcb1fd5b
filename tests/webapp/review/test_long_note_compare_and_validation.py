"""The comparison page and the validation round of a note as long as an import allows: one
window at a time (as the review note page, test_long_note.py), in bounded size and memory, with
the figures of the whole note; a map cut by the model's context says where it stops."""

import html
import re
import tracemalloc

import pytest
from django.conf import settings
from django.urls import reverse

from ml.metrics import relative_change_on_gold
from webapp.corpus.models import Annotation, Note
from webapp.lib import windows
from webapp.review.models import ValidationJudgement, ValidationSet

from .fabricate import add_map, every_nth_token, long_text, query, tokens

MAX_CHARS = getattr(settings, "IMPORT_MAX_NOTE_CHARS", 200_000)
PEAK_EVERY = 40  # tokens: a peak about every 200 characters, about 100 a window
SHARP = {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4}
CONTEXT = 8_192  # tokens of a cut map: it ends in the second window of a 50,000-character note
NONE_PEAK = {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.95}  # 0.9 never reaches it: no peak


def text_of(content: str, element_id: str) -> str:
    """The text a heatmap shows (tags removed: peaks, colours and markers add none)."""
    block = re.search(rf'<div class="notetext" id="{element_id}">(.*?)</div>', content, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", block))


def heatmaps(content: str) -> list[str]:
    return [
        html.unescape(re.sub(r"<[^>]+>", "", block))
        for block in re.findall(r'<div class="notetext"[^>]*>(.*?)</div>', content, re.S)
    ]


def traced(fetch):
    """(response, peak of Python allocations while it was made)."""
    tracemalloc.start()
    try:
        response = fetch()
        return response, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def longest(corpus, tasks, base, dsm):
    """The largest note an import accepts, with maps of both models over every token and gold
    evidence on words past the first window only."""
    text = long_text(MAX_CHARS)
    note = Note.objects.create(corpus=corpus, external_id="longest", text=text)
    offsets = tokens(text)
    first = every_nth_token(offsets, PEAK_EVERY, 0.5)
    second = every_nth_token(offsets, PEAK_EVERY, 0.75)  # +50% on every peak token
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=first)
    add_map(note, tasks["heart"], dsm, {}, offsets=offsets, scores=second)
    start = windows.windows(text)[1].start
    evidence = [[int(a), int(b)] for a, b in offsets[::PEAK_EVERY] if a >= start][::25]
    Annotation.objects.create(note=note, task=tasks["heart"], label="y", annotator_name="gold", evidence=evidence)
    return note


def compare_url(note):
    return reverse("review:compare", args=[note.corpus_id, note.pk])


@pytest.fixture
def compare(client, clinician, tasks, base, dsm, sharp):
    client.force_login(clinician)

    def fetch(note, **params):
        return client.get(
            compare_url(note), {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk, **params}
        )

    return fetch


# ---------------------------------------------------------------- the comparison page


def test_the_comparison_of_the_longest_note_shows_one_window_in_bounded_size_and_memory(compare, longest, note, maps):
    assert compare(note).status_code == 200  # a short note first: templates and lazy imports loaded
    response, peak_bytes = traced(lambda: compare(longest))
    content = response.content.decode()
    first = windows.windows(longest.text)[0]
    assert response.status_code == 200
    assert heatmaps(content) == [longest.text[: first.end]] * 3  # base, DSM and their difference
    # a tenth of the note's text three times, with colours (the whole note at once: ~5.3 MB; here ~0.54 MB)
    assert len(response.content) < 1_000_000
    # Python allocations while building and rendering the page (the whole note at once: ~36 MB; here ~5 MB)
    assert peak_bytes < 12_000_000
    assert f"Part <strong>1</strong> of {first.count}" in content and "Next part" in content
    # the note's figures come from the whole note: its gold evidence lies past this window
    assert not re.search(r'class="[^"]*\bg"', content.split('id="diff-text"')[1].split("</div>")[0])
    assert "(every part): relevance" in content and "(+50.0%)" in content


def test_the_change_on_gold_is_that_of_the_whole_note(longest, tasks, base, dsm):
    from webapp.review import comparison

    result = comparison.compare_note(longest, tasks["heart"], base, dsm, "attnlrp", "en", window=0)
    base_map, dsm_map = (longest.relevance_maps.get(model_version=model).arrays() for model in (base, dsm))
    gold = sorted(tuple(span) for span in Annotation.objects.get(note=longest).evidence)
    assert result.same_tokens and result.window.index == 0 and result.n_chars == MAX_CHARS
    assert result.change == pytest.approx(relative_change_on_gold(base_map[1], dsm_map[1], base_map[0], gold))
    assert result.change == pytest.approx(0.5, abs=1e-3)


def test_the_comparison_moves_through_the_windows(client, compare, longest):
    parts = windows.windows(longest.text)
    third = compare(longest, window=2).content.decode()
    assert heatmaps(third) == [longest.text[parts[2].start : parts[2].end]] * 3
    assert "Previous part" in third and "Next part" in third
    links = re.findall(r'class="window-link" data-window="(\d+)" href="([^"]+)"', third)
    assert [k for k, _ in links] == ["1", "3"] * 2  # above and below the maps
    following = client.get(html.unescape(links[1][1])).content.decode()  # the same models, task and setting
    assert heatmaps(following) == [longest.text[parts[3].start : parts[3].end]] * 3
    assert "base-model vs dsm-model" in following
    assert 'name="window" value="2"' in third  # the form keeps the window when the models change
    assert "window=2" in third.split('class="crumbs"')[1].split("</p>")[0]  # back to the note, same window
    last = compare(longest, window=10_000).content.decode()
    assert heatmaps(last)[2] == longest.text[parts[-1].start :] and "Next part" not in last
    assert compare(longest, window="abc").status_code == 200 and compare(longest, window="-1").status_code == 200


def test_a_short_comparison_has_no_window_navigation(compare, note, maps, gold):
    content = compare(note).content.decode()
    assert "window-nav" not in content and 'name="window"' not in content and "every part" not in content


def test_a_map_cut_by_the_context_is_compared_where_both_maps_reach(compare, corpus, tasks, base, dsm):
    text = long_text(50_000)
    note = Note.objects.create(corpus=corpus, external_id="cut", text=text)
    offsets = tokens(text)
    add_map(note, tasks["heart"], base, {}, offsets=offsets[:CONTEXT], scores=every_nth_token(offsets[:CONTEXT], 40))
    add_map(note, tasks["heart"], dsm, {}, offsets=offsets, scores=every_nth_token(offsets, 40))
    map_end = int(offsets[CONTEXT - 1, 1])
    parts = windows.windows(text)
    holding = windows.holding(parts, map_end)
    assert holding.index > 0
    first = compare(note).content.decode()
    assert first.count("is longer than the model's context") == 1 and 'id="map-reach-first"' in first
    assert f"base-model's relevance map covers only the first 8192 tokens (characters 1–{map_end} of 50000)" in first
    assert f"window={holding.index}" in first and "go to where the map ends" in first
    content = compare(note, window=holding.index).content.decode()
    assert "a marker shows where the map ends" in content
    assert content.count('id="first-map-end"') == 1 and 'id="second-map-end"' not in content
    diff = content.split('id="diff-text">')[1].split("</div>")[0]
    before, after = diff.split('id="diff-map-end"')
    assert 'data-label="difference ends here, with base-model&#x27;s relevance map"' in before + after
    assert 'class="d' in before and 'class="d' not in after  # nothing to compare past the cut
    assert heatmaps(content) == [text[holding.start : holding.end]] * 3  # the markers add no text


# ---------------------------------------------------------------- the validation round


@pytest.fixture
def round_of(longest, note, tasks, base):
    """A validation set of the longest note, then the short one, under two settings whose peaks differ."""
    add_map(note, tasks["heart"], base, {"130": 0.9})
    return ValidationSet.objects.create(
        corpus=longest.corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="long",
        grid=[SHARP, NONE_PEAK],
        items=[[longest.pk, tasks["heart"].pk], [note.pk, tasks["heart"].pk]],
    )


def round_url(vset):
    return reverse("review:validation_round", args=[vset.pk])


def test_the_validation_round_of_the_longest_note_shows_one_window_in_bounded_size_and_memory(
    client, clinician, longest, round_of
):
    client.force_login(clinician)
    assert client.get(round_url(round_of)).status_code == 200  # templates and lazy imports loaded
    response, peak_bytes = traced(lambda: client.get(round_url(round_of)))
    content = response.content.decode()
    first = windows.windows(longest.text)[0]
    assert response.status_code == 200
    assert text_of(content, "note-text") == longest.text[: first.end]
    # a tenth of the note's text with its colours and ~100 peaks (the whole note at once: ~1.7 MB; here ~0.18 MB)
    assert len(response.content) < 400_000
    # Python allocations while building and rendering the page (the whole note at once: ~33 MB; here ~4 MB)
    assert peak_bytes < 12_000_000
    total = int(re.search(r"(\d+) peaks outlined in the whole note", content).group(1))
    numbers = [int(n) for n in re.findall(r'<mark class="peak [^"]*" id="peak-(\d+)"', content)]
    assert total > 900 and numbers == list(range(0, numbers[-1] + 1)) and numbers[-1] < total // 5
    assert f"Part <strong>1</strong> of {first.count}" in content and f"peaks 1–{numbers[-1] + 1} of {total}" in content


def test_the_window_is_kept_while_the_questions_stay_on_the_note(client, clinician, longest, note, round_of):
    client.force_login(clinician)
    parts = windows.windows(longest.text)
    fourth = client.get(round_url(round_of), {"note": longest.pk, "window": 3}).content.decode()
    assert text_of(fourth, "note-text") == longest.text[parts[3].start : parts[3].end]
    assert f'href="{round_url(round_of)}?note={longest.pk}&amp;window=4"' in fourth
    assert 'name="window" value="3"' in fourth
    numbers = [int(n) for n in re.findall(r'<mark class="peak [^"]*" id="peak-(\d+)"', fourth)]
    assert numbers[0] > 0  # peaks keep their number in the note
    judge = reverse("review:validation_judge", args=[round_of.pk])
    answer = {"position": 0, "setting": 0, "window": 3, "answer": "yes"}
    response = client.post(judge, answer)
    assert response["Location"] == f"{round_url(round_of)}?note={longest.pk}&window=3"
    again = client.get(response["Location"]).content.decode()
    assert "highlight 2 of 2" in again and text_of(again, "note-text") == longest.text[parts[3].start : parts[3].end]
    assert "0 peaks outlined" in again and "<mark" not in again.split('id="note-text"')[1].split("</div>")[0]
    response = client.post(judge, {**answer, "setting": 1, "answer": "no"})
    short = client.get(response["Location"]).content.decode()  # the next note: its only window
    assert "Note 2 of 2" in short and text_of(short, "note-text") == note.text and "window-nav" not in short
    assert ValidationJudgement.objects.count() == 2
    assert client.get(round_url(round_of), {"note": note.pk, "window": "x"}).status_code == 200


def test_the_validation_round_says_where_a_cut_map_ends(client, clinician, corpus, tasks, base):
    text = long_text(50_000)
    note = Note.objects.create(corpus=corpus, external_id="cut", text=text)
    offsets = tokens(text)[:CONTEXT]
    add_map(note, tasks["heart"], base, {}, offsets=offsets, scores=every_nth_token(offsets, PEAK_EVERY))
    vset = ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="cut",
        grid=[SHARP],
        items=[[note.pk, tasks["heart"].pk]],
    )
    holding = windows.holding(windows.windows(text), int(offsets[-1, 1]))
    client.force_login(clinician)
    first = client.get(round_url(vset)).content.decode()
    assert "its relevance map covers only the first 8192 tokens" in first and "without relevance or peaks" in first
    assert f"?note={note.pk}&amp;window={holding.index}" in first
    content = client.get(round_url(vset), {"note": note.pk, "window": holding.index}).content.decode()
    assert content.count('id="map-end"') == 1 and "a marker shows where the map ends" in content
    block = content.split('id="note-text">')[1].split("</div>")[0]
    assert "<mark" not in block.split('id="map-end"')[1] and 'class="r' not in block.split('id="map-end"')[1]
