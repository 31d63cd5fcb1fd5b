"""The plain-Python rules shared by the models and the importer, and the importer's metadata rules."""

from webapp.lib.validators import (
    label_problems,
    metadata_problems,
    option_problems,
    overlapping_spans,
    span_problems,
)


def test_spans_must_be_integer_pairs_inside_the_text():
    assert span_problems([[0, 3], [5, 10]], 10) == []
    assert span_problems([[0, 11]], 10) == ["evidence[0] [0, 11) ends past the text (length 10)"]
    assert span_problems([[3, 3]], 10) == ["evidence[0] [3, 3) is empty or reversed (start >= end)"]
    assert span_problems([[-2, 3]], 10) == ["evidence[0] [-2, 3) starts before the text (start < 0)"]
    assert span_problems([[True, 3]], 10) == ["evidence[0] must be a pair of integers [start, end]"]
    assert span_problems("0-3", 10) == ["evidence must be a list of [start, end] pairs, not str"]


def test_labels_must_be_one_of_the_options_exactly():
    assert label_problems("y", ["y", "n"]) == []
    assert label_problems("Y", ["y", "n"]) == ["label 'Y' is not one of the task's options ('y', 'n')"]
    assert label_problems("", ["y"]) == ["label must be a non-empty string"]


def test_options_are_distinct_non_empty_strings():
    assert option_problems(["y", "n"]) == []
    assert option_problems([]) == ["options must not be empty"]
    assert option_problems(["y", "y", " ", 3]) == [
        "option 'y' is listed twice",
        "option 2 must be a non-empty string",
        "option 3 must be a non-empty string",
    ]
    assert option_problems("y") == ["options must be a list of labels, not str"]


def test_metadata_is_a_json_object_of_plain_values():
    good = {"ward": "A\tB\nC\r", "age": 71, "weight": 70.5, "ok": True, "none": None, "codes": [["I10", 1]]}
    assert metadata_problems(good, 1000) == []
    assert metadata_problems(["x"], 1000) == ["field 'metadata' must be an object, not an array"]


def test_metadata_problems_say_where_never_what():
    secret = "Mario Rossi"
    assert metadata_problems({"patient": {"name": f"{secret}\x00"}}, 1000) == [
        'metadata["patient"]["name"] contains a NUL character (\\u0000) at offset 11'
    ]
    assert metadata_problems({"codes": ["ok", f"{secret}\x1b"]}, 1000) == [
        'metadata["codes"][1] contains the control character U+001B at offset 11'
    ]
    assert metadata_problems({"x": f"{secret}\ud800"}, 1000) == [
        'metadata["x"] contains an unpaired surrogate (\\u escape) at offset 11'
    ]
    assert metadata_problems({"score": float("nan")}, 1000) == [
        'metadata["score"] is NaN or Infinity, which JSON does not allow'
    ]
    assert metadata_problems({"": 1, "a\x00b": 2, "k" * 201: 3}, 1000) == [
        "metadata has an empty key",
        "metadata has a key with a control character or an unpaired surrogate",
        "metadata has a key longer than 200 characters",
    ]


def test_metadata_is_nested_at_most_ten_deep_and_bounded_in_size():
    deep = {"a": 1}
    for _ in range(10):
        deep = {"a": deep}
    assert metadata_problems(deep, 1000) == [
        'metadata["a"]["a"]["a"]["a"]["a"]["a"]["a"]["a"]["a"]["a"] is nested more than 10 levels deep'
    ]
    assert metadata_problems({"note": "é" * 60}, 100) == [
        "field 'metadata' has 131 bytes; the limit is 100 bytes (IMPORT_MAX_METADATA_BYTES)"
    ]


def test_overlapping_spans_are_found_in_any_order():
    assert overlapping_spans([[0, 3], [3, 6]]) is None  # touching is not overlapping
    assert overlapping_spans([[10, 20], [0, 12]]) == ([0, 12], [10, 20])
    assert overlapping_spans([[5, 8], [5, 8]]) == ([5, 8], [5, 8])
