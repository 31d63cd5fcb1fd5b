"""The format table: each format writes and reads back the same spans; offsets of UTF-16 formats
are converted (emoji); bad input is refused naming the file, the record and why. Plain unit
tests: the format modules import no Django."""

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from webapp.lib.formats import Document, ReadOptions, Span, UnsupportedFormat, get_format, writers
from webapp.lib.import_limits import DEFAULT_LIMITS
from webapp.lib.problems import Problems

WRITTEN = [f.name for f in writers()]

TEXT = "Pt 😀 had fever 🤒 and\nchest pain; café"  # two non-BMP characters, a line break, an accent


def _documents():
    fever = TEXT.index("fever")
    chest = TEXT.index("chest")
    cafe = TEXT.index("café")
    return [
        Document(
            "n1",
            TEXT,
            [
                Span.of([[fever, fever + 5]], "FEVER", {"polarity": "POS"}, reviewer="ann", id="T1"),
                Span.of([[chest, chest + 5], [chest + 6, chest + 10]], "PAIN", id="T2"),
                Span.of([[3, 4]], "EMOJI", source="prediction", reviewer="model-a", id="T3"),
                Span.of(
                    [[cafe, cafe + 4]],
                    "heart-rate",
                    {"decision": "accept"},
                    source="decision",
                    reviewer="rita",
                    id="T4",
                ),
            ],
        ),
        Document("odd/id %1", "Second note.", [Span.of([[0, 6]], "X", id="T1")]),
    ]


def read(fmt, path, options=None) -> tuple[list[Document], list[str]]:
    """The documents read, and the problems reported, as their lines."""
    problems = Problems()
    docs = list(fmt.read(path, options or ReadOptions(), problems))
    return docs, problems.lines()


def _write_read(fmt, tmp_path, docs):
    out = tmp_path / ("out" + fmt.suffix)
    fmt.write(docs, out)
    items, problems = read(fmt, out)
    assert not problems, problems
    return {d.id: d for d in items}


def _projection(span: Span, carries) -> tuple:
    """What a format can carry of a span (the table in webapp.lib.formats)."""
    return (
        span.ranges if "discontinuous" in carries else None,
        span.label,
        span.attributes if "attributes" in carries else (),
        span.source if "source" in carries else "gold",
        span.reviewer if "reviewer" in carries else "",
    )


@pytest.mark.parametrize("name", WRITTEN)
def test_each_format_reads_back_the_spans_it_wrote(name, tmp_path):
    fmt = get_format(name)
    docs = _documents()
    back = _write_read(fmt, tmp_path, docs)
    assert set(back) == {"n1", "odd/id %1"}
    for doc in docs:
        assert back[doc.id].text == doc.text
        want = sorted(
            _projection(s, fmt.carries) for s in doc.spans if "discontinuous" in fmt.carries or len(s.ranges) == 1
        )
        if "discontinuous" not in fmt.carries:  # written as one span per range
            want = sorted(
                _projection(Span(((a, b),), s.label, s.attributes, s.source, s.reviewer), fmt.carries)
                for s in doc.spans
                for a, b in s.ranges
            )
        got = sorted(_projection(s, fmt.carries) for s in back[doc.id].spans)
        assert got == want


@pytest.mark.parametrize("name", WRITTEN)
def test_the_covered_text_survives_non_bmp_characters(name, tmp_path):
    back = _write_read(get_format(name), tmp_path, _documents())
    covered = sorted(s.covered(TEXT) for s in back["n1"].spans)
    assert "😀" in covered and "fever" in covered


def test_label_studio_counts_utf16_units(tmp_path):
    fmt = get_format("labelstudio")
    fmt.write(_documents()[:1], tmp_path / "ls.json")
    task = json.loads((tmp_path / "ls.json").read_text())[0]
    fever = next(r for a in task["annotations"] for r in a["result"] if r["value"]["labels"] == ["FEVER"])
    # "Pt 😀 had " is 9 code points and 10 UTF-16 units: the emoji is a surrogate pair.
    assert TEXT.index("fever") == 9
    assert fever["value"]["start"] == 10 and fever["value"]["end"] == 15
    emoji = task["predictions"][0]["result"][0]["value"]
    assert (emoji["start"], emoji["end"]) == (3, 5)


