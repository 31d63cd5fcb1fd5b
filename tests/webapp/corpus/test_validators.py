"""The plain-Python rules shared by the models and the importer."""
from webapp.corpus.validators import label_problems, option_problems, span_problems


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
        "option 'y' is listed twice", "option 2 must be a non-empty string", "option 3 must be a non-empty string"
    ]
    assert option_problems("y") == ["options must be a list of labels, not str"]
