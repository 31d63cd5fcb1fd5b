"""The review note browser: keyset pages, review state and peak filters in a bounded window."""

import pytest

from webapp.corpus.models import Note
from webapp.review import browse, decisions
from webapp.review.browse import Filters
from webapp.review.decisions import PeakContext
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map, word_span


@pytest.fixture
def sel(base, sharp):
    return Selection(None, base, "attnlrp", "en", sharp, sharp.params)


@pytest.fixture
def notes(corpus, tasks, base):
    """Six notes: even ones have two peaks for heart rate, odd ones none; n5 mentions 'syncope'."""
    made = []
    for i in range(6):
        text = TEXT + (" Syncope at home." if i == 5 else "")
        note = Note.objects.create(corpus=corpus, external_id=f"b{i}", text=text)
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.9} if i % 2 == 0 else {})
        made.append(note)
    return made


def test_pages_follow_the_note_ids_without_counting(corpus, sel, notes, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        page = browse.browse(corpus, sel, Filters(), per_page=4)
    assert [r.external_id for r in page.rows] == ["b0", "b1", "b2", "b3"]
    assert page.next_after == notes[3].pk and not page.limited
    rest = browse.browse(corpus, sel, Filters(), after=page.next_after, per_page=4)
    assert [r.external_id for r in rest.rows] == ["b4", "b5"] and rest.next_after is None


def test_rows_count_maps_peaks_and_decided_peaks(corpus, sel, notes, tasks, base, clinician):
    a, b = word_span(TEXT, "130")
    decisions.decide(
        PeakContext(notes[0], tasks["heart"], base, "attnlrp", "en"),
        clinician,
        start=a,
        end=b,
        decision="reject",
        expected_version=0,
    )
    rows = {r.external_id: r for r in browse.browse(corpus, sel, Filters()).rows}
    assert (rows["b0"].maps, rows["b0"].peaks, rows["b0"].decided, rows["b0"].state) == (1, 2, 1, "partly")
    assert rows["b1"].state == "none" and rows["b2"].state == "undecided"


def test_long_notes_are_summarised_a_few_at_a_time_with_the_same_counts(
    corpus, sel, notes, monkeypatch, django_assert_num_queries
):
    ids = [n.pk for n in notes]
    whole = {i: (r.maps, r.peaks, r.decided) for i, r in browse.summarise(ids, sel).items()}
    monkeypatch.setattr(browse, "TEXT_BUDGET", 2 * len(TEXT) + 1)  # two notes a batch
    with django_assert_num_queries(1 + 4 * 2 + 1):  # rows; maps and texts of four batches; decisions once
        batched = {i: (r.maps, r.peaks, r.decided) for i, r in browse.summarise(ids, sel).items()}
    assert batched == whole and sum(p for _, p, _ in whole.values()) == 6
    rows = browse.summarise(ids, sel)
    assert browse._batches(ids, rows) == [ids[:2], ids[2:4], ids[4:5], ids[5:]]  # n5 is longer than TEXT


def test_a_review_state_filter_searches_a_bounded_window(corpus, sel, notes):
    page = browse.browse(corpus, sel, Filters(state="undecided"), scan=3)
    assert [r.external_id for r in page.rows] == ["b0", "b2"]
    assert page.limited and page.scanned == 3 and page.next_after == notes[2].pk
    rest = browse.browse(corpus, sel, Filters(state="undecided"), after=page.next_after, scan=3)
    assert [r.external_id for r in rest.rows] == ["b4"] and rest.next_after is None


def test_a_reviewed_state_filter_computes_peaks_only_for_notes_with_a_decision(
    corpus, sel, notes, tasks, base, dsm, clinician, monkeypatch
):
    """Only a note with some decision under the selection can be partly or fully reviewed; a
    decision under another model version does not count."""
    a, b = word_span(TEXT, "130")
    for note, model in ((notes[2], base), (notes[4], dsm)):
        decisions.decide(
            PeakContext(note, tasks["heart"], model, "attnlrp", "en"),
            clinician,
            start=a,
            end=b,
            decision="accept",
            expected_version=0,
        )
    summarised, summarise = [], browse.summarise
    monkeypatch.setattr(browse, "summarise", lambda ids, selection: summarised.extend(ids) or summarise(ids, selection))
    page = browse.browse(corpus, sel, Filters(state="partly"))
    assert [r.external_id for r in page.rows] == ["b2"] and summarised == [notes[2].pk]
    assert page.limited and page.scanned == 6 and page.next_after is None


def test_a_filter_most_notes_pass_computes_peaks_for_about_one_page_of_notes(corpus, sel, notes, monkeypatch):
    summarised, summarise = [], browse.summarise
    monkeypatch.setattr(browse, "summarise", lambda ids, selection: summarised.extend(ids) or summarise(ids, selection))
    page = browse.browse(corpus, sel, Filters(state="undecided"), per_page=1)
    assert [r.external_id for r in page.rows] == ["b0"] and page.next_after == notes[0].pk
    assert summarised == [notes[0].pk]  # not the window's 6 notes
    rest = browse.browse(corpus, sel, Filters(state="undecided"), after=page.next_after, per_page=2)
    assert [r.external_id for r in rest.rows] == ["b2", "b4"] and rest.next_after == notes[4].pk


def test_a_window_without_decisions_answers_a_reviewed_state_filter_in_two_queries(
    corpus, sel, notes, django_assert_num_queries
):
    with django_assert_num_queries(2):  # the window's note ids; which of them have a decision
        page = browse.browse(corpus, sel, Filters(state="fully"))
    assert page.rows == [] and page.limited and page.scanned == 6 and page.last_id == notes[-1].pk


def test_a_full_page_stops_the_window_early_and_continues_after_the_last_note_examined(corpus, sel, notes):
    page = browse.browse(corpus, sel, Filters(min_peaks=2), per_page=1, scan=6)
    assert [r.external_id for r in page.rows] == ["b0"] and page.next_after == notes[0].pk and page.scanned == 1


def test_peak_count_filters(corpus, sel, notes):
    assert [r.external_id for r in browse.browse(corpus, sel, Filters(max_peaks=0)).rows] == ["b1", "b3", "b5"]


def test_text_search_matches_words_of_the_note_in_the_window(corpus, sel, notes):
    page = browse.browse(corpus, sel, Filters(q="syncope"))
    assert [r.external_id for r in page.rows] == ["b5"] and page.limited


def test_a_chosen_task_lists_only_notes_with_its_map(corpus, sel, notes, tasks, base):
    add_map(notes[1], tasks["pacemaker"], base, {"Pacemaker": 0.9})
    sel.task = tasks["pacemaker"]
    page = browse.browse(corpus, sel, Filters())
    assert [(r.external_id, r.peaks) for r in page.rows] == [("b1", 1)]


def test_filters_read_from_the_query_ignore_bad_values():
    f = Filters.from_query({"state": "bogus", "min_peaks": "x", "max_peaks": "-2", "q": "  pm "})
    assert (f.state, f.min_peaks, f.max_peaks, f.q) == ("", None, None, "pm")
    assert f.scanning


def test_the_list_and_the_note_page_count_the_same_peaks(corpus, sel, tasks, base, clinician):
    """Punctuation-only runs (dropped), runs that widen into one word (merged) and a run with edge
    punctuation (trimmed) count once each, on both pages, for every setting."""
    import numpy as np

    from webapp.review.noteview import build_panel

    from .fabricate import tokens

    note = Note.objects.create(corpus=corpus, external_id="count", text=TEXT)
    offsets = tokens(TEXT)
    pieces = [TEXT[a:b] for a, b in offsets]
    scores = np.zeros(len(offsets), np.float32)
    for piece in (";", "&", "38", "5", "130", "Pacemaker"):
        scores[pieces.index(piece)] = 0.9
    add_map(note, tasks["heart"], base, {}, scores=scores)
    for params in (sel.params, sel.params.with_(trim=False), sel.params.with_(kernel_size=3, lower=0.1, upper=0.3)):
        selection = Selection(tasks["heart"], base, "attnlrp", "en", sel.profile, params)
        listed = browse.summarise([note.pk], selection)[note.pk].peaks
        shown = len(build_panel(note, selection, clinician).peaks)
        assert listed == shown
    trimmed = Selection(tasks["heart"], base, "attnlrp", "en", sel.profile, sel.params)
    untrimmed = Selection(tasks["heart"], base, "attnlrp", "en", sel.profile, sel.params.with_(trim=False))
    # ";" and "&" are punctuation-only peaks: dropped unless untrimmed
    assert [p.text for p in build_panel(note, trimmed, clinician).peaks] == ["130", "38", "5", "Pacemaker"]
    assert browse.summarise([note.pk], untrimmed)[note.pk].peaks == 6