def test_xmi_counts_utf16_units(tmp_path):
    get_format("xmi").write(_documents()[:1], tmp_path / "x")
    xml = (tmp_path / "x" / "n1.xmi").read_text()
    assert 'begin="10" end="15"' in xml  # "fever" after one surrogate pair


def test_label_studio_offset_inside_a_surrogate_pair_is_refused(tmp_path):
    task = {
        "data": {"text": TEXT, "note_id": "n1"},
        "annotations": [{"result": [{"id": "a", "type": "labels", "value": {"start": 4, "end": 9, "labels": ["X"]}}]}],
    }
    (tmp_path / "ls.json").write_text(json.dumps([task]))
    docs, (problem,) = read(get_format("labelstudio"), tmp_path / "ls.json")
    assert docs == []
    assert problem.startswith("ls.json: task 1 annotations[1] result 1: UTF-16 offset 4 falls inside")


def test_an_unsupported_format_lists_the_supported_ones():
    with pytest.raises(UnsupportedFormat) as err:
        get_format("conll")
    assert str(err.value) == (
        "the format 'conll' is not supported; supported formats: jsonl, csv, brat, xmi, labelstudio, doccano"
    )


def test_a_span_past_the_end_is_refused_with_its_line(tmp_path):
    (tmp_path / "d.jsonl").write_text(
        json.dumps({"id": 1, "text": "short", "label": [[0, 5, "A"]]})
        + "\n"
        + json.dumps({"id": 2, "text": "short", "label": [[2, 9, "A"]]})
        + "\n"
        + "[1, 2]\n"
    )
    docs, problems = read(get_format("doccano"), tmp_path / "d.jsonl")
    assert [d.id for d in docs] == ["1"]
    assert problems == [
        "d.jsonl line 2: document '2': span 1: range [2, 9) ends past the end of the text (5 characters)",
        "d.jsonl line 3: expected a JSON object, got an array",
    ]


def test_brat_covered_text_must_match(tmp_path):
    (tmp_path / "n1.txt").write_text("fever and cough")
    (tmp_path / "n1.ann").write_text("T1\tSYM 0 5\tfever\nT2\tSYM 10 15\tcouch\n")
    assert read(get_format("brat"), tmp_path) == (
        [],
        ["n1.ann line 2: entity 'T2': the covered text differs from n1.txt at [10, 15)"],
    )


def test_label_studio_reads_a_real_export_shape(tmp_path):
    """As Label Studio exports: task ids of its own, completed_by a user id, choices skipped."""
    tasks = [
        {
            "id": 41,
            "data": {"text": "no fever"},
            "annotations": [
                {
                    "completed_by": 3,
                    "result": [
                        {
                            "id": "x1",
                            "from_name": "label",
                            "to_name": "text",
                            "type": "labels",
                            "value": {"start": 3, "end": 8, "text": "fever", "labels": ["SYM"]},
                        },
                        {
                            "id": "c",
                            "from_name": "doc",
                            "to_name": "text",
                            "type": "choices",
                            "value": {"choices": ["ok"]},
                        },
                    ],
                }
            ],
            "predictions": [
                {
                    "model_version": "m",
                    "result": [{"id": "p", "type": "labels", "value": {"start": 0, "end": 2, "labels": ["NEG"]}}],
                }
            ],
        }
    ]
    (tmp_path / "ls.json").write_text(json.dumps(tasks))
    (doc,), _ = read(get_format("labelstudio"), tmp_path / "ls.json")
    assert doc.id == "41"
    assert [(s.ranges, s.label, s.source, s.reviewer) for s in doc.spans] == [
        (((3, 8),), "SYM", "gold", "3"),
        (((0, 2),), "NEG", "prediction", ""),
    ]


def _e3c_like_xmi(tmp_path) -> Path:
    """An XMI file as INCEpTION exports E3C: custom layers, no TypeSystem.xml beside it."""
    from cassis import Cas, TypeSystem

    ts = TypeSystem()
    event = ts.create_type("webanno.custom.EVENT", supertypeName="uima.tcas.Annotation")
    ts.create_feature(event, "polarity", "uima.cas.String")
    clin = ts.create_type("webanno.custom.CLINENTITY", supertypeName="uima.tcas.Annotation")
    ts.create_feature(clin, "entityID", "uima.cas.String")
    meta = ts.create_type("webanno.custom.METADATA", supertypeName="uima.tcas.Annotation")
    cas = Cas(typesystem=ts)
    cas.sofa_string = "😀 no fever, chest pain"
    cas.add(event(begin=5, end=10, polarity="NEG"))
    cas.add(clin(begin=12, end=22, entityID="C0008031"))
    cas.add(meta(begin=0, end=0))
    folder = tmp_path / "e3c"
    folder.mkdir(parents=True)
    cas.to_xmi(str(folder / "EN1.xml"))
    return folder


