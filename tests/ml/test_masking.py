"""Masked examples: two-peak filter, left context, de-duplication, sampling, ablations."""

import random
import re

import pytest

from ml.masking import (
    BuildStats,
    Group,
    MaskedExample,
    MaskingMode,
    PeakItem,
    build_examples,
    format_dsm_prompt,
    sample_tasks,
)

TEXT = "fever and cough since monday, treated with paracetamol"
FEVER, COUGH, MONDAY, PARACETAMOL = (0, 5), (10, 15), (22, 28), (43, 54)


def item(task, *spans, note_id="n1", text=TEXT):
    return PeakItem(note_id, task, text, tuple(Group(char_span=s) for s in spans))


def build(items, **kwargs):
    stats = BuildStats()
    return list(build_examples(items, stats=stats, **kwargs)), stats


def test_spans_are_what_the_names_say():
    assert [TEXT[a:b] for a, b in (FEVER, COUGH, MONDAY, PARACETAMOL)] == ["fever", "cough", "monday", "paracetamol"]


def test_each_group_with_a_group_to_its_left_is_masked_once():
    examples, _ = build([item("t", FEVER, COUGH, PARACETAMOL)])
    assert [(e.masked_text, e.label, e.char_span) for e in examples] == [
        ("fever and <mask> since monday, treated with paracetamol", "cough", COUGH),
        ("fever and cough since monday, treated with <mask>", "paracetamol", PARACETAMOL),
    ]
    assert all(e.tasks == ("t",) and e.note_id == "n1" and e.mode == "dsm" for e in examples)


def test_the_leftmost_group_is_never_masked_whatever_the_input_order():
    examples, _ = build([item("t", PARACETAMOL, FEVER)])
    assert [e.label for e in examples] == ["paracetamol"]


def test_two_peaks_counts_groups_not_tokens():
    # one long group of many tokens (the reference filter would have let it through)
    long_group = PeakItem("n1", "t", TEXT, (Group(char_span=(0, 28), token_span=(0, 9)),))
    examples, stats = build([long_group])
    assert examples == []
    assert stats.items == 1 and stats.items_used == 0 and stats.notes_kept == 0


def test_identical_examples_from_several_tasks_become_one_with_all_tasks():
    examples, stats = build([item("t1", FEVER, COUGH), item("t2", FEVER, COUGH, MONDAY), item("t3", COUGH, MONDAY)])
    by_label = {e.label: e.tasks for e in examples}
    assert by_label == {"cough": ("t1", "t2"), "monday": ("t2", "t3")}
    assert stats.candidates == 4 and stats.examples == 2 and stats.merged_across_tasks == 2


def test_an_example_repeating_an_earlier_note_is_dropped_and_counted():
    examples, stats = build([item("t", FEVER, COUGH, note_id="a"), item("t", FEVER, COUGH, note_id="b")])
    assert [e.note_id for e in examples] == ["a"]
    assert stats.dropped_duplicate_notes == 1 and stats.duplicates == 1 and stats.notes == 2


def test_a_note_seen_again_after_another_is_reported():
    _, stats = build(
        [item("t1", FEVER, COUGH, note_id="a"), item("t", FEVER, note_id="b"), item("t2", FEVER, MONDAY, note_id="a")]
    )
    assert stats.notes_not_contiguous == ["a"]


def test_examples_stream_note_by_note():
    def items():
        yield item("t", FEVER, COUGH, note_id="a")
        yield item("t", FEVER, MONDAY, note_id="b")
        raise AssertionError("read past the second note before yielding the first")

    first = next(build_examples(items()))
    assert first.note_id == "a"


def test_the_mask_token_is_a_parameter():
    examples, _ = build([item("t", FEVER, COUGH)], mask_token="<|mask|>")
    assert examples[0].masked_text == "fever and <|mask|> since monday, treated with paracetamol"
    with pytest.raises(ValueError):
        build([item("t", FEVER, COUGH)], mask_token="")


def test_dsm_prompt_template():
    example = MaskedExample("n1", ("t",), "fever and <mask> since", "cough", (10, 15), "dsm")
    assert format_dsm_prompt(example) == (
        "Fill in the masked word in the following sentence. fever and <mask> since",
        "cough",
    )


def test_a_whitespace_group_counts_but_gives_no_example():
    text = "fever\n\ncough"
    examples, stats = build([item("t", (0, 5), (5, 7), note_id="w", text=text)])
    assert examples == [] and stats.items_used == 1
    examples, _ = build([item("t", (5, 7), (7, 12), note_id="w", text=text)])
    assert [e.label for e in examples] == ["cough"]


@pytest.mark.parametrize("spans", [[(0, 5), (3, 8)], [(0, 5), (50, 60)], [(5, 5), (7, 9)]])
def test_bad_groups_are_refused(spans):
    with pytest.raises(ValueError, match="n1"):
        build([item("t", *spans)])


