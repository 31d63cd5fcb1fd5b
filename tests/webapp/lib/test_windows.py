"""webapp.lib.windows: a long note cut into windows on word boundaries."""

import re

import pytest

from tests.webapp.review.fabricate import long_text
from webapp.lib import windows
from webapp.lib.windows import Window


def pieces(text, parts):
    return [text[w.start : w.end] for w in parts]


def test_a_short_note_is_one_window():
    assert windows.windows("HR 130 bpm.", 100) == [Window(0, 0, 11, 1)]
    assert windows.windows("HR 130 bpm.", 100)[0].only


@pytest.mark.parametrize("size", [50, 333, 2_000, 20_000])
def test_the_windows_cover_the_note_exactly_once_and_never_cut_a_word(size):
    text = long_text(60_000)
    parts = windows.windows(text, size)
    assert "".join(pieces(text, parts)) == text
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert [w.index for w in parts] == list(range(len(parts))) and {w.count for w in parts} == {len(parts)}
    for w in parts[:-1]:
        assert text[w.end - 1].isspace()  # the window ends after whitespace: no word is cut
        assert 3 * size // 4 <= w.end - w.start <= size
    assert parts[-1].end - parts[-1].start <= size + size // 4  # a short remainder joins the last window


def test_a_window_ends_after_a_line_break_in_its_last_quarter_when_there_is_one():
    text = "word " * 30 + "\n" + "word " * 20  # the line break at 150, inside the last quarter of 160
    first = windows.windows(text, 160)[0]
    assert first.end == 151 and text[first.end - 1] == "\n"
    no_break = windows.windows("word " * 60, 160)[0]
    assert no_break.end == 160 and no_break.end % 5 == 0  # after the last space


def test_a_run_without_whitespace_longer_than_a_window_is_cut_where_the_window_is_full():
    text = "x" * 1_000
    parts = windows.windows(text, 300)
    assert [w.end - w.start for w in parts] == [300, 300, 300, 100]
    assert [w.end - w.start for w in windows.windows("x" * 960, 300)] == [300, 300, 360]  # 60 joins the last


def test_windows_depend_on_the_text_alone():
    text = long_text(10_000)
    assert windows.bounds(text, 1_000) == windows.bounds(text, 1_000)
    assert windows.bounds(text) == windows.bounds(text, windows.WINDOW_CHARS)


def test_pick_reads_a_query_value_and_keeps_it_in_range():
    parts = windows.windows(long_text(10_000), 1_000)
    assert windows.pick(parts, "3").index == 3
    assert windows.pick(parts, "999").index == len(parts) - 1
    assert windows.pick(parts, "-2").index == 0
    assert windows.pick(parts, "two").index == 0 and windows.pick(parts, None).index == 0


def test_holding_finds_the_window_of_a_character():
    parts = windows.windows(long_text(10_000), 1_000)
    for w in parts:
        assert windows.holding(parts, w.start) == w and windows.holding(parts, w.end - 1) == w


def test_spans_in_gives_the_spans_overlapping_a_window_and_clip_cuts_them_to_it():
    w = Window(1, 100, 200, 3)
    spans = [(10, 20), (90, 110), (150, 160), (195, 230), (200, 210)]
    shown = windows.spans_in(spans, w)
    assert list(shown) == [1, 2, 3]
    assert windows.clip([spans[i] for i in shown], w) == [(0, 10), (50, 60), (95, 100)]
    assert windows.spans_in([(10, 20), (300, 310)], w) == range(1, 1)  # none: the next one is 1
    assert windows.clip([(0, 150), (120, 130), (0, 50)], w) == [(0, 50), (20, 30)]  # gold may overlap


def test_finding_the_windows_of_the_largest_note_looks_at_a_few_characters_a_window():
    text = long_text(200_000)
    looked = []

    class Watched(str):
        def rfind(self, *args):
            looked.append(args)
            return str.rfind(self, *args)

    parts = windows.windows(Watched(text))
    assert len(parts) == 10 and len(looked) <= 3 * len(parts)
    assert all(re.fullmatch(r"\s", text[w.end - 1]) for w in parts[:-1])