def test_xmi_without_a_type_system_reads_every_custom_layer(tmp_path):
    (doc,), _ = read(get_format("xmi"), _e3c_like_xmi(tmp_path))
    assert doc.id == "EN1"
    assert [(s.covered(doc.text), s.label, s.attrs) for s in doc.spans] == [
        ("fever", "EVENT", {"polarity": "NEG"}),
        ("chest pain", "CLINENTITY", {"entityID": "C0008031"}),
    ]


def test_xmi_layer_and_feature_are_chosen(tmp_path):
    xmi = get_format("xmi")
    (doc,), _ = read(xmi, _e3c_like_xmi(tmp_path), ReadOptions(layer="CLINENTITY", feature="entityID"))
    assert [(s.label, s.covered(doc.text)) for s in doc.spans] == [("C0008031", "chest pain")]
    [], (error,) = read(xmi, _e3c_like_xmi(tmp_path / "b"), ReadOptions(layer="EVENT", feature="entityID"))
    assert error == (
        "EN1.xml: layer webanno.custom.EVENT has no feature 'entityID' (it has: polarity); skip such spans or give "
        "them a default label (--missing-feature skip, or default with --feature-default; the Import page's 'Spans "
        "without the feature')"
    )
    [], (error,) = read(xmi, _e3c_like_xmi(tmp_path / "c"), ReadOptions(layer="TIMEX3"))
    assert "no annotation layer 'TIMEX3' (its custom layers: CLINENTITY, EVENT, METADATA)" in error


def test_format_modules_import_no_django():
    code = "import sys, webapp.lib.formats as f; f.get_format('xmi'); print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _file_bytes(most: int) -> ReadOptions:
    return ReadOptions(limits=replace(DEFAULT_LIMITS, file_bytes=most))


@pytest.mark.parametrize("name", ["brat", "xmi", "labelstudio"])  # read whole; JSONL: a line at a time
def test_a_file_over_the_file_limit_is_refused_before_it_is_read(name, tmp_path):
    fmt = get_format(name)
    out = tmp_path / ("out" + fmt.suffix)
    fmt.write(_documents(), out)
    problems = Problems()
    assert list(fmt.read(out, _file_bytes(20), problems)) == []
    assert problems.kept
    for problem in problems.kept:  # brat: each .ann; XMI: its type system, first
        assert (tmp_path / problem.source).is_file() or (out / problem.source).is_file()
        assert re.fullmatch(
            r"the file has [\d,]+ bytes, more than the \d+ one file may have \(IMPORT_MAX_FILE_BYTES( / \d+: .+)?\); "
            "it was not read",
            problem.message,
        ), problem.message


def test_a_file_parsed_whole_may_have_the_limit_divided_by_what_parsing_it_costs(tmp_path):
    fmt = get_format("xmi")
    fmt.write(_documents()[:1], tmp_path)
    (tmp_path / "TypeSystem.xml").unlink()  # inferred from the file
    size = (tmp_path / "n1.xmi").stat().st_size
    [], (error,) = read(fmt, tmp_path, _file_bytes(24 * (size - 1)))
    assert error == (
        f"n1.xmi: the file has {size:,} bytes, more than the {size - 1:,} one file may have "
        "(IMPORT_MAX_FILE_BYTES / 24: an XMI file is parsed whole, at about 24 times its size); it was not read"
    )
    (doc,), _ = read(fmt, tmp_path, _file_bytes(24 * size))
    assert doc.id == "n1"


def test_brat_annotations_are_read_a_line_at_a_time_with_any_line_end(tmp_path):
    fmt = get_format("brat")
    fmt.write(_documents()[:1], tmp_path)
    ann = tmp_path / "n1.ann"
    ann.write_bytes(b"\xef\xbb\xbf" + ann.read_bytes().replace(b"\n", b"\r\n"))  # a byte order mark, CRLF
    (doc,), _ = read(fmt, tmp_path)
    assert sorted((s.label, s.covered(doc.text)) for s in doc.spans) == sorted(
        (s.label, s.covered(TEXT)) for s in _documents()[0].spans
    )