# ---------------------------------------------------------------- task sampling

TASKS = [f"task {i:03d}" for i in range(136)]


def test_sample_tasks_draws_k_distinct_sorted_tasks():
    sample = sample_tasks("note-1", TASKS, k=9)
    assert len(sample) == 9 == len(set(sample)) and sample == sorted(sample) and set(sample) <= set(TASKS)


def test_sample_tasks_depends_only_on_seed_and_note():
    shuffled = TASKS[:]
    random.Random(1).shuffle(shuffled)
    notes = [f"note-{i}" for i in range(50)]
    forward = {n: sample_tasks(n, TASKS) for n in notes}
    backward = {n: sample_tasks(n, shuffled) for n in reversed(notes)}
    assert forward == backward
    assert len({tuple(s) for s in forward.values()}) > 40  # notes get different samples
    assert sample_tasks("note-1", TASKS, seed=1) != sample_tasks("note-1", TASKS, seed=0)


def test_sample_tasks_with_few_tasks_returns_them_all():
    assert sample_tasks("n", ["b", "a", "b"], k=9) == ["a", "b"]
    assert sample_tasks("n", TASKS, k=0) == []
    with pytest.raises(ValueError):
        sample_tasks("n", TASKS, k=-1)


# ---------------------------------------------------------------- ablations

TEXT_C = TEXT.upper()
ITEMS = [
    item("t1", FEVER, COUGH, PARACETAMOL, note_id="a"),
    item("t2", FEVER, COUGH, note_id="a"),
    item("t1", MONDAY, note_id="b"),
    item("t1", FEVER, note_id="c", text=TEXT_C),
    item("t2", COUGH, PARACETAMOL, note_id="c", text=TEXT_C),
    item("t2", COUGH, PARACETAMOL, note_id="d", text=TEXT_C),  # a duplicated note
]


def test_random_mode_masks_as_many_word_aligned_spans_on_the_same_pairs():
    dsm, dsm_stats = build(ITEMS)
    rnd, stats = build(ITEMS, mode="random", seed=3)
    assert len(rnd) == len(dsm) == 3 and stats.merged_across_tasks == dsm_stats.merged_across_tasks == 1
    assert stats.dropped_duplicate_notes == dsm_stats.dropped_duplicate_notes == 1
    assert [e.note_id for e in rnd] == ["a", "a", "c"] and all(e.mode == "random" for e in rnd)
    words = {m.span() for m in re.finditer(r"\w+", TEXT)}
    for e in rnd:
        text = TEXT if e.note_id == "a" else TEXT_C
        a, b = e.char_span
        assert a in {s for s, _ in words} and b in {t for _, t in words} and a > 0
        assert e.masked_text == text[:a] + "<mask>" + text[b:] and e.label == text[a:b]
    assert min(len(e.label) for e in rnd) >= len("cough")


def test_random_mode_is_seeded():
    first, _ = build(ITEMS, mode=MaskingMode.RANDOM, seed=3)
    again, _ = build(ITEMS, mode=MaskingMode.RANDOM, seed=3)
    assert first == again
    others = [build(ITEMS, mode=MaskingMode.RANDOM, seed=s)[0] for s in range(4, 10)]
    assert any(o != first for o in others)


def test_one_peak_mode_uses_only_pairs_with_exactly_one_group():
    examples, stats = build(ITEMS, mode="one_peak")
    assert [(e.note_id, e.label, e.tasks) for e in examples] == [("b", "monday", ("t1",)), ("c", "FEVER", ("t1",))]
    assert stats.items_used == 2


def test_unmasked_mode_gives_each_two_peak_note_once_as_plain_text():
    examples, _ = build(ITEMS, mode="unmasked")
    assert [(e.note_id, e.tasks, e.masked_text, e.label, e.char_span) for e in examples] == [
        ("a", ("t1", "t2"), TEXT, "", None),
        ("c", ("t2",), TEXT_C, "", None),
    ]
    assert format_dsm_prompt(examples[0]) == ("", TEXT)


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        build(ITEMS, mode="everything")


def test_every_pair_read_is_kept_or_left_out_for_one_reason():
    text = "fever\n\ncough"
    twin = item("t", FEVER, COUGH, note_id="n2")  # the same text as n1: every example a duplicate
    examples, stats = build(
        [
            item("t", FEVER, COUGH, PARACETAMOL),
            item("u", FEVER, COUGH),  # kept; "u" merges into "t"'s example
            item("v", FEVER),  # one peak: left out by the rule
            item("t", (0, 5), (5, 7), note_id="w", text=text),  # only whitespace to mask
            twin,
        ]
    )
    assert (stats.items, stats.items_used) == (5, 4)
    assert (stats.items_kept, stats.items_without_candidate, stats.items_all_duplicates) == (2, 1, 1)
    assert (
        stats.items - stats.items_used + stats.items_kept + stats.items_without_candidate + stats.items_all_duplicates
        == stats.items
    )


