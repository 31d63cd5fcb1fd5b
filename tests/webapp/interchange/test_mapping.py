"""The mapping of a file's labels to tasks and label values (no Django)."""

import pytest

from webapp.lib.formats.mapping import MappingError, Target, parse_mapping


def test_entries_map_labels_to_a_task_and_value_evidence_only_or_nothing():
    m = parse_mapping(["CLIN=heart-rate:tachycardic", "EVENT = heart rate", "ACTOR=-", "", "# a comment"])
    assert m.target("CLIN", {}) == Target("heart-rate", "tachycardic")
    assert m.target("EVENT", {}) == Target("heart rate", None)
    assert m.target("ACTOR", {}) is None
    assert m.target("TIMEX3", {}) == "unmapped"


def test_an_entry_with_an_attribute_wins_over_the_plain_one():
    m = parse_mapping(["EVENT=fever:present", "EVENT[polarity=NEG]=fever:absent"])
    assert m.target("EVENT", {"polarity": "NEG"}) == Target("fever", "absent")
    assert m.target("EVENT", {"polarity": "POS"}) == Target("fever", "present")
    assert m.target("EVENT", {}) == Target("fever", "present")


def test_a_label_written_as_task_and_value_maps_to_itself_and_star_skips_the_rest():
    m = parse_mapping(["*=-"])
    assert m.target("heart-rate:tachycardic", {}) == Target("heart-rate", "tachycardic")
    assert m.target("OTHER", {}) is None
    assert m.lines() == ["any other label -> skipped"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (["CLIN heart-rate"], "mapping entry 1 ('CLIN heart-rate') must be LABEL=TASK:VALUE"),
        (["A=x:y", "A=x:z"], "mapping entry 2: 'A' is mapped twice"),
        (["*=fever:present"], "mapping entry 1: '*' can only be skipped ('*=-')"),
        (["A=fever:"], "mapping entry 1: the task, or the label value after ':', is empty"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(entries, message):
    with pytest.raises(MappingError) as err:
        parse_mapping(entries)
    assert str(err.value).startswith(message)


def test_a_task_is_named_as_its_description_is_stored_however_the_accent_was_typed():
    typed = "DIAG=diagno\u0301stico:yes"  # o + combining acute, as some keyboards and files write it
    assert parse_mapping([typed]).target("DIAG", {}) == Target("diagnóstico", "yes")
