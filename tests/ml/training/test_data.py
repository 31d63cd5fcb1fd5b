import random

import pytest

from ml.training import LabeledItem, TextPair, sft_prompt, split_items


def make_items(n):
    return [
        LabeledItem(f"item-{i}", f"note-{i // 3}", f"task-{i % 3}", "heart rate", ["a", "b"], "text", "a")
        for i in range(n)
    ]


def test_split_has_the_exact_ratio_and_partitions_the_items():
    items = make_items(100)
    train, test = split_items(items, test_ratio=0.15, seed=0)
    assert (len(train), len(test)) == (85, 15)
    assert {i.item_id for i in train} | {i.item_id for i in test} == {i.item_id for i in items}
    assert not {i.item_id for i in train} & {i.item_id for i in test}


def test_split_is_the_same_whatever_the_input_order():
    items = make_items(40)
    shuffled = items[:]
    random.Random(1).shuffle(shuffled)
    assert split_items(items, seed=3) == split_items(shuffled, seed=3)


def test_split_depends_on_the_seed():
    items = make_items(40)
    assert split_items(items, seed=0)[1] != split_items(items, seed=1)[1]


def test_split_keeps_one_item_on_each_side_of_a_tiny_set():
    train, test = split_items(make_items(3), test_ratio=0.15)
    assert (len(train), len(test)) == (2, 1)


def test_split_rejects_duplicate_ids():
    with pytest.raises(ValueError, match="unique"):
        split_items(make_items(2) * 2)


def test_sft_prompt_is_the_papers_format():
    item = LabeledItem("1", "n", "tachy", "heart rate", ["tachycardic", "normal"], "HR 130 bpm.", "normal")
    assert sft_prompt(item, "<M>") == (
        "Fill in the masked word in the following sentence. HR 130 bpm. <crf_item> "
        "heart rate? <M> <\\crf_item> <options>tachycardic, normal<\\options>"
    )


def test_an_item_label_must_be_one_of_its_options():
    with pytest.raises(ValueError, match="not one of"):
        LabeledItem("1", "n", "t", "d", ["a", "b"], "text", "c")


def test_a_pair_needs_an_answer():
    with pytest.raises(ValueError):
        TextPair("prompt", "  ")