def test_the_one_peak_rule_is_exactly_one_group():
    from ml.masking import pair_is_used

    assert [pair_is_used(n, "one_peak") for n in (0, 1, 2)] == [False, True, False]
    assert [pair_is_used(n, MaskingMode.DSM) for n in (0, 1, 2, 3)] == [False, False, True, True]


# ---------------------------------------------------------------- digests kept across notes


def sharing_text(items) -> set[str]:
    """What a caller passes as repeating_notes: the notes whose text another note also has."""
    by_text = {}
    for i in items:
        by_text.setdefault(i.text, set()).add(i.note_id)
    return {n for notes in by_text.values() if len(notes) > 1 for n in notes}


def test_notes_sharing_their_text_still_drop_and_count_repeated_examples():
    items = [
        item("t", FEVER, COUGH, PARACETAMOL, note_id="a"),
        item("t", FEVER, MONDAY, note_id="b", text=TEXT_C),
        item("t", FEVER, COUGH, note_id="c"),  # "a"'s text: its one example is "a"'s first
        item("u", FEVER, COUGH, PARACETAMOL, MONDAY, note_id="c"),  # two repeats, "monday" is new
    ]
    examples, stats = build(items, repeating_notes={"a", "c"})
    assert [(e.note_id, e.label, e.tasks) for e in examples] == [
        ("a", "cough", ("t",)),
        ("a", "paracetamol", ("t",)),
        ("b", "MONDAY", ("t",)),
        ("c", "monday", ("u",)),
    ]
    assert stats.dropped_duplicate_notes == 3 and stats.items_all_duplicates == 1 and stats.items_kept == 3
    assert stats.digests_kept == 3  # "a"'s two and "c"'s one; none for "b"


def test_notes_with_distinct_texts_keep_no_digest():
    items = [item("t", FEVER, COUGH, MONDAY, note_id=f"n{k}", text=f"{TEXT} {k}") for k in range(50)]
    examples, stats = build(items, repeating_notes=set())
    assert len(examples) == 100 and stats.digests_kept == 0
    assert build(items)[1].digests_kept == 100  # without the hint, every example is remembered


def test_different_texts_holding_the_mask_token_can_repeat_an_example():
    # "<mask>" put back at either place gives the two texts: both masked alike, same label
    first, second = "hr 120 then <mask> bp", "hr 120 then bp <mask>"
    items = [
        item("t", (3, 6), (19, 21), note_id="a", text=first),
        item("t", (3, 6), (12, 14), note_id="b", text=second),
    ]
    examples, stats = build(items, repeating_notes=set())
    assert [(e.note_id, e.masked_text, e.label) for e in examples] == [("a", "hr 120 then <mask> <mask>", "bp")]
    assert stats.dropped_duplicate_notes == 1 and stats.digests_kept == 1


def test_a_mask_token_overlapping_itself_keeps_every_digest():
    # with "##", "go b# now" and "go #b now" both become "go ### now" masking "b": neither holds the token
    items = [
        item("t", (0, 2), (3, 4), note_id="a", text="go b# now"),
        item("t", (0, 2), (4, 5), note_id="b", text="go #b now"),
    ]
    examples, stats = build(items, repeating_notes=set(), mask_token="##")
    assert [(e.note_id, e.masked_text) for e in examples] == [("a", "go ### now")]
    assert stats.dropped_duplicate_notes == 1


@pytest.mark.parametrize("mode", list(MaskingMode))
def test_keeping_digests_only_for_notes_sharing_text_changes_no_output(mode):
    rng = random.Random(7)
    texts = [TEXT, TEXT_C, TEXT.replace("monday", "<mask>"), TEXT.replace("cough", "<mask>"), "fever " * 9]
    spans = [FEVER, COUGH, MONDAY, PARACETAMOL]
    items = []
    for n in range(60):
        text = rng.choice(texts) if n % 3 == 0 else f"{rng.choice(texts)} note {n}"
        for task in sorted(rng.sample(["t1", "t2", "t3", "t4"], rng.randint(1, 4))):
            items.append(item(task, *rng.sample(spans, rng.randint(1, 4)), note_id=f"n{n}", text=text))
    hinted, hinted_stats = build(items, mode=mode, seed=1, repeating_notes=sharing_text(items))
    every, every_stats = build(items, mode=mode, seed=1)
    assert hinted == every
    assert hinted_stats.dropped_duplicate_notes > 0 and hinted_stats.digests_kept < every_stats.digests_kept
    hinted_stats.digests_kept = every_stats.digests_kept
    assert hinted_stats == every_stats
