"""brat .ann files (webapp.lib.formats.brat, the one brat reader): every line parsed or reported with its
line. Plain units."""

from dataclasses import replace

import pytest

from tests.webapp.lib.test_input_files import LIMITS
from webapp.lib.formats.brat import read_ann
from webapp.lib.problems import Problems

TEXT = "Paziente con pacemaker. FC 80 bpm."  # "pacemaker" at 13-22, "FC 80" at 24-29
ENTITIES = "T1\tDevice 13 22\tpacemaker\nT2\tVital 24 26;27 29\tFC 80\n"


def parse(tmp_path, ann: str, limits=LIMITS):
    path = tmp_path / "doc1.ann"
    path.write_text(ann, encoding="utf-8")
    problems = Problems()
    parsed = read_ann(path, TEXT, problems, limits)
    return parsed, [str(p) for p in problems.kept]


def test_every_kind_of_brat_line_is_parsed_and_only_entities_are_kept(tmp_path):
    ann = ENTITIES + (
        "R1\tLocated Arg1:T1 Arg2:T2\t\n"
        "E1\tMeasure:T2 Theme:T1 Theme2:R1\n"
        "A1\tNegation T2\n"
        "M2\tCertainty E1 Likely\n"
        "N1\tReference T1 Wikidata:Q372195\tpacemaker\n"
        "#1\tAnnotatorNotes T1\tfree text\n"
        "*\tEquiv T1 T2\n"
        "\n"
    )
    parsed, problems = parse(tmp_path, ann)
    assert problems == []
    assert parsed.entities == [
        {"id": "T1", "type": "Device", "spans": [[13, 22]]},
        {"id": "T2", "type": "Vital", "spans": [[24, 26], [27, 29]]},
    ]
    assert parsed.other_lines == 4  # relation, event, normalization, equivalence: checked, not imported
    assert [(s.id, s.label, s.attrs, s.source) for s in parsed.spans] == [
        ("T1", "Device", {}, "gold"),
        ("T2", "Vital", {"Negation": "true"}, "gold"),
    ]


BAD = {
    "a garbage line": (
        "garbage without a tab\n",
        "doc1.ann line 3: not a brat annotation line (a line starts with "
        "T, R, E, A, M, N, # or * and an id, then a tab)",
    ),
    "a relation without its arguments": (
        "R1\tLocated T1 T2\n",
        "doc1.ann line 3: relation line must be 'R<n><TAB><type> Arg1:<id> Arg2:<id>'",
    ),
    "an event without a trigger": ("E1\tMeasure Theme:T1\n", "doc1.ann line 3: event line must be"),
    "an attribute without its target": ("A1\tNegation\n", "doc1.ann line 3: attribute line must be"),
    "a normalization without a reference": ("N1\tReference T1\tx\n", "doc1.ann line 3: normalization line must be"),
    "a reference to an undefined entity": (
        "R1\tLocated Arg1:T1 Arg2:T9\n",
        "doc1.ann line 3: relation 'R1' refers to 'T9', which the file does not define",
    ),
    "an id defined twice": (
        "A1\tNegation T1\nA1\tNegation T2\n",
        "doc1.ann line 4: attribute 'A1' is defined twice (first on line 3)",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_a_bad_line_is_reported_with_its_line(tmp_path, case):
    extra, expected = BAD[case]
    parsed, problems = parse(tmp_path, ENTITIES + extra)
    assert parsed is None
    assert len(problems) == 1 and problems[0].startswith(expected)


def test_an_entity_of_too_many_fragments_is_refused(tmp_path):
    parsed, problems = parse(tmp_path, "T1\tVital 24 26;27 29\tFC 80\n", replace(LIMITS, evidence_spans=1))
    assert parsed is None
    assert problems == [
        "doc1.ann line 1: entity 'T1' has 2 fragments; the limit is 1 fragments (IMPORT_MAX_EVIDENCE_SPANS)"
    ]


def test_crlf_line_ends_and_a_byte_order_mark_are_accepted(tmp_path):
    path = tmp_path / "doc1.ann"
    path.write_bytes(b"\xef\xbb\xbf" + ENTITIES.replace("\n", "\r\n").encode())
    problems = Problems()
    parsed = read_ann(path, TEXT, problems, LIMITS)
    assert len(parsed.entities) == 2 and not problems
    assert [str(w) for w in problems.warnings] == [
        "doc1.ann line 1: the file starts with a UTF-8 byte order mark; it was ignored"
    ]


def test_an_offset_of_more_than_18_digits_is_refused_unread(tmp_path):
    parsed, problems = parse(tmp_path, f"T1\tDevice 13 {'2' * 5000}\tpacemaker\n")
    assert parsed is None
    assert problems == [
        "doc1.ann line 1: entity 'T1': offsets must be integer pairs 'start end' separated by ';', "
        "each of at most 18 digits"
    ]


def test_ids_are_shown_quoted_escaped_and_cut(tmp_path):
    long_id = "R" + "x" * 100_000
    _, problems = parse(tmp_path, ENTITIES + f"{long_id}\tNear Arg1:T1 Arg2:T\x009\n")
    assert problems == [
        f"doc1.ann line 3: relation '{'R' + 'x' * 39}…' refers to 'T\\x009', which the file does not define"
    ]


def test_a_line_break_inside_an_entity_is_written_as_a_space(tmp_path):
    path = tmp_path / "doc1.ann"
    path.write_text("T1\tVital 24 32\tFC 80 bp\n", encoding="utf-8")
    problems = Problems()
    parsed = read_ann(path, TEXT[:29] + "\n" + TEXT[30:], problems, LIMITS)
    assert parsed.entities == [{"id": "T1", "type": "Vital", "spans": [[24, 32]]}] and not problems
    _, problems = parse(tmp_path, "T1\tVital 24 29\tFC 80 \n")  # one character too many
    assert problems == ["doc1.ann line 1: entity 'T1': the covered text differs from doc1.txt at [24, 29)"]


def test_reading_stops_at_the_entity_that_no_longer_fits_in_the_notes_metadata(tmp_path):
    one = '{"id":"T1","type":"Device","spans":[[13,22]]}'  # an entity as the metadata holds it
    budget = len('{"brat":{"entities":[]}}') + 3 * len(one) + 2  # room for three entities exactly
    ann = "".join(f"T{n}\tDevice 13 22\tpacemaker\n" for n in range(1, 4))
    parsed, problems = parse(tmp_path, ann, replace(LIMITS, metadata_bytes=budget))
    assert problems == [] and len(parsed.entities) == 3
    parsed, problems = parse(tmp_path, ann * 10_000, replace(LIMITS, metadata_bytes=budget))
    assert parsed is None
    assert problems[-1] == (
        f"doc1.ann line 4: the entities up to this line take more than the {budget:,} bytes of a note's "
        "metadata (IMPORT_MAX_METADATA_BYTES); nothing after it was read"
    )


def test_reading_stops_past_the_most_lines_of_other_kinds(tmp_path, monkeypatch):
    monkeypatch.setattr("webapp.lib.formats.brat.MAX_OTHER_LINES", 3)
    parsed, problems = parse(tmp_path, ENTITIES + "A1\tNegation T2\n" * 5)
    assert parsed is None
    assert problems[-1] == (
        "doc1.ann line 6: more than 3 relation, event, attribute, normalization, note or equivalence lines "
        "(MAX_OTHER_LINES in webapp/lib/formats/brat.py); nothing after this one was read"
    )
