"""ml.span_agreement on worked examples computed by hand (F1 exact and overlapping, alpha on
tokens), alpha against the `krippendorff` package, and `python -m ml agreement --spans`."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest

from ml.__main__ import main
from ml.span_agreement import Span, SpanSettings, span_agreement

FAST = SpanSettings(n_resamples=200)

# d1 "chest pain and fever since monday": chest 0-5, pain 6-10, and 11-14, fever 15-20,
# since 21-26, monday 27-33; d2 "no cough": no 0-2, cough 3-8.
TEXTS = {"d1": "chest pain and fever since monday", "d2": "no cough"}
WORKED = [
    Span("d1", "ann", "SYMPTOM", 0, 10),  # "chest pain"
    Span("d1", "ann", "SYMPTOM", 15, 20),  # "fever"
    Span("d2", "ann", "SYMPTOM", 3, 8),  # "cough"
    Span("d1", "bob", "SYMPTOM", 6, 10),  # "pain": overlaps ann's "chest pain"
    Span("d1", "bob", "SYMPTOM", 15, 20),  # "fever": exact
    Span("d1", "bob", "TIME", 27, 33),  # "monday": ann has no TIME
]
ANNOTATED = {"d1": {"ann", "bob"}, "d2": {"ann", "bob"}}  # bob read d2 and marked nothing


def test_f1_exact_and_overlapping_match_the_hand_computed_worked_example():
    result = span_agreement(WORKED, ANNOTATED, TEXTS, FAST)
    # SYMPTOM: |A| = 3, |B| = 2, one exact match (fever): 2 x 1 / 5; overlapping: ann's chest
    # pain and fever, bob's pain and fever: (2 + 2) / 5. TIME: bob's one span, found by nobody.
    assert result.per_label["SYMPTOM"].f1_exact == pytest.approx(2 / 5)
    assert result.per_label["SYMPTOM"].f1_overlap == pytest.approx(4 / 5)
    assert result.per_label["TIME"].f1_exact == 0
    assert result.per_label["TIME"].f1_overlap == 0
    # micro: every label's sums together, 2 x 1 / 6 and 4 / 6
    assert result.f1_exact == pytest.approx(1 / 3)
    assert result.f1_overlap == pytest.approx(2 / 3)
    (pair,) = result.pairs
    assert (pair.first, pair.second, pair.documents, pair.spans) == ("ann", "bob", 2, 6)
    assert pair.f1_exact == pytest.approx(1 / 3) and pair.f1_overlap == pytest.approx(2 / 3)
    assert (result.documents, result.paired_documents, result.annotators, result.spans) == (2, 2, 2, 6)
    assert result.spans_per_annotator == {"ann": 3, "bob": 3}
    assert result.spans_per_label == {"SYMPTOM": 5, "TIME": 1}


def test_alpha_on_tokens_matches_the_hand_computation_and_the_krippendorff_package():
    result = span_agreement(WORKED, ANNOTATED, TEXTS, FAST)
    # 8 tokens x 2 annotators = 16 values: S 6, O 9, T 1; chest, monday and cough disagree,
    # each (2^2 - 1 - 1) / 1 = 2: alpha = 1 - 15 x 6 / (256 - 36 - 81 - 1) = 8 / 23
    assert result.alpha_tokens == pytest.approx(8 / 23)
    assert result.tokens == 8 and result.token_unit == "token"
    codes = {"O": 0, "SYMPTOM": 1, "TIME": 2}
    ann = ["SYMPTOM", "SYMPTOM", "O", "SYMPTOM", "O", "O", "O", "SYMPTOM"]
    bob = ["O", "SYMPTOM", "O", "SYMPTOM", "O", "TIME", "O", "O"]
    data = np.array([[codes[v] for v in ann], [codes[v] for v in bob]], dtype=float)
    assert result.alpha_tokens == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    )


def test_alpha_equals_the_package_with_three_annotators_missing_documents_and_overlapping_labels():
    rng = np.random.default_rng(7)
    texts = {f"d{i}": " ".join(f"w{j}" for j in range(int(rng.integers(5, 30)))) for i in range(25)}
    annotators = ["a", "b", "c"]
    spans, annotated = [], {}
    for doc, text in texts.items():
        words = [(m.start(), m.end()) for m in __import__("re").finditer(r"\w+", text)]
        readers = [a for a in annotators if rng.random() < 0.8]
        annotated[doc] = set(readers)
        for a in readers:
            for _ in range(int(rng.integers(0, 4))):
                i = int(rng.integers(0, len(words)))
                j = min(len(words) - 1, i + int(rng.integers(0, 3)))
                label = ["X", "Y"][int(rng.integers(0, 2))]
                span = Span(doc, a, label, words[i][0], words[j][1])
                if span not in spans:
                    spans.append(span)
    result = span_agreement(spans, annotated, texts, FAST)
    # the package's table: annotators x every token of the documents two or more read; NaN where
    # an annotator did not read the document; the value is the set of labels covering the token
    values: dict[str, int] = {}
    columns = []
    for doc, text in texts.items():
        if len(annotated[doc]) < 2:
            continue
        for m in __import__("re").finditer(r"\w+|[^\w\s]", text):
            column = []
            for a in annotators:
                if a not in annotated[doc]:
                    column.append(np.nan)
                    continue
                cover = sorted(
                    {
                        s.label
                        for s in spans
                        if s.doc == doc and s.annotator == a and s.start < m.end() and m.start() < s.end
                    }
                )
                column.append(values.setdefault("+".join(cover) or "O", len(values)))
            columns.append(column)
    data = np.array(columns, dtype=float).T
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert result.alpha_tokens == pytest.approx(expected, abs=1e-12)
    assert result.tokens == data.shape[1]


def test_the_intervals_are_seeded_over_documents_and_hold_the_point():
    docs = {f"n{i}": "a b c d e f" for i in range(40)}
    spans = []
    for i, doc in enumerate(docs):
        spans.append(Span(doc, "x", "L", 0, 3))
        spans.append(Span(doc, "y", "L", 0, 3 if i % 4 else 1))
    first = span_agreement(spans, None, docs, FAST)
    again = span_agreement(spans, None, docs, FAST)
    other = span_agreement(spans, None, docs, SpanSettings(n_resamples=200, seed=1))
    assert first.f1_exact_ci == again.f1_exact_ci and first.alpha_tokens_ci == again.alpha_tokens_ci
    assert first.f1_exact_ci != other.f1_exact_ci
    for name in ("f1_exact", "alpha_tokens"):
        low, high = getattr(first, f"{name}_ci")
        assert low <= getattr(first, name) <= high and low < high
    assert first.f1_overlap == 1 and first.f1_overlap_ci == (1.0, 1.0)
    assert first.f1_exact == pytest.approx(2 * 30 / 80)
    assert first.per_label["L"].f1_exact_ci == first.f1_exact_ci


def test_the_diagnostics_name_a_rare_label_an_annotator_with_no_spans_and_one_never_compared():
    spans = [Span("d1", "ann", "TIME", 27, 33), Span("d2", "solo", "TIME", 0, 2)]
    result = span_agreement(spans, {"d1": {"ann", "quiet"}}, TEXTS, FAST)
    text = " ".join(result.diagnostics)
    assert "Label 'TIME' has 2 spans (fewer than 10): too rare to measure" in text
    assert "Annotator 'quiet' marked no span" in text
    assert "Annotator 'solo' shares no document with another annotator" in text
    assert "Only 1 documents were annotated by two or more annotators" in text
    assert result.spans_per_annotator["quiet"] == 0


def test_no_shared_document_leaves_every_figure_undefined():
    result = span_agreement([Span("d1", "ann", "L", 0, 3)], None, TEXTS, FAST)
    assert math.isnan(result.f1_exact) and math.isnan(result.alpha_tokens)
    assert result.to_dict()["f1_exact_ci"] == [None, None]
    assert "No document was annotated by two or more annotators" in result.diagnostics[0]


def test_without_text_alpha_counts_characters_and_says_so():
    spans = [Span("d", "a", "L", 0, 4), Span("d", "b", "L", 2, 4)]
    result = span_agreement(spans, None, None, FAST)
    # characters 0-3: a says L L L L, b says O O L L: 2 disagreeing of 4 items, n = 8, L 6, O 2
    assert result.alpha_tokens == pytest.approx(1 - 7 * 4 / (64 - 36 - 4))
    assert result.token_unit == "character" and result.tokens == 4
    assert any("without their text" in line for line in result.diagnostics)


def _write(tmp_path, lines) -> str:
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return str(path)


def test_the_cli_prints_the_worked_example_as_json(tmp_path, capsys):
    lines = [{"doc": s.doc, "annotator": s.annotator, "label": s.label, "start": s.start, "end": s.end} for s in WORKED]
    lines[0]["text"] = TEXTS["d1"]
    lines[2]["text"] = TEXTS["d2"]
    lines.append({"doc": "d2", "annotator": "bob"})
    code = main(["agreement", "--spans", _write(tmp_path, lines), "--resamples", "100"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["f1_exact"] == pytest.approx(1 / 3) and out["f1_overlap"] == pytest.approx(2 / 3)
    assert out["alpha_tokens"] == pytest.approx(8 / 23)
    assert set(out["per_label"]["SYMPTOM"]) >= {"f1_exact", "f1_overlap", "f1_exact_ci", "f1_overlap_ci"}
    assert len(out["f1_exact_ci"]) == 2 and out["n_resamples"] == 100
    assert out["pairs"][0]["documents"] == 2


def test_the_cli_checks_the_whole_file_and_names_each_bad_line(tmp_path, capsys):
    lines = [
        {"doc": "d1", "annotator": "ann", "label": "L", "start": 0, "end": 4, "text": "abc"},
        "{not json",
        {"doc": "d1", "annotator": "ann", "label": "L", "start": 3},
        {"doc": "d1", "annotator": "", "label": "L", "start": 0, "end": 2},
        {"doc": "d1", "annotator": "bob", "label": "L", "start": 2, "end": 1},
        {"doc": "d1", "annotator": "bob", "label": "L", "start": "0", "end": 1},
        {"doc": "d1", "annotator": "bob", "label": "L", "start": 0, "end": 1},
        {"doc": "d1", "annotator": "bob", "label": "L", "start": 0, "end": 1},
        ["a list"],
    ]
    code = main(["agreement", "--spans", _write(tmp_path, lines)])
    err = capsys.readouterr().err
    assert code == 2
    assert "line 1: end 4 is past the end of doc 'd1''s text (3 characters)" in err
    assert "line 2: invalid JSON" in err
    assert "line 3: a span needs label, start and end: missing 'end'" in err
    assert "line 4: 'annotator' must be a non-empty string" in err
    assert "line 5: 'end' (1) must be greater than 'start' (2)" in err
    assert "line 6: 'start' must be an integer, got a string" in err
    assert "line 8: the same span as line 7" in err
    assert "line 9: expected a JSON object, got an array" in err


def test_the_cli_wants_a_csv_or_spans_not_both(tmp_path, capsys):
    assert main(["agreement"]) == 2
    assert "one of them" in capsys.readouterr().err
